//! `uidgen serve` as a process: SIGTERM gives back and releases, nothing logs a token,
//! /readyz says what each source can serve across a store cut, snowflake IDs heal after
//! a cut or a pause on a new lease, and a Tinyid-protocol Java client written for these
//! tests (server/tests/tinyid-protocol-client) draws from two services.

mod common;
#[path = "../../tests/support/relay.rs"]
mod relay;
#[path = "../../tests/support/servers.rs"]
mod servers;

use common::serve::{curl, ids_of, Serve};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigterm_gives_the_tail_back_releases_the_worker_id_and_no_log_line_shows_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let store = store.to_str().unwrap();
    const TOKEN: &str = "s3cret-token-for-the-log-test-42";
    let tokens = format!("{TOKEN}=*");
    let envs = [("UIDGEN_TOKENS", tokens.as_str()), ("RUST_LOG", "trace")];
    let server = Serve::start(
        &["--store", store, "--tag", "order", "--tag-start", "1"],
        &envs,
    );
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let (status, body) = curl(&["-H", &bearer, &server.url("/v1/segment/order?count=7")]);
    assert_eq!(status, 200, "{body}");
    let last = *ids_of(&body).last().unwrap();
    let (status, _) = curl(&[&server.url(&format!(
        "/tinyid/id/nextIdSimple?bizType=order&token={TOKEN}"
    ))]);
    assert_eq!(status, 200);
    let last = last + 1;
    let (status, _) = curl(&[
        "-H",
        "Authorization: Bearer wrong-token-xxxxxxxxxxxx",
        &server.url("/v1/snowflake"),
    ]);
    assert_eq!(status, 401);

    let (exit, stderr) = server.terminate();
    assert!(
        exit.success(),
        "exit {exit:?} after SIGTERM; stderr: {stderr}"
    );
    assert!(
        !stderr.contains(TOKEN),
        "a log line shows the token: {stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");

    // The worker ID is free again, and the tag goes on right after the last ID served.
    let list = common::clean(&mut Command::new(env!("CARGO_BIN_EXE_uidgen")))
        .args(["worker", "list", "--store", store])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&list.stdout),
        String::from_utf8_lossy(&list.stderr),
    );
    assert!(
        stdout.contains("0 of 1024 worker IDs held"),
        "worker list: {stdout}{stderr}"
    );
    let next = Serve::start(&["--store", store, "--tag", "order"], &[]);
    let (status, body) = curl(&[&next.url("/v1/segment/order")]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids_of(&body), vec![last + 1], "the tail was given back");
}

#[test]
fn flags_that_cannot_be_used_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let store = store.to_str().unwrap();
    for (mut args, envs, expected) in [
        (vec!["--listen", "0.0.0.0:0"], vec![], "allow_public"),
        (vec!["--max-count", "0"], vec![], "max_count"),
        (vec!["--layout", "nope"], vec![], "layout"),
        (vec![], vec![("UIDGEN_TOKENS", "short=x")], "UIDGEN_TOKENS"),
        (vec!["--store", "mysql:root:pw@host/db"], vec![], "store"),
        // No tag is created without its start, nor on a first request.
        (vec!["--tag", "order"], vec![], "--tag-start"),
        (vec!["--tag-start", "0"], vec![], "tag_start = 0"),
        (vec!["--create-tags"], vec![], "no longer supported"),
        (vec![], vec![("UIDGEN_CREATE_TAGS", "true")], "tag_start"),
    ] {
        if !args.contains(&"--store") {
            args.extend(["--store", store]);
        }
        let out = common::clean(&mut Command::new(env!("CARGO_BIN_EXE_uidgen")))
            .arg("serve")
            .args(&args)
            .envs(envs.iter().copied())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("pw@"), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[cfg(feature = "mysql")]
#[test]
fn a_store_cut_for_a_minute_leaves_fetched_tags_serving_and_snowflake_ids_heal_within_a_lease_ttl()
{
    // `via` also says where the URL points: the relay forwards there.
    let (_, upstream) = relay::via(&servers::mysql_url(), "127.0.0.1:1".parse().unwrap());
    let relay = relay::Relay::to(upstream);
    let (url, _) = relay::via(&servers::mysql_url(), relay.addr);
    let tag = format!("ready-{}", servers::random_suffix());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    const TTL: Duration = Duration::from_secs(3);
    std::fs::write(&config, format!("lease_ttl_ms = {}\n", TTL.as_millis())).unwrap();
    let server = Serve::start(
        &[
            "--store",
            &url,
            "--tag",
            &tag,
            "--tag-start",
            "1",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    let readyz = || curl(&[&server.url("/readyz")]);
    let (status, body) = readyz();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("snowflake: ok"), "{body}");
    let (status, body) = curl(&[&server.url("/v1/snowflake?count=100")]);
    assert_eq!(status, 200, "{body}");
    let before = *ids_of(&body).last().unwrap();

    relay.cut();
    let cut_at = Instant::now();
    let mut tag_ids = Vec::new();
    let mut snowflake_refused = false;
    while cut_at.elapsed() < Duration::from_secs(60) {
        // The tag's fetched ranges keep answering through the whole cut.
        let (status, body) = curl(&[&server.url(&format!("/v1/segment/{tag}"))]);
        assert_eq!(
            status,
            200,
            "tag refused {:?} into the cut: {body}",
            cut_at.elapsed()
        );
        tag_ids.extend(ids_of(&body));
        if cut_at.elapsed() > TTL + Duration::from_secs(2) {
            let (status, _) = curl(&[&server.url("/v1/snowflake")]);
            snowflake_refused |= status == 503;
            // Ready (a tag can serve), saying what cannot.
            let (status, body) = readyz();
            assert_eq!(status, 200, "{body}");
            assert!(body.contains("snowflake: cannot serve"), "{body}");
            assert!(
                body.contains(&format!("tag {tag:?}:")) && body.contains("IDs fetched"),
                "{body}"
            );
            assert!(body.contains("MySQL") || body.contains("mysql"), "{body}");
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    assert!(
        snowflake_refused,
        "snowflake IDs went on past the lease with the store cut"
    );
    assert!(tag_ids.windows(2).all(|w| w[0] < w[1]), "{tag_ids:?}");

    relay.restore();
    let back_at = Instant::now();
    let after = loop {
        let (status, body) = curl(&[&server.url("/v1/snowflake")]);
        if status == 200 {
            break ids_of(&body)[0];
        }
        assert!(
            back_at.elapsed() < TTL + Duration::from_secs(2),
            "no snowflake IDs {:?} after the store came back: {body}",
            back_at.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(after > before, "{after} after {before}");
    let (status, body) = readyz();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("snowflake: ok"), "{body}");
    let (status, _) = curl(&[&server.url("/healthz")]);
    assert_eq!(status, 200);
    let (_, metrics) = curl(&[&server.url("/metrics")]);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("uidgen_leases_taken_again_total") && !l.ends_with(" 0")),
        "{metrics}"
    );
}

/// A segment the client fetched, from the driver's `segment SERVER c,l,m,d,r THREAD` line.
#[cfg(feature = "mysql")]
struct FetchedSegment {
    server: String,
    current_id: u64,
    max_id: u64,
    delta: u64,
    remainder: u64,
    ahead: bool,
}

#[cfg(feature = "mysql")]
fn fetched_segments(stderr: &str) -> Vec<FetchedSegment> {
    stderr
        .lines()
        .filter_map(|line| line.strip_prefix("segment "))
        .map(|rest| {
            let fields: Vec<&str> = rest.split(' ').collect();
            assert_eq!(fields.len(), 3, "a segment line {rest:?}");
            let numbers: Vec<u64> = fields[1]
                .split(',')
                .map(str::parse)
                .collect::<Result<_, _>>()
                .unwrap_or_else(|_| panic!("a segment line {rest:?}"));
            assert_eq!(numbers.len(), 5, "a segment line {rest:?}");
            FetchedSegment {
                server: fields[0].to_owned(),
                current_id: numbers[0],
                max_id: numbers[2],
                delta: numbers[3],
                remainder: numbers[4],
                ahead: fields[2].starts_with("tinyid-preload-"),
            }
        })
        .collect()
}

#[cfg(feature = "mysql")]
#[test]
fn a_tinyid_protocol_client_written_here_draws_distinct_ids_from_two_services_on_one_mariadb() {
    let classes = tempfile::tempdir().unwrap();
    common::build_java_client("tinyid-protocol-client", classes.path());
    let classpath = classes.path().to_str().unwrap();
    // The client's own checks against fake servers: alignment, preload, failover.
    common::java_self_check(classes.path(), "TinyidProtocolSelfCheck");

    let tag = format!("tinyid-{}", servers::random_suffix());
    const TOKEN: &str = "tinyid-protocol-token-0123456789";
    let tokens = format!("{TOKEN}={tag}");
    let store = servers::mysql_url();
    let envs = [("UIDGEN_TOKENS", tokens.as_str())];
    let a = Serve::start(
        &["--store", &store, "--tag", &tag, "--tag-start", "1"],
        &envs,
    );
    let b = Serve::start(
        &["--store", &store, "--tag", &tag, "--tag-start", "1"],
        &envs,
    );
    let servers = format!("127.0.0.1:{},127.0.0.1:{}", a.port(), b.port());
    let (processes, threads, per_thread) = (4, 4, 50_000);
    let clients: Vec<Child> = (0..processes)
        .map(|_| {
            Command::new("java")
                .args(["-cp", classpath, "TinyidProtocolDriver"])
                .args([&servers, TOKEN, &tag])
                .args([threads.to_string(), per_thread.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("java runs")
        })
        .collect();
    let mut ids = Vec::with_capacity(processes * threads * per_thread);
    let mut segments = Vec::new();
    for client in clients {
        let out = client.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "the Tinyid-protocol client failed: {stderr}"
        );
        segments.extend(fetched_segments(&stderr));
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let id: u64 = line
                .parse()
                .unwrap_or_else(|_| panic!("not an ID: {line:?}"));
            ids.push(id);
        }
    }
    assert_eq!(ids.len(), processes * threads * per_thread);
    let mut seen = std::collections::HashSet::new();
    for &id in &ids {
        assert!(seen.insert(id), "ID {id} handed out twice");
    }
    // The ranges the two services handed out never overlap, and every ID lies in one the
    // client fetched, aligned as the service said (a plain tag: delta 1, remainder 0).
    segments.sort_by_key(|s| s.current_id);
    for pair in segments.windows(2) {
        assert!(
            pair[0].max_id <= pair[1].current_id,
            "ranges ({}, {}] and ({}, {}] overlap",
            pair[0].current_id,
            pair[0].max_id,
            pair[1].current_id,
            pair[1].max_id
        );
    }
    for &id in &ids {
        assert!(id > 0, "ID {id}");
        let at = segments.partition_point(|s| s.current_id < id);
        let segment = at
            .checked_sub(1)
            .map(|i| &segments[i])
            .filter(|s| id <= s.max_id)
            .unwrap_or_else(|| panic!("ID {id} is in no range the client fetched"));
        assert_eq!(
            id % segment.delta,
            segment.remainder,
            "ID {id} is not ≡ {} (mod {})",
            segment.remainder,
            segment.delta
        );
    }
    let ahead = segments.iter().filter(|s| s.ahead).count();
    assert!(
        ahead > 0,
        "the client never fetched a range ahead, in the background"
    );
    eprintln!(
        "{} distinct IDs from {} ranges ({ahead} fetched ahead)",
        ids.len(),
        segments.len()
    );
    // Both services handed out ranges (the client picks a server at random per fetch).
    for server in [&a, &b] {
        let address = format!("127.0.0.1:{}", server.port());
        assert!(
            segments.iter().any(|s| s.server == address),
            "the client fetched nothing from {address}"
        );
        let (_, metrics) = curl(&[&server.url("/metrics")]);
        let served = metrics
            .lines()
            .find(|l| l.starts_with("uidgen_ids_served_total{route=\"tinyid_segment\""))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        assert!(served > 0, "a service served no range: {metrics}");
    }
}

/// A relay that waits `delay` before it connects each client to `upstream`: a store that
/// is slow to answer, so the service takes a while to start.
#[cfg(feature = "mysql")]
fn slow_relay(upstream: std::net::SocketAddr, delay: Duration) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                let Ok(server) = std::net::TcpStream::connect(upstream) else {
                    return;
                };
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            });
        }
    });
    addr
}

#[cfg(feature = "mysql")]
#[test]
fn while_starting_healthz_is_200_and_readyz_and_the_id_routes_are_503() {
    let (_, upstream) = relay::via(&servers::mysql_url(), "127.0.0.1:1".parse().unwrap());
    let relay = slow_relay(upstream, Duration::from_millis(700));
    let (url, _) = relay::via(&servers::mysql_url(), relay);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tag = format!("starting-{}", servers::random_suffix());
    let mut child = common::clean(&mut Command::new(env!("CARGO_BIN_EXE_uidgen")))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--store", &url, "--tag", &tag, "--tag-start", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let (mut starting_seen, mut ready) = (false, false);
    while started.elapsed() < Duration::from_secs(60) {
        let (status, body) = curl(&[&format!("{base}/readyz")]);
        match status {
            0 => {} // not listening yet
            503 => {
                assert!(body.contains("starting"), "{body}");
                assert_eq!(curl(&[&format!("{base}/healthz")]).0, 200);
                let (status, body) = curl(&[&format!("{base}/v1/snowflake")]);
                if status != 200 {
                    assert_eq!(status, 503, "{body}");
                    assert!(body.contains("starting"), "{body}");
                    starting_seen = true;
                }
            }
            200 => {
                ready = true;
                break;
            }
            other => panic!("/readyz answered {other}: {body}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, body) = curl(&[&format!("{base}/v1/segment/{tag}")]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(starting_seen, "never saw the starting phase");
    assert!(ready, "not ready within 60 s");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_service_paused_past_its_lease_says_it_was_paused_and_serves_again_on_a_new_lease() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let config = dir.path().join("serve.toml");
    std::fs::write(&config, "lease_ttl_ms = 1500\n").unwrap();
    let server = Serve::start(
        &[
            "--store",
            store.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    let (status, body) = curl(&[&server.url("/v1/snowflake?count=10")]);
    assert_eq!(status, 200, "{body}");
    let before = *ids_of(&body).last().unwrap();
    let pid = server.child.id() as libc::pid_t;
    // SAFETY: kill(2) on our own child's pid; no memory is shared.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let resumed = Instant::now();
    // It heals by itself: a new lease, above every ID made before the pause.
    let after = loop {
        let (status, body) = curl(&[&server.url("/v1/snowflake")]);
        if status == 200 {
            let id = ids_of(&body)[0];
            if id > before {
                break id;
            }
        }
        assert!(
            resumed.elapsed() < Duration::from_secs(5),
            "no snowflake IDs 5 s after the pause: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(after > before);
    let (status, body) = curl(&[&server.url("/readyz")]);
    assert_eq!(status, 200, "{body}");
    let (exit, stderr) = server.terminate();
    assert!(exit.success(), "{stderr}");
    assert!(
        stderr.contains("lapsed while this process was not running"),
        "{stderr}"
    );
    assert!(stderr.contains("took a new lease"), "{stderr}");
}

#[test]
fn a_sigterm_right_as_the_service_becomes_ready_is_not_lost() {
    // The signal listener once dropped between start-up and serving lost about one
    // SIGTERM in twelve sent at this moment.
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("ids.sqlite3");
        let server = Serve::start(&["--store", store.to_str().unwrap()], &[]);
        let (exit, stderr) = server.terminate();
        assert!(
            exit.success(),
            "round {round}: exit {exit:?}; stderr: {stderr}"
        );
    }
}

#[test]
fn version_names_the_commit_on_every_command() {
    for args in [
        vec!["--version"],
        vec!["serve", "--version"],
        vec!["next", "--version"],
    ] {
        let out = common::clean(&mut Command::new(env!("CARGO_BIN_EXE_uidgen")))
            .args(&args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}: {stdout}");
        assert!(
            stdout.starts_with("uidgen")
                && stdout.contains(&format!(" {} (commit ", env!("CARGO_PKG_VERSION"))),
            "{args:?}: {stdout}"
        );
    }
}

/// The log's lines as JSON objects; a line that is not one fails the test.
fn json_lines(stderr: &str) -> Vec<serde_json::Value> {
    stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[cfg(feature = "postgres")]
#[test]
fn json_logs_name_the_start_and_every_request_and_never_a_token_key_or_password() {
    const TOKEN: &str = "log-test-token-0123456789abcdef";
    const PASSWORD: &str = "Pw4TheLogTest9";
    let key = "7".repeat(64);
    // Trust authentication takes any password; the URL carries one to be kept out.
    let url =
        servers::postgres_url().replacen("://postgres@", &format!("://postgres:{PASSWORD}@"), 1);
    assert!(
        url.contains(PASSWORD),
        "UIDGEN_POSTGRES_URL has a user other than postgres: {url}"
    );
    let tag = format!("log-{}", servers::random_suffix());
    let tokens = format!("{TOKEN}=*,@opaque");
    let keys = format!("1:{key}");
    let server = Serve::start(
        &[
            "--store",
            &url,
            "--tag",
            &tag,
            "--tag-start",
            "1",
            "--log-format",
            "json",
            "--access-log",
        ],
        &[
            ("UIDGEN_TOKENS", tokens.as_str()),
            ("UIDGEN_OPAQUE_KEYS", keys.as_str()),
        ],
    );
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let mut asked = 0;
    for path in [
        format!("/v1/segment/{tag}?count=7"),
        "/v1/snowflake?format=opaque&count=3".to_owned(),
        "/api/snowflake/get/x".to_owned(),
        format!("/api/segment/get/{tag}"),
    ] {
        let (status, body) = curl(&["-H", &bearer, &server.url(&path)]);
        assert_eq!(status, 200, "{path}: {body}");
        asked += 1;
    }
    let (status, _) = curl(&[&server.url(&format!(
        "/tinyid/id/nextIdSimple?bizType={tag}&token={TOKEN}"
    ))]);
    assert_eq!(status, 200);
    let (status, _) = curl(&[
        "-H",
        "Authorization: Bearer wrong-token-xxxxxxxxxxxx",
        &server.url("/v1/snowflake"),
    ]);
    assert_eq!(status, 401);
    asked += 2;
    // A client retrying a bad token: refusals are logged at most once a second.
    for _ in 0..20 {
        let (status, _) = curl(&[
            "-H",
            "Authorization: Bearer wrong-token-xxxxxxxxxxxx",
            &server.url("/api/snowflake/get/x"),
        ]);
        assert_eq!(status, 401);
    }
    asked += 20;
    let (exit, stderr) = server.terminate();
    assert!(exit.success(), "{stderr}");
    for secret in [TOKEN, PASSWORD, key.as_str()] {
        assert!(!stderr.contains(secret), "the log shows a secret: {stderr}");
    }
    let lines = json_lines(&stderr);
    let start = lines
        .iter()
        .find(|l| l["fields"]["message"] == "serving")
        .unwrap_or_else(|| panic!("no start-up line: {stderr}"));
    let fields = &start["fields"];
    assert_eq!(fields["version"], env!("CARGO_PKG_VERSION"), "{start}");
    assert!(
        fields["commit"].as_str().is_some_and(|c| !c.is_empty()),
        "{start}"
    );
    assert!(
        fields["store"]
            .as_str()
            .unwrap()
            .starts_with("PostgreSQL postgres://"),
        "{start}"
    );
    assert!(fields["tags"].as_str().unwrap().contains(&tag), "{start}");
    assert!(fields["worker_id"].is_u64(), "{start}");
    let refused: Vec<_> = lines
        .iter()
        .filter(|l| l["fields"]["message"] == "refused a request's token")
        .collect();
    assert!(
        (1..=4).contains(&refused.len()),
        "21 refusals, {} lines: {stderr}",
        refused.len()
    );
    assert!(refused.iter().all(|l| l["level"] == "WARN"), "{stderr}");
    let access: Vec<_> = lines
        .iter()
        .filter(|l| l["target"] == "uidgen_server::access")
        .collect();
    assert_eq!(access.len(), asked, "one access line per request: {stderr}");
    let routes: Vec<&str> = access
        .iter()
        .map(|l| l["fields"]["route"].as_str().unwrap())
        .collect();
    assert!(
        routes[6..].iter().all(|r| *r == "/api/snowflake/get/{key}"),
        "{stderr}"
    );
    assert_eq!(
        routes[..6],
        [
            "/v1/segment/{tag}",
            "/v1/snowflake",
            "/api/snowflake/get/{key}",
            "/api/segment/get/{key}",
            "/tinyid/id/nextIdSimple",
            "/v1/snowflake"
        ],
        "{stderr}"
    );
    let handed: Vec<u64> = access
        .iter()
        .map(|l| l["fields"]["ids"].as_u64().unwrap())
        .collect();
    assert_eq!(handed[..6], [7, 3, 1, 1, 1, 0], "{stderr}");
    assert!(handed[6..].iter().all(|n| *n == 0));
    let statuses: Vec<u64> = access
        .iter()
        .map(|l| l["fields"]["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses[..6], [200, 200, 200, 200, 200, 401]);
    assert!(statuses[6..].iter().all(|s| *s == 401));
    assert!(access.iter().all(|l| l["fields"]["micros"].is_u64()));
}

/// Sends `signal` to the service's process.
fn signal(server: &Serve, signal: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid; no memory is shared.
    let sent = unsafe { libc::kill(server.pid() as libc::pid_t, signal) };
    assert_eq!(sent, 0, "kill failed");
}

/// Polls `check` for up to 10 s.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "{what} within 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sighup_reads_tokens_and_keys_again_and_a_bad_file_keeps_the_old_set() {
    const OLD: &str = "old-token-0123456789abcdef";
    const NEW: &str = "new-token-0123456789abcdef";
    let (old_key, new_key) = ("1".repeat(64), "2".repeat(64));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let (tokens, keys) = (dir.path().join("tokens"), dir.path().join("keys"));
    std::fs::write(&tokens, format!("{OLD}=*,@opaque\n")).unwrap();
    std::fs::write(&keys, format!("1:{old_key}\n")).unwrap();
    let envs = [("UIDGEN_OPAQUE_KEYS_FILE", keys.to_str().unwrap())];
    let server = Serve::start(
        &[
            "--store",
            store.to_str().unwrap(),
            "--tokens-file",
            tokens.to_str().unwrap(),
        ],
        &envs,
    );
    let status = |token: &str, path: &str| {
        curl(&[
            "-H",
            &format!("Authorization: Bearer {token}"),
            &server.url(path),
        ])
    };
    assert_eq!(status(OLD, "/v1/snowflake").0, 200);
    assert_eq!(status(NEW, "/v1/snowflake").0, 401);
    let (_, body) = status(OLD, "/v1/snowflake?format=opaque");
    let public = serde_json::from_str::<serde_json::Value>(&body).unwrap()["ids"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(public.starts_with('1'), "{public}");

    // New files, then SIGHUP: the new token draws, the old one no longer; public IDs
    // come under key 2, and one under key 1 still maps back.
    std::fs::write(&tokens, format!("{NEW}=*,@opaque\n")).unwrap();
    std::fs::write(&keys, format!("2:{new_key}\n1:{old_key}\n")).unwrap();
    signal(&server, libc::SIGHUP);
    eventually("the new token", || status(NEW, "/v1/snowflake").0 == 200);
    assert_eq!(status(OLD, "/v1/snowflake").0, 401);
    let (_, body) = status(NEW, "/v1/snowflake?format=opaque");
    assert!(body.contains("\"key_version\":2"), "{body}");
    assert_eq!(status(NEW, &format!("/v1/opaque/{public}")).0, 200);

    // A file that cannot be used: the old sets keep serving, and the log says why.
    std::fs::write(&tokens, "# nobody\n").unwrap();
    std::fs::write(&keys, "3:not-hex\n").unwrap();
    signal(&server, libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(status(NEW, "/v1/snowflake").0, 200);
    assert_eq!(
        status(
            NEW,
            "/v1/opaque/{public}".replace("{public}", &public).as_str()
        )
        .0,
        200
    );
    let (_, body) = status(NEW, "/v1/snowflake?format=opaque");
    assert!(body.contains("\"key_version\":2"), "{body}");

    // SIGHUP never stopped it; SIGTERM does, gracefully.
    let (exit, stderr) = server.terminate();
    assert!(exit.success(), "{stderr}");
    assert!(stderr.contains("holds no token"), "{stderr}");
    assert!(stderr.contains("the old set keeps serving"), "{stderr}");
    for secret in [OLD, NEW, old_key.as_str(), new_key.as_str()] {
        assert!(!stderr.contains(secret), "{stderr}");
    }
}

#[test]
fn sigquit_and_sigint_stop_as_gracefully_as_sigterm() {
    for sent in [libc::SIGQUIT, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("ids.sqlite3");
        let store = store.to_str().unwrap();
        let server = Serve::start(
            &["--store", store, "--tag", "order", "--tag-start", "1"],
            &[],
        );
        let (status, body) = curl(&[&server.url("/v1/segment/order?count=3")]);
        assert_eq!(status, 200, "{body}");
        let last = *ids_of(&body).last().unwrap();
        signal(&server, sent);
        let (exit, stderr) = server.wait();
        assert!(exit.success(), "signal {sent}: {exit:?} {stderr}");
        // The tail went back: the next run goes on right after.
        let next = Serve::start(&["--store", store, "--tag", "order"], &[]);
        let (_, body) = curl(&[&next.url("/v1/segment/order")]);
        assert_eq!(ids_of(&body), vec![last + 1], "signal {sent}");
    }
}

#[cfg(feature = "postgres")]
#[test]
fn wait_for_store_rides_out_a_store_that_comes_up_late_and_without_it_the_start_fails() {
    // A port nothing listens on yet: refused, as a database still starting.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (url, upstream) = relay::via(&servers::postgres_url(), port);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().to_str().unwrap();
    let out = common::clean(&mut Command::new(env!("CARGO_BIN_EXE_uidgen")))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", &url])
        .env("UIDGEN_STATE_DIR", state)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("cannot reach"), "{stderr}");

    let late = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(3));
        relay::Relay::at(port, upstream)
    });
    let started = Instant::now();
    let server = Serve::start(
        &["--store", &url, "--wait-for-store", "30"],
        &[("UIDGEN_STATE_DIR", state)],
    );
    let _relay = late.join().unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "ready before the store was up"
    );
    let (status, body) = curl(&[&server.url("/v1/snowflake?count=3")]);
    assert_eq!(status, 200, "{body}");
    let (exit, stderr) = server.terminate();
    assert!(exit.success(), "{stderr}");
    assert!(stderr.contains("trying again in 1 s"), "{stderr}");
}

/// The worker ID in a snowflake ID the service hands out, by its own decode route.
fn served_worker_id(server: &Serve) -> (u64, u64) {
    let (status, body) = curl(&[&server.url("/v1/snowflake")]);
    assert_eq!(status, 200, "{body}");
    let id = ids_of(&body)[0];
    let (_, decoded) = curl(&[&server.url(&format!("/v1/decode/{id}"))]);
    let decoded: serde_json::Value = serde_json::from_str(&decoded).unwrap();
    (id, decoded["worker_id"].as_u64().unwrap())
}

#[test]
fn a_fixed_worker_id_or_pod_ordinal_is_still_leased_and_a_restart_waits_for_its_lease() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let store = store.to_str().unwrap();
    let config = dir.path().join("serve.toml");
    std::fs::write(&config, "lease_ttl_ms = 2000\n").unwrap();
    let config = config.to_str().unwrap();
    let args = ["--store", store, "--config", config, "--worker-id", "7"];
    let first = Serve::start(&args, &[]);
    let (mut last, worker) = served_worker_id(&first);
    assert_eq!(worker, 7);
    for _ in 0..50 {
        last = last.max(served_worker_id(&first).0);
    }

    // A second process on the same worker ID while the first lives: it waits out one
    // lease TTL, then fails naming the holder.
    let started = Instant::now();
    let out = common::clean(&mut Command::new(env!("CARGO_BIN_EXE_uidgen")))
        .arg("serve")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "two holders of worker ID 7: {stderr}"
    );
    assert!(stderr.contains("is leased by"), "{stderr}");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // Killed without a word (a pod evicted): the next start on the same worker ID waits
    // for the lease to lapse, then serves above every ID the first handed out.
    signal(&first, libc::SIGKILL);
    let _ = first.wait();
    let restarted = Serve::start(&args, &[]);
    let (id, worker) = served_worker_id(&restarted);
    assert_eq!(worker, 7);
    assert!(id > last, "{id} after {last}");
    drop(restarted);

    // A StatefulSet pod: its ordinal plus the offset.
    let pod = Serve::start(
        &[
            "--store",
            store,
            "--config",
            config,
            "--pod-ordinal",
            "--pod-ordinal-offset",
            "100",
        ],
        &[("HOSTNAME", "uidgen-5")],
    );
    assert_eq!(served_worker_id(&pod).1, 105);
    let out = common::clean(&mut Command::new(env!("CARGO_BIN_EXE_uidgen")))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            store,
            "--pod-ordinal",
        ])
        .env("HOSTNAME", "uidgen")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("\"uidgen\""),
        "{stderr}"
    );
}

#[test]
fn systemd_hears_ready_once_readyz_is_200_and_stopping_on_sigterm() {
    // A socket standing in for systemd's (Type=notify).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify");
    let socket = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let store = dir.path().join("ids.sqlite3");
    let server = Serve::start(
        &["--store", store.to_str().unwrap()],
        &[("NOTIFY_SOCKET", path.to_str().unwrap())],
    );
    let mut buffer = [0u8; 4096];
    let n = socket.recv(&mut buffer).expect("a notification");
    let said = String::from_utf8_lossy(&buffer[..n]).into_owned();
    assert!(said.lines().any(|l| l == "READY=1"), "{said}");
    assert_eq!(
        curl(&[&server.url("/readyz")]).0,
        200,
        "READY=1 before /readyz was 200"
    );
    signal(&server, libc::SIGTERM);
    let n = socket.recv(&mut buffer).expect("a notification at stop");
    let said = String::from_utf8_lossy(&buffer[..n]).into_owned();
    assert!(said.lines().any(|l| l == "STOPPING=1"), "{said}");
    let (exit, stderr) = server.wait();
    assert!(exit.success(), "{stderr}");
}

#[test]
fn probe_passes_a_ready_service_and_fails_a_refusal_a_closed_port_and_a_bad_url() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let server = Serve::start(&["--store", store.to_str().unwrap()], &[]);
    let probe = |args: &[&str]| common::output(common::uidgen(&["probe"]).args(args));

    let ready = probe(&[&server.url("/readyz")]);
    assert!(
        common::success_stdout(&ready).contains(" 200 OK"),
        "{ready:?}"
    );
    // A refusal: the status and the service's own words.
    let refused = probe(&[&server.url("/v1/segment/no-such-tag")]);
    common::assert_fails_with(&refused, 1, &["answered 404", "no segment tag"]);

    let port = server.port().to_owned();
    drop(server);
    let closed = probe(&["--timeout", "2", &format!("http://127.0.0.1:{port}/readyz")]);
    common::assert_fails_with(&closed, 1, &["cannot connect"]);
    let tls = probe(&["https://127.0.0.1:1/readyz"]);
    common::assert_fails_with(&tls, 1, &["not an http:// URL"]);
    let zero = probe(&["--timeout", "0", "http://127.0.0.1:1/"]);
    common::assert_fails_with(&zero, 2, &["--timeout", "1..=300"]);
}

/// The defect: `segment list --sample` said "idle" for a tag a service was handing out,
/// because the service drew on a range it had fetched before the window.
#[test]
fn segment_list_sample_reports_what_the_services_handed_out_between_fetches() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ids.sqlite3");
    let store = store.to_str().unwrap();
    let created = common::output(&mut common::uidgen(&[
        "segment", "create", "--tag", "order", "--step", "100000", "--store", store,
    ]));
    common::success_stdout(&created);
    let server = Serve::start(&["--store", store, "--tag", "order"], &[]);
    let (status, _) = curl(&[&server.url("/v1/segment/order")]);
    assert_eq!(status, 200);

    let url = server.url("/v1/segment/order?count=10");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drawing = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut drawn = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (status, body) = curl(&[&url]);
                assert_eq!(status, 200, "{body}");
                drawn += ids_of(&body).len();
                std::thread::sleep(Duration::from_millis(20));
            }
            drawn
        })
    };
    let base = server.url("");
    let listed = common::output(&mut common::uidgen(&[
        "segment",
        "list",
        "--sample",
        "2",
        "--service",
        &base,
        "--json",
        "--store",
        store,
    ]));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let drawn = drawing.join().unwrap();
    let listed: serde_json::Value = serde_json::from_str(&common::success_stdout(&listed)).unwrap();
    let order = listed["tags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tag"] == "order")
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(drawn > 0);
    assert_eq!(order["rate_per_sec"], serde_json::json!(null), "{order}");
    assert_eq!(order["sample"], "between fetches", "{order}");
    let served = order["served_per_sec"].as_f64().unwrap_or(0.0);
    assert!(served > 0.0, "{listed}");
    assert_eq!(listed["services"], 1);

    // --service without --sample is a usage error; a URL that is no service, a failure.
    let alone = common::output(&mut common::uidgen(&[
        "segment",
        "list",
        "--service",
        &base,
        "--store",
        store,
    ]));
    common::assert_fails_with(&alone, 2, &["--sample"]);
    let wrong = common::output(&mut common::uidgen(&[
        "segment",
        "list",
        "--sample",
        "0.1",
        "--service",
        &server.url("/healthz"),
        "--store",
        store,
    ]));
    common::assert_fails_with(&wrong, 1, &["--service", "answered"]);
}
