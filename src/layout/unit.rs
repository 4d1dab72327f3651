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
    /// Ten-millisecond ticks, as Sonyflake.
    Centiseconds,
}

impl std::str::FromStr for TimeUnit {
    type Err = crate::error::ConfigError;

    /// `s`, `ms` or `10ms`, or the unit's name (`seconds`, `milliseconds`,
    /// `centiseconds`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "s" | "sec" | "seconds" => Ok(TimeUnit::Seconds),
            "ms" | "millis" | "milliseconds" => Ok(TimeUnit::Milliseconds),
            "10ms" | "cs" | "centiseconds" => Ok(TimeUnit::Centiseconds),
            _ => Err(crate::error::ConfigError::OutOfRange {
                field: "unit",
                value: format!("{:?}", text.chars().take(40).collect::<String>()),
                limit: "s, ms or 10ms".into(),
            }),
        }
    }
}

impl TimeUnit {
    /// Milliseconds in one tick.
    pub const fn millis(self) -> u64 {
        match self {
            TimeUnit::Seconds => 1000,
            TimeUnit::Milliseconds => 1,
            TimeUnit::Centiseconds => 10,
        }
    }

    /// "seconds", "milliseconds" or "centiseconds".
    pub const fn name(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "seconds",
            TimeUnit::Milliseconds => "milliseconds",
            TimeUnit::Centiseconds => "centiseconds",
        }
    }

    /// "s", "ms" or "10ms".
    pub const fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "s",
            TimeUnit::Milliseconds => "ms",
            TimeUnit::Centiseconds => "10ms",
        }
    }

    /// Whether printed instants carry milliseconds (ticks shorter than a second).
    pub const fn shows_millis(self) -> bool {
        !matches!(self, TimeUnit::Seconds)
    }
}
