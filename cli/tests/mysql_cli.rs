//! The command line with worker IDs from WORKER_NODE on a real MariaDB/MySQL
//! (`UIDGEN_MYSQL_URL`, default mysql://root@127.0.0.1:3306/test).

mod common;

use common::printed_ids;
use std::collections::{HashMap, HashSet};
use uidgen::{BitsAllocator, Preset};

/// One WORKER_NODE row per run needs a layout with enough worker bits: UidGenerator's
/// 29/21/13 (the default's 10 are refused; see `a_layout_too_small_for_a_row_per_run_is_refused`).
const LAYOUT: &str = "uidgenerator-readme";

fn mysql_url() -> String {
    std::env::var("UIDGEN_MYSQL_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "mysql://root@127.0.0.1:3306/test".into())
}

#[test]
fn eight_processes_started_at_once_print_800k_distinct_ids() {
    let url = mysql_url();
    let children: Vec<_> = (0..8)
        .map(|_| {
            common::uidgen(&[
                "next",
                "-n",
                "100000",
                "--mysql-url",
                &url,
                "--create-table",
                "--layout",
                LAYOUT,
            ])
            .spawn()
            .unwrap()
        })
        .collect();
    let bits = BitsAllocator::preset(Preset::UidGeneratorReadme).unwrap();
    let mut all = HashSet::new();
    let mut workers = HashMap::new();
    for child in children {
        let ids = printed_ids(&child.wait_with_output().unwrap());
        assert_eq!(ids.len(), 100_000);
        let worker = bits.parse(ids[0]).unwrap().worker_id;
        assert!(ids
            .iter()
            .all(|&id| bits.parse(id).unwrap().worker_id == worker));
        assert_eq!(
            workers.insert(worker, ()),
            None,
            "two processes got worker {worker}"
        );
        all.extend(ids);
    }
    assert_eq!(all.len(), 800_000);
}

#[test]
fn a_layout_too_small_for_a_row_per_run_is_refused_before_connecting() {
    // Nothing listens at port 1: the refusal comes before any connection.
    for args in [
        &["next", "--mysql-url", "mysql://u:SECRETPW@127.0.0.1:1/db"][..],
        &["worker", "--mysql-url", "mysql://u:SECRETPW@127.0.0.1:1/db"],
        &[
            "next",
            "--mysql-url",
            "mysql://u:SECRETPW@127.0.0.1:1/db",
            "--layout",
            "snowflake",
        ],
    ] {
        let out = common::output(&mut common::uidgen(args));
        common::assert_fails_with(
            &out,
            1,
            &[
                "--mysql-url",
                "never reuses one",
                "10 worker bits",
                "that allows 1023 runs in all",
                "--store mysql://",
                "--layout uidgenerator-readme",
            ],
        );
        assert!(!common::stderr_of(&out).contains("cannot reach"));
        common::assert_no_secret(&out);
    }
}

#[test]
fn worker_list_shows_the_rows_used_and_the_runs_left() {
    let url = mysql_url();
    let assigned = |out: &std::process::Output| -> u64 {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let value: serde_json::Value = serde_json::from_str(text.trim()).expect(&text);
        value["worker_id"].as_u64().expect(&text)
    };
    let out = common::output(&mut common::uidgen(&[
        "worker",
        "--json",
        "--mysql-url",
        &url,
        "--create-table",
        "--layout",
        LAYOUT,
    ]));
    let taken = assigned(&out);
    let out = common::output(&mut common::uidgen(&[
        "worker",
        "list",
        "--json",
        "--mysql-url",
        &url,
        "--layout",
        LAYOUT,
    ]));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", common::stderr_of(&out));
    let value: serde_json::Value = serde_json::from_str(text.trim()).expect(&text);
    let used = value["worker_ids"]["used"].as_u64().expect(&text);
    let remaining = value["worker_ids"]["remaining"].as_u64().expect(&text);
    assert!(used >= taken, "{text}");
    assert_eq!(used + remaining, (1 << 21) - 1, "{text}");
    assert_eq!(value["worker_ids"]["reused"], false, "{text}");
    assert!(
        value["registry"].as_str().unwrap().contains("WORKER_NODE"),
        "{text}"
    );

    let out = common::output(&mut common::uidgen(&[
        "worker",
        "list",
        "--mysql-url",
        &url,
        "--layout",
        LAYOUT,
    ]));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", common::stderr_of(&out));
    assert!(
        text.contains("worker IDs used") && text.contains("launches left"),
        "{text}"
    );
}

// Issue 12 cases that need a server (or a name server that never answers). ------------

/// `host:port` of the test server, from its URL.
fn server_address() -> String {
    let url = mysql_url();
    let rest = url.strip_prefix("mysql://").expect("a mysql:// URL");
    let after_user = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    after_user
        .split('/')
        .next()
        .unwrap_or(after_user)
        .to_owned()
}

/// Runs SQL statements as the test server's (administrative) user.
fn admin(statements: &[&str]) -> mysql_async::Conn {
    use mysql_async::prelude::Queryable;
    runtime().block_on(async {
        let mut conn = mysql_async::Conn::from_url(mysql_url())
            .await
            .expect("connect as the test server's user");
        for statement in statements {
            conn.query_drop(*statement)
                .await
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
        conn
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

#[test]
fn case1_a_wrong_password_at_a_real_server_is_never_printed() {
    let url = format!("mysql://uidgen_nobody:SECRETPW@{}/test", server_address());
    for rust_log in ["warn", "trace"] {
        let mut by_flag = common::uidgen(&["worker", "--mysql-url", &url, "--layout", LAYOUT]);
        let mut by_env = common::uidgen(&["next", "--layout", LAYOUT]);
        by_env.env("UIDGEN_MYSQL_URL", &url);
        for cmd in [&mut by_flag, &mut by_env] {
            cmd.env("RUST_LOG", rust_log);
            let out = common::output(cmd);
            common::assert_fails_with(&out, 1, &["access denied for user \"uidgen_nobody\""]);
            common::assert_no_secret(&out);
        }
    }
}

#[test]
fn case8_no_access_to_the_database_is_not_called_a_wrong_password() {
    let conn = admin(&[
        "CREATE DATABASE IF NOT EXISTS uidgen_cli_private",
        "CREATE USER IF NOT EXISTS 'uidgen_noaccess'@'%' IDENTIFIED BY 'SECRETPW'",
        "CREATE USER IF NOT EXISTS 'uidgen_noaccess'@'localhost' IDENTIFIED BY 'SECRETPW'",
        "CREATE USER IF NOT EXISTS 'uidgen_noaccess'@'127.0.0.1' IDENTIFIED BY 'SECRETPW'",
    ]);
    runtime().block_on(conn.disconnect()).ok();
    let url = format!(
        "mysql://uidgen_noaccess:SECRETPW@{}/uidgen_cli_private",
        server_address()
    );
    let mut cmd = common::uidgen(&["worker", "--mysql-url", &url, "--layout", LAYOUT]);
    cmd.env("RUST_LOG", "trace");
    let out = common::output(&mut cmd);
    common::assert_fails_with(
        &out,
        1,
        &["may not use database \"uidgen_cli_private\"", "GRANT"],
    );
    assert!(!common::stderr_of(&out).contains("wrong user name or password"));
    common::assert_no_secret(&out);
}

#[test]
fn case8_a_table_locked_by_lock_tables_is_a_timeout_naming_the_step() {
    // A database of its own, so the lock holds up no other test.
    let mut holder = admin(&[
        "CREATE DATABASE IF NOT EXISTS uidgen_cli_lock",
        "USE uidgen_cli_lock",
        uidgen::MYSQL_SCHEMA,
        "LOCK TABLES WORKER_NODE WRITE",
    ]);
    let url = format!("mysql://{}", {
        let base = mysql_url();
        let rest = base.strip_prefix("mysql://").unwrap().to_owned();
        let (before_db, _) = rest.rsplit_once('/').unwrap();
        format!("{before_db}/uidgen_cli_lock")
    });
    let start = std::time::Instant::now();
    let out = common::output(&mut common::uidgen(&[
        "worker",
        "--mysql-url",
        &url,
        "--mysql-timeout",
        "1",
        "--layout",
        LAYOUT,
    ]));
    let took = start.elapsed();
    {
        use mysql_async::prelude::Queryable;
        runtime()
            .block_on(holder.query_drop("UNLOCK TABLES"))
            .unwrap();
        runtime().block_on(holder.disconnect()).ok();
    }
    common::assert_fails_with(
        &out,
        1,
        &[
            "did not finish inserting the worker row within 1s",
            "LOCK TABLES",
        ],
    );
    assert!(!common::stderr_of(&out).contains("cannot reach"));
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
}

#[test]
fn case8_nothing_listening_is_cannot_reach() {
    let out = common::output(&mut common::uidgen(&[
        "worker",
        "--mysql-url",
        "mysql://u:SECRETPW@127.0.0.1:1/db",
        "--layout",
        LAYOUT,
    ]));
    common::assert_fails_with(&out, 1, &["cannot reach the MySQL server at 127.0.0.1:1"]);
    common::assert_no_secret(&out);
}

/// A name server that reads every query and never answers, on port 53 of a loopback
/// address of its own. `None` when it cannot bind (port 53 needs root).
fn silent_name_server() -> Option<(
    std::net::Ipv4Addr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
)> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let queries = std::sync::Arc::new(AtomicUsize::new(0));
    // A few addresses, in case another run holds one.
    for last in [77u8, 78, 79, 177, 178, 179] {
        let ip = std::net::Ipv4Addr::new(127, 0, 0, last);
        let Ok(socket) = std::net::UdpSocket::bind((ip, 53)) else {
            continue;
        };
        let seen = queries.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 1500];
            while socket.recv_from(&mut buf).is_ok() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        });
        return Some((ip, queries));
    }
    None
}

#[test]
fn case3_a_name_server_that_never_answers_is_bounded_by_the_default_5s() {
    use std::sync::atomic::Ordering;
    let skip = |why: &str| {
        eprintln!(
            "\n*** SKIPPED case3 DNS test: {why}.\n*** It needs root (port 53, mount \
             namespaces) and util-linux's unshare; the DNS bound is NOT tested here. ***\n"
        );
    };
    let probe = std::process::Command::new("unshare")
        .args(["-m", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        return skip("`unshare -m` does not work here");
    }
    let Some((ip, queries)) = silent_name_server() else {
        return skip("cannot bind UDP port 53 on 127.0.0.x");
    };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("resolv.conf");
    // Without our bound, glibc would wait 10 s per try, twice.
    std::fs::write(
        &conf,
        format!("nameserver {ip}\noptions timeout:10 attempts:2\n"),
    )
    .unwrap();

    let mut cmd = std::process::Command::new("unshare");
    cmd.args([
        "-m",
        "sh",
        "-c",
        r#"mount --bind "$0" /etc/resolv.conf && exec "$@""#,
    ])
    .arg(&conf)
    .args([
        env!("CARGO_BIN_EXE_uidgen"),
        "worker",
        "--mysql-url",
        "mysql://root@db.example.com/t",
        "--layout",
        LAYOUT,
    ]);
    common::clean(&mut cmd);
    let start = std::time::Instant::now();
    let out = common::output(&mut cmd);
    let took = start.elapsed();
    eprintln!("case3: the DNS test took {took:?}");
    common::assert_fails_with(
        &out,
        1,
        &[
            "db.example.com",
            "did not finish resolving the host name within 5s",
        ],
    );
    assert!(
        took < std::time::Duration::from_secs(6),
        "took {took:?}, past the 5 s bound + 1 s"
    );
    assert!(
        took >= std::time::Duration::from_millis(4900),
        "ended before the bound ({took:?}): the name server was not the one asked"
    );
    assert!(
        queries.load(Ordering::SeqCst) > 0,
        "the private resolv.conf was not used"
    );
}
