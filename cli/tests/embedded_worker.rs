//! The embedded (SQLite) worker registry: the CLI's default, safe for concurrent starts.

mod common;

use common::{printed_ids, success_stdout};
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
fn eight_processes_started_at_once_get_distinct_worker_ids() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nested").join("workers.sqlite3");
    let children: Vec<_> = (0..8)
        .map(|_| uidgen(&db, &["worker"]).spawn().unwrap())
        .collect();
    let ids: Vec<u64> = children
        .into_iter()
        .map(|c| worker_id_of(&c.wait_with_output().unwrap()))
        .collect();
    let distinct: HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), 8, "{ids:?}");
    assert_eq!(distinct, (1..=8).collect(), "rows 1 to 8, one each");
}

#[test]
fn next_uses_the_embedded_registry_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workers.sqlite3");
    let bits = BitsAllocator::default();
    let mut workers = Vec::new();
    for _ in 0..2 {
        let ids = printed_ids(&uidgen(&db, &["next", "-n", "3"]).output().unwrap());
        assert_eq!(ids.len(), 3);
        workers.push(bits.parse(ids[0]).unwrap().worker_id);
    }
    assert_eq!(workers, [1, 2], "each launch takes the next row");
}

#[test]
fn an_unusable_path_is_an_error_naming_it() {
    // Nobody, not even root, can create folders under /proc.
    let db = Path::new("/proc/uidgen-test/workers.sqlite3");
    let out = uidgen(db, &["next"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/proc/uidgen-test"));
}
