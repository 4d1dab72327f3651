//! The Rust client against a real service (uidgen-server in this process, on SQLite) and
//! against servers that refuse, fail, hang or are gone.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uidgen_client::{Client, ClientError};

#[path = "../../../server/tests/support/mod.rs"]
mod support;

/// `uidgen-server` on a SQLite file of its own holding tag `order` (and tokens when given).
struct Service(support::TestServer);

impl Service {
    fn start(vars: &[(&str, &str)]) -> Self {
        Self(support::TestServer::start_holding("order", vars))
    }

    fn at(&self) -> String {
        self.0.addr.to_string()
    }
}

/// A server that answers every request with `status` (and a body), or never answers.
fn fake(status: Option<u16>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                match status {
                    Some(status) => {
                        let body = r#"{"error":"down for a test","status":500}"#;
                        let _ = write!(stream, "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
                    }
                    None => std::thread::sleep(Duration::from_secs(30)),
                }
            });
        }
    });
    addr
}

/// A port nothing listens on.
fn refused() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

#[test]
fn threads_share_one_client_and_get_distinct_increasing_ids_while_ranges_grow_with_the_rate() {
    let service = Service::start(&[]);
    let client = Client::builder([service.at()])
        .range_sizes(100, 100_000)
        .build()
        .unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            std::thread::spawn(move || {
                (0..20_000)
                    .map(|_| client.next_id("order").unwrap())
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for thread in threads {
        let ids = thread.join().unwrap();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a thread's IDs go down"
        );
        for id in ids {
            assert!(seen.insert(id), "ID {id} twice");
        }
    }
    // 160,000 IDs in well under the 10 s target: the range size grew from 100.
    assert!(
        client.next_range_size("order").unwrap() >= 1_600,
        "{:?}",
        client.next_range_size("order")
    );
    assert_eq!(client.failovers(), 0);
}

#[test]
fn closing_gives_the_unused_tail_back_and_nothing_is_handed_out_after() {
    let service = Service::start(&[]);
    let client = Client::builder([service.at()])
        .range_sizes(1_000, 1_000)
        .build()
        .unwrap();
    let taken: Vec<u64> = (0..10).map(|_| client.next_id("order").unwrap()).collect();
    assert!(client.close().is_empty());
    assert!(matches!(client.next_id("order"), Err(ClientError::Closed)));
    // The next client goes on right after the last ID taken: the tail went back.
    let next = Client::builder([service.at()]).build().unwrap();
    assert_eq!(next.next_id("order").unwrap(), taken[9] + 1);
    // A client past its prefetch point gives back its next range whole, then its tail.
    let client = Client::builder([service.at()])
        .range_sizes(1_000, 1_000)
        .build()
        .unwrap();
    let before = next.next_id("order").unwrap();
    let mut last = 0;
    for _ in 0..700 {
        last = client.next_id("order").unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(client.close().is_empty());
    assert!(next.close().is_empty(), "the other client's tail");
    let after = Client::builder([service.at()]).build().unwrap();
    assert_eq!(after.next_id("order").unwrap(), before.max(last) + 1);
}

#[test]
fn closing_while_threads_take_gives_back_exactly_what_no_thread_got() {
    let service = Service::start(&[]);
    for round in 0..5 {
        let client = Client::builder([service.at()])
            .range_sizes(100, 100)
            .build()
            .unwrap();
        let first = client.next_id("order").unwrap();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let client = client.clone();
                std::thread::spawn(move || {
                    let mut ids = Vec::new();
                    loop {
                        match client.next_id("order") {
                            Ok(id) => ids.push(id),
                            Err(ClientError::Closed) => return ids,
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20 + 15 * round));
        assert!(client.close().is_empty());
        let mut taken = vec![first];
        for thread in threads {
            taken.extend(thread.join().unwrap());
        }
        taken.sort_unstable();
        // One client on the tag: its ranges follow one another in the store, so what it
        // handed out is every ID from its first on, and the next client goes on right
        // after the last: nothing handed out twice, nothing given back that was taken,
        // nothing taken left out of the give-back.
        let expected: Vec<u64> = (first..first + taken.len() as u64).collect();
        assert!(
            taken == expected,
            "round {round}: not every ID from {first} once"
        );
        let next = Client::builder([service.at()]).build().unwrap();
        assert_eq!(
            next.next_id("order").unwrap(),
            first + taken.len() as u64,
            "round {round}: the tail that went back"
        );
        assert!(next.close().is_empty());
    }
}

#[test]
fn a_tag_opened_while_the_client_closes_is_closed_too() {
    let service = Service::start(&[]);
    let probe = |service: &Service| {
        let probe = Client::builder([service.at()]).build().unwrap();
        let id = probe.next_id("order").unwrap();
        assert!(probe.close().is_empty());
        id
    };
    let mut next = probe(&service) + 1;
    for round in 0..20 {
        let client = Client::builder([service.at()]).build().unwrap();
        let opener = {
            let client = client.clone();
            std::thread::spawn(move || client.next_id("order"))
        };
        std::thread::sleep(Duration::from_micros(200 * round));
        assert!(client.close().is_empty());
        match opener.join().unwrap() {
            Ok(id) => {
                assert_eq!(id, next, "round {round}");
                next += 1;
            }
            Err(ClientError::Closed) => {}
            Err(e) => panic!("round {round}: {e}"),
        }
        // Nothing is handed out after close returned, and the tag's tail went back:
        // the next client goes on right after what this one handed out.
        assert!(
            matches!(client.next_id("order"), Err(ClientError::Closed)),
            "round {round}: an ID after close"
        );
        assert_eq!(probe(&service), next, "round {round}");
        next += 1;
    }
}

#[test]
fn threads_waiting_for_a_failing_fetch_get_its_error_together() {
    // One failover cycle: the service refused, then a server that never answers, for
    // the 1 s timeout. Eight threads each running one of their own in turn would wait
    // up to eight of them.
    let bound = Duration::from_millis(2_500);
    let service = Service::start(&[]);
    let client = Client::builder([service.at(), fake(None)])
        .start_at(0)
        .timeout(Duration::from_secs(1))
        .range_sizes(10, 10)
        .prefetch_share(1.0) // no fetch before the range is used up: all wait on one
        .build()
        .unwrap();
    for _ in 0..10 {
        client.next_id("order").unwrap();
    }
    drop(service.0.stop());
    let all_at_once = |client: &Client, tag: &'static str| {
        let start = Arc::new(std::sync::Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (client, start) = (client.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    let asked = Instant::now();
                    let result = client.next_id(tag);
                    (result, asked.elapsed())
                })
            })
            .collect();
        for thread in threads {
            let (result, waited) = thread.join().unwrap();
            assert!(
                matches!(result, Err(ClientError::Unavailable(_))),
                "{tag}: {result:?}"
            );
            assert!(waited < bound, "{tag}: a thread waited {waited:?}");
        }
    };
    // A range used up: every thread waits for the one fetch.
    all_at_once(&client, "order");
    // A tag not open yet: every thread waits for the one open.
    all_at_once(&client, "invoice");
}

#[test]
fn failover_passes_refused_failing_and_hanging_servers_within_the_bound() {
    let service = Service::start(&[]);
    let servers = [refused(), fake(Some(500)), fake(None), service.at()];
    let client = Client::builder(servers.clone())
        .start_at(0)
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let started = Instant::now();
    let id = client.next_id("order").unwrap();
    assert!(id >= 1);
    // At worst every bad server once: a timeout, and pauses of 50 + 100 + 200 ms.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(client.failovers() >= 1);
    let snowflake = client.snowflake().unwrap();
    assert!(snowflake > 0);

    // Every server gone: one error naming each and what it answered.
    let client = Client::builder([refused(), fake(Some(503))])
        .build()
        .unwrap();
    let err = client.next_id("order").unwrap_err().to_string();
    assert!(
        err.contains("no server could serve")
            && err.contains("503")
            && err.contains("down for a test"),
        "{err}"
    );
}

#[test]
fn the_callers_mistakes_are_raised_at_once_with_the_services_words() {
    let token = "client-test-token-0123456789";
    let service = Service::start(&[("UIDGEN_TOKENS", &format!("{token}=*"))]);
    let other = Service::start(&[]);
    let client = Client::builder([service.at(), other.at()])
        .start_at(0)
        .token(token)
        .build()
        .unwrap();
    let started = Instant::now();
    match client.next_id("no-such-tag") {
        Err(ClientError::Refused {
            status: 404, error, ..
        }) => assert!(error.contains("no-such-tag"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(client.next_id("order").unwrap() >= 1);
    assert!(client.snowflake().unwrap() > 0);
    let anonymous = Client::builder([service.at()]).build().unwrap();
    match anonymous.next_id("order") {
        Err(ClientError::Refused { status: 401, .. }) => {}
        other => panic!("{other:?}"),
    }
    let err = Client::builder(Vec::<String>::new())
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("servers"), "{err}");
    let err = Client::builder(["a:1"])
        .range_sizes(0, 5)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("range_sizes"), "{err}");
}

#[test]
fn snowflake_batches_older_than_the_validity_are_not_handed_out() {
    let service = Service::start(&[]);
    let client = Client::builder([service.at()])
        .snowflake_batches(1_000, Duration::from_millis(100))
        .build()
        .unwrap();
    let a = client.snowflake().unwrap();
    std::thread::sleep(Duration::from_millis(1_200));
    let b = client.snowflake().unwrap();
    // A fresh batch: its time part is at least a second past the first's (default
    // layout: 22 bits below the milliseconds), not the stale batch's next ID.
    assert!((b >> 22) >= (a >> 22) + 1_000, "{a} then {b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_tasks_share_one_client() {
    let service = Service::start(&[]);
    let client = Client::builder([service.at()])
        .range_sizes(50, 1_000)
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for _ in 0..200 {
                    ids.push(client.next_id_async("order").await.unwrap());
                }
                ids
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for task in tasks {
        let ids = task.await.unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids.into_iter().all(|id| seen.insert(id)));
    }
    assert_eq!(seen.len(), 20_000);
    assert!(client.snowflake_async().await.unwrap() > 0);
}
