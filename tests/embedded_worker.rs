//! The embedded (SQLite) worker registry as a library: rows never reused, overflow named,
//! bad paths refused.

mod common;

use common::assert_overflow;
use std::path::Path;
use uidgen::{
    BitsAllocator, EmbeddedWorkerIdAssigner, Preset, StoreError, WorkerIdAssigner, WorkerIdError,
};

/// UidGenerator's layout: 21 worker bits, enough for one row per launch.
fn row_per_launch_layout() -> BitsAllocator {
    BitsAllocator::preset(Preset::UidGeneratorReadme).unwrap()
}

#[test]
fn ids_are_never_reused_even_after_rows_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workers.sqlite3");
    let assigner = EmbeddedWorkerIdAssigner::new(&db);
    let bits = row_per_launch_layout();
    let first = assigner.assign_worker_id(&bits).unwrap();
    assert!(
        first.source.contains("WORKER_NODE row 1"),
        "{}",
        first.source
    );
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("DELETE FROM WORKER_NODE", [])
        .unwrap();
    assert_eq!(assigner.assign_worker_id(&bits).unwrap().worker_id, 2);
}

#[test]
fn an_id_past_max_worker_id_is_an_overflow_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workers.sqlite3");
    // 10 worker bits: allowed only when asked for.
    let assigner = EmbeddedWorkerIdAssigner::new(&db).allow_small_worker_space(true);
    let snowflake = Preset::Snowflake.builder().build().unwrap();
    assigner.assign_worker_id(&snowflake).unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE sqlite_sequence SET seq = 1023 WHERE name = 'WORKER_NODE'",
            [],
        )
        .unwrap();
    let err = assigner.assign_worker_id(&snowflake).unwrap_err();
    assert_overflow(&err, 1024, 1023);
}

#[test]
fn an_unusable_path_is_an_error_naming_it() {
    // Nobody, not even root, can create folders under /proc.
    let db = Path::new("/proc/uidgen-test/workers.sqlite3");
    let err = EmbeddedWorkerIdAssigner::new(db)
        .assign_worker_id(&row_per_launch_layout())
        .unwrap_err();
    assert!(
        matches!(err, WorkerIdError::Store(StoreError::File { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("/proc/uidgen-test"), "{err}");
    assert!(
        std::error::Error::source(&err).is_some(),
        "the cause is kept"
    );
}

#[test]
fn in_memory_databases_are_refused_saying_why() {
    for path in [":memory:", "file::memory:", "file:x?mode=memory", ""] {
        let err = EmbeddedWorkerIdAssigner::new(path)
            .assign_worker_id(&row_per_launch_layout())
            .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("file path"), "{path:?}: {message}");
    }
}
