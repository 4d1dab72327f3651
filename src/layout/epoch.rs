//! Epochs read from UTC dates.

use crate::error::ConfigError;
use chrono::{DateTime, NaiveDate};

/// Reads an epoch given as `YYYY-MM-DD` (midnight UTC) or an RFC 3339 instant,
/// as milliseconds since the Unix epoch.
pub(crate) fn parse_epoch(value: &str) -> Result<u64, ConfigError> {
    let trimmed = value.trim();
    let millis = match NaiveDate::parse_from_str(trimmed, "%Y-%m-%d") {
        // Every date has a midnight in UTC.
        Ok(date) => date
            .and_time(chrono::NaiveTime::MIN)
            .and_utc()
            .timestamp_millis(),
        Err(date_err) => DateTime::parse_from_rfc3339(trimmed)
            .map(|dt| dt.timestamp_millis())
            .map_err(|_| ConfigError::InvalidEpoch {
                value: value.to_owned(),
                source: date_err,
            })?,
    };
    u64::try_from(millis).map_err(|_| ConfigError::EpochBefore1970 {
        value: value.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_instants_parse_to_utc_millis() {
        assert_eq!(parse_epoch("1970-01-02").unwrap(), 86_400_000);
        assert_eq!(parse_epoch("2016-05-20").unwrap(), 1_463_702_400_000);
        assert_eq!(
            parse_epoch("2016-05-20T01:00:00+01:00").unwrap(),
            1_463_702_400_000
        );
    }

    #[test]
    fn bad_epochs_name_the_value() {
        let err = parse_epoch("2016-13-01").unwrap_err();
        assert!(err.to_string().contains("\"2016-13-01\""), "{err}");
        assert!(matches!(
            parse_epoch("1969-12-31"),
            Err(ConfigError::EpochBefore1970 { .. })
        ));
        let source = std::error::Error::source(&err).expect("the date parser's error is kept");
        assert!(!source.to_string().is_empty());
    }
}
