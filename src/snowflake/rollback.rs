//! What [`DefaultUidGenerator`](crate::DefaultUidGenerator) does when the clock goes
//! backwards (NTP corrections, leap seconds, a VM restored from a snapshot).

use crate::layout::BitsAllocator;
use crate::worker::{WorkerIdAssigner, WorkerIdError};
use std::time::Duration;

/// The rollback strategy of a [`DefaultUidGenerator`](crate::DefaultUidGenerator).
///
/// | strategy | on a rollback | guarantees | choose it when |
/// |---|---|---|---|
/// | `Fail` (default) | `UidError::ClockMovedBackwards` until the clock catches up | IDs always carry their real creation time | a failed call is better than a skewed timestamp |
/// | `Wait { max }` | callers wait until the clock passes the last tick used; past `max`, `Fail` | real time; calls stall up to `max` | rollbacks are small (NTP slews, leap seconds) and a short stall is fine |
/// | `Continue` | IDs go on from the last tick used, following the time really passed since the last good reading (a monotonic clock); under load they may run ahead of it by at most `max_run_ahead` (default 1 s), then calls wait | never fails, never repeats; timestamps stay within the bound of real time until the clock catches up | availability matters more than timestamp accuracy |
/// | `SpareWorker` | switches to a worker ID reserved at start-up and goes on at the clock's time | never repeats (the spare ID was never used); IDs of a thread may go down once, at the switch | large rollbacks (VM snapshots) must not stall or skew time |
///
/// Every strategy counts rollbacks (`DefaultUidGenerator::rollbacks`) and logs each at
/// `warn` through `tracing`.
///
/// A rollback is the clock reading less than it read before. A worker ID's time mark
/// ahead of the clock is not one (a previous holder, such as a cached generator, used
/// ticks the clock has not reached): `Continue` goes on from the mark at once; every
/// other strategy waits for the clock to pass it, for at most
/// [`max_mark_wait`](crate::DefaultUidGeneratorBuilder::max_mark_wait) (default 1 s, or
/// `Wait`'s `max` when longer), and past that fails with
/// [`UidError::MarkAhead`](crate::UidError::MarkAhead).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RollbackStrategy {
    /// Refuse until the clock catches up (UidGenerator's behaviour).
    #[default]
    Fail,
    /// Wait out a rollback of at most `max`; refuse a larger one.
    Wait {
        /// The largest rollback to wait out.
        max: Duration,
    },
    /// Keep going on a logical clock: `max(last tick used, now)`.
    Continue,
    /// Switch to the next spare worker ID; with none left, refuse.
    SpareWorker {
        /// Worker IDs reserved for this process and never used otherwise.
        spares: Vec<u64>,
    },
}

impl RollbackStrategy {
    /// `SpareWorker` with `count` worker IDs reserved now from `assigner` (the same
    /// registry that assigned the main one, so no other process can hold them). The
    /// generator's build refuses spares that repeat the main worker ID or each other.
    pub fn spare_workers(
        assigner: &dyn WorkerIdAssigner,
        bits: &BitsAllocator,
        count: usize,
    ) -> Result<Self, WorkerIdError> {
        let spares = (0..count)
            .map(|_| assigner.assign_worker_id(bits).map(|a| a.worker_id))
            .collect::<Result<_, _>>()?;
        Ok(RollbackStrategy::SpareWorker { spares })
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            RollbackStrategy::Fail => "fail",
            RollbackStrategy::Wait { .. } => "wait",
            RollbackStrategy::Continue => "continue",
            RollbackStrategy::SpareWorker { .. } => "spare_worker",
        }
    }
}
