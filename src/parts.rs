//! [`UidParts`]: an ID taken apart, printed the way UidGenerator's `parseUID` prints it.

use crate::bits::TimeUnit;
use crate::time::format_utc;
use serde::ser::{Serialize, SerializeStruct, Serializer};
use std::fmt;

/// The fields of one ID.
///
/// Display and serde give UidGenerator's `parseUID` JSON, every value a string and the
/// timestamp in UTC (`yyyy-MM-dd HH:mm:ss`, with `.SSS` on millisecond layouts):
/// `{"UID":"…","timestamp":"…","workerId":"…","sequence":"…"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UidParts {
    /// The ID itself.
    pub uid: u64,
    /// Ticks since the layout's epoch.
    pub delta: u64,
    /// When its tick began, in Unix milliseconds.
    pub timestamp_millis: u64,
    /// The worker that made it.
    pub worker_id: u64,
    /// Its place within its worker's tick.
    pub sequence: u64,
    /// The layout's tick length.
    pub unit: TimeUnit,
}

impl UidParts {
    /// The timestamp as printed: UTC, `yyyy-MM-dd HH:mm:ss[.SSS]`.
    pub fn timestamp(&self) -> String {
        format_utc(self.timestamp_millis, self.unit == TimeUnit::Milliseconds)
    }
}

impl fmt::Display for UidParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every value is digits, dashes, colons and spaces: no JSON escaping is needed.
        write!(
            f,
            r#"{{"UID":"{}","timestamp":"{}","workerId":"{}","sequence":"{}"}}"#,
            self.uid,
            self.timestamp(),
            self.worker_id,
            self.sequence
        )
    }
}

impl Serialize for UidParts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("UidParts", 4)?;
        s.serialize_field("UID", &self.uid.to_string())?;
        s.serialize_field("timestamp", &self.timestamp())?;
        s.serialize_field("workerId", &self.worker_id.to_string())?;
        s.serialize_field("sequence", &self.sequence.to_string())?;
        s.end()
    }
}
