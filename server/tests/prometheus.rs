//! The service's `/metrics` as a real Prometheus reads it: the service runs in-process on
//! a port of its own (a SQLite store in a temp dir), 123 snowflake IDs are drawn, then the
//! `prometheus` binary scrapes it every second until its query API says
//! `sum(uidgen_ids_served_total)` is 123 and `up` is 1.
//!
//! Needs `prometheus` on PATH (`apt-get install prometheus`; scripts/test installs it);
//! without it the test fails, unless `UIDGEN_SKIP_PROMETHEUS=1`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener as StdListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uidgen_server::{Config, Ids};

const DRAWN: usize = 123;
const PROMETHEUS_TIMEOUT: Duration = Duration::from_secs(30);

/// A started `prometheus`, killed when dropped (a failing test leaves none behind).
struct Prometheus {
    child: Child,
    log: PathBuf,
}

impl Prometheus {
    /// Its log so far, for failure messages.
    fn log(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Fails the test if prometheus has exited.
    fn check_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "prometheus exited ({status}) before the query answered; its log:\n{}",
                self.log()
            );
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `prometheus` on PATH, if there is one.
fn find_prometheus() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("prometheus"))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    let listener = StdListener::bind("127.0.0.1:0").expect("cannot bind 127.0.0.1:0");
    listener
        .local_addr()
        .expect("cannot read the address bound")
        .port()
}

/// Percent-encodes a query parameter's value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One HTTP/1.1 GET (`Connection: close`): the status and the body, or what went wrong.
fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let fail = |what: &str, e: std::io::Error| format!("GET http://{addr}{path}: {what}: {e}");
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| fail("cannot connect", e))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| fail("cannot set a read timeout", e))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| fail("cannot send the request", e))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| fail("cannot read the answer", e))?;
    let raw = String::from_utf8(raw)
        .map_err(|e| format!("GET http://{addr}{path}: the answer is not UTF-8: {e}"))?;
    let (head, body) = raw.split_once("\r\n\r\n").ok_or_else(|| {
        format!("GET http://{addr}{path}: the answer has no end of headers: {raw:?}")
    })?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("GET http://{addr}{path}: no status in {head:?}"))?;
    let chunked = head.lines().any(|line| {
        let line = line.to_ascii_lowercase();
        line.starts_with("transfer-encoding:") && line.contains("chunked")
    });
    let body = if chunked {
        dechunk(body).ok_or_else(|| {
            format!("GET http://{addr}{path}: a chunked body that cannot be read: {body:?}")
        })?
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

/// The body of a `Transfer-Encoding: chunked` answer.
fn dechunk(mut rest: &str) -> Option<String> {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
}

/// A Prometheus instant query's single value, or why there is none (the answer itself).
fn query_value(addr: SocketAddr, query: &str) -> Result<String, String> {
    let path = format!("/api/v1/query?query={}", encode(query));
    let (status, body) = http_get(addr, &path)?;
    if status != 200 {
        return Err(format!("{query}: HTTP {status}: {body}"));
    }
    let answer: serde_json::Value = serde_json::from_str(&body)
        .map_err(|e| format!("{query}: the answer is not JSON ({e}): {body}"))?;
    let results = answer["data"]["result"]
        .as_array()
        .ok_or_else(|| format!("{query}: no data.result in {body}"))?;
    match results.as_slice() {
        [one] => one["value"][1]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{query}: a result without a value: {body}")),
        _ => Err(format!(
            "{query}: {} results, want exactly 1: {body}",
            results.len()
        )),
    }
}

/// Polls `query` until its value is `want`; fails with the last answer after the timeout.
fn wait_for_value(prometheus: &mut Prometheus, addr: SocketAddr, query: &str, want: &str) {
    let deadline = Instant::now() + PROMETHEUS_TIMEOUT;
    let mut last;
    loop {
        prometheus.check_running();
        last = query_value(addr, query);
        if last.as_deref() == Ok(want) {
            return;
        }
        if Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!(
        "Prometheus at {addr} did not answer {query} = {want} within {PROMETHEUS_TIMEOUT:?}; \
         the last answer: {}; prometheus's log:\n{}",
        match last {
            Ok(value) => format!("the value {value}"),
            Err(e) => e,
        },
        prometheus.log()
    );
}

fn write_config(dir: &Path, target: SocketAddr) -> PathBuf {
    let path = dir.join("prometheus.yml");
    let yaml = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
         scrape_configs:\n  - job_name: uidgen\n    scrape_interval: 1s\n    scrape_timeout: 1s\n    \
         metrics_path: /metrics\n    static_configs:\n      - targets: ['{target}']\n"
    );
    std::fs::write(&path, yaml).expect("cannot write prometheus.yml into the temp dir");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_ids_served() {
    if std::env::var("UIDGEN_SKIP_PROMETHEUS").as_deref() == Ok("1") {
        println!("skipped: UIDGEN_SKIP_PROMETHEUS=1 (the real Prometheus scrape is not tested)");
        return;
    }
    let prometheus_bin = match find_prometheus() {
        Some(path) => path,
        None => panic!(
            "the prometheus binary is not on PATH: apt-get install prometheus \
             (scripts/test installs it), or set UIDGEN_SKIP_PROMETHEUS=1 to skip this test"
        ),
    };
    let dir = tempfile::tempdir().expect("cannot make a temp dir");
    let store = dir.path().join("ids.sqlite3");

    // The service, in-process, on a free port, with a store of its own.
    let config = Config::load(
        None,
        vec![("UIDGEN_STORE".to_owned(), store.display().to_string())],
    )
    .expect("a config with only UIDGEN_STORE set is refused");
    let ids = tokio::task::spawn_blocking(move || Ids::start(config))
        .await
        .expect("Ids::start panicked")
        .unwrap_or_else(|e| panic!("the service did not start on {}: {e}", store.display()));
    let ids = Arc::new(ids);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("cannot bind 127.0.0.1:0 for the service");
    let service = listener.local_addr().expect("the service's address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(uidgen_server::serve(listener, Arc::clone(&ids), async {
        let _ = stopped.await;
    }));

    let prometheus_dir = dir.path().to_owned();
    // Blocking HTTP and a child process: off the runtime's threads.
    let checked = tokio::task::spawn_blocking(move || {
        // The IDs, drawn before Prometheus starts: every scrape must read 123.
        let path = format!("/v1/snowflake?count={DRAWN}");
        let (status, body) = http_get(service, &path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status, 200, "GET {path} answered {status}: {body}");
        let answer: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("GET {path} answered with no JSON ({e}): {body}"));
        let drawn = answer["ids"]
            .as_array()
            .unwrap_or_else(|| panic!("GET {path}: no \"ids\" array in {body}"));
        let distinct: std::collections::BTreeSet<u64> =
            drawn.iter().filter_map(serde_json::Value::as_u64).collect();
        assert_eq!(
            (answer["count"].as_u64(), distinct.len()),
            (Some(DRAWN as u64), DRAWN),
            "GET {path} should give count {DRAWN} and {DRAWN} distinct IDs: {body}"
        );

        // The service's own count first, so a wrong count is told apart from a scrape
        // that never happened.
        let (status, metrics) = http_get(service, "/metrics").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status, 200, "GET /metrics answered {status}: {metrics}");
        let line = format!("uidgen_ids_served_total{{route=\"v1\",tag=\"@snowflake\"}} {DRAWN}");
        assert!(
            metrics.lines().any(|l| l == line),
            "/metrics has no line {line:?}; it has:\n{metrics}"
        );

        let port = free_port();
        let web: SocketAddr = ([127, 0, 0, 1], port).into();
        let config = write_config(&prometheus_dir, service);
        let log = prometheus_dir.join("prometheus.log");
        let log_file = std::fs::File::create(&log).expect("cannot create prometheus.log");
        let child = Command::new(&prometheus_bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                prometheus_dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdin(Stdio::null())
            .stdout(
                log_file
                    .try_clone()
                    .expect("cannot share prometheus.log's handle"),
            )
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", prometheus_bin.display()));
        let mut prometheus = Prometheus { child, log };

        wait_for_value(
            &mut prometheus,
            web,
            "sum(uidgen_ids_served_total)",
            &DRAWN.to_string(),
        );
        wait_for_value(&mut prometheus, web, "up{job=\"uidgen\"}", "1");
        drop(prometheus);
    })
    .await;

    let _ = stop.send(());
    let served = tokio::time::timeout(Duration::from_secs(15), server).await;
    // The worker ID's release is a store call: off the runtime's threads.
    let _ = tokio::task::spawn_blocking(move || drop(ids)).await;
    match checked {
        Ok(()) => {}
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("the checks' task did not finish: {e}"),
    }
    match served {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => panic!("the service failed: {e}"),
        Ok(Err(e)) => panic!("the service's task failed: {e}"),
        Err(_) => panic!("the service did not stop within 15 s of its shutdown signal"),
    }
}
