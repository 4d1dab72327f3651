//! Every lease store against a real server: SQLite in a temporary file, MySQL/MariaDB,
//! PostgreSQL and Redis (URLs from UIDGEN_MYSQL_URL, UIDGEN_POSTGRES_URL and
//! UIDGEN_REDIS_URL; scripts/test makes them reachable). Each test runs for all four
//! stores, each on a table or key prefix of its own, dropped at the end.

#[path = "support/relay.rs"]
mod relay;
#[path = "support/servers.rs"]
mod servers;
#[path = "support/stores.rs"]
mod stores;

use relay::{via, Relay};
use servers::{mysql_url, postgres_url, redis_url};
use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use stores::{for_each_store, kinds, Fixture, Leases as Shared};
use uidgen::StoreKind as Kind;
use uidgen::{
    Acquired, BitsAllocator, CachedUidGenerator, LeaseRequest, LeaseStore, MySqlLeaseStore,
    PostgresLeaseStore, RedisLeaseStore, SqliteLeaseStore, StoreError, UidGenerator, WorkerLease,
};

fn request(holder: &str, ttl: Duration, max: u64, worker_id: Option<u64>) -> LeaseRequest<'_> {
    let mut request = LeaseRequest::new(holder, ttl, max);
    request.worker_id = worker_id;
    request
}

const TTL: Duration = Duration::from_secs(30);

fn granted(store: &Shared, holder: &str, max: u64, wanted: Option<u64>) -> (u64, u64) {
    match store.acquire(&request(holder, TTL, max, wanted)) {
        Ok(Acquired::Granted { worker_id, mark_ms }) => (worker_id, mark_ms),
        other => panic!(
            "{holder} asked {wanted:?} of {}: {other:?}",
            store.describe()
        ),
    }
}

#[test]
fn lowest_free_first_and_reuse_with_the_released_mark() {
    for_each_store(|fixture| {
        let store = fixture.lease_store();
        assert_eq!(granted(&store, "a", 1023, None), (0, 0));
        assert_eq!(granted(&store, "b", 1023, None), (1, 0));
        assert_eq!(granted(&store, "c", 1023, None), (2, 0));
        // Released with a mark: the next taker gets the lowest free ID and that mark.
        assert!(store.release(1, "b", 1_700_000_000_123).unwrap());
        assert!(!store.release(1, "b", 5).unwrap(), "released twice");
        assert_eq!(granted(&store, "d", 1023, None), (1, 1_700_000_000_123));
        // Renew raises the mark, never lowers it, and counts when nothing changes (two
        // renewals in one millisecond).
        assert!(store.renew(0, "a", TTL, 500).unwrap());
        // Back to back, so some fall in the same millisecond and change no column: still
        // renewed (MySQL counts matched rows, not changed ones).
        for _ in 0..20 {
            assert!(store.renew(0, "a", TTL, 100).unwrap());
        }
        assert!(!store.renew(0, "b", TTL, 900).unwrap(), "not b's lease");
        assert!(!store.release(0, "b", 900).unwrap(), "not b's lease");
        // A requested ID leaves a gap; the gap is filled before new IDs are made.
        assert_eq!(granted(&store, "e", 1023, Some(5)), (5, 0));
        assert_eq!(granted(&store, "f", 1023, None), (3, 0));
        assert_eq!(granted(&store, "g", 1023, None), (4, 0));
        assert_eq!(granted(&store, "h", 1023, None), (6, 0));
        // A released ID is reused before a never-used one; mark exactly as released.
        assert!(store.release(4, "g", 42).unwrap());
        assert_eq!(granted(&store, "i", 1023, None), (4, 42));
        let leases = store.leases().unwrap();
        let ids: Vec<u64> = leases.iter().map(|l| l.worker_id).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(leases[0].mark_ms, 500);
        assert_eq!(leases[0].holder.as_deref(), Some("a"));
        assert!(leases[0]
            .expires_in
            .is_some_and(|left| left <= TTL && left > TTL / 2));
        assert_eq!(leases[1].mark_ms, 1_700_000_000_123);
        assert_eq!(leases[4].holder.as_deref(), Some("i"));
    });
}

/// "Lowest free" is one rule on every engine: the lowest worker ID that is never used,
/// or released, or expired, whichever is lowest (the review found SQLite taking a gap
/// below a released row and the others taking the released row).
#[test]
fn lowest_free_is_the_same_on_every_store_with_a_released_row_above_a_gap() {
    for_each_store(|fixture| {
        let store = fixture.lease_store();
        // Rows 3 and 7 only, by name: 0, 1, 2, 4, 5, 6 are gaps never used.
        assert_eq!(granted(&store, "a", 1023, Some(3)), (3, 0));
        assert_eq!(granted(&store, "b", 1023, Some(7)), (7, 0));
        assert!(store.release(3, "a", 77).unwrap());
        // The gap 0 is below the released row 3: 0 first.
        assert_eq!(granted(&store, "c", 1023, None), (0, 0));
        assert_eq!(granted(&store, "d", 1023, None), (1, 0));
        assert_eq!(granted(&store, "e", 1023, None), (2, 0));
        // Now the released row 3 is below the gap 4: 3, with its mark.
        assert_eq!(granted(&store, "f", 1023, None), (3, 77));
        assert_eq!(granted(&store, "g", 1023, None), (4, 0));
        // An expired lease counts as free: 7's holder never renews (TTL 300 ms).
        assert!(store.renew(7, "b", Duration::from_millis(300), 0).unwrap());
        std::thread::sleep(fixture.outlived(Duration::from_millis(600)));
        assert!(store.release(1, "d", 11).unwrap());
        assert_eq!(
            granted(&store, "h", 1023, None),
            (1, 11),
            "released 1 < gap 5"
        );
        assert_eq!(granted(&store, "i", 1023, None), (5, 0));
        assert_eq!(granted(&store, "j", 1023, None), (6, 0));
        assert_eq!(
            granted(&store, "k", 1023, None),
            (7, 0),
            "expired 7 < gap 8"
        );
        assert_eq!(store.leases().unwrap().len(), 8);
    });
}

/// The time mark only goes up while a holder renews (whatever order renewals arrive
/// in); only its release, which knows the exact ticks used, sets it.
#[test]
fn the_time_mark_never_goes_down_on_renewal() {
    for_each_store(|fixture| {
        let store = fixture.lease_store();
        assert_eq!(granted(&store, "a", 1023, None), (0, 0));
        for (mark, expected) in [(1_000, 1_000), (900, 1_000), (1_500, 1_500), (0, 1_500)] {
            assert!(store.renew(0, "a", TTL, mark).unwrap());
            assert_eq!(store.leases().unwrap()[0].mark_ms, expected, "after {mark}");
        }
        // Another holder cannot move it at all.
        assert!(!store.renew(0, "b", TTL, 9_999).unwrap());
        assert_eq!(store.leases().unwrap()[0].mark_ms, 1_500);
        assert!(store.release(0, "a", 1_200).unwrap());
        assert_eq!(granted(&store, "c", 1023, None), (0, 1_200));
    });
}

#[test]
fn a_requested_id_held_by_a_live_lease_is_refused_until_released() {
    for_each_store(|fixture| {
        let store = fixture.lease_store();
        assert_eq!(granted(&store, "a", 1023, Some(7)), (7, 0));
        match store.acquire(&request("b", TTL, 1023, Some(7))).unwrap() {
            Acquired::Held { holder, expires_in } => {
                assert_eq!(holder, "a");
                assert!(expires_in <= TTL && expires_in > TTL / 2, "{expires_in:?}");
            }
            other => panic!("b got {other:?}"),
        }
        // The holder itself may take it again.
        assert_eq!(granted(&store, "a", 1023, Some(7)), (7, 0));
        assert!(store.release(7, "a", 77_777).unwrap());
        assert_eq!(granted(&store, "b", 1023, Some(7)), (7, 77_777));
        assert!(
            !store.renew(7, "a", TTL, 1).unwrap(),
            "a no longer holds it"
        );
        assert!(store.renew(7, "b", TTL, 1).unwrap());
    });
}

#[test]
fn leases_expire_on_the_store_clock() {
    for_each_store(|fixture| {
        let store = fixture.lease_store();
        // Long enough that a loaded machine (CI runs builds beside the tests) still
        // makes the next three calls inside it: 300 ms failed there once, and 2 s on
        // etcd (a 3-member cluster syncing each write to a disk the builds keep busy).
        let short = Duration::from_secs(5);
        match store.acquire(&request("a", short, 1023, None)).unwrap() {
            Acquired::Granted { worker_id, .. } => assert_eq!(worker_id, 0),
            other => panic!("{other:?}"),
        }
        assert!(store.renew(0, "a", short, 1_000).unwrap());
        assert_eq!(granted(&store, "b", 1023, None), (1, 0), "0 is still live");
        assert!(matches!(
            store.acquire(&request("c", TTL, 1023, Some(0))).unwrap(),
            Acquired::Held { .. }
        ));
        std::thread::sleep(fixture.outlived(Duration::from_millis(6_000)));
        assert_eq!(
            granted(&store, "c", 1023, None),
            (0, 1_000),
            "expired: the lowest free ID, with a's mark"
        );
        assert!(!store.renew(0, "a", short, 2_000).unwrap(), "a lost it");
        assert!(!store.release(0, "a", 2_000).unwrap(), "a lost it");
        let leases = store.leases().unwrap();
        assert_eq!(leases[0].holder.as_deref(), Some("c"));
        assert_eq!(leases[0].mark_ms, 1_000, "a's late renewal changed nothing");
    });
}

#[test]
fn exhausted_when_every_id_up_to_the_max_is_live() {
    for_each_store(|fixture| {
        let store = fixture.lease_store();
        for (holder, id) in [("a", 0), ("b", 1), ("c", 2)] {
            assert_eq!(granted(&store, holder, 2, None).0, id);
        }
        assert_eq!(
            store.acquire(&request("d", TTL, 2, None)).unwrap(),
            Acquired::Exhausted
        );
        // A gap above the maximum is not handed out either.
        assert_eq!(granted(&store, "e", 1023, Some(9)).0, 9);
        assert_eq!(
            store.acquire(&request("d", TTL, 2, None)).unwrap(),
            Acquired::Exhausted
        );
        assert!(store.release(1, "b", 3).unwrap());
        assert_eq!(granted(&store, "d", 2, None), (1, 3));
    });
}

/// Two deployments on one store with the ranges 0-2 and 5-6 (two regions sharing a
/// store, or each with its own: the range alone keeps them apart): each takes only its
/// own, the lowest free of its range first (a gap below the range is not taken, nor a
/// free row below it), is exhausted when its range is, and reuses its range's released
/// IDs. Through `WorkerLease`, as users set it.
#[test]
fn a_worker_id_range_is_kept_to_on_every_store() {
    for_each_store(|fixture| {
        let store = fixture.lease_store();
        let bits = BitsAllocator::default();
        let range = |text: &str| text.parse::<uidgen::WorkerIdRange>().unwrap();
        let lease = |holder: &str, ids: &str| {
            WorkerLease::builder(store.clone())
                .holder(holder)
                .worker_ids(range(ids))
                .acquire(&bits)
        };
        let mut held = Vec::new();
        // A row at 0 given back, so a free row lies below the second range.
        let first = lease("a0", "0-2").unwrap();
        assert_eq!(first.worker_id(), 0);
        drop(first);
        for (holder, expected) in [("b0", 5), ("b1", 6)] {
            let taken = lease(holder, "5-6").unwrap();
            assert_eq!(taken.worker_id(), expected, "{}", store.describe());
            held.push(taken);
        }
        let err = lease("b2", "5-6").unwrap_err().to_string();
        assert!(
            err.contains("in the range 5-6") && err.contains("all 2 are leased"),
            "{err}"
        );
        for (holder, expected) in [("a1", 0), ("a2", 1), ("a3", 2)] {
            let taken = lease(holder, "0-2").unwrap();
            assert_eq!(taken.worker_id(), expected, "{}", store.describe());
            held.push(taken);
        }
        assert!(lease("a4", "0-2").is_err(), "0-2 is used up");
        // Worker ID 6 given back: the range's next taker gets it.
        let six = held.remove(1);
        assert_eq!(six.worker_id(), 6);
        drop(six);
        let again = lease("b3", "5-6").unwrap();
        assert_eq!(again.worker_id(), 6);
        // One asked for by hand must be in the range; one past the layout is refused.
        let err = WorkerLease::builder(store.clone())
            .worker_ids(range("5-6"))
            .acquire_id(&bits, 3)
            .unwrap_err()
            .to_string();
        assert!(err.contains("range 5-6"), "{err}");
        let err = lease("c", &format!("0-{}", bits.max_worker_id() + 1))
            .unwrap_err()
            .to_string();
        assert!(err.contains("worker_ids"), "{err}");
        assert!(
            store.leases().unwrap().iter().all(|l| l.worker_id <= 6),
            "nothing was taken past the ranges"
        );
    });
}

/// 2,000 cycles, well past the 1,024 worker IDs: a cycle that kept anything (a row, a
/// worker ID) would run out, and each cycle must reuse worker ID 0 above the last one's
/// mark. One round trip per step (two or three for a SQL acquire), so the time is the
/// stores' latency (etcd writes each step to disk on a quorum of three; a CI run saw
/// 10,000 cycles there pass 600 s): the stores run side by side.
#[test]
fn thousands_of_acquire_release_cycles_never_run_out() {
    let runs: Vec<_> = kinds()
        .into_iter()
        .map(|kind| {
            std::thread::spawn(move || {
                let fixture = Fixture::new(kind);
                let store = fixture.lease_store();
                let started = Instant::now();
                let cycles: u64 = 2_000;
                for cycle in 0..cycles {
                    let holder = format!("h{cycle}");
                    let (id, mark) = granted(&store, &holder, 1023, None);
                    assert_eq!((id, mark), (0, cycle), "{kind:?}: cycle {cycle}");
                    assert!(
                        store.release(id, &holder, cycle + 1).unwrap(),
                        "{kind:?}: cycle {cycle}"
                    );
                }
                eprintln!(
                    "{kind:?}: {cycles} acquire/release cycles in {:?}",
                    started.elapsed()
                );
                assert_eq!(store.leases().unwrap().len(), 1, "{kind:?}");
            })
        })
        .collect();
    let failed: Vec<_> = runs
        .into_iter()
        .filter_map(|run| run.join().err())
        .collect();
    if let Some(panic) = failed.into_iter().next() {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn eight_threads_acquiring_at_once_get_distinct_ids() {
    for_each_store(|fixture| {
        // The table exists before the race, as it would in production after the first
        // process.
        fixture.lease_store().leases().unwrap();
        let barrier = Arc::new(Barrier::new(8));
        let per_thread = 16;
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let store = fixture.lease_store();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    (0..per_thread)
                        .map(|i| granted(&store, &format!("t{t}/{i}"), 1023, None).0)
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        let ids: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().expect("a thread panicked"))
            .collect();
        let distinct: HashSet<u64> = ids.iter().copied().collect();
        assert_eq!(distinct.len(), 8 * per_thread, "{ids:?}");
        assert_eq!(
            distinct,
            (0..8 * per_thread as u64).collect(),
            "the lowest ones"
        );
    });
}

/// Set in the child processes of `eight_processes_acquiring_at_once_get_distinct_ids`:
/// `kind|name|sqlite dir|start at (Unix ms)`.
const CHILD_ENV: &str = "UIDGEN_LEASE_STORES_CHILD";

/// In a child process: the parent's store, from the fixture's spec it passed.
fn store_in_child(spec: &str) -> Shared {
    Fixture::from_spec(spec).lease_store()
}

#[test]
fn eight_processes_acquiring_at_once_get_distinct_ids() {
    for_each_store(|fixture| {
        fixture.lease_store().leases().unwrap();
        // A start time a little ahead, so the children (started one by one) race.
        let start_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            + 1_000;
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..8)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "child_process_acquires",
                        "--ignored",
                        "--nocapture",
                    ])
                    .env(CHILD_ENV, format!("{start_ms}|{}", fixture.spec()))
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::inherit())
                    .spawn()
                    .expect("starting a child process")
            })
            .collect();
        let mut ids = Vec::new();
        for child in children {
            let output = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(output.status.success(), "a child failed:\n{stdout}");
            let granted: Vec<u64> = stdout
                .lines()
                .filter_map(|line| line.strip_prefix("granted "))
                .map(|id| id.trim().parse().unwrap())
                .collect();
            assert_eq!(granted.len(), 4, "{stdout}");
            ids.extend(granted);
        }
        let distinct: HashSet<u64> = ids.iter().copied().collect();
        assert_eq!(distinct, (0..32).collect(), "{ids:?}");
    });
}

/// One child of `eight_processes_acquiring_at_once_get_distinct_ids`: takes four worker
/// IDs from the store it is given and prints them.
#[test]
#[ignore = "run as a child process by eight_processes_acquiring_at_once_get_distinct_ids"]
fn child_process_acquires() {
    let config = std::env::var(CHILD_ENV).expect("run by eight_processes_...");
    let (start_ms, spec) = config.split_once('|').expect(CHILD_ENV);
    let store = store_in_child(spec);
    let start_ms: u128 = start_ms.parse().unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    std::thread::sleep(Duration::from_millis(
        u64::try_from(start_ms.saturating_sub(now_ms)).unwrap(),
    ));
    let holder = format!("process {}", std::process::id());
    for i in 0..4 {
        let (id, _) = granted(&store, &format!("{holder}/{i}"), 1023, None);
        println!("granted {id}");
    }
}

#[test]
fn a_fresh_table_raced_by_eight_threads() {
    // Rounds, each on a new table: a catalog race in creating it shows up only now and then.
    for _round in 0..8 {
        race_a_fresh_table();
    }
}

fn race_a_fresh_table() {
    for_each_store(|fixture| {
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let store = fixture.lease_store();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    granted(&store, &format!("t{t}"), 1023, None).0
                })
            })
            .collect();
        let ids: HashSet<u64> = threads
            .into_iter()
            .map(|t| t.join().expect("a thread panicked"))
            .collect();
        assert_eq!(ids, (0..8).collect());
    });
}

#[test]
fn generators_on_a_reused_lease_start_above_every_earlier_id() {
    for_each_store(|fixture| {
        let bits = BitsAllocator::default();
        let lease = WorkerLease::builder(fixture.lease_store())
            .ttl(Duration::from_secs(3))
            .acquire(&bits)
            .unwrap();
        assert_eq!(lease.worker_id(), 0);
        let generator = CachedUidGenerator::builder()
            .allocator(bits)
            .lease(lease)
            .build()
            .unwrap();
        let first: Vec<u64> = (0..1_000).map(|_| generator.next_uid().unwrap()).collect();
        let highest = *first.iter().max().unwrap();
        drop(generator);

        let records = fixture.lease_store().leases().unwrap();
        assert_eq!(records[0].holder, None, "released on drop");
        assert!(records[0].mark_ms > 0, "with a mark");

        let again = WorkerLease::builder(fixture.lease_store())
            .ttl(Duration::from_secs(3))
            .acquire(&bits)
            .unwrap();
        assert_eq!(again.worker_id(), 0, "reused");
        let generator = CachedUidGenerator::builder()
            .allocator(bits)
            .lease(again)
            .build()
            .unwrap();
        let next = generator.next_uid().unwrap();
        assert!(next > highest, "{next} after {highest}");
        assert_eq!(bits.parse(next).unwrap().worker_id, 0);
    });
}

/// `url` with its user and password replaced by `user` and `secret123`.
fn with_user(url: &str, user: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with ://");
    let rest = match rest.split_once('@') {
        Some((credentials, host)) if !credentials.contains('/') => host,
        _ => rest,
    };
    format!("{scheme}://{user}:secret123@{rest}")
}

fn assert_names_store_and_hides(
    err: &dyn std::fmt::Display,
    debug: &dyn std::fmt::Debug,
    store: &str,
) {
    let shown = err.to_string();
    let debugged = format!("{debug:?}");
    assert!(shown.contains(store), "{shown}");
    for text in [&shown, &debugged] {
        assert!(!text.contains("secret123"), "{text}");
    }
}

#[test]
fn bad_urls_and_unreachable_servers_name_the_store_and_never_the_password() {
    let quick = Duration::from_secs(2);
    // Bad URLs.
    for (url, store) in [
        ("mysql://root:secret123@/test", "MySQL"),
        ("postgres://root:secret123@127.0.0.1:5432", "PostgreSQL"),
        ("postgres:root:secret123@127.0.0.1/test", "PostgreSQL"),
        ("redis://:secret123@127.0.0.1:6379/notadb", "Redis"),
        // TLS is built now: a CA file that cannot be read, and a mode that falls back.
        (
            "rediss://:secret123@127.0.0.1:6379/?cacert=/no/such/ca.pem",
            "Redis",
        ),
        ("redis://:secret123@127.0.0.1:99999", "Redis"),
        ("redis://:secret123@127.0.0.1/0?password=secret123", "Redis"),
        ("postgres://u:secret123@h:99999/db", "PostgreSQL"),
        ("postgres://u@h/db?password=secret123", "PostgreSQL"),
        ("postgres://u@h/db?sslmode=prefer", "PostgreSQL"),
        ("mysql://u:secret123@h:99999/db", "MySQL"),
    ] {
        let err = match store {
            "MySQL" => MySqlLeaseStore::new(url).err(),
            "PostgreSQL" => PostgresLeaseStore::new(url).err(),
            _ => RedisLeaseStore::new(url).err(),
        };
        let err = err.unwrap_or_else(|| panic!("{store} accepted a bad URL"));
        assert!(matches!(err, StoreError::InvalidUrl { .. }), "{err:?}");
        assert_names_store_and_hides(&err, &err, store);
    }
    // Nothing listens on port 1.
    let stores: [(Shared, &str); 3] = [
        (
            Shared(Arc::new(
                MySqlLeaseStore::new("mysql://root:secret123@127.0.0.1:1/test")
                    .unwrap()
                    .timeout(quick),
            )),
            "MySQL",
        ),
        (
            Shared(Arc::new(
                PostgresLeaseStore::new("postgres://root:secret123@127.0.0.1:1/test")
                    .unwrap()
                    .timeout(quick),
            )),
            "PostgreSQL",
        ),
        (
            Shared(Arc::new(
                RedisLeaseStore::new("redis://:secret123@127.0.0.1:1")
                    .unwrap()
                    .timeout(quick),
            )),
            "Redis",
        ),
    ];
    for (store, name) in stores {
        assert_names_store_and_hides(&store.describe(), &store, name);
        let started = Instant::now();
        let err = store.acquire(&request("a", TTL, 1023, None)).unwrap_err();
        assert!(started.elapsed() < quick * 2, "{:?}", started.elapsed());
        assert!(
            matches!(err, StoreError::Unreachable { .. }),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
        assert_names_store_and_hides(&err, &err, name);
        // Through WorkerLease too: the error names the store.
        let err = WorkerLease::builder(store)
            .acquire(&BitsAllocator::default())
            .unwrap_err();
        assert_names_store_and_hides(&err, &err, name);
    }
    // A user the real servers do not know is refused, and the password not shown.
    let stores: [(Shared, &str); 3] = [
        (
            Shared(Arc::new(
                MySqlLeaseStore::new(&with_user(&mysql_url(), "uidgen_nobody"))
                    .unwrap()
                    .timeout(quick),
            )),
            "MySQL",
        ),
        (
            Shared(Arc::new(
                PostgresLeaseStore::new(&with_user(&postgres_url(), "uidgen_nobody"))
                    .unwrap()
                    .timeout(quick),
            )),
            "PostgreSQL",
        ),
        (
            Shared(Arc::new(
                RedisLeaseStore::new(&with_user(&redis_url(), "uidgen_nobody"))
                    .unwrap()
                    .timeout(quick),
            )),
            "Redis",
        ),
    ];
    for (store, name) in stores {
        let err = store.leases().unwrap_err();
        assert!(
            matches!(err, StoreError::AccessDenied { .. }),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains("uidgen_nobody"), "{err}");
        assert_names_store_and_hides(&err, &err, name);
    }
    // The embedded store refuses a path no other process can open.
    let err = SqliteLeaseStore::new(":memory:").leases().unwrap_err();
    assert!(err.to_string().contains("embedded store"), "{err}");
}

/// The review found Redis's connect taking 10.1 s (15.4 s with a database number)
/// against a server that accepts and never answers, while saying "within 5s": the
/// driver bounds each handshake read by the whole bound. At the default bound, through
/// StoreUrl as users open it, with a password and a database number (one handshake
/// command each), it fails within 5 s + 1 s.
#[test]
fn redis_connect_to_a_silent_server_fails_within_its_default_bound() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let url = uidgen::StoreUrl::parse(&format!("redis://:secret123@127.0.0.1:{port}/3")).unwrap();
    let store = url.lease_store().unwrap();
    let started = Instant::now();
    let err = store.leases().unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, StoreError::Timeout { .. }), "{err:?}");
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(6),
        "{took:?}: {err}"
    );
    assert!(err.to_string().contains("within 5s"), "{err}");
    assert_names_store_and_hides(&err, &err, "Redis");
    drop(silent);
}

#[test]
fn a_server_that_never_answers_is_a_timeout_within_the_bound() {
    // Connections are accepted by the kernel (the backlog) but nothing ever answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let bound = Duration::from_millis(500);
    let stores: [(Shared, &str); 3] = [
        (
            Shared(Arc::new(
                MySqlLeaseStore::new(&format!("mysql://root:secret123@127.0.0.1:{port}/test"))
                    .unwrap()
                    .timeout(bound),
            )),
            "MySQL",
        ),
        (
            Shared(Arc::new(
                PostgresLeaseStore::new(&format!(
                    "postgres://root:secret123@127.0.0.1:{port}/test"
                ))
                .unwrap()
                .timeout(bound),
            )),
            "PostgreSQL",
        ),
        (
            Shared(Arc::new(
                RedisLeaseStore::new(&format!("redis://:secret123@127.0.0.1:{port}"))
                    .unwrap()
                    .timeout(bound),
            )),
            "Redis",
        ),
    ];
    for (store, name) in stores {
        let started = Instant::now();
        let err = store.acquire(&request("a", TTL, 1023, None)).unwrap_err();
        let took = started.elapsed();
        assert!(matches!(err, StoreError::Timeout { .. }), "{name}: {err:?}");
        assert!(took >= bound && took < bound * 4, "{name}: {took:?}");
        assert!(
            err.to_string().contains(&format!("127.0.0.1:{port}")),
            "{err}"
        );
        assert_names_store_and_hides(&err, &err, name);
    }
    drop(silent);
}

const ISSUER_ENV: &str = "UIDGEN_LEASE_STORES_ISSUER";

/// Starts a child that leases a worker ID from `fixture`'s store (TTL `ttl`) and prints
/// `count` IDs from a cached generator at full speed, one a line (0: until killed).
fn spawn_issuer(fixture: &Fixture, count: u64, ttl: Duration) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_issues",
            "--ignored",
            "--nocapture",
            "-q",
        ])
        .env(
            ISSUER_ENV,
            format!("{count}|{}|{}", ttl.as_millis(), fixture.spec()),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("starting a child process")
}

/// The IDs a child printed (lines `id N`).
fn issued(stdout: &[u8]) -> Vec<u64> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("id "))
        .filter_map(|id| id.trim().parse().ok())
        .collect()
}

/// One child of the tests below: see `spawn_issuer`.
#[test]
#[ignore = "run as a child process by the tests that spawn issuers"]
fn child_process_issues() {
    use std::io::Write;
    let config = std::env::var(ISSUER_ENV).expect("run by spawn_issuer");
    let mut parts = config.splitn(3, '|');
    let (count, ttl_ms, spec) = (
        parts.next().expect(ISSUER_ENV),
        parts.next().expect(ISSUER_ENV),
        parts.next().expect(ISSUER_ENV),
    );
    let store = store_in_child(spec);
    let bits = BitsAllocator::default();
    let lease = WorkerLease::builder(store)
        .ttl(Duration::from_millis(ttl_ms.parse().unwrap()))
        .acquire(&bits)
        .unwrap();
    let generator = CachedUidGenerator::builder()
        .allocator(bits)
        .lease(lease)
        .build()
        .unwrap();
    let count: u64 = count.parse().unwrap();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut made = 0u64;
    while count == 0 || made < count {
        writeln!(out, "id {}", generator.next_uid().unwrap()).unwrap();
        made += 1;
        if made.is_multiple_of(4096) {
            out.flush().unwrap();
        }
    }
    out.flush().unwrap();
}

#[test]
fn eight_processes_issuing_100k_ids_at_once_repeat_nothing() {
    for_each_store(|fixture| {
        fixture.lease_store().leases().unwrap();
        let children: Vec<_> = (0..8)
            .map(|_| spawn_issuer(fixture, 100_000, Duration::from_secs(30)))
            .collect();
        let mut all = HashSet::new();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success(), "a child failed");
            let ids = issued(&output.stdout);
            assert_eq!(ids.len(), 100_000);
            for id in ids {
                assert!(all.insert(id), "ID {id} issued twice");
            }
        }
    });
}

#[test]
fn a_holder_killed_with_sigkill_is_replaced_after_its_ttl_above_every_id_it_made() {
    for_each_store(|fixture| {
        fixture.lease_store().leases().unwrap();
        let ttl = Duration::from_millis(1_000);
        let mut child = spawn_issuer(fixture, 0, ttl);
        // Once it holds its lease (a loaded machine may take a while to start it and
        // connect), let it run at full speed (borrowing ticks) for a while, then kill it.
        let waiting = Instant::now();
        while !fixture
            .lease_store()
            .leases()
            .unwrap()
            .iter()
            .any(|l| l.expires_in.is_some())
        {
            assert!(
                waiting.elapsed() < Duration::from_secs(60),
                "the child took no lease within 60 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(1_500));
        child.kill().unwrap();
        let output = child.wait_with_output().unwrap();
        let dead = issued(&output.stdout);
        assert!(
            !dead.is_empty(),
            "the child made no ID before it was killed"
        );
        let highest = *dead.iter().max().unwrap();
        let bits = BitsAllocator::default();
        assert_eq!(bits.parse(highest).unwrap().worker_id, 0);
        // Held until it expires on the store's clock...
        let early = WorkerLease::builder(fixture.lease_store())
            .acquire_id(&bits, 0)
            .unwrap_err();
        assert!(early.to_string().contains("leased by"), "{early}");
        std::thread::sleep(fixture.outlived(ttl + Duration::from_millis(200)));
        // ...then reused, above every ID the dead holder made, borrowed ones included.
        let lease = WorkerLease::builder(fixture.lease_store())
            .acquire(&bits)
            .unwrap();
        assert_eq!(
            lease.worker_id(),
            0,
            "the dead holder's worker ID is reused"
        );
        let generator = CachedUidGenerator::builder()
            .allocator(bits)
            .lease(lease)
            .build()
            .unwrap();
        let first = generator.next_uid().unwrap();
        assert!(
            first > highest,
            "{first} is not above the dead holder's {highest}"
        );
    });
}

#[test]
fn a_clock_rolled_back_an_hour_across_a_restart_repeats_nothing() {
    for_each_store(|fixture| {
        let bits = BitsAllocator::default();
        let clock = uidgen::ManualClock::starting_now();
        let lease = WorkerLease::builder(fixture.lease_store())
            .acquire(&bits)
            .unwrap();
        let generator = CachedUidGenerator::builder()
            .allocator(bits)
            .clock(clock.clone())
            .lease(lease)
            .build()
            .unwrap();
        let mut seen = HashSet::new();
        let mut highest = 0;
        for _ in 0..100_000 {
            let id = generator.next_uid().unwrap();
            assert!(seen.insert(id));
            highest = highest.max(id);
        }
        drop(generator);
        clock.rewind(Duration::from_secs(3_600));
        let lease = WorkerLease::builder(fixture.lease_store())
            .acquire(&bits)
            .unwrap();
        let generator = uidgen::DefaultUidGenerator::builder()
            .allocator(bits)
            .clock(clock.clone())
            .rollback_strategy(uidgen::RollbackStrategy::Continue)
            .lease(lease)
            .build()
            .unwrap();
        for _ in 0..20_000 {
            let id = generator.next_uid().unwrap();
            assert!(id > highest && seen.insert(id), "{id} after {highest}");
        }
    });
}

/// A lease through the relay while the store is up. Each store step has 300 ms there (so
/// that a cut is noticed soon), which a loaded machine can outlast once (a new PostgreSQL
/// backend, an fsync): retry until a deadline.
fn acquire_through_the_relay(
    store: &Arc<dyn LeaseStore>,
    ttl: Duration,
    bits: &BitsAllocator,
    kind: Kind,
) -> WorkerLease {
    let started = Instant::now();
    loop {
        match WorkerLease::builder(Shared(store.clone()))
            .ttl(ttl)
            .acquire(bits)
        {
            Ok(lease) => return lease,
            Err(err) => assert!(
                started.elapsed() < Duration::from_secs(30),
                "{kind:?}: the store was up for 30 s and still: {err}"
            ),
        }
    }
}

#[test]
fn a_network_store_that_dies_mid_run_stops_new_ticks_in_time_and_comes_back() {
    for kind in [Kind::MySql, Kind::Postgres, Kind::Redis] {
        let fixture = Fixture::new(kind);
        fixture.lease_store().leases().unwrap(); // creates the table
        let (_, upstream) = via(&fixture.url, "127.0.0.1:1".parse().unwrap());
        let relay = Relay::to(upstream);
        // No driver option keeps the connection on the relay: MySQL's store never moves
        // to the server's Unix socket on its own (all of its traffic must cross the
        // relay, or cutting it would change nothing).
        let (relayed, _) = via(&fixture.url, relay.addr);
        let timeout = Duration::from_millis(300);
        let store: Arc<dyn LeaseStore> = fixture.lease_store_at(&relayed, Some(timeout)).0;
        let bits = BitsAllocator::default();
        let ttl = Duration::from_millis(1_500);
        let lease = acquire_through_the_relay(&store, ttl, &bits, kind);
        let generator = uidgen::DefaultUidGenerator::builder()
            .allocator(bits)
            .lease(lease)
            .build()
            .unwrap();
        let mut seen = HashSet::new();
        for _ in 0..1_000 {
            assert!(seen.insert(generator.next_uid().unwrap()));
        }
        relay.cut();
        let cut_at = Instant::now();
        let err = loop {
            match generator.next_uid() {
                Ok(id) => assert!(seen.insert(id), "{kind:?}: ID {id} repeated"),
                Err(e) => break e,
            }
            assert!(
                cut_at.elapsed() < Duration::from_secs(10),
                "{kind:?}: never failed"
            );
        };
        let message = err.to_string();
        assert!(
            matches!(err, uidgen::UidError::WorkerLease { .. })
                && message.contains(&relay.addr.to_string()),
            "{kind:?}: {message}"
        );
        assert!(
            cut_at.elapsed() < ttl,
            "{kind:?}: failed only {:?} after the store died (TTL {ttl:?})",
            cut_at.elapsed()
        );
        assert!(
            seen.len() > 1_000,
            "{kind:?}: it went on while its mark allowed"
        );
        drop(generator);
        relay.restore();
        let lease = acquire_through_the_relay(&store, ttl, &bits, kind);
        let generator = uidgen::DefaultUidGenerator::builder()
            .allocator(bits)
            .lease(lease)
            .build()
            .unwrap();
        let id = generator.next_uid().unwrap();
        assert!(
            seen.iter().all(|&old| old < id),
            "{kind:?}: after the store came back"
        );
        eprintln!(
            "{kind:?}: failed {:?} after the cut: {message}",
            cut_at.elapsed()
        );
    }
}
