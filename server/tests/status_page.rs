//! `/status` as an operator on call sees it, in headless Chromium (Debian's `chromium`,
//! a browser no one here wrote): a service on MariaDB, reached through a relay the test
//! can cut, with two tags and tokens on; IDs drawn from both tags and the snowflake route.
//!
//! - The page loads with the status token as Basic credentials (what a browser sends),
//!   logs nothing to the console, and asks the service for nothing else (no favicon, no
//!   asset: the service's 404 count and the page's own count say so).
//! - Every value the page names with `data-field` is `/status.json`'s, read just before
//!   and after while nothing changed; the tags', the lease's and the ring's numbers are
//!   `/metrics`' too. Its screenshot is kept in `results/status.png`.
//! - With the store cut, the page says the store does not answer, and since when.
//! - The console check itself catches a page that logs an error (else it could not fail).
//!
//! Needs `chromium` on PATH (`apt-get install chromium`; scripts/test installs it), or
//! UIDGEN_CHROMIUM naming the browser; without one the test fails, unless
//! `UIDGEN_SKIP_CHROMIUM=1`.
#![cfg(feature = "mysql")]

mod support;

#[path = "../../tests/support/relay.rs"]
mod relay;
#[path = "../../tests/support/servers.rs"]
mod servers;

use relay::{via, Relay};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::{curl, json, TestServer};

const STATUS_TOKEN: &str = "status-viewer-token-0123456789";
const DRAW_TOKEN: &str = "draw-every-tag-token-0123456789";

/// The browser, or `None` when the test is told to skip it.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("UIDGEN_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|path| path.is_file())
            })
        });
    if found.is_none() && std::env::var_os("UIDGEN_SKIP_CHROMIUM").is_some() {
        eprintln!("no chromium on PATH: skipped (UIDGEN_SKIP_CHROMIUM)");
        return None;
    }
    Some(found.expect(
        "this test needs Chromium (Debian: apt-get install chromium; scripts/test installs it), \
         or UIDGEN_CHROMIUM naming a browser, or UIDGEN_SKIP_CHROMIUM=1",
    ))
}

/// One headless Chromium run on `url` with `extra` arguments: its standard output, and
/// every console message the page logged (Chromium writes them to its log as
/// `INFO:CONSOLE…`). Killed after 120 s (a browser that hangs fails the test, naming it).
fn browse(browser: &Path, profile: &Path, url: &str, extra: &[&str]) -> (String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("chromium runs");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium on {url} still running after 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(
        status.success(),
        "chromium failed on {url}: {status}\n{stderr}"
    );
    let console = stderr
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    (
        std::fs::read_to_string(&stdout).unwrap_or_default(),
        console,
    )
}

/// Every `data-field` of a DOM and the text of its element (entities undone).
fn fields(dom: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut rest = dom;
    while let Some(at) = rest.find("data-field=\"") {
        rest = &rest[at + "data-field=\"".len()..];
        let name_end = rest.find('"').expect("a closed attribute");
        let name = rest[..name_end].to_owned();
        let text_start = rest.find('>').expect("a closed tag") + 1;
        let text_end = text_start + rest[text_start..].find('<').expect("an element's end");
        let text = rest[text_start..text_end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&nbsp;", "\u{a0}")
            .replace("&amp;", "&");
        assert!(
            found.insert(name.clone(), text).is_none(),
            "data-field {name} twice"
        );
        rest = &rest[text_start..];
    }
    found
}

/// The value at a dotted path (`tags.0.current.used`).
fn at<'a>(value: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .fold(value, |v, key| match key.parse::<usize>() {
            Ok(i) => &v[i],
            Err(_) => &v[key],
        })
}

/// The sample of a metric line `name{labels} value`, 0 when absent.
fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// Unix ms as the page writes times.
fn utc(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The numbers and names of `/status.json` that stay still while no one draws (no
/// uptime, latency, expiry or rate).
fn still(status: &Value) -> Value {
    let mut copy = status.clone();
    for key in ["now_ms", "uptime_seconds"] {
        copy[key] = Value::Null;
    }
    for key in [
        "last_answer_seconds_ago",
        "last_latency_ms",
        "failing_for_seconds",
    ] {
        copy["store"][key] = Value::Null;
    }
    copy["snowflake"]["time_ahead_seconds"] = Value::Null;
    copy["snowflake"]["ring_ids"] = Value::Null;
    copy["lease"]["expires_in_seconds"] = Value::Null;
    copy["lease"]["time_mark_ms"] = Value::Null;
    for tag in copy["tags"].as_array_mut().unwrap() {
        tag["rate_per_second"] = Value::Null;
        tag["runway_seconds"] = Value::Null;
    }
    // The snowflake line names the ring's state.
    copy["sources"] = Value::Null;
    copy
}

/// The series of `/metrics` the page is compared with, for the tags `tags`.
fn compared_series(tags: &[&str]) -> Vec<String> {
    let mut series = vec![
        "uidgen_lease_renewals_total".to_owned(),
        "uidgen_ring_capacity".to_owned(),
    ];
    for tag in tags {
        series.push(format!("uidgen_segment_ids_left{{tag=\"{tag}\"}}"));
        series.push(format!(
            "uidgen_segment_ranges_fetched_total{{tag=\"{tag}\"}}"
        ));
    }
    series
}

#[test]
fn the_status_page_shows_what_status_json_and_metrics_say_and_a_cut_store() {
    let browser = chromium();
    let profile = tempfile::tempdir().unwrap();

    // The console check catches a page that logs an error.
    if let Some(browser) = &browser {
        let scripted = profile.path().join("scripted.html");
        std::fs::write(
            &scripted,
            "<!DOCTYPE html><link rel=\"icon\" href=\"data:,\">\
             <script>console.error('a page error the check must see')</script>",
        )
        .unwrap();
        let (_, console) = browse(
            browser,
            profile.path(),
            &format!("file://{}", scripted.display()),
            &["--dump-dom"],
        );
        assert!(
            console
                .iter()
                .any(|l| l.contains("a page error the check must see")),
            "the console check saw nothing of a page that logs an error: {console:?}"
        );
    }

    let suffix = servers::random_suffix();
    let (tag_a, tag_b) = (format!("status_a_{suffix}"), format!("status_b_{suffix}"));
    let (_, upstream) = via(&servers::mysql_url(), "127.0.0.1:1".parse().unwrap());
    let relay = Relay::to(upstream);
    let (store, _) = via(&servers::mysql_url(), relay.addr);
    let tags = format!("{tag_a},{tag_b}");
    let tokens = format!("{STATUS_TOKEN}=@status;{DRAW_TOKEN}=*");
    let server = TestServer::start(&[
        ("UIDGEN_STORE", store.as_str()),
        ("UIDGEN_TAGS", tags.as_str()),
        ("UIDGEN_TAG_STEP", "1000"),
        ("UIDGEN_TOKENS", tokens.as_str()),
        ("UIDGEN_LEASE_TTL_MS", "30000"),
    ]);
    let bearer = |token: &str| format!("Authorization: Bearer {token}");

    // Tokens: none asks the browser for one; a drawing-only token is refused; the status
    // token as Basic credentials or a bearer token is let in.
    let none = curl(&["-i", &server.url("/status")]);
    assert_eq!(none.status, 401, "{}", none.body);
    assert!(
        none.body
            .to_ascii_lowercase()
            .contains("www-authenticate: basic"),
        "{}",
        none.body
    );
    let drawing = curl(&["-H", &bearer(DRAW_TOKEN), &server.url("/status.json")]);
    assert_eq!(
        drawing.status, 200,
        "`*` grants the status: {}",
        drawing.body
    );
    let basic = curl(&[
        "-u",
        &format!("ops:{STATUS_TOKEN}"),
        &server.url("/status.json"),
    ]);
    assert_eq!(basic.status, 200, "{}", basic.body);
    let wrong = curl(&["-u", "ops:not-a-token-at-all-0000", &server.url("/status")]);
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(!wrong.body.contains("not-a-token"), "{}", wrong.body);
    let no_status = curl(&[
        "-H",
        &bearer(STATUS_TOKEN),
        &server.url("/v1/snowflake?count=1"),
    ]);
    assert_eq!(
        no_status.status, 403,
        "@status draws no ID: {}",
        no_status.body
    );

    // IDs drawn from both tags and the snowflake route.
    for (path, count) in [
        (format!("/v1/segment/{tag_a}?count=150"), 150),
        (format!("/v1/segment/{tag_b}?count=70"), 70),
        ("/v1/snowflake?count=40".to_owned(), 40),
    ] {
        let drawn = curl(&["-H", &bearer(DRAW_TOKEN), &server.url(&path)]);
        assert_eq!(drawn.status, 200, "{path}: {}", drawn.body);
        assert_eq!(json(&drawn.body)["count"], count, "{path}");
    }

    let status_json = || {
        let answer = curl(&["-H", &bearer(STATUS_TOKEN), &server.url("/status.json")]);
        assert_eq!(answer.status, 200, "{}", answer.body);
        json(&answer.body)
    };
    let metrics = || curl(&[&server.url("/metrics")]).body;
    let page = format!("http://ops:{STATUS_TOKEN}@{}/status", server.addr);
    // The page as the browser made it (after 3 s of the page's own time, so that anything
    // it would ask for late is asked for), or as the service sent it, without a browser.
    let dom = || match &browser {
        Some(browser) => browse(
            browser,
            profile.path(),
            &page,
            &["--virtual-time-budget=3000", "--dump-dom"],
        ),
        None => {
            let answer = curl(&["-H", &bearer(STATUS_TOKEN), &server.url("/status")]);
            assert_eq!(answer.status, 200, "{}", answer.body);
            (answer.body, Vec::new())
        }
    };
    let tags_drawn = [tag_a.as_str(), tag_b.as_str()];

    // The page, between two reads of /status.json and /metrics that agree, with the store
    // answering (a prefetch, a renewal or a slow probe between them: read again).
    let started = Instant::now();
    let (before, dom_seen, console, metrics_before, metrics_after) = loop {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "/status.json and /metrics never kept still for one page load"
        );
        let metrics_before = metrics();
        let before = status_json();
        let (dom_seen, console) = dom();
        let after = status_json();
        let metrics_after = metrics();
        let metrics_still = compared_series(&tags_drawn)
            .iter()
            .all(|series| metric(&metrics_before, series) == metric(&metrics_after, series));
        if still(&before) == still(&after)
            && metrics_still
            && before["store"]["answering"] == true
            && after["store"]["answering"] == true
        {
            break (before, dom_seen, console, metrics_before, metrics_after);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(
        console.is_empty(),
        "the page logged to the console: {console:?}"
    );
    let delta = |series: &str| metric(&metrics_after, series) - metric(&metrics_before, series);
    assert_eq!(
        delta("uidgen_http_request_duration_seconds_count{route=\"(other)\"}"),
        0.0,
        "loading the page asked the service for something it does not have"
    );
    // A browser sends the credentials of a URL only when asked (a 401 first): one page
    // load is one refused request and one answered, and no reload within its 3 s.
    let (loads, challenges) = if browser.is_some() {
        (2.0, 1.0)
    } else {
        (1.0, 0.0)
    };
    assert_eq!(
        (
            delta("uidgen_http_request_duration_seconds_count{route=\"/status\"}"),
            delta("uidgen_requests_refused_total{status=\"401\"}")
        ),
        (loads, challenges),
        "one page load: the challenge and the page"
    );

    // Every field the page names is /status.json's.
    let shown = fields(&dom_seen);
    assert!(shown.len() > 20, "too few fields on the page: {shown:?}");
    for (field, text) in &shown {
        let value = at(&before, field);
        let expected = match field.rsplit('.').next().unwrap() {
            "uptime_seconds"
            | "expires_in_seconds"
            | "time_ahead_seconds"
            | "rate_per_second"
            | "runway_seconds"
            | "last_answer_seconds_ago"
            | "last_latency_ms"
            | "ring_ids" => continue,
            "ready" => if value == true { "ready" } else { "not ready" }.to_owned(),
            "answering" => {
                assert_eq!(value, true, "the store answers");
                "yes".to_owned()
            }
            "time_mark_ms" | "last_fetched_ms" => utc(value.as_u64().unwrap()),
            "current" | "next" if value.is_object() => {
                format!("{}–{}", value["start"], value["end"].as_u64().unwrap() - 1)
            }
            "current" | "next" => "none".to_owned(),
            "store_error" if value.is_null() => "ok".to_owned(),
            "data_loss" => format!("Data loss found: {}", value.as_str().unwrap()),
            _ => match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => panic!("the page shows {field} = {text:?}; /status.json has {other}"),
            },
        };
        assert_eq!(text, &expected, "the page's {field}");
    }
    for required in [
        "store.kind",
        "store.location",
        "store.identity",
        "lease.worker_id",
        "lease.holder",
        "lease.time_mark_ms",
        "lease.renewals",
        "tags.0.current",
        "tags.0.current.used",
        "tags.1.ids_left",
        "tags.1.last_fetched_ms",
        "sources.0.says",
    ] {
        assert!(
            shown.contains_key(required),
            "the page does not show {required}"
        );
    }
    assert_eq!(before["store"]["kind"], "mysql");
    assert!(
        before["store"]["location"]
            .as_str()
            .unwrap()
            .contains(&relay.addr.to_string()),
        "the store's location is the relay's: {}",
        before["store"]["location"]
    );

    // The same numbers as /metrics.
    let names: Vec<&str> = before["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tag"].as_str().unwrap())
        .collect();
    assert_eq!(names, [tag_a.as_str(), tag_b.as_str()]);
    for (i, tag) in names.iter().enumerate() {
        let label = format!("{{tag=\"{tag}\"}}");
        for (series, field) in [
            ("uidgen_segment_ids_left", "ids_left"),
            ("uidgen_segment_ranges_fetched_total", "ranges_fetched"),
        ] {
            let shown: f64 = shown[&format!("tags.{i}.{field}")].parse().unwrap();
            assert_eq!(
                shown,
                metric(&metrics_before, &format!("{series}{label}")),
                "{tag}: {field} against {series}"
            );
        }
        let current = &before["tags"][i]["current"];
        let served = if i == 0 { 150 } else { 70 };
        assert_eq!(
            current["used"], served,
            "{tag}: the IDs drawn are the ones used"
        );
    }
    for (series, field) in [
        ("uidgen_lease_renewals_total", "lease.renewals"),
        ("uidgen_ring_capacity", "snowflake.ring_capacity"),
    ] {
        assert_eq!(
            shown[field].parse::<f64>().unwrap(),
            metric(&metrics_before, series),
            "{field} against {series}"
        );
    }

    // The screenshot.
    if let Some(browser) = &browser {
        let png = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/status.png");
        let shot = profile.path().join("status.png");
        browse(
            browser,
            profile.path(),
            &page,
            &[
                &format!("--screenshot={}", shot.display()),
                "--window-size=1280,1200",
            ],
        );
        let bytes = std::fs::read(&shot).expect("chromium wrote the screenshot");
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
        let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        assert_eq!(width, 1280, "the window's width");
        std::fs::write(&png, &bytes).unwrap();
    }

    // The store cut: the page says it does not answer, and since when.
    let cut_at = now_ms();
    relay.cut();
    let started = Instant::now();
    let cut = loop {
        let status = status_json();
        if status["store"]["answering"] == false {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "/status.json still says the store answers 30 s after it was cut: {status}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let since = cut["store"]["failing_since_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("no failing_since_ms: {cut}"));
    assert!(
        since + 2_000 >= cut_at && since <= now_ms(),
        "failing since {since}, cut at {cut_at}"
    );
    let (dom, console) = dom();
    assert!(console.is_empty(), "{console:?}");
    let shown = fields(&dom);
    let answering = &shown["store.answering"];
    assert!(
        answering.starts_with("no: the store does not answer, since "),
        "{answering}"
    );
    // The page was read a little after the JSON: the same start, to the second or the next.
    let said = &answering["no: the store does not answer, since ".len()..];
    assert!(
        said.starts_with(&utc(since)) || said.starts_with(&utc(since + 1_000)),
        "the page says {said:?}; the store failed from {}",
        utc(since)
    );
    assert!(!shown["store.error"].is_empty());
    assert!(
        dom.contains("class=\"bad\" data-field=\"store.answering\""),
        "the cut store is marked as trouble"
    );
    relay.restore();
}
