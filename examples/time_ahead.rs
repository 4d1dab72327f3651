//! How far ahead of the clock the cached generator's IDs run (`time_ahead()`) on the
//! default layout: first at a steady 1M IDs a second, then flat out on one thread.
//!
//! ```sh
//! cargo run --release --example time_ahead          # 10 s each
//! cargo run --release --example time_ahead -- 2     # 2 s each
//! ```

use std::time::{Duration, Instant};
use uidgen::{CachedUidGenerator, UidGenerator};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10.0);
    let run = Duration::from_secs_f64(seconds);

    // Worker IDs of their own: a worker ID's time mark is shared in the process, so the
    // second run must not start where the first one's borrowed ticks ended.
    let paced = CachedUidGenerator::builder().worker_id(1).build()?;
    let bits = *paced.allocator();
    let span_ms = paced.stats().capacity as u64 / (bits.max_sequence() + 1) * bits.unit().millis();
    let (made, worst, last) = drive(&paced, run, Some(1_000_000))?;
    println!(
        "1M IDs/s for {seconds} s: {made} IDs, time_ahead max {worst:?}, at the end {last:?} \
         (the ring spans {span_ms} ms of ticks)"
    );
    drop(paced);

    let flat_out = CachedUidGenerator::builder().worker_id(2).build()?;
    let (made, worst, last) = drive(&flat_out, run, None)?;
    println!(
        "flat out for {seconds} s: {made} IDs ({:.1}M/s), time_ahead max {worst:?}, at the end {last:?}",
        made as f64 / seconds / 1e6
    );
    Ok(())
}

/// Takes IDs for `run`, at `rate` a second if given (in steps of 200 µs), else as fast as
/// one thread can; returns the count, the largest `time_ahead` seen and the last.
fn drive(
    generator: &CachedUidGenerator,
    run: Duration,
    rate: Option<u64>,
) -> Result<(u64, Duration, Duration), uidgen::UidError> {
    let start = Instant::now();
    let mut made = 0u64;
    let mut worst = Duration::ZERO;
    while start.elapsed() < run {
        let due = match rate {
            Some(rate) => (start.elapsed().as_secs_f64() * rate as f64) as u64,
            None => made + 65_536,
        };
        while made < due {
            generator.next_uid()?;
            made += 1;
        }
        worst = worst.max(generator.time_ahead());
        if rate.is_some() {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    Ok((made, worst, generator.time_ahead()))
}
