//! A lease store behind the data-loss checks: a granted mark is raised to every floor
//! known, each recorded mark is remembered before it is used, and a lease row that
//! vanished is reported as the data loss it is, not as a lease taken by another.

use super::{mark_name, number, Shared, MARK_FLOOR};
use crate::store::lease::{Acquired, LeaseRecord, LeaseRequest, LeaseStore};
use crate::store::{StoreError, StoreKind};
use std::sync::Arc;
use std::time::Duration;

/// A [`LeaseStore`] guarded by its place's [`Shared`] knowledge.
pub(crate) struct GuardedLeases {
    pub(crate) inner: Box<dyn LeaseStore>,
    pub(crate) shared: Arc<Shared>,
    /// The table or key prefix.
    pub(crate) scope: String,
}

impl std::fmt::Debug for GuardedLeases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl LeaseStore for GuardedLeases {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn kind(&self) -> StoreKind {
        self.inner.kind()
    }

    fn check_layout(&self, bits: &crate::BitsAllocator) -> Result<(), StoreError> {
        self.inner.check_layout(bits)
    }

    fn acquire(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        let mut read = self.shared.check(&[MARK_FLOOR])?;
        if self.shared.young_wait(self.kind()) {
            read = self.shared.check(&[MARK_FLOOR])?;
        }
        let store_floor = number(read[0].as_ref());
        match self.inner.acquire(request)? {
            Acquired::Granted { worker_id, mark_ms } => {
                let record = mark_name(&self.scope, worker_id);
                let recorded = number(self.shared.records().get(&[&record])?[0].as_ref());
                let known = self.shared.mark(&self.scope, worker_id).max(recorded);
                let floor = known.max(store_floor);
                if known > mark_ms {
                    tracing::warn!(
                        worker_id,
                        store = %self.describe(),
                        store_mark_ms = mark_ms,
                        known_mark_ms = known,
                        "uidgen: the store's time mark of this worker ID is below one this \
                         machine or the store's records hold (a renewal that never reached the \
                         store, or the store lost data); starting above the higher one"
                    );
                }
                Ok(Acquired::Granted {
                    worker_id,
                    mark_ms: mark_ms.max(floor),
                })
            }
            other => Ok(other),
        }
    }

    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        self.shared.check(&[])?;
        // Remembered before the store grants it: a tick under it may be used as soon as
        // the renewal answers.
        self.shared
            .record_mark(&self.scope, worker_id, mark_ms, false)?;
        let renewed = self.inner.renew(worker_id, holder, ttl, mark_ms)?;
        if !renewed && !self.row_exists(worker_id)? {
            return Err(self.shared.declare_lost(format!(
                "the lease row of worker ID {worker_id} vanished while {holder} held it \
                 (time mark {mark_ms} ms)"
            )));
        }
        Ok(renewed)
    }

    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        let released = self.inner.release(worker_id, holder, mark_ms)?;
        if released {
            // The store now holds the exact mark of the ticks used; so does the memory.
            self.shared
                .record_mark(&self.scope, worker_id, mark_ms, true)?;
        }
        Ok(released)
    }

    fn leases(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        self.inner.leases()
    }

    fn on_data_loss(&self, hook: Box<dyn Fn(&str) + Send + Sync>) {
        self.shared.on_loss(hook);
    }

    fn note_used(&self, worker_id: u64, _holder: &str, mark_ms: u64) {
        // The ticks went no further: this machine's floor for the worker ID comes down to
        // them (the store's mark, recorded ahead, stays until it is released or expires).
        if let Err(e) = self
            .shared
            .record_mark(&self.scope, worker_id, mark_ms, true)
        {
            tracing::warn!(error = %e, worker_id, "uidgen could not note the ticks a lost lease used");
        }
    }
}

impl GuardedLeases {
    fn row_exists(&self, worker_id: u64) -> Result<bool, StoreError> {
        Ok(self
            .inner
            .leases()?
            .iter()
            .any(|record| record.worker_id == worker_id))
    }
}
