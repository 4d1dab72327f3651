//! Ranges handed to clients (`/v1/segment/{tag}/range`), remembered with a receipt so
//! that their taker, and only their taker, can give the unused tail back when it closes,
//! as the service gives its own tails back at shutdown. A receipt is 128 random bits: a
//! client that could give back another's range would make the store hand its IDs out
//! again.

use super::Ids;
use crate::error::{shown_tag, ApiError};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use subtle::ConstantTimeEq;

/// How many of a tag's latest ranges are remembered: a client gives back its next range
/// and then its current one, and a tail can go back only while no range came after it.
const KEPT_PER_TAG: usize = 8;
/// How many tags' ranges are remembered at most.
const KEPT_TAGS: usize = 10_000;

#[derive(Debug)]
struct Handed {
    first: u64,
    last: u64,
    receipt: [u8; 16],
}

/// The latest ranges per tag.
#[derive(Debug, Default)]
pub(crate) struct HandedRanges(Mutex<HashMap<String, VecDeque<Handed>>>);

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl Ids {
    /// Remembers `[first, last]` of `tag` as handed out, and returns its receipt (empty
    /// when no randomness can be had: such a range cannot be given back).
    pub(crate) fn receipt(&self, tag: &str, first: u64, last: u64) -> String {
        let mut receipt = [0u8; 16];
        if getrandom::fill(&mut receipt).is_err() {
            return String::new();
        }
        let mut handed = self.handed.0.lock().unwrap_or_else(|p| p.into_inner());
        if handed.len() >= KEPT_TAGS && !handed.contains_key(tag) {
            return String::new();
        }
        let ranges = handed.entry(tag.to_owned()).or_default();
        if ranges.len() == KEPT_PER_TAG {
            ranges.pop_front();
        }
        ranges.push_back(Handed {
            first,
            last,
            receipt,
        });
        hex(&receipt)
    }

    /// Gives `first_unused..=last` of the range `receipt` names back to the store, if no
    /// range of the tag was taken after it; `Ok(false)` when it could not be (another
    /// range came after it, nothing was left, or this process did not hand it out). A
    /// receipt is good once.
    pub(crate) async fn give_back_range(
        &self,
        tag: &str,
        first_unused: u64,
        receipt: &str,
    ) -> Result<bool, ApiError> {
        let refused = |what: String, limit: &str| ApiError::bad_request(what, limit.to_owned());
        let Some(wanted) = unhex(receipt) else {
            return Err(refused(
                format!(
                    "receipt {} is not one this service writes",
                    shown_tag(receipt)
                ),
                "the 32 hex digits of a range's receipt",
            ));
        };
        let range = {
            let mut handed = self.handed.0.lock().unwrap_or_else(|p| p.into_inner());
            let Some(ranges) = handed.get_mut(tag) else {
                return Ok(false);
            };
            let Some(at) = ranges
                .iter()
                .position(|r| bool::from(r.receipt.ct_eq(&wanted)))
            else {
                return Ok(false);
            };
            let range = &ranges[at];
            if !(range.first..=range.last.saturating_add(1)).contains(&first_unused) {
                return Err(ApiError::bad_request(
                    format!("first = {first_unused} is outside the range of that receipt"),
                    format!(
                        "from its first ID, {}, to one past its last, {}",
                        range.first,
                        range.last.saturating_add(1)
                    ),
                ));
            }
            ranges.remove(at)
        };
        let Some(range) = range else {
            return Ok(false);
        };
        if first_unused > range.last {
            return Ok(false);
        }
        let store = Arc::clone(&self.store);
        let owned = tag.to_owned();
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || {
            store.give_back(&owned, range.last + 1, first_unused)
        })
        .await
        .map_err(|_| ApiError::unavailable("the store call panicked"))?;
        self.metrics
            .store_call("give_back", started.elapsed(), result.is_ok());
        result.map_err(|e| ApiError::unavailable(format!("the store failed: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipts_read_back_and_nothing_else_does() {
        let bytes = [0xab; 16];
        assert_eq!(unhex(&hex(&bytes)), Some(bytes));
        for bad in ["", "ab", &"g".repeat(32), &"é".repeat(16), &"a".repeat(33)] {
            assert_eq!(unhex(bad), None, "{bad}");
        }
    }
}
