//! The service's `/metrics` as a real Prometheus reads it: the service runs in-process on
//! a port of its own (a SQLite store in a temp dir), 123 snowflake IDs are drawn, then the
//! `prometheus` binary scrapes it every second until its query API says
//! `sum(uidgen_ids_served_total)` is 123 and `up` is 1.
//!
//! Needs `prometheus` on PATH (`apt-get install prometheus`; scripts/test installs it);
//! without it the test fails, unless `UIDGEN_SKIP_PROMETHEUS=1`.

mod support;

use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{get, try_curl, TestServer};

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

/// A Prometheus instant query's single value, or why there is none (the answer itself).
fn query_value(addr: SocketAddr, query: &str) -> Result<String, String> {
    let answer = try_curl(&[
        "-G",
        "--data-urlencode",
        &format!("query={query}"),
        &format!("http://{addr}/api/v1/query"),
    ])?;
    let (status, body) = (answer.status, answer.body);
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

#[test]
fn prometheus_scrapes_the_ids_served() {
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
    // The service, in-process, on a free port, with a store of its own.
    let server = TestServer::start(&[]);
    let service = server.addr;
    let prometheus_dir = server.dir.path().to_owned();

    // The IDs, drawn before Prometheus starts: every scrape must read 123.
    let path = format!("/v1/snowflake?count={DRAWN}");
    let answer = get(&server, &path);
    let (status, body) = (answer.status, answer.body);
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

    // The service's own count first, so a wrong count is told apart from a scrape that
    // never happened.
    let answer = get(&server, "/metrics");
    let (status, metrics) = (answer.status, answer.body);
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
}
