//! Segment mode against real stores: SQLite in a temporary file, MySQL/MariaDB,
//! PostgreSQL and Redis (URLs from UIDGEN_MYSQL_URL, UIDGEN_POSTGRES_URL and
//! UIDGEN_REDIS_URL; scripts/test makes them reachable). Each test runs for all four
//! stores, each on a table, key prefix or file of its own, dropped at the end.

#[path = "support/relay.rs"]
mod relay;
#[path = "support/servers.rs"]
mod servers;

#[path = "support/stores.rs"]
mod stores;

use relay::{via, Relay};
use std::collections::HashSet;
use std::io::Write;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use stores::{for_each_store, for_each_store_side_by_side, Fixture, Segments as Shared};
use uidgen::StoreKind as Kind;
use uidgen::{
    GiveBack, MySqlSegmentStore, PostgresSegmentStore, RedisSegmentStore, SegmentError,
    SegmentGenerator, SegmentStore, SqliteSegmentStore, StoreError, TagRecord, TakeRejectPolicy,
    UidError,
};

/// The take policy of tests about what IDs come, not how fast: every test in this file
/// shares one prefetch thread, and some keep it busy (1,000 tags, stores cut).
fn patient() -> TakeRejectPolicy {
    TakeRejectPolicy::wait(Duration::from_secs(30))
}

#[test]
fn ranges_are_taken_in_one_step_and_given_back_only_when_no_one_took_after() {
    for_each_store(|fixture| {
        let store = fixture.segment_store();
        assert!(store.create("order", 1, 1000, "orders").unwrap());
        assert!(!store.create("order", 500, 7, "again").unwrap(), "exists");
        let record = store.tag("order").unwrap().unwrap();
        assert_eq!(
            (record.max_id, record.step, record.description.as_str()),
            (1, 1000, "orders"),
            "an existing tag is left as it is"
        );
        // Leaf's semantics: max_id is the first ID not yet handed out.
        assert_eq!(store.allocate("order", 1000).unwrap(), 1001);
        assert_eq!(store.allocate("order", 50).unwrap(), 1051);
        // Give back [1031, 1051): only from the current counter.
        assert!(!store.give_back("order", 1001, 1000).unwrap(), "stale from");
        assert!(store.give_back("order", 1051, 1031).unwrap());
        assert_eq!(store.tag("order").unwrap().unwrap().max_id, 1031);
        assert!(!store.give_back("order", 1031, 1040).unwrap(), "never up");
        // A tag with a very large counter: no rounding (Redis' Lua numbers are doubles).
        let big = (1u64 << 60) + 1;
        assert!(store.create("big", big, 10, "").unwrap());
        assert_eq!(store.allocate("big", 3).unwrap(), big + 3);
        // Listing: ordered by tag.
        let tags: Vec<String> = store.tags().unwrap().into_iter().map(|r| r.tag).collect();
        assert_eq!(tags, ["big", "order"]);
        // A tag that does not exist: named, with how to create it.
        let err = store.allocate("nope", 10).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, StoreError::MissingTag { .. })
                && message.contains("\"nope\"")
                && message.contains("SegmentStore::create(")
                && !message.contains("uidgen segment"),
            "{message}"
        );
        assert!(store.tag("nope").unwrap().is_none());
        // Bad input: refused by name, with the limit.
        for (tag, first, step, words) in [
            ("", 1, 10, "1 to 128 characters"),
            ("a\nb", 1, 10, "control"),
            (&"x".repeat(129)[..], 1, 10, "1 to 128"),
            ("t", 1, 0, "step 0 is out of range: 1..=2147483647"),
            ("t", 0, 10, "first ID 0 is out of range"),
            ("t", i64::MAX as u64, 10, "first ID"),
        ] {
            let err = store.create(tag, first, step, "").unwrap_err().to_string();
            assert!(err.contains(words), "{tag:?} {first} {step}: {err}");
        }
        let err = store.create("t", 1, 10, &"d".repeat(257)).unwrap_err();
        assert!(
            err.to_string().contains("257 characters; at most 256"),
            "{err}"
        );
        assert!(store.create("t", 1, 10, &"d".repeat(256)).unwrap());
        // A counter that would pass the largest BIGINT: an error, not a wrapped range.
        assert!(store.create("edge", i64::MAX as u64 - 20, 10, "").unwrap());
        let err = store.allocate("edge", 30).unwrap_err().to_string();
        assert!(
            err.contains("edge") && err.contains(&i64::MAX.to_string()),
            "{err}"
        );
        assert_eq!(store.allocate("edge", 10).unwrap(), i64::MAX as u64 - 10);
    });
}

#[test]
fn a_fresh_table_raced_by_eight_threads_gives_distinct_ranges() {
    for_each_store(|fixture| {
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let store = fixture.segment_store();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    store.create("race", 1, 100, "").unwrap();
                    (0..50)
                        .map(|_| store.allocate("race", 100).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut ends: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().expect("a thread panicked"))
            .collect();
        ends.sort_unstable();
        let expected: Vec<u64> = (1..=400).map(|i| 1 + 100 * i).collect();
        assert_eq!(ends, expected, "every range once, none skipped");
    });
}

#[test]
fn ids_are_dense_and_a_graceful_restart_goes_on_after_the_last() {
    for_each_store(|fixture| {
        // Patient: this test is about density, and every test here shares the one
        // prefetch thread (the 1,000-tag test keeps it busy).
        let generator = SegmentGenerator::builder(fixture.segment_store(), "user")
            .create_missing(1, 1000)
            .take_reject_policy(patient())
            .build()
            .unwrap();
        let ids: Vec<u64> = (0..2_500).map(|_| generator.next_uid().unwrap()).collect();
        assert_eq!(ids, (1..=2_500).collect::<Vec<_>>(), "dense from 1");
        // Let the prefetch thread fetch ahead, so giving back has ranges to return.
        std::thread::sleep(Duration::from_millis(300));
        let last = *ids.last().unwrap();
        let outcome = generator.shutdown().unwrap();
        assert!(
            matches!(outcome, GiveBack::Returned { to, .. } if to == last + 1),
            "{outcome:?}"
        );
        // A new process: its first ID is the last one + 1; and again after a drop.
        let generator = SegmentGenerator::builder(fixture.segment_store(), "user")
            .build()
            .unwrap();
        assert_eq!(generator.next_uid().unwrap(), last + 1);
        assert_eq!(generator.next_uid().unwrap(), last + 2);
        drop(generator);
        let generator = SegmentGenerator::builder(fixture.segment_store(), "user")
            .build()
            .unwrap();
        assert_eq!(generator.next_uid().unwrap(), last + 3);
        // Someone takes a range after ours (once ours are fetched): the tail is not
        // given back (a gap).
        std::thread::sleep(Duration::from_millis(300));
        let other = fixture.segment_store();
        let taken_to = other.allocate("user", 10).unwrap();
        assert_eq!(generator.shutdown().unwrap(), GiveBack::AllocatedAfter);
        let generator = SegmentGenerator::builder(fixture.segment_store(), "user")
            .build()
            .unwrap();
        assert_eq!(generator.next_uid().unwrap(), taken_to);
    });
}

#[test]
fn a_missing_tag_fails_the_build_naming_it() {
    for_each_store(|fixture| {
        let err = SegmentGenerator::builder(fixture.segment_store(), "ghost")
            .build()
            .unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, SegmentError::Store(StoreError::MissingTag { .. }))
                && message.contains("\"ghost\"")
                && message.contains("create_missing(first_id, step)")
                && !message.contains("--tag"),
            "{message}"
        );
    });
}

const CHILD_ENV: &str = "UIDGEN_SEGMENT_CHILD";

/// Starts a child process that takes IDs of `tag` on `fixture`'s store with `threads`
/// threads, `count` each (0: until killed), writing each thread's IDs in order to
/// `out` as lines `thread id`.
fn spawn_child(
    fixture: &Fixture,
    tag: &str,
    threads: usize,
    count: u64,
    out: &std::path::Path,
) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_takes",
            "--ignored",
            "--nocapture",
            "-q",
        ])
        .env(
            CHILD_ENV,
            format!(
                "{tag}|{threads}|{count}|{}|{}",
                out.display(),
                fixture.spec()
            ),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("starting a child process")
}

/// One child of the tests below: see `spawn_child`.
#[test]
#[ignore = "run as a child process by the multi-process segment tests"]
fn child_process_takes() {
    let config = std::env::var(CHILD_ENV).expect("run by spawn_child");
    let mut parts = config.splitn(5, '|');
    let mut part = || parts.next().expect(CHILD_ENV);
    let (tag, threads, count, out, spec) = (part(), part(), part(), part(), part());
    let generator = Arc::new(
        SegmentGenerator::builder(Fixture::from_spec(spec).segment_store(), tag)
            .create_missing(1, 1000)
            .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(30)))
            .build()
            .unwrap(),
    );
    let count: u64 = count.parse().unwrap();
    let threads: Vec<_> = (0..threads.parse::<usize>().unwrap())
        .map(|t| {
            let generator = Arc::clone(&generator);
            let path = format!("{out}.{t}");
            std::thread::spawn(move || {
                let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
                let mut made = 0;
                while count == 0 || made < count {
                    writeln!(file, "{}", generator.next_uid().unwrap()).unwrap();
                    made += 1;
                    if count == 0 && made % 1024 == 0 {
                        file.flush().unwrap();
                    }
                }
                file.flush().unwrap();
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

/// Each thread's IDs from the files a child wrote (`out.0`, `out.1`, ...).
fn read_threads(out: &std::path::Path, threads: usize) -> Vec<Vec<u64>> {
    (0..threads)
        .map(|t| {
            std::fs::read_to_string(format!("{}.{t}", out.display()))
                .unwrap_or_default()
                .lines()
                .filter_map(|line| line.parse().ok())
                .collect()
        })
        .collect()
}

#[test]
fn eight_processes_of_four_threads_taking_100k_each_on_one_tag_repeat_nothing() {
    for_each_store(|fixture| {
        let dir = tempfile::tempdir().unwrap();
        // The tag exists before the race, so the children start at once.
        fixture.segment_store().create("hot", 1, 1000, "").unwrap();
        let children: Vec<_> = (0..8)
            .map(|p| {
                let out = dir.path().join(format!("p{p}"));
                (spawn_child(fixture, "hot", 4, 100_000, &out), out)
            })
            .collect();
        let mut all = HashSet::new();
        for (mut child, out) in children {
            assert!(child.wait().unwrap().success(), "a child failed");
            for ids in read_threads(&out, 4) {
                assert_eq!(ids.len(), 100_000);
                assert!(
                    ids.windows(2).all(|w| w[0] < w[1]),
                    "a thread's IDs increase"
                );
                for id in ids {
                    assert!(all.insert(id), "{id} handed out twice");
                }
            }
        }
        assert_eq!(all.len(), 3_200_000);
    });
}

#[test]
fn a_thousand_tags_in_one_process_share_one_prefetch_thread() {
    // Side by side: the time is the stores' latency, and the one prefetch thread serves
    // every store's tags at once.
    for_each_store_side_by_side(|fixture| {
        let store = fixture.segment_store();
        // The one prefetch thread fetches for every tag in turn: on etcd (a consensus
        // write a range, about 90 s for all of them here) the last tag's turn came after
        // the 30 s the other tests wait, once, in CI.
        let very_patient = TakeRejectPolicy::wait(Duration::from_secs(180));
        let generators: Vec<SegmentGenerator> = (0..1_000)
            .map(|i| {
                SegmentGenerator::builder(store.clone(), &format!("tag-{i}"))
                    .create_missing(1, 10)
                    .take_reject_policy(very_patient.clone())
                    .build()
                    .unwrap()
            })
            .collect();
        for generator in &generators {
            let ids: Vec<u64> = (0..25).map(|_| generator.next_uid().unwrap()).collect();
            assert_eq!(ids, (1..=25).collect::<Vec<_>>(), "{}", generator.tag());
        }
        // Thread names are cut to 15 bytes in /proc.
        let prefetchers = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|comm| uidgen::PREFETCH_THREAD_NAME.starts_with(comm.trim()))
            .count();
        assert_eq!(prefetchers, 1, "one prefetch thread for every tag");
        assert_eq!(store.tags().unwrap().len(), 1_000);
    });
}

#[test]
fn a_killed_process_wastes_at_most_its_fetched_runway() {
    for_each_store(|fixture| {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("killed");
        fixture
            .segment_store()
            .create("crash", 1, 1000, "")
            .unwrap();
        let mut child = spawn_child(fixture, "crash", 1, 0, &out);
        // Until it has handed out a fair number.
        let started = Instant::now();
        while read_threads(&out, 1)[0].len() < 50_000 {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "child too slow"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // SIGKILL: no drop, no give-back.
        child.kill().unwrap();
        child.wait().unwrap();
        let issued = read_threads(&out, 1).remove(0);
        let highest = *issued.iter().max().unwrap();
        let generator = SegmentGenerator::builder(fixture.segment_store(), "crash")
            .build()
            .unwrap();
        let next = generator.next_uid().unwrap();
        assert!(next > highest, "{next} after {highest}: a repeat");
        // The documented bound: (prefetch distance + 1) × max step.
        let bound = (uidgen::DEFAULT_MAX_PREFETCH_DISTANCE + 1) * uidgen::DEFAULT_MAX_STEP;
        assert!(
            next - highest <= bound,
            "gap {} beyond the bound {bound}",
            next - highest
        );
        eprintln!("{:?}: gap after SIGKILL {}", fixture.kind, next - highest);
    });
}

#[test]
fn a_store_that_dies_mid_run_serves_the_runway_then_names_itself_and_recovers() {
    for kind in [Kind::MySql, Kind::Redis, Kind::Postgres] {
        let fixture = Fixture::new(kind);
        fixture
            .segment_store()
            .create("outage", 1, 1000, "")
            .unwrap();
        let (_, upstream) = via(&fixture.url, "127.0.0.1:1".parse().unwrap());
        let relay = Relay::to(upstream);
        let (relayed, _) = via(&fixture.url, relay.addr);
        let store = fixture.segment_store_at(&relayed, Some(Duration::from_millis(300)));
        // The build fetches the first range through the relay, 300 ms a step: retry it
        // as the warm-up below is retried.
        let built = Instant::now();
        let generator = loop {
            match SegmentGenerator::builder(store.clone(), "outage")
                .max_step(1000)
                .take_reject_policy(TakeRejectPolicy::wait(Duration::from_millis(200)))
                .build()
            {
                Ok(generator) => break generator,
                Err(err) => assert!(
                    built.elapsed() < Duration::from_secs(30),
                    "{kind:?}: the store was up for 30 s and still: {err}"
                ),
            }
        };
        let mut seen = HashSet::new();
        let mut last = 0;
        // Before the cut a fetch may outlast the 200 ms policy on a loaded machine (the
        // relay adds a hop, and CI runs other tests at once): retry until a deadline.
        let warm_up = Instant::now();
        while seen.len() < 5_000 {
            match generator.next_uid() {
                Ok(id) => {
                    assert!(id > last && seen.insert(id), "{kind:?}: {id} after {last}");
                    last = id;
                }
                Err(err @ UidError::SegmentExhausted { .. }) => assert!(
                    warm_up.elapsed() < Duration::from_secs(30),
                    "{kind:?}: the store was up for 30 s and still: {err}"
                ),
                Err(err) => panic!("{kind:?}: before the cut: {err}"),
            }
        }
        // Wait until a range ahead is fetched, then cut the store.
        let started = Instant::now();
        while generator.stats().ids_left < 1_000 {
            assert!(started.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(10));
        }
        let runway = generator.stats().ids_left;
        relay.cut();
        let err = loop {
            match generator.next_uid() {
                Ok(id) => {
                    assert!(id > last && seen.insert(id), "{kind:?}: {id} after {last}");
                    last = id;
                }
                Err(err) => break err,
            }
        };
        let served = seen.len() as u64 - 5_000;
        assert!(
            served >= runway,
            "{kind:?}: served {served} of a runway of {runway} after the cut"
        );
        let message = err.to_string();
        assert!(
            matches!(err, UidError::SegmentExhausted { .. })
                && message.contains("outage")
                && message.contains(&relay.addr.to_string()),
            "{kind:?}: {message}"
        );
        assert!(
            !message.contains("secret"),
            "{kind:?}: never a password: {message}"
        );
        // The one prefetch thread may still be at another test's tag: give it time to
        // try this store and record the failure.
        let failing = Instant::now();
        while generator.stats().store_error.is_none() {
            assert!(
                failing.elapsed() < Duration::from_secs(10),
                "{kind:?}: {:?}",
                generator.stats()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // try_next_uid does not say "would block" forever: it names the failing store.
        match generator.try_next_uid() {
            Err(err @ UidError::SegmentExhausted { .. }) => assert!(
                err.to_string().contains(&relay.addr.to_string()),
                "{kind:?}: {err}"
            ),
            other => panic!("{kind:?}: try_next_uid during the outage: {other:?}"),
        }
        // The store comes back: the generator goes on by itself, above every ID before.
        relay.restore();
        let back = Instant::now();
        let id = loop {
            match generator.next_uid() {
                Ok(id) => break id,
                Err(_) => assert!(
                    back.elapsed() < Duration::from_secs(10),
                    "{kind:?}: no recovery"
                ),
            }
        };
        assert!(id > last && seen.insert(id), "{kind:?}: {id} after {last}");
        assert!(generator.stats().store_error.is_none());
        eprintln!("{kind:?}: served {served} IDs after the cut, then: {message}");
    }
}

#[test]
fn a_store_rolled_back_below_a_range_in_use_is_refused_loudly() {
    for_each_store(|fixture| {
        let store = fixture.segment_store();
        store.create("rollback", 1, 100, "").unwrap();
        let generator = SegmentGenerator::builder(fixture.segment_store(), "rollback")
            .max_step(100)
            .max_prefetch_distance(1)
            .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(5)))
            .build()
            .unwrap();
        let first = generator.next_uid().unwrap();
        // Let the range ahead be fetched, then restore the counter to an old backup.
        std::thread::sleep(Duration::from_millis(300));
        let highest = store.tag("rollback").unwrap().unwrap().max_id;
        assert!(store.give_back("rollback", highest, 1).unwrap());
        let mut seen = HashSet::from([first]);
        let err = loop {
            match generator.next_uid() {
                Ok(id) => assert!(seen.insert(id), "{id} repeated"),
                Err(err) => break err,
            }
            assert!(seen.len() < 10_000, "never refused");
        };
        let message = err.to_string();
        assert!(
            message.contains("restored or rolled back") && message.contains("rollback"),
            "{message}"
        );
        assert!(seen.iter().all(|&id| id < highest));
    });
}

#[cfg(feature = "tokio")]
#[test]
fn async_tasks_on_many_threads_get_distinct_increasing_ids() {
    let fixture = Fixture::new(Kind::Sqlite);
    let generator = Arc::new(
        SegmentGenerator::builder(fixture.segment_store(), "async")
            .create_missing(1, 100)
            .take_reject_policy(patient())
            .build()
            .unwrap(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let all: Vec<Vec<u64>> = runtime.block_on(async {
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let generator = Arc::clone(&generator);
                tokio::spawn(async move {
                    let mut ids = Vec::new();
                    for i in 0..2_000 {
                        ids.push(if i % 2 == 0 {
                            generator.next_uid_async().await.unwrap()
                        } else {
                            let asked = Instant::now();
                            loop {
                                match generator.try_next_uid() {
                                    Ok(id) => break id,
                                    Err(UidError::WouldBlock { .. }) => {
                                        assert!(
                                            asked.elapsed() < Duration::from_secs(30),
                                            "no range for 30 s: is the prefetch thread alive?"
                                        );
                                        tokio::task::yield_now().await
                                    }
                                    Err(e) => panic!("{e}"),
                                }
                            }
                        });
                        if i % 100 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                    ids
                })
            })
            .collect();
        let mut all = Vec::new();
        for task in tasks {
            all.push(task.await.unwrap());
        }
        all
    });
    let mut seen = HashSet::new();
    for ids in all {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "a task's IDs increase");
        for id in ids {
            assert!(seen.insert(id));
        }
    }
    assert_eq!(seen.len(), 32_000);
}

#[test]
fn short_lived_threads_and_several_generators_in_one_thread() {
    let fixture = Fixture::new(Kind::Sqlite);
    let a = Arc::new(
        SegmentGenerator::builder(fixture.segment_store(), "a")
            .create_missing(1, 10)
            .take_reject_policy(patient())
            .build()
            .unwrap(),
    );
    let b = SegmentGenerator::builder(fixture.segment_store(), "b")
        .create_missing(1, 10)
        .take_reject_policy(patient())
        .build()
        .unwrap();
    // Two generators in turn on one thread: each dense on its own.
    let (mut from_a, mut from_b) = (Vec::new(), Vec::new());
    for _ in 0..1_000 {
        from_a.push(a.next_uid().unwrap());
        from_b.push(b.next_uid().unwrap());
    }
    assert_eq!(from_a, (1..=1_000).collect::<Vec<_>>());
    assert_eq!(from_b, (1..=1_000).collect::<Vec<_>>());
    // 200 threads that take three IDs each and end.
    let mut seen: HashSet<u64> = from_a.into_iter().collect();
    for _ in 0..20 {
        let threads: Vec<_> = (0..10)
            .map(|_| {
                let a = Arc::clone(&a);
                std::thread::spawn(move || [(); 3].map(|()| a.next_uid().unwrap()))
            })
            .collect();
        for thread in threads {
            for id in thread.join().unwrap() {
                assert!(seen.insert(id), "{id} twice");
            }
        }
    }
    assert_eq!(seen.len(), 1_600);
    assert!(seen.iter().all(|&id| id <= 1_600 + 64), "dense: few gaps");
}

#[test]
fn bad_urls_and_settings_are_errors_that_name_the_limit_and_hide_the_password() {
    let err = MySqlSegmentStore::new("mysql://root:secret123@/test").unwrap_err();
    assert!(!err.to_string().contains("secret123"), "{err}");
    let err = PostgresSegmentStore::new("postgres://u:secret123@h/db?password=x").unwrap_err();
    assert!(!format!("{err} {err:?}").contains("secret123"), "{err}");
    let err = RedisSegmentStore::new("redis://:secret123@h:99999").unwrap_err();
    assert!(!format!("{err} {err:?}").contains("secret123"), "{err}");
    let store = MySqlSegmentStore::new("mysql://root:secret123@127.0.0.1/test").unwrap();
    assert!(!format!("{store:?}").contains("secret123"));
    let fixture = Fixture::new(Kind::Sqlite);
    for (builder, words) in [
        (
            SegmentGenerator::builder(fixture.segment_store(), "x").max_step(0),
            "max_step = 0 is out of range",
        ),
        (
            SegmentGenerator::builder(fixture.segment_store(), "x").max_prefetch_distance(16),
            "max_prefetch_distance = 16 is out of range: 1..=15",
        ),
        (
            SegmentGenerator::builder(fixture.segment_store(), "x").range_lifetime(Duration::ZERO),
            "range_lifetime",
        ),
        (
            SegmentGenerator::builder(fixture.segment_store(), "").create_missing(1, 10),
            "1 to 128 characters",
        ),
        (
            SegmentGenerator::builder(fixture.segment_store(), "x").create_missing(1, 0),
            "step 0 is out of range",
        ),
    ] {
        let err = builder.build().unwrap_err().to_string();
        assert!(err.contains(words), "{err}");
    }
    let err = SqliteSegmentStore::new(":memory:").tags().unwrap_err();
    assert!(err.to_string().contains("in-memory"), "{err}");
}

/// A store that panics on every allocation after the first: a bug in a user's store.
#[derive(Debug)]
struct PanicsAfterOne(Shared, std::sync::atomic::AtomicU32);

impl SegmentStore for PanicsAfterOne {
    fn describe(&self) -> String {
        "a store that panics".into()
    }
    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        if self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 1 {
            panic!("a bug in this store");
        }
        self.0.allocate(tag, step)
    }
    fn create(&self, tag: &str, first: u64, step: u64, text: &str) -> Result<bool, StoreError> {
        self.0.create(tag, first, step, text)
    }
    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        self.0.give_back(tag, from, to)
    }
    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        self.0.tag(tag)
    }
    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        self.0.tags()
    }
}

#[test]
fn a_store_that_panics_fails_its_own_tag_and_no_other() {
    let fixture = Fixture::new(Kind::Sqlite);
    let broken = SegmentGenerator::builder(
        PanicsAfterOne(fixture.segment_store(), Default::default()),
        "broken",
    )
    .create_missing(1, 100)
    .max_step(100)
    .take_reject_policy(TakeRejectPolicy::wait(Duration::from_millis(300)))
    .build()
    .unwrap();
    let healthy = SegmentGenerator::builder(fixture.segment_store(), "healthy")
        .create_missing(1, 100)
        .max_step(100)
        .take_reject_policy(patient())
        .build()
        .unwrap();
    // The panic is recorded once the prefetch thread has unwound, which printing a
    // backtrace (RUST_BACKTRACE) can make slower than the 300 ms policy: until then a
    // take may only say the range did not come in time.
    let deadline = Instant::now() + Duration::from_secs(30);
    let err = loop {
        match broken.next_uid() {
            Err(err) if err.to_string().contains("did not come in time") => {
                assert!(Instant::now() < deadline, "never said why: {err}")
            }
            Err(err) => break err,
            Ok(_) => {}
        }
    };
    assert!(
        err.to_string().contains("panicked: a bug in this store"),
        "{err}"
    );
    // The prefetch thread lived on: the healthy tag goes through many ranges.
    let ids: Vec<u64> = (0..5_000).map(|_| healthy.next_uid().unwrap()).collect();
    assert_eq!(ids, (1..=5_000).collect::<Vec<_>>());
}

/// Tags are compared byte for byte on every store: case makes another tag, and white
/// space at either end is refused everywhere (a SQL PAD SPACE collation would otherwise
/// take `tag ` for `tag`). The review found MySQL sharing one counter among `CaseTag`,
/// `casetag` and `casetag `.
#[test]
fn tags_compare_byte_for_byte_on_every_store() {
    for_each_store(|fixture| {
        let store = fixture.segment_store();
        assert!(store.create("CaseTag", 1, 10, "").unwrap());
        assert!(
            store.create("casetag", 1_000, 10, "").unwrap(),
            "a tag of its own"
        );
        assert_eq!(store.allocate("CaseTag", 10).unwrap(), 11);
        assert_eq!(store.allocate("casetag", 10).unwrap(), 1_010);
        assert_eq!(store.tag("CASETAG").unwrap(), None);
        for bad in ["casetag ", " casetag", "case\ttag", ""] {
            let err = store.create(bad, 1, 10, "").unwrap_err();
            assert!(
                matches!(err, StoreError::InvalidName { what: "tag", .. }),
                "{bad:?}: {err}"
            );
            assert!(store.allocate(bad, 10).is_err(), "{bad:?}");
        }
        let names: Vec<String> = store.tags().unwrap().into_iter().map(|t| t.tag).collect();
        assert_eq!(names, ["CaseTag", "casetag"], "sorted by bytes");
    });
}

/// A `leaf_alloc` made by Leaf's own DDL (biz_tag in the server's case-insensitive
/// default collation) is moved to a binary collation when the store first connects, and
/// its counters are kept.
#[test]
fn a_leaf_table_with_a_case_insensitive_tag_column_is_moved_to_bytes() {
    use mysql_async::prelude::Queryable;
    let fixture = Fixture::new(Kind::MySql);
    let table = fixture.segment_name();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let collation = |conn: &mut mysql_async::Conn| {
        runtime.block_on(conn.exec_first::<String, _, _>(
            "SELECT COLLATION_NAME FROM information_schema.COLUMNS
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'biz_tag'",
            (table.as_str(),),
        ))
    };
    let mut conn = runtime
        .block_on(mysql_async::Conn::from_url(fixture.url.as_str()))
        .unwrap();
    runtime
        .block_on(conn.query_drop(format!(
            "CREATE TABLE {table} (
               biz_tag VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci
                 NOT NULL DEFAULT '',
               max_id BIGINT NOT NULL DEFAULT 1, step INT NOT NULL,
               description VARCHAR(256) DEFAULT NULL,
               update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
               PRIMARY KEY (biz_tag)) ENGINE = InnoDB;
             INSERT INTO {table} (biz_tag, max_id, step) VALUES ('Order', 500, 100)"
        )))
        .unwrap();
    assert_eq!(
        collation(&mut conn).unwrap().as_deref(),
        Some("utf8mb4_general_ci")
    );
    let store = fixture.segment_store();
    assert_eq!(
        store.allocate("Order", 100).unwrap(),
        600,
        "the counter kept"
    );
    assert_eq!(
        collation(&mut conn).unwrap().as_deref(),
        Some("utf8mb4_bin")
    );
    assert!(
        store.create("order", 1, 100, "").unwrap(),
        "now a tag of its own"
    );
    assert_eq!(store.allocate("order", 100).unwrap(), 101);
    runtime.block_on(conn.disconnect()).unwrap();
}
