//! [`TimeUnit`]: the length of one tick.

/// The length of one tick of the time field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum TimeUnit {
    /// One-second ticks, as UidGenerator.
    Seconds,
    /// One-millisecond ticks, as Twitter's snowflake.
    Milliseconds,
}

impl TimeUnit {
    /// Milliseconds in one tick.
    pub const fn millis(self) -> u64 {
        match self {
            TimeUnit::Seconds => 1000,
            TimeUnit::Milliseconds => 1,
        }
    }

    /// "seconds" or "milliseconds".
    pub const fn name(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "seconds",
            TimeUnit::Milliseconds => "milliseconds",
        }
    }

    /// "s" or "ms".
    pub const fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "s",
            TimeUnit::Milliseconds => "ms",
        }
    }
}
