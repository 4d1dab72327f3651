//! Building the sources from the config: the snowflake generator on its lease, and a
//! tag's segment, period or residue generator.

use super::{StartError, STORE_TIMEOUT};
use crate::config::Config;
use crate::error::shown_tag;
use std::sync::Arc;
use std::time::Duration;
use uidgen::{
    BitsAllocator, CachedUidGenerator, PeriodSegmentGenerator, ResidueSegmentGenerator,
    SegmentError, SegmentGenerator, SegmentStore, StoreUrl, WorkerLease, WIPED_STORE_AHEAD,
};

/// The worker ID the config fixes (`worker_id`, or the pod's ordinal), if it fixes one.
pub(super) fn fixed_worker_id(
    config: &Config,
    bits: &BitsAllocator,
) -> Result<Option<u64>, StartError> {
    if config.pod_ordinal {
        let pod = uidgen::PodOrdinal::from_hostname().offset(config.pod_ordinal_offset);
        let assigned = uidgen::WorkerIdAssigner::assign_worker_id(&pod, bits)?;
        if let Some(range) = config.worker_id_range()? {
            if !range.contains(assigned.worker_id) {
                return Err(crate::config::ConfigError::Invalid {
                    field: "pod_ordinal",
                    value: assigned.to_string(),
                    limit: format!(
                        "a worker ID in worker_ids, {range}: set pod_ordinal_offset so that \
                         every pod's ordinal plus it falls in the range"
                    ),
                }
                .into());
            }
        }
        return Ok(Some(assigned.worker_id));
    }
    Ok(config.worker_id)
}

/// The snowflake routes' generator on a worker ID leased from `url`.
pub(super) fn build_snowflake(
    url: &StoreUrl,
    bits: BitsAllocator,
    config: &Config,
) -> Result<CachedUidGenerator, StartError> {
    let mut builder =
        WorkerLease::builder(url.lease_store()?).ttl(Duration::from_millis(config.lease_ttl_ms));
    if let Some(range) = config.worker_id_range()? {
        builder = builder.worker_ids(range);
    }
    if config.max_time_ahead_ms > 0 {
        // A worker ID whose mark is past the cap would leave the ring empty until the
        // clock reaches it: another is taken instead, if one is free.
        builder = builder.prefer_marks_within(Duration::from_millis(config.max_time_ahead_ms));
    }
    let lease = match fixed_worker_id(config, &bits)? {
        Some(id) => builder.acquire_id(&bits, id)?,
        None => builder.acquire(&bits)?,
    };
    let ahead = Duration::from_millis(config.max_time_ahead_ms);
    if url.kind() == uidgen::StoreKind::Sqlite && (ahead.is_zero() || ahead > WIPED_STORE_AHEAD) {
        tracing::warn!(
            max_time_ahead_ms = config.max_time_ahead_ms,
            "borrowed time is capped past the {} s a wiped embedded store starts ahead of the \
             clock: keep the store and its memory (stores/ beside it) on lasting storage, since \
             a store wiped within that time of a run may repeat its IDs",
            WIPED_STORE_AHEAD.as_secs()
        );
    }
    let mut builder = CachedUidGenerator::builder().allocator(bits).lease(lease);
    if let Some(floor) = config.id_floor {
        builder = builder.floor(floor);
    }
    if config.max_time_ahead_ms > 0 {
        builder = builder.max_time_ahead(Duration::from_millis(config.max_time_ahead_ms));
    }
    Ok(builder.build()?)
}

/// The tag's generator, creating the tag at `create`'s (first ID, base step) if asked.
pub(super) fn build_segment(
    store: Arc<dyn SegmentStore>,
    tag: &str,
    create: Option<(u64, u64)>,
    floor: Option<u64>,
) -> Result<SegmentGenerator, SegmentError> {
    let mut builder = SegmentGenerator::builder(store, tag);
    if let Some(floor) = floor {
        builder = builder.floor(floor);
    }
    if let Some((first_id, step)) = create {
        builder = builder.create_missing(first_id, step);
    }
    builder.build()
}

/// A period tag's generator, its rows created with base step `step`.
pub(super) fn build_period(
    store: Arc<dyn SegmentStore>,
    tag: &crate::config::PeriodTag,
    step: u64,
) -> Result<PeriodSegmentGenerator, SegmentError> {
    let config = |e: crate::config::ConfigError| {
        SegmentError::Config(uidgen::ConfigError::OutOfRange {
            field: "period_tags",
            value: shown_tag(&tag.tag),
            limit: e.to_string(),
        })
    };
    let period: uidgen::Period = tag.period.parse().map_err(SegmentError::Config)?;
    let mut builder = PeriodSegmentGenerator::builder(store, &tag.tag)
        .period(period)
        .utc_offset_minutes(tag.offset_minutes().map_err(config)?)
        .first_sequence(tag.first_sequence)
        .step(step);
    if let Some(digits) = tag.sequence_digits {
        builder = builder.sequence_digits(digits);
    }
    builder.build()
}

/// A residue tag's generator over its stores, tags created with base step `step`.
pub(super) fn build_residue(
    tag: &crate::config::ResidueTag,
    step: u64,
    create_at: Option<u64>,
    floor: Option<u64>,
) -> Result<ResidueSegmentGenerator, SegmentError> {
    let (modulus, remainders) = tag.classes();
    let mut builder = ResidueSegmentGenerator::builder(&tag.tag, modulus).step(step);
    if let Some(floor) = floor {
        builder = builder.floor(floor);
    }
    if let Some(first_id) = create_at {
        builder = builder.create_missing(first_id);
    }
    for (url, remainder) in tag.stores.iter().zip(remainders) {
        let store =
            StoreUrl::parse(url).and_then(|url| url.timeout(STORE_TIMEOUT).segment_store())?;
        builder = builder.store(store, remainder);
    }
    builder.build()
}
