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

/// Two regions, each with a store of its own and a share of the worker IDs
/// (`--worker-ids`): four processes started at once in each take worker IDs only from
/// their region's range, and no ID is printed twice across both regions.
#[test]
fn two_regions_on_stores_of_their_own_keep_to_their_ranges_and_repeat_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bits = BitsAllocator::default();
    let regions = [("europe", "0-3", 0..=3), ("america", "4-7", 4..=7)];
    let children: Vec<_> = regions
        .iter()
        .flat_map(|(name, range, _)| {
            let db = dir.path().join(format!("{name}.sqlite3"));
            (0..4).map(move |_| {
                let child = uidgen(&db, &["next", "-n", "20000", "--worker-ids", range])
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (*name, child)
            })
        })
        .collect();
    let mut all = HashSet::new();
    for (name, child) in children {
        let ids = printed_ids(&child.wait_with_output().unwrap());
        assert_eq!(ids.len(), 20_000, "{name}");
        let worker = bits.parse(ids[0]).unwrap().worker_id;
        let (_, _, range) = regions.iter().find(|r| r.0 == name).unwrap();
        assert!(range.contains(&worker), "{name} took worker ID {worker}");
        for id in ids {
            assert!(all.insert(id), "ID {id} printed twice");
        }
    }
    // A fifth process in a region whose four are gone gets the range's lowest again.
    let db = dir.path().join("europe.sqlite3");
    let out = uidgen(&db, &["worker", "--worker-ids", "0-3"])
        .output()
        .unwrap();
    assert_eq!(worker_id_of(&out), 0);
    // `worker list --worker-ids` counts the region's share: one held here, of four.
    let held = uidgen::WorkerLease::builder(uidgen::SqliteLeaseStore::new(&db))
        .worker_ids("0-3".parse().unwrap())
        .acquire(&bits)
        .unwrap();
    // The fifth process's lease is given back as it exits; under load that can come
    // late, so the share counted is the store's own count of live leases in the range.
    assert!((0..=3).contains(&held.worker_id()), "{}", held.worker_id());
    let live = uidgen::LeaseStore::leases(&uidgen::SqliteLeaseStore::new(&db))
        .unwrap()
        .iter()
        .filter(|r| r.worker_id <= 3 && r.expires_in.is_some())
        .count();
    let list = success_stdout(
        &uidgen(&db, &["worker", "list", "--worker-ids", "0-3"])
            .output()
            .unwrap(),
    );
    assert!(
        list.contains(&format!(
            "range 0-3 (--worker-ids): {live} of 4 held by live leases, {} free",
            4 - live
        )),
        "{list}"
    );
}

/// A range that is not one, or past the layout, or a worker ID outside it, is refused
/// before anything is leased, naming the problem and the limit.
#[test]
fn a_bad_worker_id_range_is_refused_naming_the_problem_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workers.sqlite3");
    for (args, expected) in [
        (vec!["--worker-ids", "9-3"], "FIRST at most LAST"),
        (vec!["--worker-ids", "0-x"], "not a whole number"),
        (
            vec!["--worker-ids", "0-1024"],
            "at most 1023, which 10 worker bits hold",
        ),
        (
            vec!["--worker-ids", "0-3", "--worker-id", "9"],
            "--worker-id 9 is outside --worker-ids 0-3",
        ),
        (
            vec![
                "--worker-ids",
                "0-3",
                "--mysql-url",
                "mysql://u@127.0.0.1/db",
            ],
            "--worker-ids applies only to leases",
        ),
        (vec!["--worker-ids", ""], "empty"),
        (
            vec![
                "--worker-ids",
                "0-0",
                "--generator",
                "default",
                "--on-rollback",
                "spare:3",
            ],
            "take 4 worker IDs, and --worker-ids 0-0 holds 1: give a wider range",
        ),
    ] {
        let mut all = vec!["next", "-n", "1"];
        all.extend(args.iter().copied());
        let mut command = uidgen(&db, &all);
        if all.contains(&"--mysql-url") {
            // The registry instead of the embedded store, as a user would choose it.
            command.env_remove("UIDGEN_WORKER_DB");
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{all:?} succeeded");
        assert!(stderr.contains(expected), "{all:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{all:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{all:?} printed an ID");
    }
    assert!(
        !db.exists(),
        "nothing was leased, so the store was never created"
    );
    // A StatefulSet pod whose ordinal falls outside the service's range: refused, naming
    // the pod and what to set.
    let out = uidgen(
        &db,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--worker-ids",
            "3-5",
            "--pod-ordinal",
        ],
    )
    .env("HOSTNAME", "web-9")
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("pod_ordinal = worker ID 9") && stderr.contains("set pod_ordinal_offset"),
        "{stderr}"
    );
}
