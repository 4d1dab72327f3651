//! Worker IDs as a library user meets them: a generator built from a store in one call
//! (`.store(..)` with a URL, a parsed `StoreUrl` or a store value; `.embedded()` is run
//! by `tests/readme_launches.rs`), the guard on the one-row-per-launch registries, the
//! usage they report, and Kubernetes pod ordinals through a builder.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use uidgen::{
    BitsAllocator, CachedUidGenerator, ConfigError, DefaultUidGenerator, EmbeddedWorkerIdAssigner,
    LeaseStore, PodOrdinal, Preset, RollbackStrategy, SqliteLeaseStore, StoreUrl, TimeUnit,
    UidGenerator, WorkerIdAssigner, WorkerIdError, WorkerIdUsage,
};

fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workers.sqlite3");
    (dir, db)
}

fn worker_of(generator: &dyn UidGenerator) -> u64 {
    let uid = generator.next_uid().unwrap();
    generator.parse_uid(uid).unwrap().worker_id
}

fn live_leases(db: &Path) -> usize {
    SqliteLeaseStore::new(db)
        .leases()
        .unwrap()
        .iter()
        .filter(|lease| lease.expires_in.is_some())
        .count()
}

/// A seconds layout with `worker_bits` worker bits that lives for decades.
fn layout_with_worker_bits(worker_bits: u32) -> BitsAllocator {
    BitsAllocator::builder()
        .bits(31, worker_bits, 32 - worker_bits)
        .unit(TimeUnit::Seconds)
        .epoch("2026-01-01")
        .build()
        .unwrap()
}

#[test]
fn store_takes_a_url_a_parsed_url_or_a_store_value_and_leases_the_lowest_free_id() {
    let (_dir, db) = temp_db();
    let path = db.to_str().unwrap();
    let url = StoreUrl::parse(&format!("sqlite:{path}")).unwrap();
    let generators: Vec<Box<dyn UidGenerator>> = vec![
        Box::new(
            CachedUidGenerator::builder()
                .store(path)
                .unwrap()
                .build()
                .unwrap(),
        ),
        Box::new(
            DefaultUidGenerator::builder()
                .store(format!("sqlite://{path}"))
                .unwrap()
                .build()
                .unwrap(),
        ),
        Box::new(
            CachedUidGenerator::builder()
                .store(&url)
                .unwrap()
                .build()
                .unwrap(),
        ),
        Box::new(
            DefaultUidGenerator::builder()
                .store(SqliteLeaseStore::new(&db))
                .unwrap()
                .build()
                .unwrap(),
        ),
        Box::new(
            CachedUidGenerator::builder()
                .store(url)
                .unwrap()
                .build()
                .unwrap(),
        ),
    ];
    let workers: Vec<u64> = generators.iter().map(|g| worker_of(&**g)).collect();
    assert_eq!(workers, [0, 1, 2, 3, 4]);
    assert_eq!(live_leases(&db), 5);
    drop(generators);
    assert_eq!(
        live_leases(&db),
        0,
        "each generator gave its worker ID back"
    );
    let again = DefaultUidGenerator::builder()
        .store(path)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(worker_of(&again), 0, "reused");
}

#[test]
fn a_store_that_cannot_be_used_is_an_error_naming_it() {
    let typo = CachedUidGenerator::builder()
        .store("mysql:app:SECRETPW@db.internal/ids")
        .unwrap_err()
        .to_string();
    assert!(
        typo.contains("mysql://") && !typo.contains("SECRETPW"),
        "{typo}"
    );

    let missing = CachedUidGenerator::builder()
        .store("/uidgen-no-such-folder/workers.sqlite3")
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("/uidgen-no-such-folder") && missing.contains("does not exist"),
        "{missing}"
    );

    // One worker bit: two worker IDs, both held; the third launch is refused, naming
    // the store.
    let (_dir, db) = temp_db();
    let path = db.to_str().unwrap();
    let bits = layout_with_worker_bits(1);
    let held: Vec<_> = (0..2)
        .map(|_| {
            DefaultUidGenerator::builder()
                .allocator(bits)
                .store(path)
                .unwrap()
                .build()
                .unwrap()
        })
        .collect();
    let err = DefaultUidGenerator::builder()
        .allocator(bits)
        .store(path)
        .unwrap_err();
    assert!(matches!(err, WorkerIdError::NoFreeWorkerId { .. }), "{err}");
    assert!(err.to_string().contains(path), "{err}");
    drop(held);
}

#[test]
fn the_layout_is_set_before_the_store() {
    let (_dir, db) = temp_db();
    let path = db.to_str().unwrap();
    let snowflake = BitsAllocator::preset(Preset::Snowflake).unwrap();
    let generator = CachedUidGenerator::builder()
        .allocator(snowflake)
        .store(path)
        .unwrap()
        .build()
        .unwrap();
    let uid = generator.next_uid().unwrap();
    assert_eq!(snowflake.parse(uid).unwrap().worker_id, 0);
    drop(generator);

    let err = CachedUidGenerator::builder()
        .store(path)
        .unwrap()
        .allocator(snowflake)
        .build()
        .unwrap_err();
    assert!(matches!(err, ConfigError::Conflict { .. }), "{err}");
    assert!(
        err.to_string().contains(".allocator(..) before .store(..)"),
        "{err}"
    );
}

/// The guard's message names the worker bits, the launches allowed and leases.
fn assert_refused(err: &WorkerIdError, worker_bits: u32, launches: u64, registry: &str) {
    assert!(
        matches!(
            err,
            WorkerIdError::SmallWorkerSpace { worker_bits: w, launches: l, .. }
                if *w == worker_bits && *l == launches
        ),
        "{err}"
    );
    let message = err.to_string();
    for part in [
        &format!("{worker_bits} worker bits"),
        &format!("allows {launches} launches in all"),
        "Lease worker IDs instead",
        ".store(url)",
        ".embedded()",
        "at least 16 worker bits",
        "Preset::UidGeneratorReadme",
        ".allow_small_worker_space(true)",
        registry,
    ] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
}

#[test]
fn one_row_per_launch_is_refused_on_a_small_layout_unless_allowed() {
    let (_dir, db) = temp_db();
    let registry = EmbeddedWorkerIdAssigner::new(&db);
    let default = BitsAllocator::default();

    let err = registry.assign_worker_id(&default).unwrap_err();
    assert_refused(&err, 10, 1023, &db.display().to_string());
    assert!(!db.exists(), "refused before any row (or file) was made");
    eprintln!("the guard says: {err}");

    // Every way in is guarded: a builder, spare worker IDs.
    let err = CachedUidGenerator::builder()
        .worker_id_from(&registry)
        .unwrap_err();
    assert_refused(&err, 10, 1023, "WORKER_NODE");
    let err = RollbackStrategy::spare_workers(&registry, &default, 2).unwrap_err();
    assert_refused(&err, 10, 1023, "WORKER_NODE");
    let err = registry
        .assign_worker_id(&layout_with_worker_bits(15))
        .unwrap_err();
    assert_refused(&err, 15, 32767, "WORKER_NODE");
    assert!(!db.exists());

    // 16 bits are enough; so is UidGenerator's layout, which works as before.
    assert_eq!(
        registry
            .assign_worker_id(&layout_with_worker_bits(16))
            .unwrap()
            .worker_id,
        1
    );
    let uidgenerator = BitsAllocator::preset(Preset::UidGeneratorReadme).unwrap();
    assert_eq!(uidgenerator.worker_bits(), 21);
    let generator = DefaultUidGenerator::builder()
        .allocator(uidgenerator)
        .worker_id_from(&registry)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(worker_of(&generator), 2);
    assert_eq!(
        registry.assign_worker_id(&uidgenerator).unwrap().worker_id,
        3
    );

    // Asked for explicitly: allowed.
    let allowed = registry.clone().allow_small_worker_space(true);
    assert_eq!(allowed.assign_worker_id(&default).unwrap().worker_id, 4);
}

/// Log lines written while `work` runs.
fn logs_of(work: impl FnOnce()) -> String {
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl Write for Buffer {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    use tracing_subscriber::util::SubscriberInitExt;
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let guard = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish()
        .set_default();
    work();
    drop(guard);
    let bytes = buffer.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn usage_counts_launches_and_a_warning_comes_at_90_percent() {
    let (_dir, db) = temp_db();
    let registry = EmbeddedWorkerIdAssigner::new(&db).allow_small_worker_space(true);
    let bits = BitsAllocator::default(); // worker IDs 1 to 1023 for launches
    let usage = registry.usage(&bits).unwrap();
    assert_eq!(
        (usage.used, usage.remaining, usage.reused),
        (0, 1023, false)
    );
    assert!(!db.exists(), "reading the usage creates nothing");

    let quiet = logs_of(|| assert_eq!(registry.assign_worker_id(&bits).unwrap().worker_id, 1));
    assert!(!quiet.contains("WARN"), "{quiet}");
    // 920 launches later: 921 is the first at 90% (921 * 10 >= 1023 * 9).
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE sqlite_sequence SET seq = 919 WHERE name = 'WORKER_NODE'",
            [],
        )
        .unwrap();
    let below = logs_of(|| assert_eq!(registry.assign_worker_id(&bits).unwrap().worker_id, 920));
    assert!(!below.contains("WARN"), "{below}");
    let warned = logs_of(|| assert_eq!(registry.assign_worker_id(&bits).unwrap().worker_id, 921));
    assert!(
        warned.contains("WARN")
            && warned.contains("has used 921 of this layout's 1023 worker IDs (102 launches left")
            && warned.contains("lease worker IDs instead"),
        "{warned}"
    );

    let usage = registry.usage(&bits).unwrap();
    assert_eq!((usage.used, usage.remaining), (921, 102));
    assert!(usage.nearly_used_up());
    assert_eq!(
        usage.to_string(),
        "921 of 1023 worker IDs used, 102 launches left (one row per launch: worker IDs are \
         never reused)"
    );
}

#[test]
fn lease_usage_counts_live_leases() {
    let (_dir, db) = temp_db();
    let path = db.to_str().unwrap();
    let bits = BitsAllocator::default();
    let held: Vec<_> = (0..3)
        .map(|_| {
            CachedUidGenerator::builder()
                .store(path)
                .unwrap()
                .build()
                .unwrap()
        })
        .collect();
    let usage = WorkerIdUsage::of_leases(&SqliteLeaseStore::new(&db).leases().unwrap(), &bits);
    assert_eq!((usage.used, usage.remaining, usage.reused), (3, 1021, true));
    drop(held);
    let usage = WorkerIdUsage::of_leases(&SqliteLeaseStore::new(&db).leases().unwrap(), &bits);
    assert_eq!((usage.used, usage.remaining), (0, 1024));
    assert_eq!(
        usage.to_string(),
        "0 of 1024 worker IDs held by live leases, 1024 free (a released or expired worker \
         ID is free again)"
    );
}

#[test]
fn a_pod_ordinal_is_a_fixed_worker_id_through_the_time_mark() {
    let bits = BitsAllocator::default();
    let pod = PodOrdinal::pod_name("web-12").offset(100);
    let first = DefaultUidGenerator::builder()
        .worker_id_from(&pod)
        .unwrap()
        .build()
        .unwrap();
    let last = (0..1000).map(|_| first.next_uid().unwrap()).max().unwrap();
    assert_eq!(bits.parse(last).unwrap().worker_id, 112);
    drop(first);
    // Built again in this process: starts above every ID the first made.
    let second = CachedUidGenerator::builder()
        .worker_id_from(&pod)
        .unwrap()
        .build()
        .unwrap();
    assert!(second.next_uid().unwrap() > last);

    for (name, offset, wanted) in [
        ("web", 0, "has no StatefulSet ordinal"),
        ("web-", 0, "has no StatefulSet ordinal"),
        (
            "web-1024",
            0,
            "ordinal 1024 + offset 0 = worker ID 1024 exceeds max_worker_id 1023",
        ),
        (
            "web-924",
            100,
            "ordinal 924 + offset 100 = worker ID 1024 exceeds max_worker_id 1023",
        ),
    ] {
        let err = DefaultUidGenerator::builder()
            .worker_id_from(&PodOrdinal::pod_name(name).offset(offset))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(wanted) && err.contains(&format!("{name:?}")),
            "{name}: {err}"
        );
    }
}

/// A store of the user's own that ignores `LeaseRequest::min_worker_id` (written before
/// ranges existed) offers worker ID 0 to a lease limited to 8-9: the lease refuses it,
/// saying so, and gives it back rather than making IDs another region may make.
#[test]
fn a_custom_store_that_ignores_the_range_is_refused_and_its_offer_given_back() {
    use std::time::Duration;
    use uidgen::{Acquired, LeaseRequest, StoreError, WorkerIdRange, WorkerLease};

    #[derive(Debug, Default)]
    struct Careless {
        released: Arc<Mutex<Vec<u64>>>,
    }
    impl LeaseStore for Careless {
        fn describe(&self) -> String {
            "a careless store".into()
        }
        fn acquire(&self, _: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
            Ok(Acquired::Granted {
                worker_id: 0,
                mark_ms: 0,
            })
        }
        fn renew(&self, _: u64, _: &str, _: Duration, _: u64) -> Result<bool, StoreError> {
            Ok(true)
        }
        fn release(&self, worker_id: u64, _: &str, _: u64) -> Result<bool, StoreError> {
            self.released.lock().unwrap().push(worker_id);
            Ok(true)
        }
        fn leases(&self) -> Result<Vec<uidgen::LeaseRecord>, StoreError> {
            Ok(Vec::new())
        }
    }
    let store = Careless::default();
    let released = Arc::clone(&store.released);
    let err = WorkerLease::builder(store)
        .worker_ids(WorkerIdRange::new(8, 9).unwrap())
        .acquire(&BitsAllocator::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("granted worker ID 0, outside the range 8-9"),
        "{err}"
    );
    assert_eq!(*released.lock().unwrap(), [0]);
}
