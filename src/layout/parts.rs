//! [`UidParts`]: an ID taken apart, printed the way UidGenerator's `parseUID` prints it.

use super::unit::TimeUnit;
use crate::clock::format_utc;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The fields of one ID.
///
/// `Display` gives UidGenerator's `parseUID` JSON, every value a string and the timestamp
/// in UTC (`yyyy-MM-dd HH:mm:ss`, with `.SSS` on millisecond layouts):
/// `{"UID":"…","timestamp":"…","workerId":"…","sequence":"…"}`. With the `serde`
/// feature, `Serialize`/`Deserialize` round-trip the fields themselves.
///
/// ```
/// use uidgen::{BitsAllocator, Preset};
///
/// let bits = Preset::Snowflake.builder().build()?;
/// let parts = bits.parse(bits.allocate(1_000, 7, 3)?)?;
/// assert_eq!((parts.worker_id, parts.sequence), (7, 3));
/// assert_eq!(parts.uid_i64(), parts.uid as i64);
/// assert!(parts.system_time() > std::time::UNIX_EPOCH);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct UidParts {
    /// The ID itself.
    pub uid: u64,
    /// Ticks since the layout's epoch.
    pub delta: u64,
    /// When its tick began, in Unix milliseconds (saturating at `u64::MAX` for layouts
    /// whose time reaches beyond that).
    pub timestamp_millis: u64,
    /// The worker that made it.
    pub worker_id: u64,
    /// Its place within its worker's tick.
    pub sequence: u64,
    /// The layout's tick length.
    pub unit: TimeUnit,
    /// The region field, for layouts that have one.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub region: Option<u64>,
}

impl UidParts {
    /// The timestamp as printed: UTC, `yyyy-MM-dd HH:mm:ss[.SSS]`.
    pub fn timestamp(&self) -> String {
        format_utc(self.timestamp_millis, self.unit.shows_millis())
    }

    /// When its tick began.
    pub fn system_time(&self) -> SystemTime {
        UNIX_EPOCH
            .checked_add(Duration::from_millis(self.timestamp_millis))
            .unwrap_or(UNIX_EPOCH + Duration::from_secs(i64::MAX as u64 / 1000))
    }

    /// The ID as an `i64`, for SQL `BIGINT` columns: IDs never set the sign bit, so this
    /// is the same number.
    pub fn uid_i64(&self) -> i64 {
        // `BitsAllocator::parse` refuses a UID with bit 63 set.
        self.uid as i64
    }
}

impl fmt::Display for UidParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every value is digits, dashes, colons and spaces: no JSON escaping is needed.
        write!(
            f,
            r#"{{"UID":"{}","timestamp":"{}","#,
            self.uid,
            self.timestamp()
        )?;
        if let Some(region) = self.region {
            write!(f, r#""region":"{region}","#)?;
        }
        write!(
            f,
            r#""workerId":"{}","sequence":"{}"}}"#,
            self.worker_id, self.sequence
        )
    }
}
