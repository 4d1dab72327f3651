//! HTTP as clients and tools expect it: HEAD draws nothing, `Accept` by its rules, IDs
//! read in every form the service writes, repeated parameters refused, limits on the
//! head and the target that hold and answer in JSON, 405 in JSON, CORS as configured.

mod support;

use support::{curl, get, json, numbers, TestServer};

/// The number after `name ` in the service's /metrics (0 when absent).
fn metric(server: &TestServer, name: &str) -> f64 {
    let text = get(server, "/metrics").body;
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn head_answers_as_get_would_and_draws_no_id() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    let first: u64 = get(&server, "/api/segment/get/order").body.parse().unwrap();
    get(&server, "/api/snowflake/get/x");
    let snowflakes = r#"uidgen_ids_served_total{route="leaf",tag="@snowflake"}"#;
    let before = metric(&server, snowflakes);
    for (path, kind) in [
        ("/api/segment/get/order", "text/plain"),
        ("/api/snowflake/get/x", "text/plain"),
        ("/v1/segment/order?count=1000", "application/json"),
        ("/v1/snowflake?count=100000", "application/json"),
        (
            "/tinyid/id/nextIdSimple?bizType=order&batchSize=100",
            "text/plain",
        ),
        ("/tinyid/id/nextId?bizType=order", "application/json"),
        ("/tinyid/id/nextSegmentIdSimple?bizType=order", "text/plain"),
    ] {
        for _ in 0..3 {
            let answer = curl(&["-I", &server.url(path)]);
            assert_eq!(answer.status, 200, "HEAD {path}: {}", answer.body);
            assert!(
                answer.content_type.starts_with(kind),
                "HEAD {path}: {}",
                answer.content_type
            );
        }
    }
    // HEAD checks what GET checks: an unknown tag is refused as GET refuses it.
    assert_eq!(
        curl(&["-I", &server.url("/v1/segment/missing")]).status,
        404
    );
    assert_eq!(
        curl(&["-I", &server.url("/api/segment/get/missing")]).status,
        500
    );
    let missing = server.url("/tinyid/id/nextIdSimple?bizType=missing");
    assert!(curl(&["-I", &missing]).status >= 400);
    assert_eq!(
        curl(&["-I", &server.url("/v1/snowflake?count=0")]).status,
        400
    );
    // Nothing was drawn: the tag's next ID follows the first, and no snowflake ID was
    // counted.
    let next: u64 = get(&server, "/api/segment/get/order").body.parse().unwrap();
    assert_eq!(next, first + 1, "HEAD requests used up IDs");
    assert_eq!(metric(&server, snowflakes), before);
}

#[test]
fn accept_is_read_by_its_rules_and_one_that_takes_neither_form_is_406() {
    let server = TestServer::start(&[]);
    let asked = |accept: &str| {
        curl(&[
            "-H",
            &format!("Accept: {accept}"),
            &server.url("/v1/snowflake"),
        ])
    };
    for (accept, text) in [
        ("text/plain;q=0, application/json", false),
        ("TEXT/PLAIN", true),
        ("Text/Plain; charset=utf-8", true),
        ("application/json;q=0.5, text/plain;q=0.9", true),
        ("text/plain;q=0.5, application/json", false),
        ("text/plain, application/json", true),
        ("application/json, text/plain", false),
        ("*/*", false),
        ("text/*", true),
        ("text/*;q=0.2, */*;q=0.8", false),
        ("text/html, */*;q=0.1", false),
    ] {
        let answer = asked(accept);
        assert_eq!(answer.status, 200, "{accept}: {}", answer.body);
        let want = if text {
            "text/plain"
        } else {
            "application/json"
        };
        assert!(
            answer.content_type.starts_with(want),
            "{accept}: {}",
            answer.content_type
        );
    }
    for accept in [
        "image/png",
        "text/plain;q=0",
        "application/json;q=0, text/plain;q=0",
    ] {
        let answer = asked(accept);
        assert_eq!(answer.status, 406, "{accept}: {}", answer.body);
        let body = json(&answer.body);
        assert!(
            body["limit"].as_str().unwrap().contains("text/plain"),
            "{body}"
        );
    }
}

#[test]
fn every_route_that_takes_an_id_reads_every_form_the_service_writes() {
    let server = TestServer::start(&[]);
    for format in ["decimal", "hex", "base62", "base32"] {
        let body = json(&get(&server, &format!("/v1/snowflake?format={format}")).body);
        let id = numbers(&body["ids"])[0];
        let text = body["ids_str"][0].as_str().unwrap().to_owned();
        // Named, the form always reads back.
        let decoded = json(&get(&server, &format!("/v1/decode/{text}?format={format}")).body);
        assert_eq!(decoded["id"], id, "{format} {text}: {decoded}");
        let leaf = get(
            &server,
            &format!("/decodeSnowflakeId?snowflakeId={text}&format={format}"),
        );
        assert_eq!(leaf.status, 200, "{format} {text}: {}", leaf.body);
        let worker = json(&leaf.body)["workerId"].as_str().unwrap().to_owned();
        assert_eq!(worker, decoded["worker_id"].to_string(), "{format}");
        // Unnamed, it is told apart as `uidgen parse` does: digits only are decimal, so
        // only a form with a letter in it is sure to come back as itself.
        if format == "decimal" || text.bytes().any(|b| b.is_ascii_alphabetic()) {
            let guessed = json(&get(&server, &format!("/v1/decode/{text}")).body);
            assert_eq!(guessed["id"], id, "{format} {text}: {guessed}");
        }
    }
    // A hex ID of digits only: decimal unless named.
    let answer = json(&get(&server, "/v1/decode/0000000000000010?format=hex").body);
    assert_eq!(answer["id"], 16);
    let answer = json(&get(&server, "/v1/decode/0000000000000010").body);
    assert_eq!(answer["id"], 10);
    let answer = get(&server, "/v1/decode/10?format=base64");
    assert_eq!(answer.status, 400, "{}", answer.body);
    let answer = get(&server, "/v1/decode/zz-not-an-id");
    assert_eq!(answer.status, 400);
    assert!(json(&answer.body)["limit"]
        .as_str()
        .unwrap()
        .contains("base62"));
}

#[test]
fn a_repeated_parameter_is_a_400_naming_it() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    for (path, name) in [
        ("/v1/snowflake?count=1&count=5", "count"),
        ("/v1/segment/order?format=hex&format=base62", "format"),
        (
            "/decodeSnowflakeId?snowflakeId=1&snowflakeId=2",
            "snowflakeId",
        ),
        (
            "/tinyid/id/nextIdSimple?bizType=order&bizType=user",
            "bizType",
        ),
    ] {
        support::assert_refused(&server, path, &[name, "more than once"]);
    }
    // In the query and the form body at once counts too.
    let answer = curl(&[
        "--data",
        "bizType=order",
        &server.url("/tinyid/id/nextIdSimple?bizType=order"),
    ]);
    assert_eq!(answer.status, 400, "{}", answer.body);
}

#[test]
fn the_limits_on_the_head_and_the_target_hold_and_answer_in_json() {
    let server = TestServer::start(&[]);
    // One header of 100 KB: past the 64 KiB head limit, though hyper's buffer takes it.
    let big = format!("X-Big: {}", "a".repeat(100 * 1024));
    let answer = curl(&["-H", &big, &server.url("/v1/snowflake")]);
    assert_eq!(answer.status, 431, "{}", answer.body);
    let body = json(&answer.body);
    assert!(body["limit"].as_str().unwrap().contains("65536"), "{body}");
    // Many headers that add up past it.
    let mut args: Vec<String> = (0..40)
        .map(|i| format!("X-Part-{i}: {}", "b".repeat(2000)))
        .flat_map(|h| ["-H".to_owned(), h])
        .collect();
    args.push(server.url("/api/snowflake/get/x"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(curl(&args).status, 431);
    // A head within the limit passes.
    let fine = format!("X-Fine: {}", "c".repeat(30 * 1024));
    assert_eq!(
        curl(&["-H", &fine, &server.url("/v1/snowflake")]).status,
        200
    );
    // A target past 8 KiB.
    let long = format!("/v1/snowflake?pad={}", "d".repeat(9 * 1024));
    let answer = get(&server, &long);
    assert_eq!(answer.status, 414, "{}", answer.body);
    assert!(json(&answer.body)["limit"]
        .as_str()
        .unwrap()
        .contains("8192"));
    // Still serving, and every refusal counted.
    assert_eq!(get(&server, "/api/snowflake/get/x").status, 200);
    assert!(metric(&server, r#"uidgen_requests_refused_total{status="431"}"#) >= 2.0);
}

#[test]
fn a_method_a_route_does_not_take_is_405_in_json_with_allow() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    for (method, path) in [
        ("DELETE", "/v1/snowflake"),
        ("POST", "/api/segment/get/order"),
        ("GET", "/v1/segment/order/range"),
        ("PUT", "/healthz"),
    ] {
        let answer = curl(&["-i", "-X", method, &server.url(path)]);
        assert_eq!(answer.status, 405, "{method} {path}: {}", answer.body);
        let lower = answer.body.to_ascii_lowercase();
        assert!(
            lower.contains("\r\nallow: "),
            "{method} {path}: {}",
            answer.body
        );
        let body = answer.body.split("\r\n\r\n").nth(1).unwrap_or_default();
        assert!(
            json(body)["error"].as_str().unwrap().contains(method),
            "{body}"
        );
    }
}

#[test]
fn cors_answers_the_configured_origins_only() {
    let origin = "https://app.example.com";
    let server = TestServer::start(&[("UIDGEN_CORS_ORIGINS", origin)]);
    let preflight = curl(&[
        "-i",
        "-X",
        "OPTIONS",
        "-H",
        &format!("Origin: {origin}"),
        "-H",
        "Access-Control-Request-Method: GET",
        "-H",
        "Access-Control-Request-Headers: authorization",
        &server.url("/v1/snowflake"),
    ]);
    assert!(preflight.status < 300, "{}", preflight.body);
    let head = preflight.body.to_ascii_lowercase();
    assert!(
        head.contains(&format!("access-control-allow-origin: {origin}")),
        "{head}"
    );
    assert!(head.contains("authorization"), "{head}");
    for path in [
        "/v1/snowflake",
        "/api/snowflake/get/x",
        "/v1/snowflake?count=2",
    ] {
        let allowed = curl(&["-i", "-H", &format!("Origin: {origin}"), &server.url(path)]);
        assert_eq!(allowed.status, 200);
        assert!(
            allowed
                .body
                .to_ascii_lowercase()
                .contains("access-control-allow-origin: https://app.example.com"),
            "{path}: {}",
            allowed.body
        );
        let other = curl(&[
            "-i",
            "-H",
            "Origin: https://evil.example",
            &server.url(path),
        ]);
        assert!(
            !other
                .body
                .to_ascii_lowercase()
                .contains("access-control-allow-origin"),
            "{path}"
        );
    }
    // Without origins configured, no CORS header at all.
    let plain = TestServer::start(&[]);
    let answer = curl(&[
        "-i",
        "-H",
        &format!("Origin: {origin}"),
        &plain.url("/v1/snowflake"),
    ]);
    assert!(!answer
        .body
        .to_ascii_lowercase()
        .contains("access-control-allow-origin"));
}

#[test]
fn metrics_name_the_build_and_time_requests_by_route_never_by_raw_path() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    for _ in 0..3 {
        get(&server, "/v1/snowflake");
    }
    get(&server, "/api/segment/get/order");
    get(&server, "/no/such/path/12345");
    let text = get(&server, "/metrics").body;
    let build = format!(
        "uidgen_build_info{{version=\"{}\",commit=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        uidgen_server::COMMIT
    );
    assert!(text.contains(&build), "{text}");
    let count = |route: &str| {
        metric(
            &server,
            &format!("uidgen_http_request_duration_seconds_count{{route=\"{route}\"}}"),
        )
    };
    assert!(count("/v1/snowflake") >= 3.0);
    assert!(count("/api/segment/get/{key}") >= 1.0);
    assert!(count("(other)") >= 1.0);
    assert!(!text.contains("12345"), "a raw path became a label: {text}");
}
