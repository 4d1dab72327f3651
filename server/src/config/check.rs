//! Checks the settings against each other, once every layer is applied.

use super::{check_tag, Config, ConfigError, CREATE_TAGS_GONE, MAX_MAX_COUNT, MAX_RESIDUE_STORES};
use crate::tokens::GRANT_NAMES;
use std::ops::RangeInclusive;

impl Config {
    /// Checks the settings against each other: limits in range, and no public address
    /// without tokens unless `allow_public`.
    pub fn check(&self) -> Result<(), ConfigError> {
        let invalid = |field, value: String, limit: &str| ConfigError::Invalid {
            field,
            value,
            limit: limit.into(),
        };
        if self.create_tags_removed == Some(true) {
            return Err(invalid("create_tags", "true".into(), CREATE_TAGS_GONE));
        }
        if let (Some(id), true) = (self.worker_id, self.pod_ordinal) {
            return Err(invalid(
                "worker_id",
                id.to_string(),
                "either a fixed worker_id or pod_ordinal, not both",
            ));
        }
        if let Some(range) = self.worker_id_range()? {
            // A layout that does not build is named by its own check.
            let bits = self.layout_builder().ok().map(|b| b.build_unchecked_time());
            if let Some(Ok(bits)) = bits {
                range
                    .check(&bits)
                    .map_err(|e| super::worker_ids_invalid("worker_ids", range.to_string(), e))?;
            }
            if let Some(id) = self.worker_id.filter(|id| !range.contains(*id)) {
                return Err(invalid(
                    "worker_id",
                    id.to_string(),
                    &format!("a worker ID in worker_ids, {range}"),
                ));
            }
        }
        for origin in &self.cors_origins {
            if !is_origin(origin) {
                // A URL with a user part may hold a password.
                let shown = if origin.contains('@') {
                    "(not shown: it holds a user part)".to_owned()
                } else {
                    origin.chars().take(80).collect()
                };
                return Err(invalid(
                    "cors_origins",
                    shown,
                    "* or an origin as browsers send it: http:// or https://, a host and \
                     an optional port, no path (like https://app.example.com:8443)",
                ));
            }
        }
        if let Some(start) = self.tag_start {
            // A tag's counter must leave room for one range below the largest BIGINT.
            let last = (i64::MAX as u64).saturating_sub(self.tag_step);
            if !(1..=last).contains(&start) {
                return Err(invalid(
                    "tag_start",
                    start.to_string(),
                    &format!("1 to {last} (the largest BIGINT less tag_step)"),
                ));
            }
        }
        let limits = &self.limits;
        let step_limit = format!("1 to {}", uidgen::MAX_BASE_STEP);
        // Each numeric setting, its allowed range, and the range in words.
        let ranges: [(&'static str, u64, RangeInclusive<u64>, &str); 11] = [
            (
                "wait_for_store_secs",
                self.wait_for_store_secs,
                0..=3_600,
                "0 to 3600 seconds",
            ),
            (
                "max_count",
                self.max_count,
                1..=MAX_MAX_COUNT,
                "1 to 1000000",
            ),
            (
                "tag_step",
                self.tag_step,
                1..=uidgen::MAX_BASE_STEP,
                &step_limit,
            ),
            (
                "lease_ttl_ms",
                self.lease_ttl_ms,
                1_000..=3_600_000,
                "1000 to 3600000 (1 s to 1 hour)",
            ),
            (
                "max_time_ahead_ms",
                self.max_time_ahead_ms,
                0..=3_600_000,
                "0 (no cap) to 3600000 (1 hour)",
            ),
            (
                "tinyid_loading_percent",
                self.tinyid_loading_percent,
                1..=100,
                "1 to 100",
            ),
            (
                "limits.request_timeout_ms",
                limits.request_timeout_ms,
                1..=3_600_000,
                "1 to 3600000 (1 hour)",
            ),
            (
                "limits.header_timeout_ms",
                limits.header_timeout_ms,
                1..=3_600_000,
                "1 to 3600000 (1 hour)",
            ),
            (
                "limits.shutdown_grace_ms",
                limits.shutdown_grace_ms,
                0..=3_600_000,
                "0 to 3600000 (1 hour)",
            ),
            (
                "limits.max_connections",
                limits.max_connections as u64,
                1..=1_000_000,
                "1 to 1000000",
            ),
            (
                "limits.max_body_bytes",
                limits.max_body_bytes as u64,
                1..=16 * 1024 * 1024,
                "1 to 16777216 (16 MiB)",
            ),
        ];
        for (field, value, allowed, limit) in ranges {
            if !allowed.contains(&value) {
                return Err(invalid(field, value.to_string(), limit));
            }
        }
        // Period and residue tags: each a valid tag, no grant name, listed once, and
        // not also a plain tag.
        let special = self
            .period_tags
            .iter()
            .map(|t| ("period_tags.tag", &t.tag))
            .chain(
                self.residue_tags
                    .iter()
                    .map(|t| ("residue_tags.tag", &t.tag)),
            );
        for (i, (field, tag)) in special.clone().enumerate() {
            if let Err(rule) = check_tag(tag) {
                return Err(invalid(field, tag.chars().take(64).collect(), &rule));
            }
            if GRANT_NAMES.contains(&tag.as_str()) || tag == "*" {
                return Err(invalid(
                    field,
                    tag.clone(),
                    "a tag other than @snowflake, @opaque, @status and * (they mean routes or every tag \
                     in token grants)",
                ));
            }
            if special.clone().take(i).any(|(_, earlier)| earlier == tag) {
                return Err(invalid(
                    field,
                    tag.clone(),
                    "each period or residue tag once (this one is listed twice)",
                ));
            }
            if self.tags.contains(tag) {
                return Err(invalid(
                    field,
                    tag.clone(),
                    "a tag not also in tags (a tag is plain, a period tag or a residue tag)",
                ));
            }
        }
        for period_tag in &self.period_tags {
            period_tag.offset_minutes()?;
            period_tag.period.parse::<uidgen::Period>().map_err(|e| {
                invalid(
                    "period_tags.period",
                    period_tag.period.clone(),
                    &e.to_string(),
                )
            })?;
        }
        for residue_tag in &self.residue_tags {
            let (_, remainders) = residue_tag.classes();
            if !(2..=MAX_RESIDUE_STORES).contains(&residue_tag.stores.len())
                || remainders.len() != residue_tag.stores.len()
            {
                return Err(invalid(
                    "residue_tags.stores",
                    format!(
                        "{} stores and {} remainders",
                        residue_tag.stores.len(),
                        remainders.len()
                    ),
                    &format!(
                        "2 to {MAX_RESIDUE_STORES} stores, and one remainder for each (each \
                         store is a connection and a thread)"
                    ),
                ));
            }
        }
        if !self.listen.ip().is_loopback() && self.tokens.is_empty() && !self.allow_public {
            return Err(invalid(
                "listen",
                self.listen.to_string(),
                "a loopback address while no tokens are configured: set tokens \
                 (UIDGEN_TOKENS or tokens_file), or allow_public = true \
                 (--allow-public) to serve anyone who can reach it",
            ));
        }
        Ok(())
    }
}

/// `*`, or `scheme://host[:port]` with an http(s) scheme and nothing after it.
fn is_origin(origin: &str) -> bool {
    if origin == "*" {
        return true;
    }
    let Ok(uri) = origin.parse::<axum::http::Uri>() else {
        return false;
    };
    matches!(uri.scheme_str(), Some("http" | "https"))
        && uri
            .authority()
            .is_some_and(|a| !a.host().is_empty() && !a.as_str().contains('@'))
        && uri
            .path_and_query()
            .is_none_or(|p| p.as_str().is_empty() || p.as_str() == "/")
        && !origin.ends_with('/')
        && axum::http::HeaderValue::from_str(origin).is_ok()
}
