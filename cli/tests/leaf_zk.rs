//! A running Leaf snowflake fleet handed over to uidgen, worker ID by worker ID, while
//! both serve (issue 46). The fleet is emulated by a driver written here from Leaf's
//! node protocol as its documentation and source state it: each server a persistent
//! sequential node `/snowflake/{leaf.name}/forever/{ip}:{port}-{seq}` whose sequence is
//! its worker ID, its data `{"ip","port"(a string),"timestamp"}` rewritten every 3 s; at
//! start a server finds its node by `ip:port`, writes its worker ID to its cache file
//! `{tmpdir}/{leaf.name}/leafconf/{port}/workerID.properties`, and when the node's
//! timestamp is ahead of its clock falls back to that file (starting on its worker ID,
//! without heartbeats) or, with no file, refuses to start; IDs `((ms − 1288834974657) << 22) | (worker << 12) | sequence`,
//! the sequence starting below 100 each millisecond.
//!
//! Checked: a Leaf still heartbeating is refused; a stopped one is handed over; uidgen
//! (`next` on the store in Leaf mode, layout `snowflake`) makes IDs on it, every one above
//! every ID that Leaf made; no ID is made by both; a Leaf started again on a taken
//! `ip:port` falls back to its cache file while that is there (why the runbook, and
//! `take`'s output, say to delete it) and refuses to start once it is gone; a worker ID uidgen needs beyond the handed-over ones comes
//! from Leaf's counter, so the next new Leaf gets the one after.
//!
//! On the private 3-member ensemble scripts/test starts (UIDGEN_ZOOKEEPER_STORE_URL).

mod common;
#[path = "../../tests/support/servers.rs"]
mod servers;

use common::{output, printed_ids, stderr_of, stdout_of, uidgen};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use uidgen::{BitsAllocator, Preset, StoreUrl, WorkerLease};
use zookeeper_client::{Acls, Client, CreateMode};

const EPOCH: u64 = 1_288_834_974_657;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn worker_of(id: u64) -> u64 {
    (id >> 12) & 1023
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    })
}

/// The ensemble's members, `h:p,h:p,h:p`, and the URL's path.
fn ensemble() -> (String, String) {
    let url = servers::zookeeper_store_url();
    let rest = url
        .strip_prefix("zookeeper://")
        .expect("a zookeeper:// URL");
    let (hosts, path) = rest.split_once('/').unwrap_or((rest, "uidgen-test"));
    (hosts.to_owned(), path.to_owned())
}

fn connect() -> Client {
    // zookeeper-client, built with TLS beside uidgen's, needs the rustls provider chosen.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (hosts, _) = ensemble();
    runtime().block_on(async { Client::connect(&hosts).await.expect("the ensemble answers") })
}

/// Why an emulated Leaf did not start as itself.
#[derive(Debug)]
enum NotStarted {
    /// Its time check failed and it has no cache file: Leaf refuses to start.
    Refused(String),
    /// Its time check failed and Leaf fell back to its cache file: it would serve this
    /// worker ID, without heartbeats (the emulator does not run it).
    FromCache(u64),
}

/// Leaf's cache file `{java.io.tmpdir}/{leaf.name}/leafconf/{port}/workerID.properties`
/// on the host of `address` (its tmpdir `{tmp}/{ip}`: each emulated host has its own).
fn cache_file(tmp: &std::path::Path, name: &str, address: &str) -> std::path::PathBuf {
    let (ip, port) = address.rsplit_once(':').unwrap();
    tmp.join(ip)
        .join(name)
        .join("leafconf")
        .join(port)
        .join("workerID.properties")
}

/// One emulated Leaf server.
struct Leaf {
    address: String,
    worker_id: u64,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    ids: Arc<Mutex<Vec<u64>>>,
}

fn endpoint(address: &str, timestamp: u64) -> Vec<u8> {
    let (ip, port) = address.rsplit_once(':').unwrap();
    serde_json::json!({"ip": ip, "port": port, "timestamp": timestamp})
        .to_string()
        .into_bytes()
}

impl Leaf {
    /// Starts as Leaf's holder does (its `java.io.tmpdir` being `tmp`), or says why not.
    fn start(name: &str, address: &str, tmp: &std::path::Path) -> Result<Self, NotStarted> {
        let client = connect();
        let forever = format!("/snowflake/{name}/forever");
        let found = runtime().block_on(async {
            let children = match client.list_children(&forever).await {
                Ok(children) => children,
                Err(zookeeper_client::Error::NoNode) => Vec::new(),
                Err(e) => panic!("{e}"),
            };
            for child in children {
                let (key, seq) = child.split_once('-').unwrap();
                if key == address {
                    let (data, _) = client
                        .get_data(&format!("{forever}/{child}"))
                        .await
                        .unwrap();
                    let json: serde_json::Value = serde_json::from_slice(&data).unwrap();
                    return Some((child.clone(), seq.parse::<u64>().unwrap(), json));
                }
            }
            None
        });
        let (node, worker_id) =
            match found {
                Some((_, _, json)) if json["timestamp"].as_u64().unwrap() > now_ms() => {
                    let cached = std::fs::read_to_string(cache_file(tmp, name, address)).ok();
                    return Err(match cached.and_then(|text| {
                    text.trim().strip_prefix("workerID=")?.parse().ok()
                }) {
                    Some(worker_id) => NotStarted::FromCache(worker_id),
                    None => NotStarted::Refused(
                        "init timestamp check error, forever node timestamp gt this node time"
                            .into(),
                    ),
                });
                }
                Some((node, worker_id, _)) => (format!("{forever}/{node}"), worker_id),
                None => runtime().block_on(async {
                    let options = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
                    let mut at = String::new();
                    for part in forever.split('/').filter(|p| !p.is_empty()) {
                        at = format!("{at}/{part}");
                        let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
                        let _ = client.create(&at, b"", &dir).await;
                    }
                    let (_, seq) = client
                        .create(
                            &format!("{forever}/{address}-"),
                            &endpoint(address, now_ms()),
                            &options,
                        )
                        .await
                        .unwrap();
                    let seq = seq.into_i64() as u64;
                    (format!("{forever}/{address}-{seq:010}"), seq)
                }),
            };
        assert!(
            worker_id <= 1023,
            "Leaf's check: worker ID {worker_id} past 1023"
        );
        let cache = cache_file(tmp, name, address);
        std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
        std::fs::write(&cache, format!("workerID={worker_id}")).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let ids = Arc::new(Mutex::new(Vec::new()));
        let heartbeat = {
            let (stop, address) = (Arc::clone(&stop), address.to_owned());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    runtime()
                        .block_on(client.set_data(&node, &endpoint(&address, now_ms()), None))
                        .unwrap();
                    for _ in 0..30 {
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            })
        };
        let making = {
            let (stop, ids) = (Arc::clone(&stop), Arc::clone(&ids));
            std::thread::spawn(move || {
                let (mut last_ms, mut sequence) = (0u64, 0u64);
                let mut salt = worker_id * 7919 + 13;
                while !stop.load(Ordering::SeqCst) {
                    let mut ms = now_ms();
                    if ms == last_ms {
                        sequence = (sequence + 1) & 4095;
                        if sequence == 0 {
                            while ms <= last_ms {
                                ms = now_ms();
                            }
                        }
                    } else {
                        salt = (salt * 1_103_515_245 + 12_345) % 2_147_483_648;
                        sequence = salt % 100;
                    }
                    last_ms = ms;
                    ids.lock()
                        .unwrap()
                        .push(((ms - EPOCH) << 22) | (worker_id << 12) | sequence);
                    std::thread::sleep(Duration::from_micros(500));
                }
            })
        };
        Ok(Self {
            address: address.to_owned(),
            worker_id,
            stop,
            threads: vec![heartbeat, making],
            ids,
        })
    }

    /// Stops it as a kill would: no more heartbeats, no more IDs. Its IDs.
    fn stop(self) -> Vec<u64> {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads {
            thread.join().unwrap();
        }
        Arc::try_unwrap(self.ids).unwrap().into_inner().unwrap()
    }
}

fn migrate(store: &str, name: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "migrate",
        "leaf-zk",
        "--zookeeper",
        store,
        "--leaf-name",
        name,
        "--silent-for",
        "6",
    ];
    all.extend_from_slice(args);
    output(&mut uidgen(&all))
}

/// `uidgen next` on the store in Leaf mode: its IDs.
fn uidgen_ids(store: &str, name: &str, count: usize) -> Vec<u64> {
    let url = format!("{store}?leaf={name}");
    let count = count.to_string();
    printed_ids(&output(&mut uidgen(&[
        "next",
        "-n",
        &count,
        "--store",
        &url,
        "--layout",
        "snowflake",
    ])))
}

#[test]
fn a_leaf_fleet_is_handed_over_worker_by_worker_while_both_serve() {
    let suffix = servers::random_suffix();
    let name = format!("leaf-{suffix}");
    let (hosts, path) = ensemble();
    let store = format!("zookeeper://{hosts}/{path}-leaf-{suffix}");
    let tmp = tempfile::tempdir().unwrap();
    let addresses: Vec<String> = (1..=4).map(|n| format!("10.0.0.{n}:8080")).collect();
    let mut running: Vec<Leaf> = addresses
        .iter()
        .map(|address| Leaf::start(&name, address, tmp.path()).unwrap())
        .collect();
    let workers: Vec<u64> = running.iter().map(|leaf| leaf.worker_id).collect();
    assert_eq!(workers, [0, 1, 2, 3], "Leaf's counter gives 0, 1, 2, 3");
    std::thread::sleep(Duration::from_millis(500));

    let listed = migrate(&store, &name, &["--json", "list"]);
    let lines: Vec<serde_json::Value> = stdout_of(&listed)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{}", stderr_of(&listed));
    for (line, address) in lines.iter().zip(&addresses) {
        assert_eq!(line["address"], address.as_str());
        assert_eq!(line["heartbeating"], true, "{line}");
    }

    let mut leaf_ids: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut uidgen_made: Vec<u64> = Vec::new();
    for (index, address) in addresses.iter().enumerate() {
        let leaf = running.remove(0);
        assert_eq!(&leaf.address, address);
        // Still heartbeating a moment ago: refused, naming why.
        let refused = migrate(&store, &name, &["take", address, "--skew-margin", "0.5"]);
        assert_ne!(refused.status.code(), Some(0));
        assert!(
            stderr_of(&refused).contains("heartbeats"),
            "{}",
            stderr_of(&refused)
        );
        let worker_id = leaf.worker_id;
        leaf_ids.insert(worker_id, leaf.stop());
        let started = Instant::now();
        loop {
            let taken = migrate(&store, &name, &["take", address, "--skew-margin", "0.5"]);
            if taken.status.success() {
                let said = stdout_of(&taken);
                assert!(said.contains(&format!("worker ID {worker_id}")), "{said}");
                let port = address.rsplit_once(':').unwrap().1;
                assert!(
                    said.contains(&format!("/{name}/leafconf/{port}/workerID.properties")),
                    "take names Leaf's cache file to delete: {said}"
                );
                break;
            }
            assert!(
                stderr_of(&taken).contains("heartbeats"),
                "{}",
                stderr_of(&taken)
            );
            assert!(
                started.elapsed() < Duration::from_secs(45),
                "never handed over"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        // uidgen serves the handed-over worker IDs while the other Leafs go on.
        let made = uidgen_ids(&store, &name, 20_000);
        assert_eq!(made.len(), 20_000);
        let handed: HashSet<u64> = workers[..=index].iter().copied().collect();
        for id in &made {
            assert!(
                handed.contains(&worker_of(*id)),
                "uidgen used worker ID {}",
                worker_of(*id)
            );
        }
        uidgen_made.extend(made);
        // A Leaf started again on the taken address fails its time check, and falls back
        // to its cache file while that is there; once it is deleted (the runbook's step,
        // which take's output names), it refuses to start.
        match Leaf::start(&name, address, tmp.path()) {
            Err(NotStarted::FromCache(cached)) => assert_eq!(cached, worker_id),
            other => panic!("a restart with its cache file: {:?}", other.err()),
        }
        std::fs::remove_file(cache_file(tmp.path(), &name, address)).unwrap();
        match Leaf::start(&name, address, tmp.path()) {
            Err(NotStarted::Refused(why)) => assert!(why.contains("timestamp"), "{why}"),
            other => panic!("a restart without its cache file: {:?}", other.err()),
        }
    }

    // Leaf mode with a layout other than Leaf's: refused before any worker ID is taken,
    // naming the layout it needs (its IDs would not stay above Leaf's).
    let wrong = output(&mut uidgen(&[
        "next",
        "-n",
        "1",
        "--store",
        &format!("{store}?leaf={name}"),
    ]));
    assert_ne!(wrong.status.code(), Some(0));
    let err = stderr_of(&wrong);
    assert!(
        err.contains("Leaf's layout") && err.contains("--layout snowflake"),
        "{err}"
    );
    assert!(stdout_of(&wrong).trim().is_empty(), "{}", stdout_of(&wrong));

    // Every handed-over worker ID is uidgen's: with all four leased at once, a fifth
    // lease takes a new worker ID from Leaf's counter (4), and a new Leaf gets the next.
    let leaf_mode: StoreUrl = format!("{store}?leaf={name}").parse().unwrap();
    let bits = BitsAllocator::preset(Preset::Snowflake).unwrap();
    let leases: Vec<WorkerLease> = (0..5)
        .map(|_| {
            WorkerLease::builder(leaf_mode.lease_store().unwrap())
                .acquire(&bits)
                .unwrap()
        })
        .collect();
    let mut leased: Vec<u64> = leases.iter().map(WorkerLease::worker_id).collect();
    leased.sort_unstable();
    assert_eq!(leased, [0, 1, 2, 3, 4]);
    let newcomer = Leaf::start(&name, "10.0.0.9:8080", tmp.path()).unwrap();
    assert_eq!(
        newcomer.worker_id, 5,
        "Leaf's counter went on after uidgen's 4"
    );
    drop(leases);
    leaf_ids.insert(newcomer.worker_id, newcomer.stop());
    let listed = stdout_of(&migrate(&store, &name, &["list"]));
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("4 ") && l.contains("uidgen's")),
        "{listed}"
    );

    // No ID made by both, and on each worker ID every uidgen ID above every Leaf ID.
    let mut seen = HashSet::new();
    for id in leaf_ids.values().flatten().chain(&uidgen_made) {
        assert!(seen.insert(*id), "ID {id} was made twice");
    }
    for (worker_id, ids) in &leaf_ids {
        let Some(leaf_max) = ids.iter().max() else {
            continue;
        };
        if let Some(lowest) = uidgen_made
            .iter()
            .filter(|id| worker_of(**id) == *worker_id)
            .min()
        {
            assert!(
                lowest > leaf_max,
                "worker ID {worker_id}: uidgen's {lowest} <= Leaf's {leaf_max}"
            );
        }
    }
    for address in &addresses {
        assert!(
            listed
                .lines()
                .any(|l| l.contains(address) && l.contains("handed over")),
            "{listed}"
        );
    }
}

#[test]
fn bad_leaf_names_and_urls_are_refused_naming_the_problem() {
    for (args, expected) in [
        (
            vec![
                "--zookeeper",
                "zookeeper://127.0.0.1:1/x",
                "--leaf-name",
                "a/b",
                "list",
            ],
            "Leaf name",
        ),
        (
            vec![
                "--zookeeper",
                "mysql://u:SECRETPW@h/db",
                "--leaf-name",
                "a",
                "list",
            ],
            "zookeeper",
        ),
        (
            vec![
                "--zookeeper",
                "zookeeper://127.0.0.1:1/x",
                "--leaf-name",
                "a",
                "--silent-for",
                "1",
                "list",
            ],
            "6 seconds",
        ),
    ] {
        let mut all = vec!["migrate", "leaf-zk"];
        all.extend(args);
        let out = output(&mut uidgen(&all));
        assert_ne!(out.status.code(), Some(0));
        let err = stderr_of(&out);
        assert!(err.contains(expected), "{expected:?} not in {err}");
        assert!(
            !err.contains("SECRETPW") && !err.contains("panicked"),
            "{err}"
        );
    }
}
