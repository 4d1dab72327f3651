//! UTC dates in and out: epochs are read from dates, timestamps are printed in UTC.

use crate::error::ConfigError;
use chrono::{DateTime, NaiveDate, Utc};

/// Reads an epoch given as `YYYY-MM-DD` (midnight UTC) or an RFC 3339 instant,
/// as milliseconds since the Unix epoch.
pub(crate) fn parse_epoch(value: &str) -> Result<u64, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidEpoch {
        value: value.to_owned(),
        reason,
    };
    let trimmed = value.trim();
    let millis = match NaiveDate::parse_from_str(trimmed, "%Y-%m-%d") {
        Ok(date) => date
            .and_hms_opt(0, 0, 0)
            .map(|dt| dt.and_utc().timestamp_millis())
            .ok_or_else(|| invalid("no midnight on that date".into()))?,
        Err(date_err) => DateTime::parse_from_rfc3339(trimmed)
            .map(|dt| dt.timestamp_millis())
            .map_err(|_| invalid(date_err.to_string()))?,
    };
    u64::try_from(millis).map_err(|_| invalid("dates before 1970-01-01 are not supported".into()))
}

/// Formats Unix milliseconds as `yyyy-MM-dd HH:mm:ss` in UTC, with `.SSS` when `with_millis`.
pub(crate) fn format_utc(unix_millis: u64, with_millis: bool) -> String {
    let Some(dt) = i64::try_from(unix_millis)
        .ok()
        .and_then(DateTime::<Utc>::from_timestamp_millis)
    else {
        // Past chrono's range (year 262143): no layout reaches it, but never panic.
        return format!("{unix_millis} ms after 1970-01-01");
    };
    if with_millis {
        dt.format("%Y-%m-%d %H:%M:%S%.3f").to_string()
    } else {
        dt.format("%Y-%m-%d %H:%M:%S").to_string()
    }
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
            Err(ConfigError::InvalidEpoch { .. })
        ));
    }

    #[test]
    fn formats_in_utc() {
        assert_eq!(format_utc(1_463_702_400_000, false), "2016-05-20 00:00:00");
        assert_eq!(
            format_utc(1_463_702_400_123, true),
            "2016-05-20 00:00:00.123"
        );
        assert!(format_utc(u64::MAX, false).contains("ms after"));
    }
}
