//! A segment store behind the data-loss checks: every range is checked against the
//! floors before it is handed on, a counter found below one is raised past it, and a
//! tag is never created again below what it handed out.

use super::{floor_name, number, past, raise_record, report, tag_name, Shared, REPAIR_MARGIN};
use crate::store::segment::{SegmentStore, TagRecord};
use crate::store::{StoreError, StoreKind};
use std::sync::Arc;

/// How many times an allocation is tried again after raising a counter that went back.
const REPAIR_ATTEMPTS: usize = 8;

/// A [`SegmentStore`] guarded by its place's [`Shared`] knowledge.
pub(crate) struct GuardedSegments {
    pub(crate) inner: Arc<dyn SegmentStore>,
    pub(crate) shared: Arc<Shared>,
    /// The table or key prefix: tags of the same name elsewhere are other tags.
    pub(crate) scope: String,
    /// Creating a tag below what it handed out is allowed (`segment create --force`).
    pub(crate) force_create: bool,
}

impl std::fmt::Debug for GuardedSegments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl GuardedSegments {
    /// `inner` guarded by its place's `shared` knowledge; the place's watcher also looks
    /// at the counters of the tags this process took ranges of, through it.
    pub(crate) fn new(
        inner: Box<dyn SegmentStore>,
        shared: Arc<Shared>,
        scope: &str,
        force_create: bool,
    ) -> Self {
        let inner: Arc<dyn SegmentStore> = Arc::from(inner);
        shared.watch_counters(scope, Arc::downgrade(&inner));
        Self {
            inner,
            shared,
            scope: scope.to_owned(),
            force_create,
        }
    }

    /// The highest range end known for `tag`: this process's, local memory's and the
    /// store's own record (`store_floor`).
    fn known(&self, tag: &str, store_floor: u64) -> u64 {
        self.shared.floor(&self.scope, tag).max(store_floor)
    }
}

impl SegmentStore for GuardedSegments {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn kind(&self) -> StoreKind {
        self.inner.kind()
    }

    fn identity(&self) -> Option<String> {
        self.shared.identity()
    }

    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        let floor_record = floor_name(&self.scope, tag);
        let read = self.shared.check(&[&floor_record])?;
        let store_floor = number(read[0].as_ref());
        // What was handed out before this call began: ranges taken at the same time by
        // other threads may come back in either order, and a give-back of this process
        // (which lowers the floor) waits for the calls under way.
        let _gate = self.shared.allocating();
        let mut known = self.known(tag, store_floor);
        for _ in 0..REPAIR_ATTEMPTS {
            let end = self.inner.allocate(tag, step)?;
            let start = end.saturating_sub(step);
            if start >= known {
                self.shared.record_floor(&self.scope, tag, end)?;
                return Ok(end);
            }
            // The store went back: [start, end) was handed out before. Raise the counter
            // past everything known (never lower it), tell the others through the
            // store's record, and take a range again.
            let to = past(known, REPAIR_MARGIN).ok_or_else(|| {
                crate::store::segment::counter_overflow(
                    self.inner.kind().name(),
                    tag,
                    &known.to_string(),
                    REPAIR_MARGIN,
                )
            })?;
            let raised = self.inner.raise(tag, end, to)?;
            report(format!(
                "{}: tag {tag:?} handed out the range [{start}, {end}), below {known}, which was \
                 handed out already (restored, rolled back, or a replica behind); the range is \
                 refused and the counter {}",
                self.describe(),
                if raised {
                    format!("raised to {to}")
                } else {
                    "had moved on meanwhile (taking again)".to_owned()
                }
            ));
            raise_record(self.shared.records(), &floor_record, to)?;
            if raised {
                known = to;
            }
        }
        Err(self.shared.lost_error(&format!(
            "tag {tag:?} kept handing out ranges below {known}, which were handed out \
             already, {REPAIR_ATTEMPTS} times in a row"
        )))
    }

    fn create(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
        description: &str,
    ) -> Result<bool, StoreError> {
        // The records first, then the row: the record of a creation is written after its
        // row, so a tag another process creates meanwhile is seen as existing, not gone.
        let (floor_record, tag_record) = (floor_name(&self.scope, tag), tag_name(&self.scope, tag));
        let mut read = self.shared.check(&[&floor_record, &tag_record])?;
        if self.shared.young_wait(self.kind()) {
            read = self.shared.check(&[&floor_record, &tag_record])?;
        }
        // The floor as known before the row is read: another thread of this process may
        // create the tag and take a range of it meanwhile, which raises the floor past a
        // row read as absent (judged against what was known after, that was a false
        // "handed out before").
        let known = self.known(tag, number(read[0].as_ref()));
        if self.inner.tag(tag)?.is_some() {
            return Ok(false);
        }
        if !self.force_create {
            let evidence = if known > first_id {
                Some(format!(
                    "IDs up to {} were handed out under it before (as this machine or the \
                     store's records know), so creating it at {first_id} would repeat them; \
                     create it at {known} or above (`uidgen segment create --start {known}`)",
                    known - 1
                ))
            } else {
                read[1].as_ref().filter(|_| known == 0).map(|created| {
                    format!(
                        "it was created in this store before ({created}) and is gone now, and \
                         how far it went is not known; find the highest ID it handed out and \
                         create it above that, or force it (`uidgen segment create --force`)"
                    )
                })
            };
            if let Some(evidence) = evidence {
                return Err(self.shared.lost_error(&format!(
                    "tag {tag:?} does not exist in {}, but {evidence}",
                    self.describe()
                )));
            }
        }
        let created = self.inner.create(tag, first_id, step, description)?;
        if created {
            let note = format!("created {} at {first_id} step {step}", super::now_ms());
            if let Err(e) = self.shared.records().put(&tag_record, &note) {
                tracing::warn!(error = %e, tag, "uidgen could not record the tag's creation");
            }
        }
        Ok(created)
    }

    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        let _gate = self.shared.giving_back();
        let given = self.inner.give_back(tag, from, to)?;
        if given {
            self.shared.lower_floor(&self.scope, tag, from, to)?;
        }
        Ok(given)
    }

    fn raise(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        self.inner.raise(tag, from, to)
    }

    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        let floor_record = floor_name(&self.scope, tag);
        let read = self.shared.check(&[&floor_record])?;
        // The floor as known before the row is read: a range other threads of this
        // process take meanwhile (creating the tag, say) raises it past a row read as absent.
        let known = self.known(tag, number(read[0].as_ref()));
        let record = self.inner.tag(tag)?;
        match record {
            None if known > 1 => Err(self.shared.lost_error(&format!(
                "tag {tag:?} is gone from {}, but IDs up to {} were handed out under it (as \
                 this machine or the store's records know): the store lost data; run `uidgen \
                 store repair` against it, which creates it again above them",
                self.describe(),
                known - 1
            ))),
            record => Ok(record),
        }
    }

    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        // Only reads: a store refused for lost data can still be looked at.
        self.inner.tags()
    }
}
