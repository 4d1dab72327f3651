//! The Rust client beside its baselines, in one run on one thread: the in-process segment
//! generator (the goal: the client at 0.8× its rate or better), and one HTTP request per
//! ID to the same service. Each row takes IDs one call at a time and records every call's
//! time (hdrhistogram): IDs/s, the median and the p99 of a call. `cargo bench -p
//! uidgen-client` runs it fully; `cargo test --benches` runs each row briefly.

use hdrhistogram::Histogram;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uidgen::{IdSource, SegmentGenerator, StoreUrl};
use uidgen_client::Client;

#[path = "../../../server/tests/support/mod.rs"]
mod support;

struct Row {
    name: &'static str,
    ids_per_s: f64,
    p50_ns: u64,
    p99_ns: u64,
}

fn measure(name: &'static str, calls: usize, mut take: impl FnMut() -> u64) -> Row {
    let mut histogram = Histogram::<u64>::new(3).unwrap();
    let mut last = 0;
    // Warm-up: first ranges fetched, caches filled.
    for _ in 0..calls / 10 {
        last = take();
    }
    // The rate without clocks in the loop (reading the clock costs more than an ID).
    let started = Instant::now();
    for _ in 0..calls {
        let id = take();
        assert!(id > last, "{name}: {id} after {last}");
        last = id;
    }
    let ids_per_s = calls as f64 / started.elapsed().as_secs_f64();
    // Each call timed, for the percentiles (the clock's own cost included, alike in every row).
    for _ in 0..calls / 4 {
        let asked = Instant::now();
        std::hint::black_box(take());
        histogram.record(asked.elapsed().as_nanos() as u64).unwrap();
    }
    Row {
        name,
        ids_per_s,
        p50_ns: histogram.value_at_quantile(0.5),
        p99_ns: histogram.value_at_quantile(0.99),
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (fast, slow) = if full {
        (2_000_000, 20_000)
    } else {
        (20_000, 200)
    };
    // Ranges up to the size the in-process generator's steps grow to (1,000,000, its
    // DEFAULT_MAX_STEP), so both rows hand out the same ranges' worth between fetches; at
    // the service's default cap (100,000) a client past some 100M IDs/s waits on fetches.
    let max = uidgen::DEFAULT_MAX_STEP;
    let server = support::TestServer::start(&[
        ("UIDGEN_TAGS", "order"),
        ("UIDGEN_MAX_COUNT", &max.to_string()),
    ]);
    let (service, store) = (server.addr, server.store_path());

    let url = StoreUrl::parse(store.to_str().unwrap()).unwrap();
    let store: Arc<dyn uidgen::SegmentStore> = Arc::from(url.segment_store().unwrap());
    let generator = SegmentGenerator::builder(store, "order").build().unwrap();
    let in_process = measure("in-process `SegmentGenerator::next_id`", fast, || {
        generator.next_id().unwrap()
    });

    let client = Client::builder([service.to_string()])
        .range_sizes(1_000, max)
        .build()
        .unwrap();
    let order = client.tag("order").unwrap();
    let handle = measure(
        "`uidgen_client::TagIds::next_id` (`client.tag(\"order\")`, the same ranges)",
        fast,
        || order.next_id().unwrap(),
    );
    let ranged = measure(
        "`uidgen_client::Client::next_id` (ranges from `uidgen serve`)",
        fast,
        || client.next_id("order").unwrap(),
    );

    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into();
    let url = format!("http://{service}/v1/segment/order");
    let per_request = measure(
        "one HTTP request per ID (`GET /v1/segment/order`, ureq)",
        slow,
        || {
            let body = agent
                .get(&url)
                .header("Accept", "text/plain")
                .call()
                .unwrap()
                .body_mut()
                .read_to_string()
                .unwrap();
            body.trim().parse().unwrap()
        },
    );

    println!("| row | IDs/s, one thread | call p50 | call p99 | vs in-process |");
    println!("|---|---|---|---|---|");
    for row in [&in_process, &handle, &ranged, &per_request] {
        println!(
            "| {} | {:.0} | {} ns | {} ns | {:.2}× |",
            row.name,
            row.ids_per_s,
            row.p50_ns,
            row.p99_ns,
            row.ids_per_s / in_process.ids_per_s
        );
    }
    println!(
        "\nthe client against one HTTP request per ID: {:.0}×",
        ranged.ids_per_s / per_request.ids_per_s
    );
    client.close();
}
