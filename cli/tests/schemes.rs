//! `uidgen bench --scheme NAME`: every scheme's driver hands out unique IDs of its
//! documented size and order, on the servers scripts/test makes reachable
//! (UIDGEN_MYSQL_URL, UIDGEN_POSTGRES_URL, UIDGEN_REDIS_URL, UIDGEN_ZOOKEEPER_URL, each
//! defaulting to 127.0.0.1); a store's restart is measured, not assumed (a Redis without
//! persistence repeats INCR's IDs, one with an fsynced log does not); bad command lines
//! are refused in words. The speed figures live in results/schemes.md, not here.

mod common;

use common::serve::Serve;
use common::{assert_fails_with, assert_no_secret, output, uidgen};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use uidgen_cli::schemes::result::SchemeResult;

fn url(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

fn mysql_url() -> String {
    url("UIDGEN_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
}

/// Runs `uidgen bench --scheme NAME ARGS` briefly and returns what it measured, after
/// checking what every run must show: each thread count ran, handed out IDs, none twice,
/// no call failed, and the percentiles rise.
fn bench(name: &str, args: &[&str], envs: &[(&str, &str)]) -> SchemeResult {
    let mut cmd = uidgen(&["bench", "--scheme", name, "--json"]);
    cmd.args(["--seconds", "0.2", "--restart-seconds", "0.1"])
        .args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = output(&mut cmd);
    assert!(
        out.status.success(),
        "--scheme {name}: {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let result: SchemeResult = serde_json::from_slice(&out.stdout).expect("the JSON result");
    assert_eq!(result.scheme, name);
    let threads: Vec<usize> = result.runs.iter().map(|r| r.threads).collect();
    let expected: &[usize] = if args.contains(&"--threads") {
        &[1]
    } else {
        &[1, 2, 8]
    };
    assert_eq!(threads, expected, "{name}");
    for run in &result.runs {
        assert!(run.ids > 0, "{name}: no ID at {} threads", run.threads);
        assert_eq!(run.duplicates, 0, "{name} at {} threads", run.threads);
        assert_eq!(run.errors, 0, "{name} at {} threads", run.threads);
        assert_eq!(run.ids, run.calls * result.ids_per_call as u64, "{name}");
        let l = &run.latency;
        assert!(l.p50_ns <= l.p99_ns && l.p99_ns <= l.p999_ns && l.p999_ns <= l.max_ns);
        assert!(l
            .cdf
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }
    result
}

#[test]
fn every_in_process_scheme_hands_out_unique_ids_of_its_size_and_order() {
    // (name, bytes per ID, sorts by time within one thread)
    let expected = [
        ("uuid-v4", 16, Some(false)),
        ("uuid-v7", 16, Some(true)),
        // ULID's random part is drawn anew in each millisecond: not ordered within one.
        ("ulid", 16, Some(false)),
        // A counter from a random start: ordered until the counter wraps.
        ("objectid", 12, None),
        ("twitter-snowflake", 8, Some(true)),
        ("zookeeper-session-id", 8, Some(true)),
        ("xiaomi-msgid", 22, Some(true)),
        ("boundary-flake", 16, Some(true)),
    ];
    for (name, bytes, sorted) in expected {
        let r = bench(name, &[], &[]);
        assert_eq!(r.bytes_per_id, bytes, "{name}");
        assert_eq!(r.needs, "nothing (in-process)");
        if let Some(sorted) = sorted {
            assert_eq!(r.order.sorts_by_time(), sorted, "{name}: {:?}", r.order);
        }
        assert_eq!(r.restart.what, "process", "{name}");
        assert!(r.restart.before > 0 && r.restart.after > 0, "{name}");
        assert_eq!(r.restart.repeats, 0, "{name}: {:?}", r.restart);
    }
}

#[test]
fn uidgens_own_schemes_run_on_the_embedded_store_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let workers = dir.path().join("workers.sqlite3");
    let segments = dir.path().join("segments.sqlite3");
    let ring = bench(
        "uidgen-ring",
        &[],
        &[("UIDGEN_WORKER_DB", workers.to_str().unwrap())],
    );
    let segment = bench(
        "uidgen-segment",
        &["--store", segments.to_str().unwrap()],
        &[],
    );
    for r in [ring, segment] {
        assert!(r.order.sorts_by_time(), "{}: {:?}", r.scheme, r.order);
        assert_eq!(r.restart.what, "process");
        assert_eq!(r.restart.repeats, 0, "{}: {:?}", r.scheme, r.restart);
    }
}

#[test]
fn mysql_schemes_and_two_servers_hand_out_odd_and_even_ids() {
    let url = mysql_url();
    // A second database stands for a second server: each holds its own tables.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use mysql_async::prelude::Queryable;
        let mut conn = mysql_async::Conn::from_url(&url).await.expect("MySQL");
        conn.query_drop("CREATE DATABASE IF NOT EXISTS test_schemes2")
            .await
            .unwrap();
    });
    let second = replace_database(&url, "test_schemes2").expect("a URL with a database");
    for name in ["mysql-auto-increment", "flickr-ticket"] {
        let r = bench(name, &["--store", &url], &[]);
        assert!(r.order.sorts_by_time(), "{name}: {:?}", r.order);
        assert_eq!(r.restart.what, "not measured");
    }
    for name in ["mysql-auto-increment-2", "flickr-ticket-2"] {
        let r = bench(name, &["--store", &url, "--second-store", &second], &[]);
        assert_eq!(r.stores.len(), 2);
    }
    // The ticket row of each server: odd on the first, even on the second.
    let ids: Vec<u64> = rt.block_on(async {
        use mysql_async::prelude::Queryable;
        let mut out = Vec::new();
        for u in [&url, &second] {
            let mut conn = mysql_async::Conn::from_url(u.as_str()).await.unwrap();
            let id: Option<u64> = conn.query_first("SELECT id FROM Tickets64").await.unwrap();
            out.push(id.expect("a ticket row"));
        }
        out
    });
    assert_eq!((ids[0] % 2, ids[1] % 2), (1, 0), "tickets {ids:?}");
}

/// `url` with its database replaced by `db`.
fn replace_database(url: &str, db: &str) -> Option<String> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let (server, _) = base.rsplit_once('/')?;
    Some(match query {
        Some(q) => format!("{server}/{db}?{q}"),
        None => format!("{server}/{db}"),
    })
}

#[test]
fn redis_postgres_and_zookeeper_schemes_hand_out_unique_ordered_ids() {
    let redis = url("UIDGEN_REDIS_URL", "redis://127.0.0.1:6379");
    for name in ["redis-incr", "redis-incrby", "redis-lua-snowflake"] {
        let r = bench(name, &["--store", &redis], &[]);
        assert!(r.order.sorts_by_time(), "{name}: {:?}", r.order);
    }
    let postgres = url(
        "UIDGEN_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    );
    // The sequence modulo 1024 wraps within a millisecond: nearly, not wholly, ordered.
    let r = bench("instagram", &["--store", &postgres], &[]);
    assert!(
        r.order.rising * 100 >= r.order.pairs * 99,
        "instagram: {:?}",
        r.order
    );
    let zk = url("UIDGEN_ZOOKEEPER_URL", "zk://127.0.0.1:2181");
    let r = bench("zookeeper-sequential", &["--store", &zk], &[]);
    assert!(r.order.sorts_by_time(), "zookeeper: {:?}", r.order);
}

#[test]
fn leaf_and_tinyid_routes_through_uidgen_serve() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    const TOKEN: &str = "schemes-test-token-0123456789";
    let tokens = format!("{TOKEN}=*");
    let server = Serve::start(
        &[
            "--store",
            store.to_str().unwrap(),
            "--tag",
            "order",
            "--tag-start",
            "1",
        ],
        &[("UIDGEN_TOKENS", tokens.as_str())],
    );
    let service = format!("{}/?token={TOKEN}", server.url(""));
    for name in ["leaf-segment-http", "leaf-snowflake-http", "tinyid-http"] {
        let r = bench(name, &["--store", &service, "--tag", "order"], &[]);
        assert!(r.order.sorts_by_time(), "{name}: {:?}", r.order);
        assert_eq!(r.needs, "uidgen serve (and its store)");
    }
    // A tag the service does not have is refused in the service's words; one with
    // characters a URL must escape reaches the service as itself.
    let out = output(&mut uidgen(&[
        "bench",
        "--scheme",
        "tinyid-http",
        "--store",
        &service,
        "--tag",
        "a b&c/d?e",
        "--seconds",
        "0.1",
    ]));
    assert_fails_with(&out, 1, &["a b&c/d?e"]);
    let out = output(&mut uidgen(&[
        "bench",
        "--scheme",
        "leaf-segment-http",
        "--store",
        &service,
        "--tag",
        "nope",
        "--seconds",
        "0.1",
    ]));
    assert_fails_with(&out, 1, &["no segment tag", "nope"]);
}

/// A private redis-server on a free port, with `flags`, and the shell command that
/// kills it (SIGKILL: nothing flushed at exit) and starts it again on its directory.
struct PrivateRedis {
    dir: tempfile::TempDir,
    url: String,
    restart: String,
}

impl PrivateRedis {
    fn start(flags: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let d = dir.path().display();
        let start = format!(
            "redis-server --port {port} --bind 127.0.0.1 --dir {d} --daemonize yes \
             --pidfile {d}/redis.pid --logfile {d}/redis.log {flags} && \
             until redis-cli -p {port} ping >/dev/null 2>&1; do sleep 0.05; done"
        );
        let restart = format!(
            "kill -9 $(cat {d}/redis.pid) && while redis-cli -p {port} ping >/dev/null 2>&1; \
             do sleep 0.05; done; {start}"
        );
        let status = Command::new("sh")
            .args(["-c", &start])
            .stdout(Stdio::null())
            .status()
            .expect("redis-server (scripts/test installs it)");
        assert!(status.success(), "redis-server did not start");
        PrivateRedis {
            url: format!("redis://127.0.0.1:{port}"),
            dir,
            restart,
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let pid = self.dir.path().join("redis.pid");
        let _ = Command::new("sh")
            .arg("-c")
            .arg(format!("kill -9 $(cat {})", pid.display()))
            .status();
    }
}

#[test]
fn a_store_restart_is_measured_redis_without_persistence_repeats_incr() {
    let started = Instant::now();
    let lost = PrivateRedis::start("--save '' --appendonly no");
    let r = bench(
        "redis-incr",
        &[
            "--store",
            &lost.url,
            "--restart-with",
            &lost.restart,
            "--threads",
            "1",
        ],
        &[],
    );
    assert_eq!(r.restart.what, "store");
    // The private Redis counted 1..=N before the restart and 1..=M after it.
    let n: u64 = r.runs.iter().map(|run| run.ids).sum::<u64>() + r.restart.before;
    assert!(
        r.restart.repeats > 0 && r.restart.repeats == r.restart.after.min(n),
        "a Redis that keeps nothing starts INCR at 1 again: {n} before, {:?}",
        r.restart
    );
    // The same restart of a Redis that fsyncs every write to its log: nothing repeats.
    let kept = PrivateRedis::start("--save '' --appendonly yes --appendfsync always");
    let r = bench(
        "redis-incr",
        &[
            "--store",
            &kept.url,
            "--restart-with",
            &kept.restart,
            "--threads",
            "1",
        ],
        &[],
    );
    assert_eq!(r.restart.repeats, 0, "{:?}", r.restart);
    assert!(r.restart.after > 0);
    assert!(started.elapsed() < Duration::from_secs(120));
}

#[test]
fn bad_command_lines_are_refused_in_words() {
    let out = output(&mut uidgen(&["bench", "--scheme", "uuid-v9"]));
    assert_fails_with(
        &out,
        1,
        &["no scheme \"uuid-v9\"", "uuid-v4", "zookeeper-sequential"],
    );
    let out = output(&mut uidgen(&[
        "bench",
        "--scheme",
        "flickr-ticket-2",
        "--store",
        "mysql://x@127.0.0.1:1/t",
    ]));
    assert_fails_with(&out, 1, &["two servers", "--second-store"]);
    let out = output(&mut uidgen(&["bench", "--scheme", "redis-incr"]));
    assert_fails_with(&out, 1, &["one server", "--store URL"]);
    let out = output(&mut uidgen(&[
        "bench",
        "--scheme",
        "uuid-v4",
        "--second-store",
        "mysql://a/b",
    ]));
    assert_fails_with(
        &out,
        1,
        &["--second-store applies only to two-server schemes"],
    );
    let out = output(&mut uidgen(&[
        "bench",
        "--scheme",
        "uuid-v4",
        "--seconds",
        "0",
    ]));
    assert_fails_with(&out, 1, &["--seconds 0 is out of range"]);
    let out = output(&mut uidgen(&[
        "bench", "--scheme", "uuid-v4", "--store", "/tmp/x",
    ]));
    assert_fails_with(&out, 1, &["--store does not apply to --scheme uuid-v4"]);
    let out = output(&mut uidgen(&[
        "bench",
        "--scheme",
        "uuid-v4",
        "--pattern",
        "churn",
    ]));
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let out = output(&mut uidgen(&["bench", "--restart-with", "true"]));
    assert_eq!(out.status.code(), Some(2), "--restart-with needs --scheme");
    let out = output(&mut uidgen(&[
        "bench",
        "--scheme",
        "uuid-v4",
        "--restart-with",
        "exit 3",
        "--seconds",
        "0.05",
    ]));
    assert_fails_with(&out, 1, &["the --restart-with command failed", "3"]);
    // A password in a store URL is never shown, even when the server cannot be reached.
    let out = output(&mut uidgen(&[
        "bench",
        "--scheme",
        "mysql-auto-increment",
        "--store",
        "mysql://root:SECRETPW@127.0.0.1:1/test",
        "--seconds",
        "0.05",
    ]));
    assert_fails_with(&out, 1, &["MySQL"]);
    assert_no_secret(&out);
    let out = output(&mut uidgen(&["bench", "--scheme", "list"]));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(listed.lines().count(), uidgen_cli::schemes::names().len());
}
