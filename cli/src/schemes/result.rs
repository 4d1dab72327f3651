//! What one scheme's run measured, as `uidgen bench --scheme NAME --json` prints it and
//! as `scripts/schemes`' report and charts read it.

use serde::{Deserialize, Serialize};

/// One scheme's whole run: a run at each thread count, the order check and the restart.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SchemeResult {
    /// The name `--scheme` takes, e.g. `redis-incr`.
    pub scheme: String,
    /// What it is, in words, e.g. "Redis INCR, one ID per call".
    pub title: String,
    /// What must be running for it: "nothing (in-process)", "Redis", "MySQL/MariaDB", …
    pub needs: String,
    /// The stores it ran on, passwords hidden; empty for in-process schemes.
    pub stores: Vec<String>,
    /// The size of one ID as the scheme hands it out (8 for a 64-bit integer, 16 for a
    /// UUID, the length of a string ID).
    pub bytes_per_id: usize,
    /// IDs one call hands out (1, or the batch a call takes).
    pub ids_per_call: usize,
    /// One run per thread count (each thread with a connection of its own).
    pub runs: Vec<ThreadRun>,
    /// Whether IDs sort by the time they were made, from the one-thread run.
    pub order: Order,
    /// What a restart of the store (or of the process, for in-process schemes) did.
    pub restart: Restart,
}

/// One run at one thread count.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadRun {
    pub threads: usize,
    pub ids: u64,
    pub calls: u64,
    /// Calls that failed (the store refused or was unreachable).
    pub errors: u64,
    /// IDs handed out more than once in this run, or already in an earlier run of the
    /// same command; a run with any fails.
    pub duplicates: u64,
    pub seconds: f64,
    pub ids_per_sec: f64,
    /// Call times in nanoseconds (a call hands out `ids_per_call` IDs).
    pub latency: Latency,
}

/// Call-time percentiles, and the distribution the latency chart draws.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// `(fraction of calls, nanoseconds)`: the time under which that fraction of calls
    /// ended, fractions rising from 0 to 1.
    pub cdf: Vec<(f64, u64)>,
}

/// Whether IDs sort by the time they were made: consecutive IDs of one thread compared.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Order {
    /// Pairs of consecutive IDs compared.
    pub pairs: u64,
    /// Pairs whose later ID sorts after the earlier one (as the scheme's IDs sort: number
    /// or text).
    pub rising: u64,
}

impl Order {
    /// Every later ID sorted after the one before it.
    pub fn sorts_by_time(&self) -> bool {
        self.pairs > 0 && self.rising == self.pairs
    }
}

/// What a restart did: IDs taken in the run just before it, IDs after it, and how many
/// of those after it repeated one handed out before it (in any run).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Restart {
    /// What was restarted: "store" (the command `--restart-with` ran), "process" (the
    /// in-process generator made anew, as a restarted process would), or "not measured".
    pub what: String,
    pub before: u64,
    pub after: u64,
    pub repeats: u64,
    /// Calls that failed in the two runs around the restart.
    #[serde(default)]
    pub errors: u64,
    /// Why it was not measured, or what the restart was.
    pub note: String,
}

impl Restart {
    pub fn measured(&self) -> bool {
        self.what != "not measured"
    }
}
