//! Every route answered as its clients parse it, asked with curl; hostile requests get a
//! 4xx that names the problem; tokens.

mod support;

use serde_json::Value;
use std::collections::HashSet;
use support::{curl, get, json, numbers, TestServer};

fn decimal(body: &str) -> u64 {
    assert!(
        !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()),
        "a plain decimal expected, got {body:?}"
    );
    body.parse().unwrap()
}

#[test]
fn leaf_routes_answer_a_plain_decimal_and_decode_as_leafs_formula() {
    // Leaf's own layout, so its decoding formula applies unchanged.
    let server = TestServer::start(&[("UIDGEN_TAGS", "order"), ("UIDGEN_LAYOUT", "snowflake")]);
    let mut last = 0;
    for _ in 0..5 {
        let answer = get(&server, "/api/segment/get/order");
        assert_eq!(answer.status, 200);
        assert!(
            answer.content_type.starts_with("text/plain"),
            "{}",
            answer.content_type
        );
        let id = decimal(&answer.body);
        assert!(id > last, "segment IDs increase: {id} after {last}");
        last = id;
    }
    let answer = get(&server, "/api/snowflake/get/anything");
    assert_eq!(answer.status, 200);
    let id = decimal(&answer.body);

    // Leaf's LeafController.decodeSnowflakeId, computed here independently.
    let millis = (id >> 22) + 1_288_834_974_657;
    let worker = (id >> 12) & 0x3ff;
    let sequence = id & 0xfff;
    let time = chrono::DateTime::from_timestamp_millis(millis as i64)
        .unwrap()
        .format("%Y-%m-%d %H:%M:%S%.3f");
    let answer = get(&server, &format!("/decodeSnowflakeId?snowflakeId={id}"));
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.body,
        format!(
            r#"{{"workerId":"{worker}","sequenceId":"{sequence}","timestamp":"{millis}({time})"}}"#
        )
    );
    // Leaf answers 200 with `errorMsg`; here it is a 400 that names the value.
    let answer = get(&server, "/decodeSnowflakeId?snowflakeId=12x");
    assert_eq!(answer.status, 400);
    assert!(answer.body.contains("12x"), "{}", answer.body);
    // An unknown tag is a failure (Leaf's status for it: 500), never `0` with 200.
    let answer = get(&server, "/api/segment/get/no-such-tag");
    assert_eq!(answer.status, 500);
    assert!(answer.body.contains("no-such-tag"), "{}", answer.body);
}

#[test]
fn tinyid_routes_answer_tinyids_bodies_by_get_and_by_form_post() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    let answer = get(&server, "/tinyid/id/nextId?bizType=order&batchSize=3");
    assert_eq!(answer.status, 200);
    let body = json(&answer.body);
    let ids: Vec<u64> = numbers(&body["data"]);
    assert_eq!(ids.len(), 3);
    assert_eq!(
        answer.body,
        format!(
            r#"{{"data":[{},{},{}],"code":200,"message":""}}"#,
            ids[0], ids[1], ids[2]
        )
    );
    // A form body, as a Tinyid-protocol client may send, on any method.
    let answer = curl(&[
        "-X",
        "POST",
        "-d",
        "bizType=order&batchSize=2",
        &server.url("/tinyid/id/nextIdSimple"),
    ]);
    assert_eq!(answer.status, 200);
    let simple: Vec<u64> = answer.body.split(',').map(decimal).collect();
    assert_eq!(simple.len(), 2);
    assert!(
        simple[0] > ids[2] && simple[1] > simple[0],
        "{simple:?} after {ids:?}"
    );
    let one = get(&server, "/tinyid/id/nextIdSimple?bizType=order");
    assert!(decimal(&one.body) > simple[1]);

    // Segments for the smart client: `(currentId, maxId]`, never overlapping anything
    // handed out before or after.
    let answer = curl(&[
        "-d",
        "bizType=order",
        &server.url("/tinyid/id/nextSegmentIdSimple"),
    ]);
    assert_eq!(answer.status, 200);
    let fields: Vec<u64> = answer.body.split(',').map(decimal).collect();
    let [current, loading, max, delta, remainder] = fields[..] else {
        panic!("five fields expected: {}", answer.body);
    };
    assert_eq!((delta, remainder), (1, 0));
    assert!(current < loading && loading < max, "{}", answer.body);
    assert_eq!(loading - current, (max - current) / 5, "loadingId at 20%");
    let answer = get(&server, "/tinyid/id/nextSegmentId?bizType=order");
    let body = json(&answer.body);
    assert_eq!(body["code"], 200);
    assert_eq!(body["message"], "");
    let keys: Vec<&str> = body["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in ["currentId", "loadingId", "maxId", "delta", "remainder"] {
        assert!(keys.contains(&key), "{key} missing from {}", answer.body);
    }
    let second_current = body["data"]["currentId"].as_u64().unwrap();
    assert!(
        second_current >= max,
        "ranges overlap: {second_current} < {max}"
    );
    let after = decimal(&get(&server, "/tinyid/id/nextIdSimple?bizType=order").body);
    assert!(
        !(current + 1..=max).contains(&after),
        "an ID {after} inside a range given to a client"
    );
}

#[test]
fn native_routes_give_batches_as_numbers_strings_or_lines_and_ranges_no_one_else_gets() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    let answer = get(&server, "/v1/snowflake?count=1000");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.content_type, "application/json");
    let body = json(&answer.body);
    let ids: Vec<u64> = numbers(&body["ids"]);
    let strings: Vec<u64> = body["ids_str"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 1000);
    assert_eq!(ids, strings);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in increasing order");

    let lines = curl(&[
        "-H",
        "Accept: text/plain",
        &server.url("/v1/segment/order?count=50"),
    ]);
    assert!(lines.content_type.starts_with("text/plain"));
    let segment: Vec<u64> = lines.body.lines().map(decimal).collect();
    assert_eq!(segment.len(), 50);
    assert!(segment.windows(2).all(|w| w[0] < w[1]));

    let range = json(
        &curl(&[
            "-X",
            "POST",
            &server.url("/v1/segment/order/range?count=100"),
        ])
        .body,
    );
    let (first, last) = (
        range["first"].as_u64().unwrap(),
        range["last"].as_u64().unwrap(),
    );
    assert_eq!(last - first + 1, 100);
    assert_eq!(range["first_str"], first.to_string());
    let later = numbers(&json(&get(&server, "/v1/segment/order?count=5000&x=1").body)["ids"]);
    let all: HashSet<u64> = segment.iter().chain(&later).copied().collect();
    assert_eq!(all.len(), segment.len() + later.len());
    assert!(
        all.iter().all(|id| !(first..=last).contains(id)),
        "the generator handed out an ID of a range given to a client"
    );

    let decoded = json(&get(&server, &format!("/v1/decode/{}", ids[0])).body);
    assert_eq!(decoded["id"].as_u64(), Some(ids[0]));
    assert_eq!(decoded["id_str"], ids[0].to_string());
    let worker = decoded["worker_id"].as_u64().unwrap();
    let layout = uidgen::BitsAllocator::preset(uidgen::Preset::Default).unwrap();
    assert_eq!(layout.parse(ids[0]).unwrap().worker_id, worker);
}

#[test]
fn hostile_requests_get_a_4xx_naming_the_problem_and_the_limit() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order"), ("UIDGEN_MAX_COUNT", "5000")]);
    for count in ["0", "-1", "1000000000000", "abc", "1.5", "", "%00", "5001"] {
        for route in ["/v1/snowflake", "/v1/segment/order"] {
            let answer = get(&server, &format!("{route}?count={count}"));
            assert_eq!(answer.status, 400, "{route}?count={count}: {}", answer.body);
            let body = json(&answer.body);
            assert!(
                body["error"].as_str().unwrap().contains("count"),
                "{}",
                answer.body
            );
            assert_eq!(body["limit"], "a whole number from 1 to 5000");
        }
    }
    let answer = get(&server, "/tinyid/id/nextId?bizType=order&batchSize=-5");
    assert_eq!(answer.status, 400);
    let body = json(&answer.body);
    assert_eq!(body["code"], 6);
    assert!(
        body["message"].as_str().unwrap().contains("batchSize"),
        "{}",
        answer.body
    );
    assert_eq!(body["data"], Value::Null);

    // Under the 8 KiB target limit (a longer one is a 414: tests/http.rs).
    let long_tag = "t".repeat(4 * 1024);
    let answer = get(&server, &format!("/v1/segment/{long_tag}"));
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(
        answer.body.len() < 1024,
        "the error quotes a shortened tag: {} bytes",
        answer.body.len()
    );
    assert!(answer.body.contains("128 characters"), "{}", answer.body);
    let answer = get(&server, "/v1/segment/bad%0Atag");
    assert_eq!(answer.status, 400, "{}", answer.body);
    // A path that is not UTF-8 once decoded: the same JSON refusal on every route.
    for path in [
        "/v1/segment/%FF",
        "/api/segment/get/a%C3%28",
        "/v1/decode/%80",
        "/machines/%FE?instanceId=a",
    ] {
        support::assert_refused(
            &server,
            path,
            &["\"error\":\"the request path is not UTF-8"],
        );
    }
    let answer = get(&server, "/v1/segment/unknown-tag");
    assert_eq!(answer.status, 404);
    assert!(answer.body.contains("unknown-tag"));
    let answer = get(&server, "/v1/decode/99999999999999999999999");
    assert_eq!(answer.status, 400, "{}", answer.body);
    let answer = get(&server, "/tinyid/id/nextIdSimple");
    assert_eq!(answer.status, 400);
    assert!(answer.body.contains("bizType"), "{}", answer.body);
    // A body past the limit.
    let big = "x".repeat(64 * 1024);
    let answer = curl(&[
        "-X",
        "POST",
        "--data-binary",
        &big,
        &server.url("/tinyid/id/nextIdSimple"),
    ]);
    assert_eq!(answer.status, 413, "{}", answer.body);
    // Still serving.
    assert_eq!(get(&server, "/api/segment/get/order").status, 200);
    let metrics = get(&server, "/metrics").body;
    assert!(
        metrics.contains("uidgen_requests_refused_total{status=\"400\"}"),
        "{metrics}"
    );
}

#[test]
fn tokens_draw_only_their_tags_and_never_appear_in_an_answer() {
    const ORDER: &str = "order-token-0123456789abcdef";
    const FLAKE: &str = "flake-token-0123456789abcdef";
    let tokens = format!("{ORDER}=order;{FLAKE}=@snowflake");
    let server = TestServer::start(&[("UIDGEN_TAGS", "order,user"), ("UIDGEN_TOKENS", &tokens)]);
    let bearer = |token: &str| format!("Authorization: Bearer {token}");
    let with = |token: &str, path: &str| curl(&["-H", &bearer(token), &server.url(path)]);

    assert_eq!(get(&server, "/v1/snowflake").status, 401);
    assert_eq!(
        with("wrong-token-0123456789abcdef", "/v1/snowflake").status,
        401
    );
    assert_eq!(with(ORDER, "/v1/snowflake").status, 403);
    assert_eq!(with(FLAKE, "/v1/snowflake").status, 200);
    assert_eq!(with(ORDER, "/v1/segment/order").status, 200);
    assert_eq!(with(ORDER, "/v1/segment/user").status, 403);
    assert_eq!(with(ORDER, "/api/segment/get/order").status, 200);
    assert_eq!(with(FLAKE, "/api/segment/get/order").status, 403);
    assert_eq!(get(&server, "/api/snowflake/get/x").status, 401);
    // Operations need no token.
    assert_eq!(get(&server, "/healthz").status, 200);

    // Tinyid: code 5 "token is error" for a wrong token and for another tag's.
    for query in [
        "bizType=order".to_string(),
        "bizType=order&token=nope".to_string(),
        format!("bizType=user&token={ORDER}"),
        format!("bizType=order&token={FLAKE}"),
    ] {
        let answer = get(&server, &format!("/tinyid/id/nextId?{query}"));
        assert!(
            matches!(answer.status, 401 | 403),
            "{query}: {}",
            answer.status
        );
        assert_eq!(
            answer.body, r#"{"data":null,"code":5,"message":"token is error"}"#,
            "{query}"
        );
        let answer = get(&server, &format!("/tinyid/id/nextIdSimple?{query}"));
        assert!(matches!(answer.status, 401 | 403));
        assert!(!answer.body.is_empty());
        assert!(!answer.body.contains(ORDER) && !answer.body.contains(FLAKE));
    }
    let answer = get(
        &server,
        &format!("/tinyid/id/nextIdSimple?bizType=order&token={ORDER}"),
    );
    assert_eq!(answer.status, 200);
    decimal(&answer.body);
    let metrics = get(&server, "/metrics").body;
    assert!(!metrics.contains(ORDER) && !metrics.contains(FLAKE));
    assert!(metrics.contains("uidgen_requests_refused_total{status=\"401\"}"));
}

#[test]
fn a_public_address_without_tokens_is_refused_naming_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::config_in(dir.path(), &[]);
    config.listen = "0.0.0.0:0".parse().unwrap();
    let err = config.check().unwrap_err().to_string();
    assert!(
        err.contains("0.0.0.0:0") && err.contains("allow_public"),
        "{err}"
    );
    config.allow_public = true;
    config.check().unwrap();
}

#[test]
fn a_stopped_service_gives_its_segment_tail_back_and_the_next_goes_on_from_its_last_id() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    let last = json(&get(&server, "/v1/segment/order?count=7").body)["ids"][6]
        .as_u64()
        .unwrap();
    let dir = server.stop();
    let config = support::config_in(dir.path(), &[("UIDGEN_TAGS", "order")]);
    let next = TestServer::start_with(config, dir);
    let first = json(&get(&next, "/v1/segment/order").body)["ids"][0]
        .as_u64()
        .unwrap();
    assert_eq!(first, last + 1, "the tail was given back at shutdown");
}

#[test]
fn ids_str_and_text_lines_come_in_the_asked_form_and_decode_to_the_ids() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    for format in uidgen::IdFormat::ALL {
        let body = json(&get(&server, &format!("/v1/snowflake?count=100&format={format}")).body);
        let numbers: Vec<u64> = numbers(&body["ids"]);
        let strings: Vec<&str> = body["ids_str"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for (id, text) in numbers.iter().zip(&strings) {
            assert_eq!(format.decode(text).unwrap(), *id, "{format}: {text}");
            if let Some(width) = format.width() {
                assert_eq!(text.len(), width);
            }
        }
        let lines = curl(&[
            "-H",
            "Accept: text/plain",
            &server.url(&format!("/v1/segment/order?count=20&format={format}")),
        ]);
        let decoded: Vec<u64> = lines
            .body
            .lines()
            .map(|l| format.decode(l).unwrap())
            .collect();
        assert_eq!(decoded.len(), 20);
        assert!(
            decoded.windows(2).all(|w| w[1] == w[0] + 1),
            "{:?}",
            lines.body
        );
    }
    let answer = get(&server, "/v1/snowflake?format=base64");
    assert_eq!(answer.status, 400);
    assert!(
        answer.body.contains("base62") && answer.body.contains("base64"),
        "{}",
        answer.body
    );
}

#[test]
fn no_start_and_no_request_ever_creates_a_tag() {
    // A configured tag the store lacks, with no start named: the start fails, naming the
    // tag and both ways to create it, and nothing was created.
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::config_in(dir.path(), &[("UIDGEN_TAGS", "order")]);
    config.tag_start = None;
    let store = config.store.clone().unwrap();
    let err = uidgen_server::Ids::start(config)
        .map(|_| ())
        .expect_err("a missing tag without a start")
        .to_string();
    for wanted in ["\"order\" does not exist", "segment create", "tag_start"] {
        assert!(err.contains(wanted), "{wanted}: {err}");
    }
    // The service's words, not the library's methods.
    assert!(!err.contains("SegmentStore::create"), "{err}");
    let segments = uidgen::StoreUrl::parse(&store)
        .unwrap()
        .segment_store()
        .unwrap();
    assert!(segments.tag("order").unwrap().is_none(), "created anyway");

    // No route creates one either: every way of asking fails (404, or the status the
    // route's own clients expect), and the store still has no such tag.
    let server = TestServer::start(&[]);
    for path in [
        "/v1/segment/order",
        "/api/segment/get/order",
        "/tinyid/id/nextIdSimple?bizType=order",
        "/tinyid/id/nextSegmentIdSimple?bizType=order",
    ] {
        let answer = get(&server, path);
        assert!(
            answer.status >= 400,
            "{path}: {} {}",
            answer.status,
            answer.body
        );
    }
    let answer = support::curl(&[
        "-X",
        "POST",
        &server.url("/v1/segment/order/range?count=10"),
    ]);
    assert_eq!(answer.status, 404, "{}", answer.body);
    let segments = uidgen::StoreUrl::parse(server.store_path().to_str().unwrap())
        .unwrap()
        .segment_store()
        .unwrap();
    assert!(
        segments.tag("order").unwrap().is_none(),
        "a request created it"
    );
}

/// `worker_ids` limits the snowflake routes' lease to a region's share: the IDs decode to
/// a worker ID in it (the lowest free in it, not 0), as `/v1/decode` and the layout say.
#[test]
fn a_worker_id_range_gives_the_snowflake_routes_a_worker_id_in_it() {
    let server = TestServer::start(&[("UIDGEN_WORKER_IDS", "700-701")]);
    let ids = numbers(&json(&get(&server, "/v1/snowflake?count=10").body)["ids"]);
    let layout = uidgen::BitsAllocator::preset(uidgen::Preset::Default).unwrap();
    for id in &ids {
        assert_eq!(layout.parse(*id).unwrap().worker_id, 700, "{id}");
    }
    let decoded = json(&get(&server, &format!("/v1/decode/{}", ids[0])).body);
    assert_eq!(decoded["worker_id"].as_u64(), Some(700));
}

#[test]
fn a_region_layouts_ids_decode_to_their_region_and_others_have_none() {
    let server = TestServer::start(&[
        ("UIDGEN_LAYOUT", "39/1/10/13"),
        ("UIDGEN_UNIT", "ms"),
        ("UIDGEN_REGION", "1"),
    ]);
    let ids = numbers(&json(&get(&server, "/v1/snowflake?count=3").body)["ids"]);
    for id in ids {
        let decoded = json(&get(&server, &format!("/v1/decode/{id}")).body);
        assert_eq!(decoded["region"], 1, "{decoded}");
        // The region's bit sits right above the worker ID's 10 and the sequence's 13.
        assert_eq!((id >> 23) & 1, 1, "{id}");
    }
    let plain = TestServer::start(&[]);
    let id = numbers(&json(&get(&plain, "/v1/snowflake?count=1").body)["ids"])[0];
    let decoded = json(&get(&plain, &format!("/v1/decode/{id}")).body);
    assert!(decoded.get("region").is_none(), "{decoded}");
    assert!(decoded["worker_id"].is_u64(), "{decoded}");
}

#[test]
fn a_ranges_taker_and_only_it_gives_the_unused_tail_back_while_no_range_came_after() {
    // Not served by the service: a range its prefetch took after the test's would stop
    // that one's tail going back (as it should).
    let server = TestServer::start_holding("order", &[]);
    let take = |count: u64| {
        let answer = curl(&[
            "-X",
            "POST",
            &server.url(&format!("/v1/segment/order/range?count={count}")),
        ]);
        assert_eq!(answer.status, 200, "{}", answer.body);
        let body = json(&answer.body);
        let receipt = body["receipt"].as_str().unwrap().to_owned();
        assert!(
            receipt.len() == 32 && receipt.bytes().all(|b| b.is_ascii_hexdigit()),
            "{receipt}"
        );
        (
            body["first"].as_u64().unwrap(),
            body["last"].as_u64().unwrap(),
            receipt,
        )
    };
    let give = |first: u64, receipt: &str| {
        let answer = curl(&[
            "-X",
            "POST",
            &server.url(&format!(
                "/v1/segment/order/giveback?first={first}&receipt={receipt}"
            )),
        ]);
        (answer.status, answer.body)
    };
    let given = |first: u64, receipt: &str| {
        let (status, body) = give(first, receipt);
        assert_eq!(status, 200, "{body}");
        json(&body)["given_back"].as_bool().unwrap()
    };
    let (first, last, receipt) = take(10);
    assert_eq!(last, first + 9);
    assert!(given(first + 3, &receipt));
    // Good once: the same receipt gives nothing back again.
    assert!(!given(first + 3, &receipt));
    let (a_first, _, a) = take(10);
    assert_eq!(
        a_first,
        first + 3,
        "the tail given back is handed out again"
    );
    let (b_first, _, b) = take(10);
    // A client that closes gives its next range back whole, then its current one's tail.
    assert!(given(b_first, &b));
    assert!(given(a_first + 5, &a));
    assert_eq!(take(1).0, a_first + 5);
    // A tail with a range taken after it stays where it is.
    let (c_first, _, c) = take(10);
    let (d_first, _, _) = take(1);
    assert!(!given(c_first + 5, &c));
    assert_eq!(take(1).0, d_first + 1);
    // A receipt this service never wrote gives nothing back, whatever the numbers.
    assert!(!given(1, "0123456789abcdef0123456789abcdef"));
    for (first, receipt, named) in [(1, "xyz", "receipt"), (1, "", "receipt")] {
        let (status, body) = give(first, receipt);
        assert_eq!(status, 400, "{body}");
        assert!(body.contains(named), "{body}");
    }
    let (d_first, d_last, d) = take(5);
    let (status, body) = give(d_last + 2, &d);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains(&format!("from its first ID, {d_first}")),
        "{body}"
    );
    let (status, body) = give(d_first, "");
    assert_eq!(status, 400, "{body}");
    let missing = curl(&[
        "-X",
        "POST",
        &server.url("/v1/segment/order/giveback?receipt=00"),
    ]);
    assert_eq!(missing.status, 400);
    assert!(missing.body.contains("first"), "{}", missing.body);
    // The last range whole, then nothing is lost: the next range starts at its first.
    assert!(given(d_first, &d));
    assert_eq!(take(1).0, d_first);
}
