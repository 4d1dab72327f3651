//! CosId's proxy routes as its clients call them: machine IDs taken, guarded, lost and
//! given back (with CosId's error codes), segments created and ranged, `/ids`, tokens,
//! and a region's worker-ID range.

mod support;

use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{curl, get, json, Answer, TestServer};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn call(server: &TestServer, method: &str, path: &str) -> Answer {
    curl(&["-X", method, &server.url(path)])
}

fn distribute(server: &TestServer, ns: &str, instance: &str, query: &str) -> Answer {
    call(
        server,
        "POST",
        &format!("/machines/{ns}?instanceId={instance}&stable=false&{query}"),
    )
}

fn machine(answer: &Answer) -> (u64, u64) {
    assert_eq!(answer.status, 200, "{}", answer.body);
    let body: Value = json(&answer.body);
    (
        body["machineId"].as_u64().unwrap(),
        body["lastTimeStamp"].as_u64().unwrap(),
    )
}

/// CosId's error body, with its code.
fn cosid_error(answer: &Answer, status: u16, code: &str) -> String {
    assert_eq!(answer.status, status, "{}", answer.body);
    let body = json(&answer.body);
    assert_eq!(body["code"], code, "{}", answer.body);
    assert!(body["errors"].is_array(), "{}", answer.body);
    body["msg"].as_str().unwrap().to_owned()
}

#[test]
fn machine_ids_are_distributed_once_each_kept_by_guards_and_used_up_with_m01() {
    let server = TestServer::start(&[]);
    let guard = "safeGuardDuration=PT1M";
    let started = now_ms();
    let (a, a_last) = machine(&distribute(
        &server,
        "orders",
        "10.0.0.1:8080",
        &format!("machineBit=1&{guard}"),
    ));
    let (b, _) = machine(&distribute(
        &server,
        "orders",
        "10.0.0.2%3A8080",
        &format!("machineBit=1&{guard}"),
    ));
    assert_eq!((a, b), (0, 1));
    assert!(a_last >= started && a_last <= now_ms(), "{a_last}");
    // Idempotent: the same instance gets the same machine ID.
    let (again, _) = machine(&distribute(
        &server,
        "orders",
        "10.0.0.1:8080",
        &format!("machineBit=1&{guard}"),
    ));
    assert_eq!(again, a);
    // Two machine IDs in one bit: a third instance finds them used up.
    let msg = cosid_error(
        &distribute(
            &server,
            "orders",
            "10.0.0.3:8080",
            &format!("machineBit=1&{guard}"),
        ),
        400,
        "M-01",
    );
    assert!(msg.contains("from 0 to 1"), "{msg}");
    // Another namespace has machine IDs of its own.
    let (other, _) = machine(&distribute(
        &server,
        "Billing-Service",
        "10.0.0.3:8080",
        "machineBit=1",
    ));
    assert_eq!(other, 0);
    // A guard keeps it; an instance that never took one is M-02.
    let guarded = call(
        &server,
        "PATCH",
        &format!("/machines/orders?instanceId=10.0.0.1:8080&stable=false&{guard}"),
    );
    assert_eq!((guarded.status, guarded.body.as_str()), (200, ""));
    let msg = cosid_error(
        &call(
            &server,
            "PATCH",
            "/machines/orders?instanceId=10.0.0.9:8080&stable=false",
        ),
        400,
        "M-02",
    );
    assert!(msg.contains("10.0.0.9:8080"), "{msg}");
}

#[test]
fn a_lapsed_machine_id_goes_to_a_successor_above_its_mark_and_the_old_holder_hears_m03() {
    let server = TestServer::start(&[]);
    let (dead, _) = machine(&distribute(
        &server,
        "ns",
        "dead:1",
        "machineBit=1&safeGuardDuration=PT1S",
    ));
    let (_, _) = machine(&distribute(
        &server,
        "ns",
        "alive:1",
        "machineBit=1&safeGuardDuration=PT1M",
    ));
    let guarded_at = now_ms();
    assert_eq!(
        call(
            &server,
            "PATCH",
            "/machines/ns?instanceId=dead:1&safeGuardDuration=PT1S"
        )
        .status,
        200
    );
    // Held until its guard runs out: nothing free for a newcomer.
    cosid_error(
        &distribute(
            &server,
            "ns",
            "new:1",
            "machineBit=1&safeGuardDuration=PT1M",
        ),
        400,
        "M-01",
    );
    std::thread::sleep(Duration::from_millis(1_300));
    let (taken, last) = machine(&distribute(
        &server,
        "ns",
        "new:1",
        "machineBit=1&safeGuardDuration=PT1M",
    ));
    assert_eq!(taken, dead);
    // The dead holder could issue until its guard ran out: its successor starts above.
    assert!(
        last >= guarded_at + 1_000,
        "lastTimeStamp {last}, guarded at {guarded_at}"
    );
    let msg = cosid_error(
        &call(
            &server,
            "PATCH",
            "/machines/ns?instanceId=dead:1&safeGuardDuration=PT1S",
        ),
        400,
        "M-03",
    );
    assert!(msg.contains(&format!("machine ID {dead}")), "{msg}");
}

#[test]
fn a_reverted_machine_id_is_free_at_once_and_a_stable_one_waits_for_its_instance() {
    let server = TestServer::start(&[]);
    let q = "machineBit=1&safeGuardDuration=PT1M";
    let (first, _) = machine(&distribute(&server, "ns", "one:1", q));
    machine(&distribute(&server, "ns", "two:1", q));
    let reverted = call(
        &server,
        "DELETE",
        "/machines/ns?instanceId=one:1&stable=false",
    );
    assert_eq!((reverted.status, reverted.body.as_str()), (200, ""));
    // Idempotent, as CosId's.
    assert_eq!(
        call(
            &server,
            "DELETE",
            "/machines/ns?instanceId=one:1&stable=false"
        )
        .status,
        200
    );
    let before = now_ms();
    let (taken, last) = machine(&distribute(&server, "ns", "three:1", q));
    assert_eq!(taken, first);
    assert!(last >= before.saturating_sub(5), "{last} < {before}");

    // A stable instance's machine ID stays its own after a revert.
    let server = TestServer::start(&[]);
    let stable = "machineBit=1&stable=true&safeGuardDuration=PT1M";
    let (pod, _) = machine(&call(
        &server,
        "POST",
        &format!("/machines/ns?instanceId=pod-0&{stable}"),
    ));
    machine(&distribute(&server, "ns", "other:1", q));
    assert_eq!(
        call(
            &server,
            "DELETE",
            "/machines/ns?instanceId=pod-0&stable=true"
        )
        .status,
        200
    );
    cosid_error(&distribute(&server, "ns", "newcomer:1", q), 400, "M-01");
    let (back, _) = machine(&call(
        &server,
        "POST",
        &format!("/machines/ns?instanceId=pod-0&{stable}"),
    ));
    assert_eq!(back, pod);
}

#[test]
fn bad_machine_requests_are_refused_in_cosids_body_naming_the_limit() {
    let server = TestServer::start(&[]);
    for (query, named) in [
        ("instanceId=a&machineBit=0", "machineBit"),
        ("instanceId=a&machineBit=32", "machineBit"),
        ("instanceId=a", "machineBit"),
        ("machineBit=10", "instanceId"),
        (
            "instanceId=a&machineBit=10&safeGuardDuration=PT0.1S",
            "safeGuardDuration",
        ),
        (
            "instanceId=a&machineBit=10&safeGuardDuration=P1M",
            "safeGuardDuration",
        ),
        ("instanceId=a&machineBit=10&stable=maybe", "stable"),
        ("instanceId=a%0Ab&machineBit=10", "instanceId"),
    ] {
        let msg = cosid_error(
            &call(&server, "POST", &format!("/machines/ns?{query}")),
            400,
            "400",
        );
        assert!(
            msg.contains(named) && msg.contains("allowed:"),
            "{query}: {msg}"
        );
    }
    let long = "n".repeat(200);
    let msg = cosid_error(
        &call(
            &server,
            "POST",
            &format!("/machines/{long}?instanceId=a&machineBit=10"),
        ),
        400,
        "400",
    );
    assert!(msg.contains("128 bytes"), "{msg}");
    // A namespace that is no table name still gets a table of its own.
    let (id, _) = machine(&distribute(&server, "a%20b%2Fc", "x", "machineBit=4"));
    assert_eq!(id, 0);
}

#[test]
fn segments_are_created_once_and_ranged_as_cosids_next_max_id() {
    let server = TestServer::start(&[]);
    let created = call(
        &server,
        "POST",
        "/segments/distributor/shop/order?offset=100&step=10",
    );
    assert_eq!(
        (created.status, created.body.as_str()),
        (200, ""),
        "{}",
        created.body
    );
    // Idempotent: a second create (another offset) leaves the counter as it is.
    assert_eq!(
        call(
            &server,
            "POST",
            "/segments/distributor/shop/order?offset=5&step=10"
        )
        .status,
        200
    );
    let mut maxima = Vec::new();
    for step in [10, 10, 3] {
        let answer = call(
            &server,
            "PATCH",
            &format!("/segments/shop/order?step={step}"),
        );
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(answer.content_type.starts_with("application/json"));
        maxima.push(answer.body.trim().parse::<u64>().unwrap());
    }
    // The first range is (100, 110]: the first ID is offset + 1.
    assert_eq!(maxima, [110, 120, 123]);
    // The tag is shop.order for every other route.
    let answer = get(&server, "/v1/segment/shop.order");
    assert_eq!(json(&answer.body)["ids"][0], 124, "{}", answer.body);
    // A namespace named `distributor` still reaches the range route.
    assert_eq!(
        call(
            &server,
            "POST",
            "/segments/distributor/distributor/x?offset=0&step=5"
        )
        .status,
        200
    );
    let answer = call(&server, "PATCH", "/segments/distributor/x?step=5");
    assert_eq!(
        (answer.status, answer.body.trim()),
        (200, "5"),
        "{}",
        answer.body
    );

    let msg = cosid_error(
        &call(&server, "PATCH", "/segments/shop/none?step=5"),
        404,
        "404",
    );
    assert!(msg.contains("shop.none"), "{msg}");
    for (method, path, named) in [
        ("PATCH", "/segments/shop/order?step=0", "step"),
        ("PATCH", "/segments/shop/order?step=100001", "step"),
        ("PATCH", "/segments/shop/order", "step"),
        (
            "POST",
            "/segments/distributor/shop/b?offset=-1&step=5",
            "offset",
        ),
        (
            "POST",
            "/segments/distributor/shop/b?offset=9000000000000000001&step=5",
            "offset",
        ),
    ] {
        let msg = cosid_error(&call(&server, method, path), 400, "400");
        assert!(msg.contains(named), "{path}: {msg}");
    }
}

#[test]
fn ids_routes_answer_a_number_or_text_and_tokens_guard_every_route() {
    let token = "cosid-routes-token-0123456789";
    let tag_only = "cosid-routes-other-0123456789";
    let tokens = format!("{token}=*\n{tag_only}=order");
    let server = TestServer::start(&[("UIDGEN_TAGS", "order"), ("UIDGEN_TOKENS", &tokens)]);
    let bearer = format!("Authorization: Bearer {token}");
    let get_with = |path: &str, header: &str| curl(&["-H", header, &server.url(path)]);
    let share = get_with("/ids", &bearer);
    assert!(share.content_type.starts_with("application/json"));
    let first: u64 = share.body.parse().unwrap();
    let text = get_with("/ids/as-string", &bearer);
    assert!(
        text.content_type.starts_with("text/plain"),
        "{}",
        text.content_type
    );
    assert!(text.body.parse::<u64>().unwrap() > first);
    let order: u64 = get_with("/ids/order", &bearer).body.parse().unwrap();
    let next: u64 = get_with("/ids/as-string/order", &bearer)
        .body
        .parse()
        .unwrap();
    assert_eq!(next, order + 1);
    let msg = cosid_error(&get_with("/ids/none", &bearer), 404, "404");
    assert!(msg.contains("none"), "{msg}");

    // No token: 401; a token not granted @machines or the segment: 403; both in CosId's body.
    let msg = cosid_error(
        &call(&server, "POST", "/machines/ns?instanceId=a&machineBit=4"),
        401,
        "401",
    );
    assert!(msg.contains("a token is needed"), "{msg}");
    let wrong = curl(&[
        "-X",
        "POST",
        "-H",
        "Authorization: Bearer wrong-token-0123456789",
        &server.url("/machines/ns?instanceId=a&machineBit=4"),
    ]);
    let msg = cosid_error(&wrong, 401, "401");
    assert!(
        msg.contains("not one this service knows") && !msg.contains("wrong-token"),
        "{msg}"
    );
    let other = format!("Authorization: Bearer {tag_only}");
    let refused = curl(&[
        "-X",
        "POST",
        "-H",
        &other,
        &server.url("/machines/ns?instanceId=a&machineBit=4"),
    ]);
    cosid_error(&refused, 403, "403");
    let refused = curl(&[
        "-X",
        "PATCH",
        "-H",
        &other,
        &server.url("/segments/shop/order?step=5"),
    ]);
    cosid_error(&refused, 403, "403");
    let taken = curl(&[
        "-X",
        "POST",
        "-H",
        &bearer,
        &server.url("/machines/ns?instanceId=a&machineBit=4"),
    ]);
    assert_eq!(machine(&taken).0, 0);
    assert!(!taken.body.contains(token));
}

#[test]
fn a_regions_worker_id_range_bounds_its_machine_ids() {
    let server = TestServer::start(&[("UIDGEN_WORKER_IDS", "512-1023")]);
    let (id, _) = machine(&distribute(&server, "ns", "a", "machineBit=10"));
    assert_eq!(id, 512);
    let msg = cosid_error(&distribute(&server, "ns", "b", "machineBit=9"), 400, "M-01");
    assert!(msg.contains("worker_ids starts at 512"), "{msg}");
    let (id, _) = machine(&distribute(&server, "ns", "c", "machineBit=20"));
    assert_eq!(id, 513);
}

#[test]
fn one_instance_racing_itself_gets_one_machine_id_and_every_one_it_holds_is_guarded() {
    let server = TestServer::start(&[]);
    let answers: Vec<u64> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    machine(&distribute(
                        &server,
                        "race",
                        "same",
                        "machineBit=5&safeGuardDuration=PT2S",
                    ))
                    .0
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert!(answers.iter().all(|&id| id == answers[0]), "{answers:?}");
    // Two services racing can still leave an instance two machine IDs: made here by hand.
    let url = uidgen::StoreUrl::parse(server.store_path().to_str().unwrap()).unwrap();
    let store = url.lease_store_in("cosid_race").unwrap();
    let request = uidgen::LeaseRequest::new("cosid:same", Duration::from_secs(2), 31);
    let second = match store.acquire(&request).unwrap() {
        uidgen::Acquired::Granted { worker_id, .. } => worker_id,
        other => panic!("{other:?}"),
    };
    assert_ne!(second, answers[0]);
    // Guarded past both leases' two seconds: neither lapses, so no newcomer gets either.
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(800));
        let guarded = call(
            &server,
            "PATCH",
            "/machines/race?instanceId=same&safeGuardDuration=PT2S",
        );
        assert_eq!(guarded.status, 200, "{}", guarded.body);
    }
    let live: Vec<u64> = store
        .leases()
        .unwrap()
        .into_iter()
        .filter(|r| r.holder.as_deref() == Some("cosid:same") && r.expires_in.is_some())
        .map(|r| r.worker_id)
        .collect();
    assert_eq!(live.len(), 2, "{live:?}");
    let (newcomer, _) = machine(&distribute(&server, "race", "new", "machineBit=5"));
    assert!(!live.contains(&newcomer), "{newcomer} is still held");
    // A revert gives both back.
    assert_eq!(
        call(&server, "DELETE", "/machines/race?instanceId=same").status,
        200
    );
    assert!(store
        .leases()
        .unwrap()
        .iter()
        .all(|r| r.holder.as_deref() != Some("cosid:same")));
}

#[test]
fn values_that_are_not_utf8_are_refused_not_merged_and_head_draws_nothing() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    for raw in ["%FF", "%FE"] {
        let msg = cosid_error(
            &call(
                &server,
                "POST",
                &format!("/machines/utf?machineBit=8&instanceId={raw}"),
            ),
            400,
            "400",
        );
        assert!(msg.contains("UTF-8"), "{msg}");
    }
    let first: u64 = get(&server, "/ids/order").body.parse().unwrap();
    for path in [
        "/ids/order",
        "/ids/as-string/order",
        "/ids",
        "/ids/as-string",
    ] {
        let head = curl(&["-I", &server.url(path)]);
        assert!(
            head.body.starts_with("HTTP/1.1 200"),
            "{path}: {}",
            head.body
        );
    }
    let next: u64 = get(&server, "/ids/order").body.parse().unwrap();
    assert_eq!(next, first + 1, "HEAD drew IDs");
    let head = curl(&["-I", &server.url("/ids/no-such-tag")]);
    assert!(head.body.starts_with("HTTP/1.1 404"), "{}", head.body);
}

#[test]
fn a_revert_through_one_service_frees_the_machine_id_at_once_on_the_other() {
    let a = TestServer::start(&[]);
    let store = a.store_path().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let b = TestServer::start_with(
        support::config_in(dir.path(), &[("UIDGEN_STORE", &store)]),
        dir,
    );
    let q = "machineBit=1&safeGuardDuration=PT24H";
    let (first, _) = machine(&distribute(&b, "shared", "x", q));
    assert_eq!(
        call(&b, "PATCH", &format!("/machines/shared?instanceId=x&{q}")).status,
        200
    );
    assert_eq!(
        call(&a, "DELETE", "/machines/shared?instanceId=x").status,
        200
    );
    let before = now_ms();
    let (again, last) = machine(&distribute(&b, "shared", "y", q));
    assert_eq!(again, first);
    // Not a day ahead (the guard's lease end): the holder said it stopped.
    assert!(
        last <= now_ms() + 1_000 && last + 5 >= before,
        "lastTimeStamp {last}, now {before}"
    );
}
