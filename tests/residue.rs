//! One tag over two stores, each its own residue class: MariaDB (behind a relay the test
//! cuts) hands out even IDs, PostgreSQL odd ones; 8 processes take IDs while MariaDB
//! dies, refusing or silent.

#[path = "support/relay.rs"]
mod relay;
#[path = "support/servers.rs"]
mod servers;
#[path = "support/stores.rs"]
mod stores;

use relay::{via, Relay};
use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use stores::Fixture;
use uidgen::{
    ResidueSegmentGenerator, SegmentStore, SqliteSegmentStore, StoreKind, TakeRejectPolicy,
};

const TAG: &str = "order";
const CHILD_ENV: &str = "UIDGEN_RESIDUE_CHILD";

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// What a child builds: even IDs from `a` (MariaDB, through the relay), odd from `b`.
fn generator(a: &Fixture, a_url: &str, b: &Fixture) -> ResidueSegmentGenerator {
    ResidueSegmentGenerator::builder(TAG, 2)
        .store(
            a.segment_store_at(a_url, Some(Duration::from_millis(300))),
            0,
        )
        .store(b.segment_store_at(&b.url, Some(Duration::from_secs(5))), 1)
        .step(20)
        .create_missing(1)
        .max_step(20)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(10)))
        .build()
        .unwrap()
}

/// One child: takes IDs for `run_ms`, writing `ID unix_ms id` lines to a file (a pipe
/// the parent reads later would hold the child up); an error is a line `ERR message`.
#[test]
#[ignore = "run as a child process by eight_processes_one_store_dies"]
fn child_takes() {
    let config = std::env::var(CHILD_ENV).expect("run by eight_processes_one_store_dies");
    let parts: Vec<&str> = config.splitn(5, '\n').collect();
    let (run_ms, out, a_url, a_spec, b_spec) = (parts[0], parts[1], parts[2], parts[3], parts[4]);
    let (a, b) = (Fixture::from_spec(a_spec), Fixture::from_spec(b_spec));
    let generator = generator(&a, a_url, &b);
    let end = Instant::now() + Duration::from_millis(run_ms.parse().unwrap());
    let mut out = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
    let mut taken = 0u64;
    while Instant::now() < end {
        match generator.next_uid() {
            Ok(id) => writeln!(out, "ID {} {id}", unix_ms()).unwrap(),
            Err(err) => writeln!(out, "ERR {err}").unwrap(),
        }
        taken += 1;
        // A steady load, not a flood: about 10,000 IDs a second.
        if taken.is_multiple_of(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    out.flush().unwrap();
}

/// The tests that load the machine (8 processes, a burst) run one at a time, so each
/// measures its own stores rather than the others' load.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn eight_processes_one_store_dies(silent: bool) {
    let _alone = HEAVY.lock().unwrap_or_else(|p| p.into_inner());
    let (a, b) = (
        Fixture::new(StoreKind::MySql),
        Fixture::new(StoreKind::Postgres),
    );
    let relay = Relay::to(a.server_addr().unwrap());
    let (a_url, _) = via(&a.url, relay.addr);
    // Long enough past the death for a loaded machine: 2 s of it once gave a child only
    // 41 IDs in CI, with builds and other tests beside it.
    let run_ms = 8_000;
    let dir = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..8)
        .map(|i| {
            let out = dir.path().join(format!("child-{i}"));
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "child_takes", "--ignored", "--nocapture", "-q"])
                .env(
                    CHILD_ENV,
                    format!(
                        "{run_ms}\n{}\n{a_url}\n{}\n{}",
                        out.display(),
                        a.spec(),
                        b.spec()
                    ),
                )
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::inherit())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1_500));
    let died = unix_ms();
    if silent {
        relay.silence();
    } else {
        relay.cut();
    }
    let mut seen = HashSet::new();
    let (mut before, mut after) = ([0usize; 2], [0usize; 2]);
    for (mut child, out) in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "a child failed: {status:?}");
        let mut late_odd = 0;
        for line in std::io::BufReader::new(std::fs::File::open(out).unwrap()).lines() {
            let line = line.unwrap();
            assert!(!line.starts_with("ERR"), "a take failed: {line}");
            let (at, id) = line.strip_prefix("ID ").unwrap().split_once(' ').unwrap();
            let (at, id): (u64, u64) = (at.parse().unwrap(), id.parse().unwrap());
            assert!(seen.insert(id), "{id} handed out twice");
            let class = (id % 2) as usize;
            if at < died {
                before[class] += 1;
            } else if at > died + 1_500 {
                // Well after MariaDB died, only PostgreSQL's class.
                assert_eq!(class, 1, "{id} from the dead store 1.5 s after it died");
                late_odd += 1;
                after[class] += 1;
            }
        }
        assert!(
            late_odd >= 100,
            "a child took only {late_odd} IDs in the 5 s from 1.5 s after the store died"
        );
    }
    assert!(
        before[0] > 0 && before[1] > 0,
        "both classes before: {before:?}"
    );
    // Each store's IDs are its class, below its counter (read directly, not via the relay).
    let max = |f: &Fixture| f.segment_store().tag(TAG).unwrap().unwrap().max_id;
    let (a_max, b_max) = (max(&a), max(&b));
    for id in &seen {
        let (counter, store_max) = if id % 2 == 0 {
            (id / 2, a_max)
        } else {
            (id / 2, b_max)
        };
        assert!(
            (1..store_max).contains(&counter),
            "{id}: counter {counter} not below {store_max}"
        );
    }
    eprintln!("{} IDs; before {before:?}, after {after:?}", seen.len());
}

#[test]
fn eight_processes_one_store_refuses() {
    eight_processes_one_store_dies(false);
}

#[test]
fn eight_processes_one_store_goes_silent() {
    eight_processes_one_store_dies(true);
}

fn sqlite_pair() -> (tempfile::TempDir, SqliteSegmentStore, SqliteSegmentStore) {
    let dir = tempfile::tempdir().unwrap();
    let a = SqliteSegmentStore::new(dir.path().join("a.db"));
    let b = SqliteSegmentStore::new(dir.path().join("b.db"));
    (dir, a, b)
}

#[test]
fn a_store_is_never_served_under_another_class() {
    let (_dir, a, b) = sqlite_pair();
    let first = ResidueSegmentGenerator::builder(TAG, 2)
        .store(a.clone(), 0)
        .store(b.clone(), 1)
        .create_missing(1)
        .build()
        .unwrap();
    let ids: Vec<u64> = (0..10).map(|_| first.next_uid().unwrap()).collect();
    assert_eq!(ids.iter().filter(|id| *id % 2 == 0).count(), 5, "{ids:?}");
    drop(first);
    // The stores swapped by mistake: refused, naming the class the tag was made for.
    let err = ResidueSegmentGenerator::builder(TAG, 2)
        .store(a.clone(), 1)
        .store(b.clone(), 0)
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("uidgen residue class 0 mod 2") && err.contains("use another tag"),
        "{err}"
    );
    // A plain tag is refused too.
    a.create("plain", 1, 10, "").unwrap();
    let err = ResidueSegmentGenerator::builder("plain", 2)
        .store(a.clone(), 0)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("described \"\""), "{err}");
}

#[test]
fn a_residue_tag_is_created_only_where_its_start_is_named() {
    let (_dir, a, b) = sqlite_pair();
    // Not asked to create: a store without the tag is an error naming how to create it,
    // and nothing was created in either store.
    let err = ResidueSegmentGenerator::builder(TAG, 2)
        .store(a.clone(), 0)
        .store(b.clone(), 1)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not exist") && err.contains(TAG), "{err}");
    assert!(a.tag(TAG).unwrap().is_none() && b.tag(TAG).unwrap().is_none());
    // Asked with a start: every class's IDs are at or above it, each in its class.
    let orders = ResidueSegmentGenerator::builder(TAG, 3)
        .store(a.clone(), 0)
        .store(b.clone(), 2)
        .create_missing(1_001)
        .build()
        .unwrap();
    let ids: Vec<u64> = (0..20).map(|_| orders.next_uid().unwrap()).collect();
    assert!(ids.iter().all(|id| *id >= 1_001), "{ids:?}");
    assert!(ids.iter().any(|id| id % 3 == 0) && ids.iter().any(|id| id % 3 == 2));
    assert!(ids.iter().all(|id| id % 3 != 1), "{ids:?}");
}

#[test]
fn bad_classes_name_the_limit() {
    let (_dir, a, b) = sqlite_pair();
    let message =
        |builder: uidgen::ResidueSegmentGeneratorBuilder| builder.build().unwrap_err().to_string();
    assert_eq!(
        message(ResidueSegmentGenerator::builder(TAG, 1).store(a.clone(), 0)),
        "modulus = 1 is out of range: 2..=1024"
    );
    assert_eq!(
        message(ResidueSegmentGenerator::builder(TAG, 2)),
        "stores = 0 is out of range: 1..=2 (one class each)"
    );
    assert_eq!(
        message(ResidueSegmentGenerator::builder(TAG, 2).store(a.clone(), 2)),
        "remainder = 2 is out of range: 0..2 and one store per remainder ([] taken)"
    );
    assert_eq!(
        message(
            ResidueSegmentGenerator::builder(TAG, 3)
                .store(a, 1)
                .store(b, 1)
        ),
        "remainder = 1 is out of range: 0..3 and one store per remainder ([1] taken)"
    );
}

#[test]
fn a_store_down_at_start_joins_when_it_answers() {
    let (a, b) = (
        Fixture::new(StoreKind::MySql),
        Fixture::new(StoreKind::Postgres),
    );
    let relay = Relay::to(a.server_addr().unwrap());
    let (a_url, _) = via(&a.url, relay.addr);
    relay.cut();
    let generator = generator(&a, &a_url, &b);
    assert_eq!(generator.started(), [1]);
    assert!((0..100).all(|_| generator.next_uid().unwrap() % 2 == 1));
    relay.restore();
    // A store that comes back without the tag may have lost it: the retry never creates
    // it (one made again at 1 would repeat its IDs), so the class stays off.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(generator.started(), [1]);
    assert!(
        a.segment_store().tag(TAG).unwrap().is_none(),
        "the retry created it"
    );
    // Created on purpose (as the class it is), the store joins at the next retry.
    a.segment_store()
        .create(
            TAG,
            1,
            20,
            "uidgen residue class 0 mod 2: IDs are max_id x 2 + 0",
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while generator.started() != [0, 1] {
        assert!(Instant::now() < deadline, "store A never joined");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ids: Vec<u64> = (0..100).map(|_| generator.next_uid().unwrap()).collect();
    assert!(
        ids.iter().any(|id| id % 2 == 0),
        "no ID from the store that came back"
    );
}

/// A store whose counters map past 2^63 - 1 for its class is used up; takes go to the
/// other store (IDs above the largest BIGINT never go out).
#[test]
fn a_class_past_the_largest_bigint_is_used_up_and_the_other_serves() {
    let dir = tempfile::tempdir().unwrap();
    let a = SqliteSegmentStore::new(dir.path().join("a.db"));
    let b = SqliteSegmentStore::new(dir.path().join("b.db"));
    // A store migrated from an auto-increment scheme, its counter near i64::MAX / 2.
    a.create(
        "order",
        (i64::MAX as u64) / 2 - 2,
        10,
        "uidgen residue class 0 mod 2: IDs are max_id x 2 + 0",
    )
    .unwrap();
    let orders = ResidueSegmentGenerator::builder("order", 2)
        .store(a, 0)
        .store(b, 1)
        .create_missing(1)
        .build()
        .unwrap();
    let results: Vec<_> = (0..40).map(|_| orders.next_uid()).collect();
    let taken: Vec<u64> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().copied())
        .collect();
    assert!(taken.iter().all(|&id| id <= i64::MAX as u64), "{taken:?}");
    // The three IDs store A still had (counters MAX/2 - 2 to MAX/2: IDs up to 2^63 - 2),
    // then only B's.
    assert_eq!(
        taken.iter().filter(|&&id| id % 2 == 0).count(),
        3,
        "{taken:?}"
    );
    let failed: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().err().map(|e| e.to_string()))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 40 takes failed while store B had IDs; first: {}",
        failed.len(),
        failed.first().cloned().unwrap_or_default()
    );
}

/// With default store timeouts (5 s) and take policy (1 s), a silent MariaDB must not hold
/// up PostgreSQL's fetches when load rises: each store has its own prefetch thread.
/// (Found by a review: on the one shared prefetch thread, takes failed.)
#[test]
fn a_silent_store_does_not_hold_up_the_others_fetches_under_a_burst() {
    let _alone = HEAVY.lock().unwrap_or_else(|p| p.into_inner());
    let (a, b) = (
        Fixture::new(StoreKind::MySql),
        Fixture::new(StoreKind::Postgres),
    );
    let relay = relay::Relay::to(a.server_addr().unwrap());
    let (a_url, _) = relay::via(&a.url, relay.addr);
    let orders = ResidueSegmentGenerator::builder("order", 2)
        .store(a.segment_store_at(&a_url, None), 0)
        .store(b.segment_store_at(&b.url, None), 1)
        .create_missing(1)
        .build()
        .unwrap();
    // A steady ~5,000 IDs a second, then the burst.
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < Duration::from_secs(2) {
        orders.next_uid().unwrap();
        n += 1;
        if n.is_multiple_of(10) {
            thread::sleep(Duration::from_millis(1));
        }
    }
    relay.silence();
    thread::sleep(Duration::from_millis(500));
    let (mut ok, mut failed, mut first_err) = (0u64, 0u64, None);
    let end = Instant::now() + Duration::from_secs(8);
    while Instant::now() < end {
        match orders.next_uid() {
            Ok(_) => ok += 1,
            Err(e) => {
                failed += 1;
                first_err.get_or_insert(e.to_string());
            }
        }
    }
    assert_eq!(
        failed, 0,
        "{ok} taken, {failed} failed; first: {first_err:?}"
    );
}
