//! Segment counters kept as one text value per tag with a version the store compares on
//! write (etcd's revision, ZooKeeper's node version): the compare-and-set loops written
//! once for both. Above `segment` (the rules) and `guard` (the clock the records use).

use super::guard::now_ms;
use super::segment::{check_step, check_tag, counter_overflow, missing_tag, TagRecord};
use super::StoreError;

/// A segment store that keeps each tag as one text value with a version the store
/// compares on write (etcd's revision, ZooKeeper's node version): its counter moves by
/// compare-and-set, written once here for both.
pub(crate) trait VersionedTags {
    type Version: Copy;
    /// The engine, for errors.
    const STORE: &'static str;
    fn describe(&self) -> String;
    /// The tag's record and its version (`None`: no such tag).
    fn read(
        &self,
        tag: &str,
        step: &'static str,
    ) -> Result<Option<(TagRecord, Self::Version)>, StoreError>;
    /// Writes `record` if the tag is still at `version`; whether it was.
    fn write_if(
        &self,
        step: &'static str,
        record: &TagRecord,
        version: Self::Version,
    ) -> Result<bool, StoreError>;
}

/// How many times a compare-and-set is tried again after another process moved the
/// counter first (each retry means that process was granted a range).
const CAS_ATTEMPTS: usize = 100;

/// [`SegmentStore::allocate`] by compare-and-set.
pub(crate) fn allocate_versioned<S: VersionedTags>(
    store: &S,
    tag: &str,
    step: u64,
) -> Result<u64, StoreError> {
    check_tag(S::STORE, tag)?;
    check_step(S::STORE, tag, step)?;
    let what = "taking a range";
    for _ in 0..CAS_ATTEMPTS {
        let Some((mut record, version)) = store.read(tag, what)? else {
            return Err(missing_tag(S::STORE, &store.describe(), tag));
        };
        let grown = record
            .max_id
            .checked_add(step)
            .filter(|max| *max <= i64::MAX as u64)
            .ok_or_else(|| counter_overflow(S::STORE, tag, &record.max_id.to_string(), step))?;
        record.max_id = grown;
        record.updated_ms = now_ms();
        if store.write_if(what, &record, version)? {
            return Ok(grown);
        }
    }
    Err(StoreError::Unexpected {
        store: S::STORE,
        location: store.describe(),
        step: what,
        what: format!(
            "other processes moved tag {tag:?}'s counter first, {CAS_ATTEMPTS} times in a \
             row; try again"
        ),
    })
}

/// Moves a counter from `from` to `to` by compare-and-set, only if it still holds
/// `from` (the `set_counter` of `give_back_and_raise!`).
pub(crate) fn set_counter_versioned<S: VersionedTags>(
    store: &S,
    step: &'static str,
    tag: &str,
    from: u64,
    to: u64,
) -> Result<bool, StoreError> {
    for _ in 0..CAS_ATTEMPTS {
        let Some((mut record, version)) = store.read(tag, step)? else {
            return Ok(false);
        };
        if record.max_id != from {
            return Ok(false);
        }
        record.max_id = to;
        record.updated_ms = now_ms();
        if store.write_if(step, &record, version)? {
            return Ok(true);
        }
    }
    Ok(false)
}
