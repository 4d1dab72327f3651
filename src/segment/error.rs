//! Why a segment generator could not be built.

use crate::error::ConfigError;
use crate::store::StoreError;
use std::sync::Arc;

/// Why a [`SegmentGenerator`](crate::SegmentGenerator) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// A setting is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store failed, or the tag does not exist (the message says how to create it).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store's counter is below a range this generator already has (restored from a
    /// backup, or rolled back): its ranges would repeat IDs.
    #[error(
        "tag {tag:?} in {store}: the store gave the range [{start}, {end}), not at or above \
         {last_end} where an earlier range ended (or past the largest BIGINT); was the store \
         restored or rolled back? Refusing it: raise its max_id to at least {last_end}, then \
         build a new generator"
    )]
    RangeRefused {
        /// The tag.
        tag: String,
        /// The store.
        store: String,
        /// The range's first ID.
        start: u64,
        /// One past its last.
        end: u64,
        /// Where the earlier range ended.
        last_end: u64,
    },
    /// The prefetch thread could not be started.
    #[error("could not start the segment prefetch thread")]
    Spawn(#[source] Arc<std::io::Error>),
}

impl SegmentError {
    /// A setting out of range: `field = value`, and what it may be.
    pub(crate) fn out_of_range(field: &'static str, value: String, limit: String) -> Self {
        SegmentError::Config(ConfigError::OutOfRange {
            field,
            value,
            limit,
        })
    }
}
