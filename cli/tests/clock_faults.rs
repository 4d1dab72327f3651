//! Clock faults never take IDs away (issue 35): the wall clock stepped back 10 s and
//! 2 min, jumped a day ahead and set right, stepped 60 s ahead past a lease's TTL, as
//! NTP or a hand moves it (libfaketime, Debian's `faketime`: only the wall clock moves;
//! the monotonic clock goes on). Under a running `uidgen serve` and under `uidgen next`
//! (the cached and the default generator, on SQLite and MariaDB), with a restart after
//! each fault: IDs keep coming within 2 s, nothing repeats, and the log says what
//! happened in the user's terms.

mod common;
#[path = "../../tests/support/servers.rs"]
mod servers;

use common::machine::Machine;
use common::serve::{curl, ids_of, Serve};
use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// libfaketime, preloaded into a process whose wall clock the test moves through a file.
struct FakeClock {
    dir: tempfile::TempDir,
}

impl FakeClock {
    fn new() -> Self {
        let clock = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        clock.set("+0");
        clock
    }

    fn library() -> PathBuf {
        let found = std::fs::read_dir("/usr/lib")
            .into_iter()
            .flatten()
            .flatten()
            .map(|dir| dir.path().join("faketime/libfaketime.so.1"))
            .chain([PathBuf::from("/usr/lib/faketime/libfaketime.so.1")])
            .find(|path| path.exists());
        found.expect(
            "libfaketime is needed for the clock-fault tests: install Debian's faketime \
             (apt-get install faketime; scripts/test does it when run as root)",
        )
    }

    /// The offset from the real time: `+0`, `-10`, `-120`, `+1d`, `+60`.
    fn set(&self, offset: &str) {
        std::fs::write(self.dir.path().join("offset"), offset).unwrap();
    }

    fn envs(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), Self::library().display().to_string()),
            (
                "FAKETIME_TIMESTAMP_FILE".into(),
                self.dir.path().join("offset").display().to_string(),
            ),
            ("FAKETIME_NO_CACHE".into(), "1".into()),
            ("DONT_FAKE_MONOTONIC".into(), "1".into()),
        ]
    }
}

/// `uidgen next ARGS` on `machine` under `clock`.
fn next(machine: &Machine, clock: &FakeClock, args: &[&str]) -> Output {
    let mut all = vec!["next"];
    all.extend_from_slice(args);
    machine.command(&all).envs(clock.envs()).output().unwrap()
}

/// `uidgen serve ARGS` on `machine` under `clock`.
fn serve(machine: &Machine, clock: &FakeClock, args: &[&str]) -> Serve {
    let envs: Vec<(String, String)> = machine.envs().into_iter().chain(clock.envs()).collect();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Serve::start(args, &envs)
}

fn ids(out: &Output, what: &str) -> Vec<u64> {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

/// Snowflake IDs from `server` within 2 s, each new: the batch drawn.
fn serves_within_2s(server: &Serve, seen: &mut HashSet<u64>, what: &str) -> Vec<u64> {
    let started = Instant::now();
    loop {
        let (status, body) = curl(&[&server.url("/v1/snowflake?count=1000")]);
        if status == 200 {
            let batch = ids_of(&body);
            for id in &batch {
                assert!(seen.insert(*id), "{what}: {id} handed out twice");
            }
            return batch;
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{what}: no snowflake IDs 2 s after the fault: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_service_keeps_serving_through_steps_back_a_day_jump_fixed_after_a_minute_and_restarts() {
    let machine = Machine::new();
    let clock = FakeClock::new();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let args = ["--store", store.to_str().unwrap()];
    let mut seen = HashSet::new();
    let server = serve(&machine, &clock, &args);
    serves_within_2s(&server, &mut seen, "at the start");
    for (step, name) in [("-10", "10 s back"), ("-120", "2 min back")] {
        clock.set(step);
        serves_within_2s(&server, &mut seen, name);
        // The step back is counted (the padder sees it at its next tick).
        let counted = Instant::now();
        loop {
            serves_within_2s(&server, &mut seen, name);
            let (_, metrics) = curl(&[&server.url("/metrics")]);
            if metrics
                .lines()
                .any(|l| l.starts_with("uidgen_clock_rollbacks_total") && !l.ends_with(" 0"))
            {
                break;
            }
            assert!(counted.elapsed() < Duration::from_secs(2), "{metrics}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // A restart under the clock 2 min back: the worker ID used so far has its mark 2 min
    // ahead, so the new service takes another and serves at once.
    let (exit, stderr) = server.terminate();
    assert!(exit.success(), "{stderr}");
    assert!(stderr.contains("the clock stepped back"), "{stderr}");
    let server = serve(&machine, &clock, &args);
    serves_within_2s(&server, &mut seen, "restarted 2 min back");
    // A day ahead, then set right: the running service moves to a worker ID whose mark
    // is behind the clock within 2 s of the probe that sees it waiting.
    clock.set("+0");
    let (exit, stderr) = server.terminate();
    assert!(exit.success(), "{stderr}");
    assert!(stderr.contains("passes over worker ID"), "{stderr}");
    let server = serve(&machine, &clock, &args);
    serves_within_2s(&server, &mut seen, "restarted, clock right");
    clock.set("+1d");
    serves_within_2s(&server, &mut seen, "a day ahead");
    // A minute a day ahead, drawing every second (leases renewed, marks recorded a day
    // ahead all along), before the jump is set right.
    let jumped = Instant::now();
    while jumped.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_secs(1));
        serves_within_2s(&server, &mut seen, "a day ahead, later");
    }
    clock.set("+0");
    // Drawn flat out for 6 s: the ring's day-ahead IDs run out, the padder waits (saying
    // why), and the service moves to another worker ID: the longest time without IDs
    // stays within two probes and a lease.
    let fixed = Instant::now();
    let (mut gap_since, mut longest) = (None::<Instant>, Duration::ZERO);
    while fixed.elapsed() < Duration::from_secs(6) {
        let (status, body) = curl(&[&server.url("/v1/snowflake?count=1000")]);
        if status == 200 {
            for id in ids_of(&body) {
                assert!(seen.insert(id), "{id} handed out twice");
            }
            if let Some(since) = gap_since.take() {
                longest = longest.max(since.elapsed());
            }
        } else {
            assert!(
                body.contains("stepped back"),
                "the wait is not named: {body}"
            );
            gap_since.get_or_insert_with(Instant::now);
        }
    }
    assert!(gap_since.is_none(), "not serving at the end");
    assert!(longest < Duration::from_secs(4), "no IDs for {longest:?}");
    let (status, body) = curl(&[&server.url("/readyz")]);
    assert_eq!(status, 200, "{body}");
    let (exit, stderr) = server.terminate();
    assert!(exit.success(), "{stderr}");
    assert!(stderr.contains("took a new lease"), "{stderr}");
    // And a restart after it: the worker IDs with marks a day ahead are passed over.
    let server = serve(&machine, &clock, &args);
    serves_within_2s(&server, &mut seen, "restarted after the day");
}

#[test]
fn a_process_stepped_past_the_lease_ttl_never_takes_a_live_holders_worker_id() {
    let machine = Machine::new();
    let (clock, ahead) = (FakeClock::new(), FakeClock::new());
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let config = dir.path().join("serve.toml");
    std::fs::write(&config, "lease_ttl_ms = 3000\n").unwrap();
    let server = serve(
        &machine,
        &clock,
        &[
            "--store",
            store.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let mut seen = HashSet::new();
    serves_within_2s(&server, &mut seen, "the service");
    // Another process whose clock is 60 s ahead (20 TTLs): by the wall clock the
    // service's lease has long expired; by the embedded store's lease clock it has not.
    ahead.set("+60");
    let out = next(
        &machine,
        &ahead,
        &["-n", "100000", "--store", store.to_str().unwrap(), "--json"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.lines().all(|l| !l.contains("\"workerId\":\"0\"")),
        "the live service's worker ID 0 was taken"
    );
    serves_within_2s(&server, &mut seen, "the service, after");
}

/// `uidgen next` on `store`, each run a new process, across the faults.
fn next_runs_through_the_faults(store: &str) {
    let machine = Machine::new();
    let clock = FakeClock::new();
    let mut seen = HashSet::new();
    for (offset, what) in [
        ("+0", "at the start"),
        ("-10", "10 s back"),
        ("-120", "2 min back"),
        ("+1d", "a day ahead"),
        ("+0", "the day set right"),
        ("+60", "60 s ahead"),
        ("+0", "set right again"),
    ] {
        clock.set(offset);
        for generator in ["cached", "default"] {
            let started = Instant::now();
            let out = next(
                &machine,
                &clock,
                &["-n", "20000", "--generator", generator, "--store", store],
            );
            let made = ids(&out, &format!("{generator}, {what}"));
            assert_eq!(made.len(), 20000);
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{generator}, {what}: took {:?}",
                started.elapsed()
            );
            for id in made {
                assert!(
                    seen.insert(id),
                    "{generator}, {what}: {id} handed out twice"
                );
            }
        }
    }
}

#[test]
fn next_on_the_embedded_store_runs_through_every_fault() {
    let dir = tempfile::tempdir().unwrap();
    next_runs_through_the_faults(dir.path().join("ids.sqlite3").to_str().unwrap());
}

#[cfg(feature = "mysql")]
#[test]
fn next_on_mariadb_runs_through_every_fault() {
    // A database of its own: the marks a day ahead that this test leaves must not meet
    // other tests' worker IDs.
    let server = servers::mysql_url();
    let rest = server.split_once("://").unwrap().1;
    let authority = rest.split('/').next().unwrap();
    let (user, hostport) = authority.rsplit_once('@').unwrap_or(("root", authority));
    let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, "3306"));
    let db = format!("uidgen_clock_{}", servers::random_suffix());
    let sql = |statement: &str| {
        let out = Command::new("mariadb")
            .args([
                "-h",
                host,
                "-P",
                port,
                "-u",
                user.split(':').next().unwrap(),
            ])
            .args(["-e", statement])
            .output()
            .expect("the mariadb client runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    sql(&format!("CREATE DATABASE {db}"));
    let url = format!("mysql://{authority}/{db}");
    let result = std::panic::catch_unwind(|| next_runs_through_the_faults(&url));
    sql(&format!("DROP DATABASE {db}"));
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn a_period_tag_never_goes_back_to_an_earlier_day_across_a_restart_after_a_jump() {
    let machine = Machine::new();
    let clock = FakeClock::new();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        "[[period_tags]]\ntag = \"day\"\nperiod = \"day\"\n",
    )
    .unwrap();
    let args = [
        "--store",
        store.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ];
    let draw = |server: &Serve| -> Vec<u64> {
        let (status, body) = curl(&[&server.url("/v1/segment/day?count=10")]);
        assert_eq!(status, 200, "{body}");
        ids_of(&body)
    };
    // The day of an ID: its leading yyyyMMdd.
    let day = |id: u64| id / 10u64.pow(10);
    // Two days ahead, then set right and restarted.
    clock.set("+2d");
    let server = serve(&machine, &clock, &args);
    let ahead = draw(&server);
    let (exit, stderr) = server.terminate();
    assert!(exit.success(), "{stderr}");
    clock.set("+0");
    let server = serve(&machine, &clock, &args);
    let after = draw(&server);
    let highest = ahead.iter().map(|&id| day(id)).max().unwrap();
    assert!(
        after
            .iter()
            .all(|&id| day(id) >= highest && id > *ahead.last().unwrap()),
        "{after:?} after {ahead:?}"
    );
    // It says so: the period served is ahead of the clock's.
    let (_, ready) = curl(&[&server.url("/readyz")]);
    assert!(ready.contains("ahead of the clock"), "{ready}");
    let (_, metrics) = curl(&[&server.url("/metrics")]);
    assert!(
        metrics.contains("uidgen_period_ahead_of_clock{tag=\"day\"} 1"),
        "{metrics}"
    );
    let (exit, stderr) = server.terminate();
    assert!(exit.success(), "{stderr}");
    assert!(stderr.contains("ahead of the clock"), "{stderr}");
}

/// `uidgen next --generator default` with `strategy`, its wall clock stepped back 2 min
/// once it has printed 1,000 IDs (it is held there by the pipe until then): the IDs it
/// printed (UID, worker ID) and how it ended.
fn step_back_during_a_run(strategy: &str) -> (Vec<(u64, u64)>, Output) {
    use std::io::{BufRead, BufReader};
    let machine = Machine::new();
    let clock = FakeClock::new();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let mut child = machine
        .command(&[
            "next",
            "-n",
            "20000",
            "--json",
            "--generator",
            "default",
            "--on-rollback",
            strategy,
            "--store",
            store.to_str().unwrap(),
        ])
        .envs(clock.envs())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let mut parse = |line: String| {
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        let field = |name: &str| value[name].as_str().unwrap().parse::<u64>().unwrap();
        printed.push((field("UID"), field("workerId")));
    };
    for line in lines.by_ref().take(1_000) {
        parse(line.unwrap());
    }
    clock.set("-120");
    for line in lines {
        parse(line.unwrap());
    }
    (printed, child.wait_with_output().unwrap())
}

#[test]
fn the_default_generator_moves_to_a_spare_worker_id_when_the_clock_steps_back() {
    let (printed, out) = step_back_during_a_run("spare:2");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(printed.len(), 20_000, "{stderr}");
    let distinct: HashSet<u64> = printed.iter().map(|(id, _)| *id).collect();
    assert_eq!(distinct.len(), printed.len(), "an ID was printed twice");
    // Worker ID 0 before the step, a spare after it, and the log says why.
    let (first_worker, last_worker) = (printed[0].1, printed.last().unwrap().1);
    assert_eq!(first_worker, 0);
    assert_ne!(last_worker, 0, "never moved to a spare");
    assert!(stderr.contains("spare worker ID"), "{stderr}");
    // Without a spare, the same step back fails the run, naming it.
    let (printed, out) = step_back_during_a_run("fail");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && printed.len() < 20_000);
    assert!(stderr.contains("backwards"), "{stderr}");
}
