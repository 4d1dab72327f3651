//! Fencing: a generator whose lease store dies (refuses connections) or hangs (holds
//! them open and never answers) stops issuing before its lease can pass to another
//! holder, says so as `UidError::WorkerLease` naming the store and the worker ID (never
//! as an empty ring), and exits without waiting on the dead store. On MySQL/MariaDB,
//! PostgreSQL, Redis, etcd and ZooKeeper, each reached through a relay the test cuts, with
//! a short and a longer TTL (a ZooKeeper lease's session lasts at least 2 s, so there the
//! successor waits longer, and the check that it starts above every ID made is the same); the stores keep their default 5 s step bound, longer than the short TTL.
//! The cases of a test run side by side, so the file takes about the longest TTL.

#[path = "support/relay.rs"]
mod relay;
#[path = "support/servers.rs"]
mod servers;
#[path = "support/stores.rs"]
mod stores;

use relay::{via, Relay};
use servers::random_suffix;
use std::time::{Duration, Instant};
use stores::{Fixture, Leases as Shared};
use uidgen::StoreKind as Kind;
use uidgen::{
    BitsAllocator, CachedUidGenerator, DefaultUidGenerator, LeaseStore, UidError, UidGenerator,
    WorkerIdError, WorkerLease,
};

/// The network stores (SQLite has no network to cut).
const KINDS: &[Kind] = &[
    Kind::MySql,
    Kind::Postgres,
    Kind::Redis,
    #[cfg(feature = "etcd")]
    Kind::Etcd,
    #[cfg(feature = "zookeeper")]
    Kind::ZooKeeper,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outage {
    /// Every connection closed, new ones refused.
    Refusing,
    /// Connections accepted and held, nothing answered.
    Silent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Generator {
    Cached,
    Default,
}

#[derive(Clone, Copy, Debug)]
struct Case {
    kind: Kind,
    outage: Outage,
    ttl: Duration,
    generator: Generator,
}

/// A table or key prefix of the case's own (the shared fixture's), dropped at the end.
struct Place(Fixture);

impl Place {
    fn new(kind: Kind) -> Self {
        Self(Fixture::new(kind))
    }

    fn url(&self) -> String {
        self.0.url.clone()
    }

    /// A store on this place at `url` (the server's, or the relay's).
    fn store(&self, url: &str) -> Shared {
        self.0.lease_store_at(url, None)
    }
}

/// What the successor (another store object, straight at the server) saw.
struct Successor {
    /// The latest time the cut lease can have expired by, from the successor's clock:
    /// the send time of each refusal plus the `expires_in` it named (the store's now is
    /// after the send). `None` if the first try was granted.
    expired_no_sooner_than: Option<Instant>,
    /// The successor's first ID, from the same worker ID.
    first_id: u64,
}

/// Takes `worker_id` from `store` as soon as the cut holder's lease expires, and makes
/// one ID with it.
fn succeed(store: Shared, bits: BitsAllocator, worker_id: u64, old_holder: String) -> Successor {
    let started = Instant::now();
    let mut expired_no_sooner_than = None;
    let lease = loop {
        let sent = Instant::now();
        match WorkerLease::builder(store.clone())
            .holder("fencing-successor")
            .acquire_id(&bits, worker_id)
        {
            Ok(lease) => break lease,
            Err(WorkerIdError::WorkerIdHeld {
                holder, expires_in, ..
            }) => {
                assert_eq!(holder, old_holder, "held by someone else");
                let bound = sent + expires_in;
                expired_no_sooner_than = expired_no_sooner_than.max(Some(bound));
                // Near the expiry, look often; before it, now and then.
                std::thread::sleep(
                    (expires_in / 2).clamp(Duration::from_millis(10), Duration::from_millis(200)),
                );
            }
            Err(e) => panic!("the successor's acquire failed: {e}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the worker ID never came free"
        );
    };
    let generator = DefaultUidGenerator::builder()
        .allocator(bits)
        .lease(lease)
        .build()
        .unwrap();
    Successor {
        expired_no_sooner_than,
        first_id: generator.next_uid().unwrap(),
    }
}

/// A lease through the relay while the store is up; retried until a deadline, as a
/// loaded machine can outlast a step once.
fn acquire(store: &Shared, ttl: Duration, bits: &BitsAllocator, case: Case) -> WorkerLease {
    let started = Instant::now();
    loop {
        match WorkerLease::builder(store.clone()).ttl(ttl).acquire(bits) {
            Ok(lease) => return lease,
            Err(err) => assert!(
                started.elapsed() < Duration::from_secs(30),
                "{case:?}: the store was up for 30 s and still: {err}"
            ),
        }
    }
}

fn is_lease_error(err: &UidError, store: &str, worker_id: u64) -> bool {
    let message = err.to_string();
    matches!(err, UidError::WorkerLease { .. })
        && message.contains(store)
        && message.contains(&format!("worker ID {worker_id}"))
}

/// One case: a generator takes IDs steadily through the relay; the relay is cut; the
/// generator must fail with the lease's error, stop before the lease expires, and drop
/// within TTL + 2 s of the cut; a successor then gets the worker ID above every ID made.
fn run(case: Case) {
    let place = Place::new(case.kind);
    let direct = place.store(&place.url());
    direct.leases().unwrap(); // creates the table
    let (_, upstream) = via(&place.url(), "127.0.0.1:1".parse().unwrap());
    let relay = Relay::to(upstream);
    // No driver option: the MySQL store never moves to the server's Unix socket.
    let (relayed_url, _) = via(&place.url(), relay.addr);
    // The store's own step bound stays its default (5 s): longer than the short TTL.
    let relayed = place.store(&relayed_url);
    let described = relayed.describe();
    let bits = BitsAllocator::default();
    let lease = acquire(&relayed, case.ttl, &bits, case);
    let (worker_id, holder) = (lease.worker_id(), lease.holder().to_owned());
    let generator: Box<dyn UidGenerator> = match case.generator {
        Generator::Cached => Box::new(
            CachedUidGenerator::builder()
                .allocator(bits)
                .lease(lease)
                .build()
                .unwrap(),
        ),
        Generator::Default => Box::new(
            DefaultUidGenerator::builder()
                .allocator(bits)
                .lease(lease)
                .build()
                .unwrap(),
        ),
    };
    // The successor's store object asks once now, while the lease is held: its first
    // call adopts the store's identity and, the identity being young, waits until it is
    // 2.5 s old (`uidgen::YOUNG_STORE`). Waited after the cut, between the send time and
    // the read, that wait would make the successor's expiry bound early by as much (a CI
    // run saw a case fail by 557 ms so).
    match WorkerLease::builder(direct.clone())
        .holder("fencing-successor")
        .acquire_id(&bits, worker_id)
    {
        Err(WorkerIdError::WorkerIdHeld { .. }) => {}
        other => panic!("{case:?}: the successor got the held worker ID early: {other:?}"),
    }
    // A steady taker: an ID about every millisecond. The cut comes at a random point of
    // the keeper's renewal cycle (a third of the TTL).
    let mut highest = 0;
    let warm_up = Instant::now();
    let phase = u64::from_str_radix(&random_suffix(), 16).unwrap() % 1_000;
    let warm_up_for = Duration::from_millis(200) + case.ttl / 3 * phase as u32 / 1_000;
    while warm_up.elapsed() < warm_up_for || highest == 0 {
        // Before the cut the store is up; a renewal slower than the generator waits for
        // (a tenth of a 1 s TTL, on a loaded machine) is not what is tested here.
        match generator.next_uid() {
            Ok(id) => highest = highest.max(id),
            Err(e) => assert!(
                warm_up.elapsed() < Duration::from_secs(30),
                "{case:?}: no ID for 30 s with the store up: {e}"
            ),
        }
        std::thread::sleep(Duration::from_millis(1));
    }

    match case.outage {
        Outage::Refusing => relay.cut(),
        Outage::Silent => relay.silence(),
    }
    let cut_at = Instant::now();
    let successor = std::thread::spawn(move || succeed(direct, bits, worker_id, holder));
    let mut issued_after_cut = 0u64;
    let mut last_issued = None;
    let err = loop {
        // A take is timed from when it was asked: the generator decides within the call,
        // and a thread descheduled after that decision (2 cores, loom beside) returns
        // late without the ID being any less fenced.
        let asked_at = Instant::now();
        match generator.next_uid() {
            Ok(id) => {
                assert!(id > highest, "{case:?}: IDs went backwards");
                highest = id;
                issued_after_cut += 1;
                last_issued = Some(asked_at);
            }
            Err(e) => break e,
        }
        assert!(
            cut_at.elapsed() < case.ttl + Duration::from_secs(2),
            "{case:?}: still issuing {:?} after the cut",
            cut_at.elapsed()
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    let failed_after = cut_at.elapsed();
    assert!(
        is_lease_error(&err, &described, worker_id),
        "{case:?}: the error after the cut was not the lease's, naming {described} and \
         worker ID {worker_id}: {err:?}"
    );
    // Every way of taking says the same while the store is down.
    let again = generator.next_uid().unwrap_err();
    assert!(
        is_lease_error(&again, &described, worker_id),
        "{case:?}: {again:?}"
    );
    if case.generator == Generator::Cached {
        let tried = generator.try_next_uid().unwrap_err();
        assert!(
            is_lease_error(&tried, &described, worker_id),
            "{case:?}: try_next_uid: {tried:?}"
        );
    }
    drop(generator);
    let dropped_after = cut_at.elapsed();
    assert!(
        dropped_after <= case.ttl + Duration::from_secs(2),
        "{case:?}: dropped only {dropped_after:?} after the cut (TTL {:?})",
        case.ttl
    );

    let successor = successor.join().expect("the successor panicked");
    assert!(
        highest < successor.first_id,
        "{case:?}: the cut generator issued {highest}, not below the successor's first ID {}",
        successor.first_id
    );
    let mut stopped_before_expiry = None;
    if let (Some(expired), Some(last)) = (successor.expired_no_sooner_than, last_issued) {
        assert!(
            last < expired,
            "{case:?}: an ID asked for {:?} after the lease expired was issued",
            last - expired
        );
        stopped_before_expiry = Some(expired - last);
    }
    eprintln!(
        "{case:?}: {issued_after_cut} IDs after the cut, failed at {failed_after:?}, dropped at \
         {dropped_after:?}, last ID {stopped_before_expiry:?} before the expiry: {err}"
    );
}

/// Cases with a margin this short (a tenth of the TTL) run at most this many at a time.
const SHORT_MARGIN_BATCH: usize = 4;

/// Runs the cases side by side (most of their time is waiting for a lease to expire); a
/// failure names its case. The cases with a short TTL run after the others, a few at a
/// time: their keeper has only a tenth of a second to give the lease up in, and sixteen
/// cases' threads at once on two cores (CI23 and CI25 saw it) delay a keeper by more
/// than that. What is checked is the same; only the test's own load is less.
fn run_all(cases: Vec<Case>) {
    let (short, long): (Vec<Case>, Vec<Case>) = cases
        .into_iter()
        .partition(|case| case.ttl < Duration::from_secs(10));
    let mut failed = Vec::new();
    let batches = std::iter::once(long).chain(
        short
            .chunks(SHORT_MARGIN_BATCH)
            .map(<[Case]>::to_vec)
            .collect::<Vec<_>>(),
    );
    for batch in batches {
        let runs: Vec<_> = batch
            .into_iter()
            .map(|case| (case, std::thread::spawn(move || run(case))))
            .collect();
        for (case, run) in runs {
            if let Err(panic) = run.join() {
                failed.push((case, panic));
            }
        }
    }
    if let Some((case, panic)) = failed.into_iter().next() {
        eprintln!("failed: {case:?}");
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn a_cached_generator_whose_store_dies_or_hangs_stops_before_expiry_and_says_why() {
    let mut cases = Vec::new();
    for &kind in KINDS {
        for outage in [Outage::Refusing, Outage::Silent] {
            for ttl in [Duration::from_secs(1), Duration::from_secs(12)] {
                cases.push(Case {
                    kind,
                    outage,
                    ttl,
                    generator: Generator::Cached,
                });
            }
        }
    }
    run_all(cases);
}

#[test]
fn a_default_generator_whose_store_dies_or_hangs_stops_before_expiry_and_says_why() {
    let mut cases = Vec::new();
    for &kind in KINDS {
        for outage in [Outage::Refusing, Outage::Silent] {
            cases.push(Case {
                kind,
                outage,
                ttl: Duration::from_secs(1),
                generator: Generator::Default,
            });
        }
    }
    run_all(cases);
}

#[test]
fn a_cached_generator_async_take_names_the_hung_store_too() {
    let place = Place::new(Kind::Redis);
    let direct = place.store(&place.url());
    direct.leases().unwrap();
    let (_, upstream) = via(&place.url(), "127.0.0.1:1".parse().unwrap());
    let relay = Relay::to(upstream);
    let (relayed_url, _) = via(&place.url(), relay.addr);
    let relayed = place.store(&relayed_url);
    let described = relayed.describe();
    let bits = BitsAllocator::default();
    let case = Case {
        kind: Kind::Redis,
        outage: Outage::Silent,
        ttl: Duration::from_secs(1),
        generator: Generator::Cached,
    };
    let lease = acquire(&relayed, case.ttl, &bits, case);
    let worker_id = lease.worker_id();
    let generator = CachedUidGenerator::builder()
        .allocator(bits)
        .lease(lease)
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let cut_at = runtime.block_on(async {
        generator.next_uid_async().await.unwrap();
        relay.silence();
        let cut_at = Instant::now();
        let err = loop {
            match generator.next_uid_async().await {
                Ok(_) => tokio::time::sleep(Duration::from_millis(1)).await,
                Err(e) => break e,
            }
            assert!(
                cut_at.elapsed() < case.ttl + Duration::from_secs(2),
                "never failed"
            );
        };
        assert!(is_lease_error(&err, &described, worker_id), "{err:?}");
        cut_at
    });
    drop(generator);
    assert!(
        cut_at.elapsed() <= case.ttl + Duration::from_secs(2),
        "dropped only after {:?}",
        cut_at.elapsed()
    );
}
