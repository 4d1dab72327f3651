//! A deployment's share of the worker IDs: the leases of one region (or one fleet)
//! come only from its range, so regions with stores of their own never share a worker
//! ID as long as their ranges do not overlap.

use crate::error::ConfigError;
use crate::layout::BitsAllocator;
use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// The worker IDs a lease may take, both ends included: `"0-511"` as text (the
/// `--worker-ids` flag and the `worker_ids` setting), or `0..=511` in code.
///
/// ```
/// use uidgen::{BitsAllocator, WorkerIdRange};
///
/// let europe: WorkerIdRange = "0-511".parse()?;
/// let america = WorkerIdRange::try_from(512..=1023)?;
/// assert!(!europe.overlaps(&america));
/// assert_eq!(america.to_string(), "512-1023");
/// // A range past what the layout's worker bits hold is refused, naming the limit.
/// let nine_bits = BitsAllocator::builder().bits(41, 9, 13).build()?;
/// let err = america.check(&nine_bits).unwrap_err();
/// assert!(err.to_string().contains("at most 511"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkerIdRange {
    first: u64,
    last: u64,
}

impl WorkerIdRange {
    /// `first` to `last`, both included; `first` above `last` is an error.
    pub fn new(first: u64, last: u64) -> Result<Self, ConfigError> {
        if first > last {
            return Err(ConfigError::OutOfRange {
                field: "worker_ids",
                value: format!("{first}-{last}"),
                limit: "FIRST-LAST with FIRST at most LAST, such as 0-511".into(),
            });
        }
        Ok(Self { first, last })
    }

    /// The lowest worker ID of the range.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// The highest worker ID of the range.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// How many worker IDs the range holds.
    pub fn len(&self) -> u64 {
        self.last - self.first + 1
    }

    /// Never: a range holds at least one worker ID.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether `worker_id` is in the range.
    pub fn contains(&self, worker_id: u64) -> bool {
        (self.first..=self.last).contains(&worker_id)
    }

    /// Whether the two ranges share a worker ID.
    pub fn overlaps(&self, other: &Self) -> bool {
        self.first <= other.last && other.first <= self.last
    }

    /// The range, refused if the layout's worker bits cannot hold its last ID.
    pub fn check(self, bits: &BitsAllocator) -> Result<Self, ConfigError> {
        let max = bits.max_worker_id();
        if self.last > max {
            return Err(ConfigError::OutOfRange {
                field: "worker_ids",
                value: self.to_string(),
                limit: format!(
                    "worker IDs at most {max}, which {} worker bits hold",
                    bits.worker_bits()
                ),
            });
        }
        Ok(self)
    }

    /// The whole of what `bits` holds: 0 to its `max_worker_id`.
    pub fn all(bits: &BitsAllocator) -> Self {
        Self {
            first: 0,
            last: bits.max_worker_id(),
        }
    }
}

impl TryFrom<RangeInclusive<u64>> for WorkerIdRange {
    type Error = ConfigError;

    /// `a..=b`; an empty one (`b` below `a`) is an error, as in [`WorkerIdRange::new`].
    fn try_from(range: RangeInclusive<u64>) -> Result<Self, ConfigError> {
        let (first, last) = range.into_inner();
        Self::new(first, last)
    }
}

impl fmt::Display for WorkerIdRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

impl FromStr for WorkerIdRange {
    type Err = ConfigError;

    /// `FIRST-LAST` (`0-511`), or one worker ID (`7`, the range 7-7).
    fn from_str(text: &str) -> Result<Self, ConfigError> {
        let invalid = |why: &str| ConfigError::OutOfRange {
            field: "worker_ids",
            value: text.chars().take(60).collect(),
            limit: format!("{why}: expected FIRST-LAST, such as 0-511 (both included)"),
        };
        let number = |part: &str| {
            let part = part.trim();
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid("not a whole number"));
            }
            part.parse::<u64>()
                .map_err(|_| invalid("a number past 18446744073709551615"))
        };
        if text.trim().is_empty() {
            return Err(invalid("empty"));
        }
        match text.split_once('-') {
            Some((first, last)) => Self::new(number(first)?, number(last)?),
            None => {
                let one = number(text)?;
                Self::new(one, one)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_from_text_and_refuse_what_is_not_one() {
        let range: WorkerIdRange = "512-1023".parse().unwrap();
        assert_eq!((range.first(), range.last(), range.len()), (512, 1023, 512));
        assert_eq!(
            " 3 - 5 ".parse::<WorkerIdRange>().unwrap().to_string(),
            "3-5"
        );
        assert_eq!("7".parse::<WorkerIdRange>().unwrap().len(), 1);
        for (bad, why) in [
            ("", "empty"),
            (" ", "empty"),
            ("5-", "not a whole number"),
            ("-5", "not a whole number"),
            ("1-2-3", "not a whole number"),
            ("a-b", "not a whole number"),
            ("+1-2", "not a whole number"),
            ("9-3", "FIRST at most LAST"),
            ("0-99999999999999999999", "past"),
        ] {
            let err = bad.parse::<WorkerIdRange>().unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(err.contains("worker_ids"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn overlap_and_containment_include_both_ends() {
        let range = |r| WorkerIdRange::try_from(r).unwrap();
        let (a, b, c) = (range(0..=511), range(511..=600), range(512..=1023));
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(!a.overlaps(&c) && !c.overlaps(&a));
        assert!(a.contains(0) && a.contains(511) && !a.contains(512));
        #[allow(clippy::reversed_empty_ranges)] // the empty range is what is refused
        let reversed = 9..=3;
        assert!(WorkerIdRange::try_from(reversed).is_err());
    }

    #[test]
    fn a_range_must_fit_the_layouts_worker_bits() {
        let bits = BitsAllocator::builder().bits(41, 10, 12).build().unwrap();
        assert_eq!(WorkerIdRange::all(&bits).to_string(), "0-1023");
        assert!(WorkerIdRange::new(512, 1023).unwrap().check(&bits).is_ok());
        let err = WorkerIdRange::new(512, 1024)
            .unwrap()
            .check(&bits)
            .unwrap_err();
        assert!(err.to_string().contains("at most 1023"), "{err}");
    }
}
