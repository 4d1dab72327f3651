//! Worker IDs from WORKER_NODE on a real MariaDB/MySQL (`UIDGEN_MYSQL_URL`, default
//! mysql://root@127.0.0.1:3306/test; `scripts/test` makes one reachable), and the errors
//! a user sees when the database is not there.

mod common;

use common::assert_overflow;

use mysql_async::prelude::Queryable;
use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};
use uidgen::{
    BitsAllocator, MySqlWorkerIdAssigner, Preset, StoreError, WorkerIdAssigner, WorkerIdError,
};

fn mysql_url() -> String {
    std::env::var("UIDGEN_MYSQL_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "mysql://root@127.0.0.1:3306/test".into())
}

/// A table name of this test run's own, so tests can alter it without disturbing others.
fn own_table(purpose: &str) -> String {
    format!("WORKER_NODE_{purpose}_{}", std::process::id())
}

async fn sql(statement: String) {
    let mut conn = mysql_async::Conn::from_url(mysql_url()).await.unwrap();
    conn.query_drop(statement).await.unwrap();
    conn.disconnect().await.unwrap();
}

async fn count_rows(table: &str) -> u64 {
    let mut conn = mysql_async::Conn::from_url(mysql_url()).await.unwrap();
    let count: Option<u64> = conn
        .query_first(format!("SELECT COUNT(*) FROM {table}"))
        .await
        .unwrap();
    conn.disconnect().await.unwrap();
    count.unwrap()
}

/// UidGenerator's layout: 21 worker bits, enough for one row per launch.
fn row_per_launch_layout() -> BitsAllocator {
    BitsAllocator::preset(Preset::UidGeneratorReadme).unwrap()
}

#[test]
fn sixteen_assigners_started_at_once_get_distinct_ids() {
    let bits = row_per_launch_layout();
    let url = mysql_url();
    let start = Barrier::new(16);
    let ids: Vec<u64> = thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                s.spawn(|| {
                    let assigner = MySqlWorkerIdAssigner::new(&url).unwrap().create_table(true);
                    start.wait();
                    assigner.assign_worker_id(&bits).unwrap().worker_id
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let distinct: HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), 16, "{ids:?}");
}

#[tokio::test]
async fn an_auto_increment_past_max_worker_id_is_an_overflow_error_and_the_row_stays() {
    let table = own_table("OVERFLOW");
    let snowflake = Preset::Snowflake.builder().build().unwrap(); // max_worker_id 1023
    let assigner = MySqlWorkerIdAssigner::new(&mysql_url())
        .unwrap()
        .table(&table)
        .unwrap()
        .create_table(true)
        .allow_small_worker_space(true);
    assert!(assigner.assign(&snowflake).await.unwrap().worker_id < 1023);
    sql(format!("ALTER TABLE {table} AUTO_INCREMENT = 1024")).await;
    let err = assigner.assign(&snowflake).await.unwrap_err();
    let rows = count_rows(&table).await;
    sql(format!("DROP TABLE {table}")).await;
    assert_eq!(
        rows, 2,
        "the overflowing launch's row stays: IDs are never reused"
    );
    assert_overflow(&err, 1024, 1023);
}

#[tokio::test]
async fn the_async_and_blocking_apis_both_work_inside_a_runtime() {
    let assigner = MySqlWorkerIdAssigner::new(&mysql_url())
        .unwrap()
        .create_table(true);
    let bits = row_per_launch_layout();
    let a = assigner.assign(&bits).await.unwrap().worker_id;
    // The blocking wrapper must not panic inside a runtime (it runs its own elsewhere).
    let b = assigner.assign_worker_id(&bits).unwrap().worker_id;
    assert!(b > a, "IDs increase and are never reused: {a} then {b}");
}

#[test]
fn a_missing_table_says_to_run_schema_sql_or_create_it() {
    let err = MySqlWorkerIdAssigner::new(&mysql_url())
        .unwrap()
        .table(&own_table("MISSING"))
        .unwrap()
        .assign_worker_id(&row_per_launch_layout())
        .unwrap_err();
    assert!(
        matches!(err, WorkerIdError::Store(StoreError::MissingTable { .. })),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("schema.sql") && message.contains("--create-table"),
        "{message}"
    );
}

#[test]
fn wrong_credentials_say_so() {
    let url = mysql_url().replacen("://root@", "://uidgen_no_such_user:wrong@", 1);
    let err = MySqlWorkerIdAssigner::new(&url)
        .unwrap()
        .assign_worker_id(&row_per_launch_layout())
        .unwrap_err();
    assert!(
        matches!(err, WorkerIdError::Store(StoreError::AccessDenied { .. })),
        "{err}"
    );
    let message = err.to_string();
    assert!(message.contains("wrong user name or password"), "{message}");
    assert!(!message.contains(":wrong@"), "password leaked: {message}");
}

#[test]
fn a_port_with_nothing_behind_it_is_a_prompt_error_naming_host_and_port() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }; // closed again: connections are refused
    let start = Instant::now();
    let err = MySqlWorkerIdAssigner::new(&format!("mysql://root@127.0.0.1:{port}/test"))
        .unwrap()
        .assign_worker_id(&row_per_launch_layout())
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(
        matches!(err, WorkerIdError::Store(StoreError::Unreachable { .. })),
        "{err}"
    );
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn a_server_that_never_answers_times_out_within_the_bound() {
    // The kernel completes the TCP handshake from the backlog; nothing ever speaks MySQL.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let start = Instant::now();
    let err = MySqlWorkerIdAssigner::new(&format!("mysql://root@127.0.0.1:{port}/test"))
        .unwrap()
        .timeout(Duration::from_millis(300))
        .assign_worker_id(&row_per_launch_layout())
        .unwrap_err();
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    let message = err.to_string();
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(
        message.contains("did not finish connecting within 300ms"),
        "{message}"
    );
    drop(silent);
}

#[test]
fn a_malformed_url_is_named_in_the_error() {
    for (url, named) in [
        ("mysql//root@localhost/test", false),
        ("postgres://root@localhost/test", true),
        ("not a url", true),
    ] {
        let err = MySqlWorkerIdAssigner::new(url).unwrap_err();
        assert!(
            matches!(err, WorkerIdError::Store(StoreError::InvalidUrl { .. })),
            "{url}: {err}"
        );
        let message = err.to_string();
        if named {
            assert!(message.contains(&format!("{url:?}")), "{message}");
        } else {
            // An `@` but no parsable authority: the password cannot be found to hide.
            assert!(message.contains("not shown"), "{message}");
        }
    }
    let err = MySqlWorkerIdAssigner::new(&mysql_url())
        .unwrap()
        .table("WORKER_NODE; DROP TABLE x")
        .unwrap_err();
    assert!(matches!(err, WorkerIdError::InvalidTableName(_)), "{err}");
}

#[tokio::test]
async fn a_small_layout_is_refused_before_any_row_and_usage_counts_the_rows() {
    let table = own_table("GUARD");
    let assigner = MySqlWorkerIdAssigner::new(&mysql_url())
        .unwrap()
        .table(&table)
        .unwrap()
        .create_table(true);
    let default = BitsAllocator::default();
    for err in [
        assigner.assign(&default).await.unwrap_err(),
        assigner.assign_worker_id(&default).unwrap_err(),
        assigner.check_layout(&default).unwrap_err(),
    ] {
        assert!(
            matches!(
                err,
                WorkerIdError::SmallWorkerSpace {
                    worker_bits: 10,
                    launches: 1023,
                    ..
                }
            ),
            "{err}"
        );
        let message = err.to_string();
        for part in [
            &table,
            "10 worker bits",
            "allows 1023 launches in all",
            ".store(url)",
            ".allow_small_worker_space(true)",
        ] {
            assert!(message.contains(part), "{part:?} missing from: {message}");
        }
    }
    // Refused before connecting: the table was not even created.
    let missing = assigner.usage(&default).await.unwrap_err();
    assert!(
        matches!(
            missing,
            WorkerIdError::Store(StoreError::MissingTable { .. })
        ),
        "{missing}"
    );

    // UidGenerator's layout works as before; the usage counts its rows.
    let bits = row_per_launch_layout();
    let first = assigner.assign(&bits).await.unwrap().worker_id;
    let usage = assigner.usage(&bits).await.unwrap();
    assert_eq!((usage.used, usage.reused), (first, false));
    assert_eq!(usage.used + usage.remaining, (1 << 21) - 1);
    // Asked for explicitly, the small layout is allowed.
    let allowed = assigner.clone().allow_small_worker_space(true);
    let second = allowed.assign(&default).await.unwrap().worker_id;
    assert!(second > first);
    let usage = assigner.usage_blocking(&default).unwrap();
    assert_eq!((usage.used, usage.remaining), (second, 1023 - second));
    let rows = count_rows(&table).await;
    sql(format!("DROP TABLE {table}")).await;
    assert_eq!(rows, 2, "no row for the refused launches");
}
