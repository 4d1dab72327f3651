//! The README's recommended worker-ID code, run as 5,000 launches in a row (build, take
//! IDs, drop), the way a service restarted hourly, a cron job or a test suite runs it:
//! every launch succeeds, no ID repeats, and the store holds a handful of worker IDs.
//!
//! Alone in its test binary: it points `UIDGEN_WORKER_DB` (where `.embedded()` keeps its
//! file) at a temporary folder, and no other test of this binary reads the environment
//! meanwhile.

use std::collections::HashSet;
use std::time::Instant;
use uidgen::{CachedUidGenerator, LeaseStore, SqliteLeaseStore, UidGenerator};

/// The README's recommended line, as it stands there and in [`launch`] (both checked).
const RECOMMENDED: &str = "let generator = CachedUidGenerator::builder().embedded()?.build()?;";

/// IDs taken per launch.
const IDS_PER_LAUNCH: usize = 10;

/// One launch: the README's code, then a few IDs, then the generator is dropped.
fn launch() -> Result<Vec<u64>, Box<dyn std::error::Error>> {
    let generator = CachedUidGenerator::builder().embedded()?.build()?;
    let mut ids = Vec::with_capacity(IDS_PER_LAUNCH);
    for _ in 0..IDS_PER_LAUNCH {
        ids.push(generator.next_uid()?);
    }
    Ok(ids)
}

/// A temporary folder in memory (`/dev/shm`) where there is one: each launch commits a
/// few SQLite transactions, and on this repository's test machine a disk's syncs made a
/// launch take 32 ms (161 s for the 5,000) where the code itself takes about 5 ms. The
/// test is about worker IDs, not the disk; elsewhere it uses the usual temporary folder.
fn memory_backed_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}

#[test]
fn five_thousand_launches_of_the_readme_code_never_run_out_or_repeat() {
    let readme = include_str!("../README.md");
    assert!(
        readme.contains(RECOMMENDED),
        "the README no longer recommends {RECOMMENDED}"
    );
    assert!(
        include_str!("readme_launches.rs")
            .matches(RECOMMENDED)
            .count()
            >= 2,
        "launch() no longer runs the README's line"
    );

    let dir = memory_backed_dir();
    let db = dir.path().join("workers.sqlite3");
    std::env::set_var("UIDGEN_WORKER_DB", &db);

    const LAUNCHES: usize = 5_000;
    let started = Instant::now();
    let mut seen = HashSet::with_capacity(LAUNCHES * IDS_PER_LAUNCH);
    let mut workers = HashSet::new();
    for n in 0..LAUNCHES {
        let ids = launch().unwrap_or_else(|e| panic!("launch {} of {LAUNCHES} failed: {e}", n + 1));
        for id in ids {
            assert!(seen.insert(id), "launch {} repeated ID {id}", n + 1);
            workers.insert(
                uidgen::BitsAllocator::default()
                    .parse(id)
                    .unwrap()
                    .worker_id,
            );
        }
    }
    let took = started.elapsed();
    eprintln!(
        "{LAUNCHES} launches in {took:?} ({:?} a launch), worker IDs used: {workers:?}",
        took / LAUNCHES as u32
    );
    assert_eq!(seen.len(), LAUNCHES * IDS_PER_LAUNCH);

    let leases = SqliteLeaseStore::new(&db).leases().unwrap();
    assert!(
        leases.len() <= 4,
        "the store holds {} worker IDs: {leases:?}",
        leases.len()
    );
    assert!(
        leases.iter().all(|lease| lease.expires_in.is_none()),
        "every launch gave its worker ID back: {leases:?}"
    );
}
