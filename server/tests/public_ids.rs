//! What issue 23 added to the service: period tags (IDs that start with their day) and
//! opaque public IDs (`format=opaque`, `/v1/opaque/{public}`), asked with curl.

mod support;

use support::{config_in, curl, get, json, numbers, TestServer};
use uidgen_server::Config;

/// Today in UTC+8 as `yyyyMMdd`.
fn day_in_utc8() -> u64 {
    let now = chrono::Utc::now() + chrono::Duration::hours(8);
    now.format("%Y%m%d").to_string().parse().unwrap()
}

#[test]
fn a_period_tag_starts_with_its_day_restarts_its_sequence_and_has_no_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_in(dir.path(), &[("UIDGEN_TAGS", "order")]);
    let file: Config = toml::from_str(
        r#"
        [[period_tags]]
        tag = "receipt"
        utc_offset = "+08:00"
        sequence_digits = 6
        "#,
    )
    .unwrap();
    config.period_tags = file.period_tags;
    let server = TestServer::start_with(config, dir);

    let before = day_in_utc8();
    let body = json(&get(&server, "/v1/segment/receipt?count=3").body);
    let after = day_in_utc8();
    let ids: Vec<u64> = numbers(&body["ids"]);
    // The run may cross midnight in UTC+8: the day is the one before or after the call.
    let day = ids[0] / 1_000_000;
    assert!(
        day == before || day == after,
        "{ids:?} for {before}..{after}"
    );
    assert_eq!(
        ids,
        [
            day * 1_000_000 + 1,
            day * 1_000_000 + 2,
            day * 1_000_000 + 3
        ]
    );
    // Leaf's route serves it too, going on from there.
    let leaf = get(&server, "/api/segment/get/receipt");
    assert_eq!(leaf.status, 200, "{}", leaf.body);
    assert_eq!(
        leaf.body.trim().parse::<u64>().unwrap(),
        day * 1_000_000 + 4
    );

    // No ranges: a client could not put the period in front of its own IDs.
    let range = curl(&[
        "-X",
        "POST",
        &server.url("/v1/segment/receipt/range?count=10"),
    ]);
    assert_eq!(range.status, 400, "{}", range.body);
    assert!(range.body.contains("is a period tag"), "{}", range.body);
    let tinyid = get(&server, "/tinyid/id/nextSegmentIdSimple?bizType=receipt");
    assert!(tinyid.status >= 400, "{} {}", tinyid.status, tinyid.body);
    // Its rows are not tags of their own.
    let row = get(&server, &format!("/v1/segment/receipt:{day}"));
    assert_eq!(row.status, 400, "{}", row.body);
    assert!(
        row.body.contains("is a row of the period tag"),
        "{}",
        row.body
    );
}

#[test]
fn a_bad_period_tag_is_refused_before_start() {
    for (toml_text, says) in [
        (
            "[[period_tags]]\ntag = \"r\"\nutc_offset = \"+25:00\"",
            "period_tags.utc_offset = +25:00 is not allowed",
        ),
        (
            "[[period_tags]]\ntag = \"r\"\nperiod = \"week\"",
            "period_tags.period = week is not allowed: period = week is out of range: day or month",
        ),
        (
            "tags = [\"r\"]\n[[period_tags]]\ntag = \"r\"",
            "a tag not also in tags",
        ),
        (
            "[[period_tags]]\ntag = \"@snowflake\"",
            "a tag other than @snowflake, @opaque, @status and *",
        ),
        (
            "[[residue_tags]]\ntag = \"*\"\nstores = [\"a\", \"b\"]",
            "a tag other than @snowflake, @opaque, @status and *",
        ),
        (
            "[[period_tags]]\ntag = \"r\"\n[[period_tags]]\ntag = \"r\"\nperiod = \"month\"",
            "listed twice",
        ),
        (
            "[[period_tags]]\ntag = \" r\"",
            "without control characters or white space at either end",
        ),
    ] {
        let config: Config = toml::from_str(toml_text).unwrap();
        let err = config.check().unwrap_err().to_string();
        assert!(err.contains(says), "{toml_text}: {err}");
    }
    let err = toml::from_str::<Config>("[[period_tags]]\ntag = \"r\"\nzone = \"x\"")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("unknown field `zone`"), "{err}");
}

/// A config whose `[[residue_tags]]` come from `toml_text`, on a fresh store in `dir`.
fn with_residue_tags(dir: &std::path::Path, toml_text: &str) -> Config {
    let mut config = config_in(dir, &[]);
    config.residue_tags = toml::from_str::<Config>(toml_text).unwrap().residue_tags;
    config
}

#[test]
fn a_residue_tag_draws_from_every_store_that_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.sqlite3"), dir.path().join("b.sqlite3"));
    let config = with_residue_tags(
        dir.path(),
        &format!(
            "[[residue_tags]]\ntag = \"order\"\nstores = [{:?}, {:?}]",
            a.display().to_string(),
            b.display().to_string()
        ),
    );
    let server = TestServer::start_with(config, dir);
    let ids = numbers(&json(&get(&server, "/v1/segment/order?count=10").body)["ids"]);
    assert_eq!(ids.iter().filter(|id| *id % 2 == 0).count(), 5, "{ids:?}");
    assert_eq!(
        ids.iter().collect::<std::collections::HashSet<_>>().len(),
        10
    );
    let leaf = get(&server, "/api/segment/get/order");
    assert_eq!(leaf.status, 200, "{}", leaf.body);
    let range = curl(&[
        "-X",
        "POST",
        &server.url("/v1/segment/order/range?count=10"),
    ]);
    assert_eq!(range.status, 400, "{}", range.body);
    assert!(range.body.contains("is a residue tag"), "{}", range.body);

    // One store cannot be used at start (its file is no SQLite database): the service
    // starts, and serves the other's class.
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("a.sqlite3").display().to_string();
    let broken = dir.path().join("b.sqlite3");
    std::fs::write(&broken, vec![0x5a; 4096]).unwrap();
    let broken = broken.display().to_string();
    let config = with_residue_tags(
        dir.path(),
        &format!("[[residue_tags]]\ntag = \"order\"\nstores = [{good:?}, {broken:?}]"),
    );
    let server = TestServer::start_with(config, dir);
    let ids = numbers(&json(&get(&server, "/v1/segment/order?count=10").body)["ids"]);
    assert!(ids.iter().all(|id| id % 2 == 0), "{ids:?}");
}

#[test]
fn a_bad_residue_tag_is_refused_before_start_without_showing_a_password() {
    let one = "[[residue_tags]]\ntag = \"r\"\nstores = [\"mysql://root:s3cret@db/x\"]";
    let config: Config = toml::from_str(one).unwrap();
    let err = config.check().unwrap_err().to_string();
    assert!(
        err.contains("2 to 64 stores, and one remainder for each"),
        "{err}"
    );
    assert!(!format!("{config:?}").contains("s3cret"), "{config:?}");
    let twice =
        "[[period_tags]]\ntag = \"r\"\n[[residue_tags]]\ntag = \"r\"\nstores = [\"a\", \"b\"]";
    let err = toml::from_str::<Config>(twice)
        .unwrap()
        .check()
        .unwrap_err()
        .to_string();
    assert!(err.contains("listed twice"), "{err}");
    // Classes the library refuses stop the start, naming the limit.
    let dir = tempfile::tempdir().unwrap();
    let config = with_residue_tags(
        dir.path(),
        "[[residue_tags]]\ntag = \"r\"\nstores = [\"a.db\", \"b.db\"]\nremainders = [0, 2]",
    );
    let err = uidgen_server::Ids::start(config).unwrap_err().to_string();
    assert!(err.contains("remainder = 2 is out of range: 0..2"), "{err}");
}

#[test]
fn a_residue_tag_without_a_start_is_refused_naming_tag_start() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.sqlite3"), dir.path().join("b.sqlite3"));
    let mut config = with_residue_tags(
        dir.path(),
        &format!("[[residue_tags]]\ntag = \"order\"\nstores = [{a:?}, {b:?}]"),
    );
    config.tag_start = None;
    let err = uidgen_server::Ids::start(config)
        .map(|_| ())
        .expect_err("a residue tag no store has, and no start")
        .to_string();
    for wanted in [
        "residue tag \"order\"",
        "has no such tag",
        "tag_start = FIRST",
    ] {
        assert!(err.contains(wanted), "{wanted}: {err}");
    }
}

const KEY_HEX: &str = "8f3c0a9be41d77f2c6a5b0e9d3f8127a4c6e2b9d0f1a3c5e7b9d1f3a5c7e9b0d";
const FLAKE: &str = "flake-token-0123456789abcdef";
const REVEAL: &str = "reveal-token-0123456789abcdef";
const EVERY: &str = "every-tag-token-0123456789abcdef";

#[test]
fn opaque_ids_hide_the_numbers_and_map_back_only_with_the_grant() {
    let keys = format!("7:{KEY_HEX}");
    let tokens = format!("{FLAKE}=@snowflake;{REVEAL}=@opaque;{EVERY}=*");
    let server = TestServer::start(&[("UIDGEN_OPAQUE_KEYS", &keys), ("UIDGEN_TOKENS", &tokens)]);
    let with = |token: &str, path: &str| {
        curl(&[
            "-H",
            &format!("Authorization: Bearer {token}"),
            &server.url(path),
        ])
    };

    let answer = with(FLAKE, "/v1/snowflake?count=50&format=opaque");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let body = json(&answer.body);
    assert_eq!(body["key_version"], 7);
    assert!(
        body.get("ids_str").is_none(),
        "the numbers travel beside: {body}"
    );
    let public: Vec<String> = body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(public.len(), 50);
    assert!(
        public.iter().all(|p| p.len() == 12 && p.starts_with('7')),
        "{public:?}"
    );
    // Not in the order of the IDs behind them.
    let mut sorted = public.clone();
    sorted.sort();
    assert_ne!(sorted, public);

    // Mapped back with the @opaque grant: the generator's IDs, in the order handed out.
    let ids: Vec<u64> = public
        .iter()
        .map(|p| {
            let answer = with(REVEAL, &format!("/v1/opaque/{p}"));
            assert_eq!(answer.status, 200, "{}", answer.body);
            let body = json(&answer.body);
            assert_eq!(body["key_version"], 7);
            assert_eq!(body["id_str"], body["id"].as_u64().unwrap().to_string());
            body["id"].as_u64().unwrap()
        })
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let decoded = get(&server, &format!("/v1/decode/{}", ids[0]));
    assert_eq!(decoded.status, 200, "{}", decoded.body);

    // Only with the grant.
    assert_eq!(
        with(FLAKE, &format!("/v1/opaque/{}", public[0])).status,
        403
    );
    assert_eq!(
        get(&server, &format!("/v1/opaque/{}", public[0])).status,
        401
    );
    // A string that is no public ID: 400 naming the problem; never a panic.
    for (bad, says) in [
        ("abc", "expected 12 characters"),
        ("700000000000!", "expected 12 characters"),
        ("70000000000%21", "base62"),
        ("900000000000", "key version 9, which is not known here"),
    ] {
        let answer = with(REVEAL, &format!("/v1/opaque/{bad}"));
        assert_eq!(answer.status, 400, "{bad}: {}", answer.body);
        assert!(answer.body.contains(says), "{bad}: {}", answer.body);
        assert!(!answer.body.contains(KEY_HEX), "{}", answer.body);
    }
    // One a line with Accept: text/plain.
    let lines = curl(&[
        "-H",
        &format!("Authorization: Bearer {FLAKE}"),
        "-H",
        "Accept: text/plain",
        &server.url("/v1/snowflake?count=3&format=opaque"),
    ]);
    assert_eq!(lines.body.lines().count(), 3, "{}", lines.body);
    assert!(lines.body.lines().all(|l| l.len() == 12), "{}", lines.body);
    // The metrics never show a key.
    assert!(!get(&server, "/metrics").body.contains(KEY_HEX));
}

#[test]
fn without_keys_opaque_is_refused_and_bad_keys_stop_the_start_without_showing_them() {
    let server = TestServer::start(&[("UIDGEN_TAGS", "order")]);
    let answer = get(&server, "/v1/segment/order?format=opaque");
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(
        answer.body.contains("UIDGEN_OPAQUE_KEYS"),
        "{}",
        answer.body
    );
    assert_eq!(get(&server, "/v1/opaque/700000000000").status, 404);

    let short = &KEY_HEX[..62];
    for (keys, says) in [
        (format!("1:{short}"), "key 1 has 62 hex digits; a key is 64"),
        (format!("1:{}x", &KEY_HEX[..63]), "not a hex digit"),
        (
            format!("62:{KEY_HEX}"),
            "key version \"62\" is not a number in 0..=61",
        ),
        (
            format!("1:{KEY_HEX},1:{KEY_HEX}"),
            "key version 1 is given twice",
        ),
    ] {
        let err = Config::load(None, [("UIDGEN_OPAQUE_KEYS".to_owned(), keys.clone())])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("opaque-ID keys from UIDGEN_OPAQUE_KEYS: "),
            "{err}"
        );
        assert!(err.contains(says), "{keys}: {err}");
        assert!(!err.contains(short), "the key shown: {err}");
    }
    // From a file too, and Debug shows the versions only.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys");
    std::fs::write(&file, format!("2:{KEY_HEX},1:{KEY_HEX}\n")).unwrap();
    let config = Config::load(
        None,
        [(
            "UIDGEN_OPAQUE_KEYS_FILE".to_owned(),
            file.display().to_string(),
        )],
    )
    .unwrap();
    let debug = format!("{config:?}");
    assert!(
        debug.contains("current_version: 2, retired_versions: [1]"),
        "{debug}"
    );
    assert!(!debug.contains(&KEY_HEX[..16]), "{debug}");
}

/// One request on a fresh connection, timed from connect to the end of the answer.
fn timed_get(addr: std::net::SocketAddr, path: &str) -> (std::time::Duration, String) {
    use std::io::{Read, Write};
    let started = std::time::Instant::now();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    (started.elapsed(), answer)
}

/// Large opaque batches are made off the request threads: with ten 100,000-ID opaque
/// requests in flight, probes and single-ID routes keep answering. The bound is a ratio
/// in the same run, not a fixed time: the slowest probe against the quickest batch. Made
/// on the request threads (the mutant this catches), a probe waits for a batch to end.
#[test]
fn opaque_batches_in_flight_never_hold_up_probes_or_single_ids() {
    let keys = format!("7:{KEY_HEX}");
    // The batches share two cores with the rest of a CI run: no 408 from the default
    // 5 s, which is not what is tested here.
    let server = TestServer::start(&[
        ("UIDGEN_OPAQUE_KEYS", &keys),
        ("UIDGEN_REQUEST_TIMEOUT_MS", "600000"),
    ]);
    let url = server.url("/v1/snowflake?count=100000&format=opaque");
    let batches: Vec<_> = (0..10)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                let answer = curl(&["--max-time", "300", &url]);
                (started.elapsed(), answer)
            })
        })
        .collect();
    // Once the batches are being made (the first answers take far longer than this),
    // time probes and single IDs until every batch has answered.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let mut timed = Vec::new();
    while batches.iter().any(|b| !b.is_finished()) {
        for path in ["/healthz", "/v1/snowflake", "/api/snowflake/get/any"] {
            let (took, answer) = timed_get(server.addr, path);
            assert!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer}");
            timed.push((path, took));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut quickest = std::time::Duration::MAX;
    for batch in batches {
        let (took, answer) = batch.join().unwrap();
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(json(&answer.body)["count"], 100_000);
        quickest = quickest.min(took);
    }
    assert!(
        timed.len() >= 6,
        "the batches ended before probes could run: {timed:?}"
    );
    let slowest = timed.iter().max_by_key(|(_, took)| *took).unwrap();
    assert!(
        slowest.1 * 4 < quickest,
        "{} took {:?} with opaque batches in flight, over a quarter of the quickest \
         batch's {quickest:?} ({} timed)",
        slowest.0,
        slowest.1,
        timed.len()
    );
}
