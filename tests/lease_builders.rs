//! Worker IDs as a library user meets them: a generator built from a store in one call
//! (`.store(..)` with a URL, a parsed `StoreUrl` or a store value).

use std::path::{Path, PathBuf};
use uidgen::{
    BitsAllocator, CachedUidGenerator, ConfigError, DefaultUidGenerator, LeaseStore, Preset,
    SqliteLeaseStore, StoreUrl, TimeUnit, UidGenerator, WorkerIdError,
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
