//! The whole process, as deployments run it: `uidgen next` taking IDs flat out from a
//! lease on MariaDB, PostgreSQL or Redis reached through a relay, which the test cuts
//! (refusing) or silences (holding connections, answering nothing). The process must stop
//! issuing before its lease can pass to another holder, say why naming the store and the
//! worker ID, and exit within TTL + 2 s; the next holder of that worker ID starts above
//! every ID it printed.

mod common;

#[path = "../../tests/support/relay.rs"]
mod relay;
#[path = "../../tests/support/servers.rs"]
mod servers;

use common::clean;
use relay::{via, Relay};
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uidgen::{BitsAllocator, StoreUrl, WorkerLease};

const TTL: Duration = Duration::from_secs(1);

fn run_case(url: &str, silent: bool) {
    let worker_id = 600 + u64::from_str_radix(&servers::random_suffix(), 16).unwrap() % 400;
    let (_, upstream) = via(url, "127.0.0.1:1".parse().unwrap());
    let relay = Relay::to(upstream);
    let (relayed, _) = via(url, relay.addr);
    let mut child = clean(Command::new(env!("CARGO_BIN_EXE_uidgen")).args([
        "next",
        "-n",
        "1000000000000",
        "--store",
        &relayed,
        "--worker-id",
        &worker_id.to_string(),
        "--lease-ttl",
        "1",
    ]))
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let printed = Arc::new(Mutex::new((0u64, 0u64)));
    let reader = {
        let printed = Arc::clone(&printed);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let id: u64 = line.unwrap().trim().parse().expect("only whole IDs");
                let mut printed = printed.lock().unwrap();
                assert!(id > printed.1, "{id} after {}", printed.1);
                *printed = (printed.0 + 1, id);
            }
        })
    };
    let started = Instant::now();
    while printed.lock().unwrap().0 < 100_000 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{url}: no IDs: {:?}",
            child.try_wait()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    if silent {
        relay.silence();
    } else {
        relay.cut();
    }
    let cut = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            cut.elapsed() < TTL + Duration::from_secs(2),
            "{url} (silent {silent}): still running {:?} after the cut",
            cut.elapsed()
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let exited = cut.elapsed();
    reader.join().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{url}: {stderr}");
    assert!(
        stderr.contains(&format!("worker ID {worker_id}"))
            && stderr.contains(&relay.addr.to_string()),
        "{url} (silent {silent}): names the lease and its store: {stderr}"
    );
    assert!(!stderr.contains("ring buffer empty"), "{stderr}");
    // The next holder of the worker ID, straight from the server once the lease lapsed:
    // its first ID is above every ID the process printed.
    let last = printed.lock().unwrap().1;
    let bits = BitsAllocator::default();
    let store = || StoreUrl::parse(url).unwrap().lease_store().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let lease = loop {
        match WorkerLease::builder(store()).acquire_id(&bits, worker_id) {
            Ok(lease) => break lease,
            Err(e) => assert!(Instant::now() < deadline, "{url}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let next = uidgen::DefaultUidGenerator::builder()
        .allocator(bits)
        .lease(lease)
        .build()
        .unwrap();
    let first = uidgen::UidGenerator::next_uid(&next).unwrap();
    assert!(
        first > last,
        "{url}: the next holder's {first} <= the last printed {last}"
    );
    eprintln!("{url} (silent {silent}): exited {exited:?} after the cut, status 1: {stderr}");
}

#[test]
fn a_cli_whose_store_dies_or_hangs_exits_in_time_naming_it() {
    let urls = [
        servers::mysql_url(),
        servers::postgres_url(),
        servers::redis_url(),
    ];
    let cases: Vec<_> = urls
        .iter()
        .flat_map(|url| [(url.clone(), false), (url.clone(), true)])
        .map(|(url, silent)| std::thread::spawn(move || run_case(&url, silent)))
        .collect();
    for case in cases {
        if let Err(panic) = case.join() {
            std::panic::resume_unwind(panic);
        }
    }
}
