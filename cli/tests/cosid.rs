//! CosId's proxy protocol end to end: a CosId-protocol Java client written for these tests
//! (server/tests/cosid-protocol-client), in 4 JVMs × 4 threads, takes machine IDs and
//! segments from two `uidgen serve` processes on one store (MariaDB, and etcd's private
//! cluster). No machine ID is held by two JVMs at once and no ID is made twice; a JVM
//! SIGKILLed without giving its machine ID back has it given to a newcomer only once its
//! guard has run out, and the newcomer's IDs sort above the dead one's.

#![cfg(any(feature = "mysql", feature = "etcd"))]

mod common;
#[path = "../../tests/support/servers.rs"]
mod servers;

use common::serve::Serve;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Two machine bits: four machine IDs, as many as the JVMs of a run, so that a newcomer
/// finds none free while a dead JVM's lease lasts.
const MACHINE_BITS: u32 = 2;
/// The guard duration the JVMs ask for (CosId's `safeGuardDuration`); they guard every
/// third of it.
const GUARD_SECS: u64 = 8;
/// CosId's epoch and sequence bits, for reading the clients' snowflake IDs back.
const COSID_EPOCH_MS: u64 = 1_577_203_200_000;
const SEQUENCE_BITS: u32 = 12;

/// One JVM of the driver, its output read as it comes.
struct Jvm {
    child: Child,
    instance: String,
    stdout: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
    err_text: Vec<String>,
}

/// What a JVM made: its machine ID, and per thread its snowflake and segment IDs in the
/// order drawn.
#[derive(Debug, Default)]
struct Made {
    machine_id: u64,
    snowflake: HashMap<u32, Vec<u64>>,
    segment: HashMap<u32, Vec<u64>>,
}

fn lines(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Jvm {
    /// `hold_ms` > 0: after its IDs, the JVM keeps its machine ID (guarding it) that long.
    fn start(
        classes: &Path,
        servers: &str,
        namespace: &str,
        instance: &str,
        threads: usize,
        per_thread: usize,
        hold_ms: u64,
    ) -> Self {
        let state = classes.join("state");
        let mut child = Command::new("java")
            .arg(format!("-Dcosid.machineBit={MACHINE_BITS}"))
            .arg(format!("-Dcosid.safeGuard=PT{GUARD_SECS}S"))
            .arg(format!("-Dcosid.holdMillis={hold_ms}"))
            .arg(format!("-Dcosid.stateDir={}", state.display()))
            .arg("-Dcosid.segmentStep=500")
            .args(["-cp", classes.to_str().unwrap(), "CosIdProtocolDriver"])
            .args([servers, namespace, instance])
            .args([threads.to_string(), per_thread.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("java runs");
        let stdout = lines(child.stdout.take().unwrap());
        let stderr = lines(child.stderr.take().unwrap());
        Self {
            child,
            instance: instance.to_owned(),
            stdout,
            stderr,
            err_text: Vec::new(),
        }
    }

    /// Waits (up to `within`) for a line on stderr that starts with `wanted`.
    fn await_stderr(&mut self, wanted: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    let found = line.starts_with(wanted);
                    self.err_text.push(line);
                    if found {
                        return true;
                    }
                }
                Err(_) => return false,
            }
        }
        false
    }

    /// Ends the JVM (SIGKILL when `kill`) and reads what it made; its exit code and stderr.
    fn finish(mut self, kill: bool) -> (Made, Option<i32>, String) {
        if kill {
            self.child.kill().unwrap();
        }
        let status = self.child.wait().unwrap();
        let out: Vec<String> = self.stdout.iter().collect();
        self.err_text.extend(self.stderr.iter());
        let stderr = self.err_text.join("\n");
        let mut made = Made::default();
        for line in &out {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                ["machine", id, _last] => made.machine_id = id.parse().unwrap(),
                [kind @ ("s" | "g"), thread, id] => {
                    let into = if *kind == "s" {
                        &mut made.snowflake
                    } else {
                        &mut made.segment
                    };
                    into.entry(thread.parse().unwrap()).or_default().push(
                        id.parse()
                            .unwrap_or_else(|_| panic!("{}: not an ID: {line:?}", self.instance)),
                    );
                }
                _ => panic!("{}: an unexpected line {line:?}", self.instance),
            }
        }
        (made, status.code(), stderr)
    }
}

fn machine_of(id: u64) -> u64 {
    (id >> SEQUENCE_BITS) & ((1 << MACHINE_BITS) - 1)
}

fn millis_of(id: u64) -> u64 {
    (id >> (SEQUENCE_BITS + MACHINE_BITS)) + COSID_EPOCH_MS
}

/// Every ID once across all JVMs; each thread's IDs increasing; each snowflake ID carries
/// its JVM's machine ID.
fn check(all: &[(String, Made)]) {
    let (mut snowflakes, mut segments) = (HashSet::new(), HashSet::new());
    for (instance, made) in all {
        for (kind, threads, seen) in [
            ("snowflake", &made.snowflake, &mut snowflakes),
            ("segment", &made.segment, &mut segments),
        ] {
            for (thread, ids) in threads {
                for pair in ids.windows(2) {
                    assert!(
                        pair[0] < pair[1],
                        "{instance} thread {thread}: {kind} ID {} after {}",
                        pair[1],
                        pair[0]
                    );
                }
                for &id in ids {
                    assert!(
                        seen.insert(id),
                        "{kind} ID {id} made twice (again by {instance})"
                    );
                    if kind == "snowflake" {
                        assert_eq!(machine_of(id), made.machine_id, "{instance}: ID {id}");
                    }
                }
            }
        }
    }
}

fn fleet(store: &str, self_check: bool) {
    let classes = tempfile::tempdir().unwrap();
    common::build_java_client("cosid-protocol-client", classes.path());
    if self_check {
        // The client's own checks against fake servers: layout, guard, fencing, failover.
        common::java_self_check(classes.path(), "CosIdProtocolSelfCheck");
    }
    let namespace = format!("fleet-{}", servers::random_suffix());
    let a = Serve::start(&["--store", store], &[]);
    let b = Serve::start(&["--store", store], &[]);
    let servers = format!("127.0.0.1:{},127.0.0.1:{}", a.port(), b.port());
    let (threads, per_thread) = (4, 20_000);

    // Four JVMs at once, one machine ID each: the last keeps its machine ID and is killed.
    let mut jvms: Vec<Jvm> = (0..4)
        .map(|i| {
            let hold = if i == 3 { 120_000 } else { 0 };
            Jvm::start(
                classes.path(),
                &servers,
                &namespace,
                &format!("10.0.0.{i}:8080"),
                threads,
                per_thread,
                hold,
            )
        })
        .collect();
    let mut victim = jvms.pop().unwrap();
    assert!(
        victim.await_stderr("holding", Duration::from_secs(120)),
        "the JVM to be killed never got to hold its machine ID: {}",
        victim.err_text.join("\n")
    );
    let mut all = Vec::new();
    let mut stderr_all = String::new();
    for jvm in jvms {
        let instance = jvm.instance.clone();
        let (made, code, stderr) = jvm.finish(false);
        assert_eq!(code, Some(0), "{instance} failed: {stderr}");
        stderr_all.push_str(&stderr);
        all.push((instance, made));
    }
    // The three machine IDs given back go to three newcomers, which keep them.
    let mut holders: Vec<Jvm> = (0..3)
        .map(|i| {
            Jvm::start(
                classes.path(),
                &servers,
                &namespace,
                &format!("10.0.1.{i}:8080"),
                1,
                1_000,
                120_000,
            )
        })
        .collect();
    for holder in &mut holders {
        assert!(
            holder.await_stderr("holding", Duration::from_secs(60)),
            "{}",
            holder.err_text.join("\n")
        );
    }
    let killed_at = Instant::now();
    let victim_name = victim.instance.clone();
    let (dead, _, stderr) = victim.finish(true);
    stderr_all.push_str(&stderr);
    let mut held: Vec<u64> = all
        .iter()
        .map(|(_, m)| m.machine_id)
        .chain([dead.machine_id])
        .collect();
    held.sort_unstable();
    assert_eq!(
        held,
        [0, 1, 2, 3],
        "four JVMs at once, four machine IDs, none twice"
    );
    all.push((victim_name, dead));
    check(&all);
    // Both services answered.
    for port in [a.port(), b.port()] {
        assert!(
            stderr_all.contains(&format!("127.0.0.1:{port}")),
            "no call went to port {port}"
        );
    }

    // A fourth finds none while the dead JVM's guard lasts (M-01), and gets the dead
    // one's only after it has run out.
    let dead_machine = all.last().unwrap().1.machine_id;
    let dead_last = all
        .last()
        .unwrap()
        .1
        .snowflake
        .values()
        .flatten()
        .copied()
        .max()
        .unwrap();
    let mut refused = 0;
    let newcomer = loop {
        let jvm = Jvm::start(
            classes.path(),
            &servers,
            &namespace,
            "10.0.2.0:8080",
            2,
            5_000,
            0,
        );
        let (made, code, stderr) = jvm.finish(false);
        match code {
            Some(0) => break made,
            Some(3) if stderr.contains("cosid-error M-01") => refused += 1,
            _ => panic!("the newcomer failed: {stderr}"),
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(60),
            "the dead JVM's machine ID was never given again"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let waited = killed_at.elapsed();
    assert!(
        refused >= 1,
        "the newcomer got a machine ID while the dead JVM's guard lasted"
    );
    // Its last guard was at most a third of the guard duration before the kill.
    assert!(
        waited >= Duration::from_millis(GUARD_SECS * 1000 * 2 / 3 - 200),
        "the dead JVM's machine ID was given again {waited:?} after the kill"
    );
    assert_eq!(newcomer.machine_id, dead_machine);
    let first = newcomer
        .snowflake
        .values()
        .flatten()
        .copied()
        .min()
        .unwrap();
    assert!(
        first > dead_last && millis_of(first) > millis_of(dead_last),
        "the newcomer's first ID {first} is not above the dead JVM's last {dead_last}"
    );
    all.push(("newcomer".into(), newcomer));
    let mut held_with_the_dead = vec![dead_machine];
    for (i, holder) in holders.into_iter().enumerate() {
        let (made, _, _) = holder.finish(true);
        held_with_the_dead.push(made.machine_id);
        all.push((format!("holder {i}"), made));
    }
    held_with_the_dead.sort_unstable();
    assert_eq!(
        held_with_the_dead,
        [0, 1, 2, 3],
        "the holders and the dead JVM shared a machine ID"
    );
    check(&all);
}

#[cfg(feature = "mysql")]
#[test]
fn cosid_protocol_clients_in_four_jvms_on_two_services_on_mariadb_repeat_nothing() {
    fleet(&servers::mysql_url(), true);
}

#[cfg(feature = "etcd")]
#[test]
fn cosid_protocol_clients_in_four_jvms_on_two_services_on_etcd_repeat_nothing() {
    fleet(&servers::etcd_url(), false);
}
