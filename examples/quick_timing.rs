//! A rough timing of `CachedUidGenerator` (and, with `--features sqlite`, of a
//! `SegmentGenerator` on a temporary SQLite file) on 1, 2 and 4 threads, with `fetch_add`
//! on one shared counter as the baseline measured in the same run. The criterion benches
//! are the real measurement. Run: `cargo run --release --all-features --example quick_timing`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Instant;
use uidgen::{CachedUidGenerator, UidGenerator};

const PER_THREAD: u64 = 20_000_000;

/// Runs `work` on `threads` threads started together; returns total millions per second.
fn rate(threads: usize, work: impl Fn() + Sync) -> f64 {
    let start = Barrier::new(threads + 1);
    let elapsed = thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    work();
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        for h in handles {
            h.join().unwrap();
        }
        t.elapsed()
    });
    (threads as u64 * PER_THREAD) as f64 / elapsed.as_secs_f64() / 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let generator = CachedUidGenerator::builder().worker_id(1).build()?;
    // The opt-in per-thread batches: faster, but order holds only within a thread.
    let batching = CachedUidGenerator::builder()
        .worker_id(2)
        .thread_batch(32)
        .build()?;
    let counter = AtomicU64::new(0);
    #[cfg(feature = "sqlite")]
    let (segment, _dir) = {
        let dir = tempfile::tempdir()?;
        let store = uidgen::SqliteSegmentStore::new(dir.path().join("segments.db"));
        let segment = uidgen::SegmentGenerator::builder(store, "quick_timing")
            .create_missing(1, 1000)
            .max_step(1 << 24)
            .build()?;
        (segment, dir)
    };
    println!("threads  next_uid M/s  thread_batch(32) M/s  next_uids(1024) M/s  segment M/s  fetch_add M/s");
    for threads in [1, 2, 4] {
        let single = rate(threads, || {
            for _ in 0..PER_THREAD {
                std::hint::black_box(generator.next_uid().unwrap());
            }
        });
        let per_thread = rate(threads, || {
            for _ in 0..PER_THREAD {
                std::hint::black_box(batching.next_uid().unwrap());
            }
        });
        let batched = rate(threads, || {
            let mut batch = vec![0u64; 1024];
            let mut got = 0;
            while got < PER_THREAD {
                got += generator.next_uids(&mut batch).unwrap() as u64;
            }
        });
        #[cfg(feature = "sqlite")]
        let segmented = rate(threads, || {
            for _ in 0..PER_THREAD {
                std::hint::black_box(segment.next_uid().unwrap());
            }
        });
        #[cfg(not(feature = "sqlite"))]
        let segmented = f64::NAN;
        let baseline = rate(threads, || {
            for _ in 0..PER_THREAD {
                std::hint::black_box(counter.fetch_add(1, Ordering::Relaxed));
            }
        });
        println!(
            "{threads:>7}  {single:>12.1}  {per_thread:>20.1}  {batched:>19.1}  {segmented:>11.1}  {baseline:>13.1}"
        );
    }
    println!("{:?}", generator.stats());
    println!("time_ahead after the run: {:?}", generator.time_ahead());
    Ok(())
}
