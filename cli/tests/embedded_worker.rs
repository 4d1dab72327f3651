//! The embedded (SQLite) worker registry: the CLI's default, safe for concurrent starts.

mod common;

use common::{printed_ids, success_stdout};

#[test]
fn a_fixed_worker_id_run_five_times_back_to_back_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workers.sqlite3");
    let mut all = HashSet::new();
    for run in 0..5 {
        let out = uidgen(&db, &["next", "--worker-id", "7", "-n", "100000"])
            .output()
            .unwrap();
        for id in printed_ids(&out) {
            assert!(all.insert(id), "run {run} repeated ID {id}");
        }
    }
    assert_eq!(all.len(), 500_000);
}
use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Output};
use uidgen::BitsAllocator;

fn uidgen(db: &Path, args: &[&str]) -> Command {
    let mut cmd = common::uidgen(args);
    cmd.env("UIDGEN_WORKER_DB", db);
    cmd
}

fn worker_id_of(out: &Output) -> u64 {
    success_stdout(out)
        .lines()
        .find_map(|l| l.strip_prefix("worker_id"))
        .and_then(|id| id.trim().parse().ok())
        .expect("a worker_id line")
}

#[test]
fn eight_processes_started_at_once_make_distinct_ids() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nested").join("workers.sqlite3");
    let children: Vec<_> = (0..8)
        .map(|_| uidgen(&db, &["next", "-n", "100000"]).spawn().unwrap())
        .collect();
    let mut all = HashSet::new();
    for child in children {
        let ids = printed_ids(&child.wait_with_output().unwrap());
        assert_eq!(ids.len(), 100_000);
        for id in ids {
            assert!(all.insert(id), "ID {id} printed twice");
        }
    }
}

#[test]
fn launches_reuse_the_lowest_free_worker_id_and_never_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workers.sqlite3");
    let bits = BitsAllocator::default();
    let mut last = 0;
    for launch in 0..5 {
        let ids = printed_ids(&uidgen(&db, &["next", "-n", "20000"]).output().unwrap());
        assert_eq!(bits.parse(ids[0]).unwrap().worker_id, 0, "launch {launch}");
        assert!(
            ids[0] > last,
            "launch {launch} started at or below the last one's IDs"
        );
        last = *ids.last().unwrap();
    }
    // `worker` takes a worker ID and gives it back.
    assert_eq!(worker_id_of(&uidgen(&db, &["worker"]).output().unwrap()), 0);
    let list = success_stdout(&uidgen(&db, &["worker", "list"]).output().unwrap());
    let row = list
        .lines()
        .find(|l| l.trim_start().starts_with("0 "))
        .expect(&list);
    assert!(row.contains("free"), "{list}");
    // And how much of the layout's worker IDs is held: none, after the runs.
    assert!(
        list.contains(
            "layout 40/10/13 ms epoch 2026-01-01 00:00:00: 0 of 1024 worker IDs held by \
             live leases, 1024 free"
        ),
        "{list}"
    );
}

#[test]
fn an_unusable_path_is_an_error_naming_it() {
    // Nobody, not even root, can create folders under /proc.
    let db = Path::new("/proc/uidgen-test/workers.sqlite3");
    let out = uidgen(db, &["next"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/proc/uidgen-test"));
}

#[test]
fn a_run_killed_with_sigkill_frees_its_worker_id_after_its_lease_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workers.sqlite3");
    let mut child = uidgen(
        &db,
        &[
            "next",
            "-n",
            "1000000000",
            "--worker-id",
            "3",
            "--lease-ttl",
            "3",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Its first ID proves it holds the lease (a fixed sleep may end before a slow start).
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    // Killed: no success status, but every whole line it printed is an ID it issued.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let dead: Vec<u64> = first
        .lines()
        .chain(rest.lines())
        .filter_map(|line| line.parse().ok())
        .collect();
    assert!(!dead.is_empty(), "the first line was an ID: {first:?}");
    // Renewed every second, so held for 2 s at least after the kill.
    let refused = uidgen(&db, &["next", "--worker-id", "3"]).output().unwrap();
    assert!(!refused.status.success(), "held until the lease expires");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is leased by"));
    std::thread::sleep(std::time::Duration::from_millis(3_500));
    let again = printed_ids(
        &uidgen(&db, &["next", "-n", "5", "--worker-id", "3"])
            .output()
            .unwrap(),
    );
    let highest = dead.iter().max().copied().unwrap_or(0);
    assert!(
        again[0] > highest,
        "{} not above the killed run's {highest}",
        again[0]
    );
}
