//! The clients of clients/ (PROTOCOL.md) against two `uidgen serve` processes on MariaDB:
//! 8 processes × 4 threads (or tasks) of one client take 250,000 IDs each, while a
//! service they take from is SIGKILLed and started again on its address. No ID is taken twice across all
//! of them, each thread's IDs increase, failovers are counted, and no take waits longer
//! than the failover bound. And what a client that breaks the protocol's give-back order
//! costs (a gap and a false alarm, never a repeat).

#![cfg(feature = "mysql")]

mod common;
#[path = "../../tests/support/servers.rs"]
mod servers;

use common::serve::Serve;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PROCESSES: usize = 8;
const THREADS: usize = 4;
const PER_THREAD: usize = 250_000;
/// The longest one take may wait with a server gone: a fetch tries each of the two
/// servers for at most the clients' 2 s timeout with a 50 ms pause between them, and a
/// take waits for at most the fetch in flight and then one of its own.
const FAILOVER_BOUND_MS: u64 = 2 * (2 * 2_000 + 50);

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `driver(servers, tag, out)` in 8 processes against two services, one of them
/// SIGKILLed as they start and started again a second later, and checks what they took.
fn fleet(name: &str, driver: &dyn Fn(&str, &str, &Path) -> Command) {
    let store = servers::mysql_url();
    let tag = format!("clients-{name}-{}", servers::random_suffix());
    let args = [
        "--store",
        store.as_str(),
        "--tag",
        tag.as_str(),
        "--tag-start",
        "1",
    ];
    let a = Serve::start(&args, &[]);
    let b = Serve::start(&args, &[]);
    let (a_port, b_port) = (a.port().to_owned(), b.port().to_owned());
    let servers = format!("127.0.0.1:{a_port},127.0.0.1:{b_port}");
    let dir = tempfile::tempdir().unwrap();
    let outs: Vec<PathBuf> = (0..PROCESSES)
        .map(|p| dir.path().join(format!("p{p}")))
        .collect();
    let started = Instant::now();
    let children: Vec<Child> = outs
        .iter()
        .map(|out| {
            driver(&servers, &tag, out)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("the {name} driver does not start: {e}"))
        })
        .collect();
    // Once the clients take ranges from a service, it dies, and it comes back where it
    // was a second later: the clients that took from it must move to the other.
    let ports = [a_port, b_port];
    let mut services = [Some(a), Some(b)];
    let busy = busy_service(&ports, &tag);
    drop(services[busy].take());
    std::thread::sleep(Duration::from_secs(1));
    services[busy] = Some(Serve::start_at(
        &format!("127.0.0.1:{}", ports[busy]),
        &args,
        &[],
    ));
    let (mut failovers, mut longest) = (0, 0);
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the {name} driver failed: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let summary: serde_json::Value =
            serde_json::from_str(stdout.lines().last().unwrap_or_default())
                .unwrap_or_else(|e| panic!("the {name} driver's summary {stdout:?}: {e}"));
        assert_eq!(summary["ids"], THREADS * PER_THREAD, "{summary}");
        failovers += summary["failovers"].as_u64().unwrap();
        longest = longest.max(summary["max_call_ms"].as_f64().unwrap().ceil() as u64);
    }
    let took = started.elapsed();
    let mut all = Vec::with_capacity(PROCESSES * THREADS * PER_THREAD);
    let mut snowflakes = Vec::new();
    for out in &outs {
        for t in 0..THREADS {
            let ids = read(out, t, "");
            assert_eq!(ids.len(), PER_THREAD, "{name}: {}.{t}", out.display());
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "{name}: {}.{t}: IDs do not increase",
                out.display()
            );
            all.extend(ids);
            snowflakes.extend(read(out, t, ".snowflake"));
        }
    }
    for (kind, ids) in [("segment", &mut all), ("snowflake", &mut snowflakes)] {
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            panic!("{name}: {kind} ID {} taken twice", w[0]);
        }
    }
    assert!(
        failovers >= 1,
        "{name}: no take moved to the other service while one was dead"
    );
    assert!(
        longest <= FAILOVER_BOUND_MS,
        "{name}: a take waited {longest} ms, past the {FAILOVER_BOUND_MS} ms bound"
    );
    eprintln!(
        "{name}: {} IDs in {took:?}; {failovers} failovers; longest take {longest} ms",
        all.len()
    );
    // Closing clients gave tails back to both services: neither may take that for a
    // store that went back.
    for service in services.into_iter().flatten() {
        let (_, stderr) = service.terminate();
        assert!(
            !stderr.contains("lost data"),
            "{name}: a give-back looked like data loss: {stderr}"
        );
    }
}

/// The index of the first service of `ports` to have handed out 2,000 IDs of `tag` in
/// ranges (its metrics say), within a minute.
fn busy_service(ports: &[String; 2], tag: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for (index, port) in ports.iter().enumerate() {
            let (_, metrics) = common::serve::curl(&[&format!("http://127.0.0.1:{port}/metrics")]);
            let served: f64 = metrics
                .lines()
                .filter(|l| {
                    l.starts_with("uidgen_ids_served_total")
                        && l.contains("route=\"v1_range\"")
                        && l.contains(&format!("tag=\"{tag}\""))
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum();
            if served >= 2_000.0 {
                return index;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no service handed out ranges of {tag} within a minute"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The IDs of thread `t`'s file (`OUT.t` and `OUT.t.snowflake`).
fn read(out: &Path, t: usize, suffix: &str) -> Vec<u64> {
    let path = format!("{}.{t}{suffix}", out.display());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|l| {
            l.parse()
                .unwrap_or_else(|_| panic!("{path}: not an ID: {l:?}"))
        })
        .collect()
}

fn args(servers: &str, tag: &str, out: &Path) -> Vec<String> {
    vec![
        servers.into(),
        tag.into(),
        THREADS.to_string(),
        PER_THREAD.to_string(),
        out.display().to_string(),
    ]
}

#[test]
fn the_rust_client_in_eight_processes_repeats_nothing_across_a_killed_service() {
    // Built beside `uidgen` by any build of the workspace (scripts/test's).
    let driver = Path::new(env!("CARGO_BIN_EXE_uidgen")).with_file_name("uidgen-client-driver");
    assert!(
        driver.exists(),
        "{} is missing: cargo build -p uidgen-client (scripts/test builds the workspace)",
        driver.display()
    );
    fleet("rust", &|servers, tag, out| {
        let mut command = Command::new(&driver);
        command.args(args(servers, tag, out));
        command
    });
}

#[test]
fn the_typescript_client_in_eight_processes_repeats_nothing_across_a_killed_service() {
    let driver = root().join("clients/typescript/dist/driver.js");
    assert!(
        driver.exists(),
        "{} is missing: npm ci && npm run build in clients/typescript (scripts/clients-test, which scripts/test runs)",
        driver.display()
    );
    fleet("typescript", &|servers, tag, out| {
        let mut command = Command::new("node");
        command.arg(&driver).args(args(servers, tag, out));
        command
    });
}

#[test]
fn the_python_client_in_eight_processes_repeats_nothing_across_a_killed_service() {
    let package = root().join("clients/python");
    fleet("python", &|servers, tag, out| {
        let mut command = Command::new("python3");
        command
            .env("PYTHONPATH", &package)
            .args(["-m", "uidgen_client.driver"])
            .args(args(servers, tag, out));
        command
    });
}

#[test]
fn the_go_client_in_eight_processes_repeats_nothing_across_a_killed_service() {
    let built = tempfile::tempdir().unwrap();
    let driver = built.path().join("uidgen-driver");
    let status = Command::new("go")
        .current_dir(root().join("clients/go"))
        .env("GOPROXY", "off")
        .args(["build", "-o"])
        .arg(&driver)
        .arg("./cmd/uidgen-driver")
        .status()
        .unwrap_or_else(|e| {
            panic!("go does not run ({e}): apt-get install golang-go (scripts/test does)")
        });
    assert!(
        status.success(),
        "go build of the Go client's driver failed"
    );
    fleet("go", &|servers, tag, out| {
        let mut command = Command::new(&driver);
        command.args(args(servers, tag, out));
        command
    });
}

/// A client that breaks PROTOCOL.md's give-back order across two processes (the newer
/// range back to one, then the older range's tail to the other) costs a gap and a false
/// alarm in the first, never a repeat: the counter is raised past all it handed out.
#[test]
fn a_give_back_out_of_order_across_processes_is_a_gap_and_an_alarm_never_a_repeat() {
    let store = servers::mysql_url();
    let tag = format!("clients-order-{}", servers::random_suffix());
    // The tag is made in the store; the services serve no generator on it, whose
    // prefetch would take ranges between the test's.
    let created = Command::new(env!("CARGO_BIN_EXE_uidgen"))
        .args(["segment", "create", "--store", &store, "--tag", &tag])
        .args(["--step", "1000"])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let a = Serve::start(&["--store", &store], &[]);
    let b = Serve::start(&["--store", &store], &[]);
    let take = |serve: &Serve| {
        let path = format!("/v1/segment/{tag}/range?count=10");
        let (status, body) = common::serve::curl(&["-X", "POST", &serve.url(&path)]);
        assert_eq!(status, 200, "{body}");
        let range: serde_json::Value = serde_json::from_str(&body).unwrap();
        let number = |field: &str| range[field].as_u64().unwrap();
        let receipt = range["receipt"].as_str().unwrap().to_owned();
        (number("first"), number("last"), receipt)
    };
    let give = |serve: &Serve, first: u64, receipt: &str| {
        let path = format!("/v1/segment/{tag}/giveback?first={first}&receipt={receipt}");
        let (status, body) = common::serve::curl(&["-X", "POST", &serve.url(&path)]);
        assert_eq!(status, 200, "{body}");
        body.contains("\"given_back\":true")
    };
    let (a_first, a_last, a_receipt) = take(&a);
    let (b_first, b_last, b_receipt) = take(&b);
    assert_eq!(b_first, a_last + 1);
    // Against the protocol: b's range back, then a's older tail, so the counter is now
    // below what b handed out.
    assert!(give(&b, b_first, &b_receipt));
    assert!(give(&a, a_first + 3, &a_receipt));
    let (b_next, b_next_last, _) = take(&b);
    assert!(
        b_next > b_last,
        "b handed out {b_next} again, which it handed out before (up to {b_last})"
    );
    let (a_next, _, _) = take(&a);
    assert!(a_next > b_next_last, "a's next range {a_next} repeats b's");
    let (_, a_stderr) = a.terminate();
    let (_, b_stderr) = b.terminate();
    assert!(
        b_stderr.contains("lost data") && !a_stderr.contains("lost data"),
        "b (not a) says its counter went back: a {a_stderr}, b {b_stderr}"
    );
}
