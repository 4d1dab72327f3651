//! What every benchmark binary here shares.

use criterion::Criterion;
use std::time::Duration;

/// Short runs: the whole suite (about 60 benchmarks) must stay well under 15 minutes.
pub fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}
