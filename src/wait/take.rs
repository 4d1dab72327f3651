//! The one take loop: what a take does between finding nothing to hand out and handing
//! out an ID or giving up, on a thread ([`blocking`]) or on the tokio runtime
//! ([`on_runtime`]). Both generator families take through it; each tells it, through
//! [`Supply`], how to ask for more and why none may come.

use super::pause;
use super::policy::{RejectedTake, TakeDecision, TakeRejectPolicy};
use crate::error::UidError;
use std::time::{Duration, Instant};

/// What a waiting take asks of the generator it takes from.
pub(crate) trait Supply {
    /// A take found nothing: called once per call, however long it then waits.
    fn found_empty(&self);
    /// Before each try: wake whatever fills (and fill on the taker's thread if the
    /// generator does that).
    fn ask_for_more(&self);
    /// `Some` when nothing more will come (the supply is closed, lost or refused): the
    /// take looks once more, then gives up with this error, whatever the policy says.
    fn dried_up(&self, waited: Duration) -> Option<UidError>;
    /// The error to give up with when the take policy says so.
    fn gave_up(&self, waited: Duration) -> UidError;
}

/// One call's wait: when it began and how many tries the policy has allowed.
struct Wait<'a, S> {
    supply: &'a S,
    policy: &'a TakeRejectPolicy,
    start: Instant,
    tries: u32,
}

impl<'a, S: Supply> Wait<'a, S> {
    fn new(supply: &'a S, policy: &'a TakeRejectPolicy) -> Self {
        supply.found_empty();
        Self {
            supply,
            policy,
            start: Instant::now(),
            tries: 0,
        }
    }

    /// Asks for more and tries once: `Some` with the outcome, or `None` to pause and
    /// try again.
    fn try_once<T>(
        &mut self,
        attempt: &mut impl FnMut() -> Option<T>,
    ) -> Option<Result<T, UidError>> {
        self.supply.ask_for_more();
        if let Some(value) = attempt() {
            return Some(Ok(value));
        }
        let waited = self.start.elapsed();
        if let Some(err) = self.supply.dried_up(waited) {
            // Whatever says so is set after the last IDs were published: one more look.
            return Some(attempt().ok_or(err));
        }
        match self.policy.decide(RejectedTake {
            attempt: self.tries,
            waited,
        }) {
            TakeDecision::Retry => {
                self.tries = self.tries.saturating_add(1);
                None
            }
            TakeDecision::Fail => Some(Err(self.supply.gave_up(waited))),
        }
    }
}

/// Takes with `attempt` (which found nothing once already), blocking this thread between
/// tries as `policy` allows.
#[cold]
#[inline(never)]
pub(crate) fn blocking<T, S: Supply>(
    supply: &S,
    policy: &TakeRejectPolicy,
    mut attempt: impl FnMut() -> Option<T>,
) -> Result<T, UidError> {
    let mut wait = Wait::new(supply, policy);
    let backoff = crossbeam_utils::Backoff::new();
    loop {
        if let Some(done) = wait.try_once(&mut attempt) {
            return done;
        }
        pause::blocking(&backoff);
    }
}

/// Takes with `attempt` (which found nothing once already), waiting on the tokio runtime
/// between tries (never blocking its thread) as `policy` allows.
#[cfg(feature = "tokio")]
pub(crate) async fn on_runtime<T, S: Supply>(
    supply: &S,
    policy: &TakeRejectPolicy,
    mut attempt: impl FnMut() -> Option<T>,
) -> Result<T, UidError> {
    let mut wait = Wait::new(supply, policy);
    loop {
        if let Some(done) = wait.try_once(&mut attempt) {
            return done;
        }
        pause::on_runtime(wait.tries).await;
    }
}
