//! What one `uidgen bench` run is asked to do, as the bench's parts read it.

use crate::pattern::Pattern;
use std::time::Duration;

/// One run's settings, from the command line (`options` in the bench's module).
#[derive(Clone, Copy)]
pub struct BenchOptions {
    pub pattern: Pattern,
    /// Threads at once; for churn, the threads of one wave.
    pub threads: usize,
    pub duration: Duration,
    pub batch: usize,
    pub check: bool,
    /// Churn: the most short-lived threads to run.
    pub count: u64,
    /// Single and alternate: an unmeasured run first, this long.
    pub warmup: Duration,
    /// Light: each thread's time between two calls.
    pub interval: Duration,
}
