//! A residue generator's per-store prefetch threads end with it: building and dropping
//! generators on ever new stores does not pile threads up. Its own test binary, so no
//! other test's threads are counted.

use std::time::{Duration, Instant};
use uidgen::{ResidueSegmentGenerator, SqliteSegmentStore};

/// Threads named like the prefetch threads (names are cut to 15 bytes in /proc).
fn prefetch_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| uidgen::PREFETCH_THREAD_NAME.starts_with(comm.trim()))
        .count()
}

#[test]
fn per_store_prefetch_threads_end_with_their_generators() {
    let before = prefetch_threads();
    let dir = tempfile::tempdir().unwrap();
    for i in 0..25 {
        let orders = ResidueSegmentGenerator::builder("order", 2)
            .store(
                SqliteSegmentStore::new(dir.path().join(format!("a{i}.db"))),
                0,
            )
            .store(
                SqliteSegmentStore::new(dir.path().join(format!("b{i}.db"))),
                1,
            )
            .create_missing(1)
            .build()
            .unwrap();
        assert!(orders.next_uid().unwrap() > 0);
        if i == 0 {
            // Two stores, a thread each, while the generator lives (polled: a thread's
            // name shows in /proc once it has run, which a loaded machine may delay).
            let deadline = Instant::now() + Duration::from_secs(10);
            while prefetch_threads() < before + 2 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(prefetch_threads(), before + 2);
        }
    }
    // Each thread ends within a round (at most 100 ms) of its last generator's drop.
    let deadline = Instant::now() + Duration::from_secs(10);
    while prefetch_threads() > before {
        assert!(
            Instant::now() < deadline,
            "{} prefetch threads left, {before} before",
            prefetch_threads()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
