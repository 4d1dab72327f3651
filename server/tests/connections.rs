//! Connections that misbehave: thousands held open idle, headers sent slowly or never
//! finished, a head too large. The service keeps serving everyone else.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{get, TestServer};

/// Reads what the server sends until it closes, or `None` if it is still open after
/// `wait`.
fn read_until_closed(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            Some(String::from_utf8_lossy(&answer).into_owned())
        }
        Err(_) => None,
    }
}

#[test]
fn five_thousand_idle_connections_do_not_stop_others_being_served() {
    let server = TestServer::start(&[]);
    let mut idle = Vec::with_capacity(5_000);
    for i in 0..5_000 {
        match TcpStream::connect(server.addr) {
            Ok(stream) => idle.push(stream),
            Err(e) => panic!("connection {i} refused: {e}"),
        }
    }
    let started = Instant::now();
    for _ in 0..20 {
        let answer = get(&server, "/v1/snowflake?count=10");
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    assert_eq!(get(&server, "/readyz").status, 200);
    // Not a speed goal: a generous bound that only a stalled service misses.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "20 requests took {:?} beside 5,000 idle connections",
        started.elapsed()
    );
    drop(idle);
}

#[test]
fn headers_sent_too_slowly_are_cut_off_and_the_service_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::config_in(dir.path(), &[]);
    config.limits.header_timeout_ms = 500;
    let server = TestServer::start_with(config, dir);
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.write_all(b"GET /v1/snowflake HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let started = Instant::now();
    let answer = read_until_closed(&mut slow, Duration::from_secs(10))
        .expect("a connection that never finishes its headers is closed");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "closed only after {:?}",
        started.elapsed()
    );
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "unexpected answer to unfinished headers: {answer:?}"
    );
    assert_eq!(get(&server, "/v1/snowflake").status, 200);
}

#[test]
fn a_request_head_past_the_limit_is_refused_with_431_or_closed() {
    let server = TestServer::start(&[]);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    let big = "a".repeat(2 * uidgen_server::MAX_HEAD_BYTES);
    let _ = stream.write_all(
        format!("GET /v1/snowflake HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n").as_bytes(),
    );
    let answer = read_until_closed(&mut stream, Duration::from_secs(10)).expect("closed");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{}",
        &answer[..answer.len().min(200)]
    );
    assert_eq!(get(&server, "/v1/snowflake").status, 200);
}

#[test]
fn garbage_instead_of_http_is_answered_400_and_closed() {
    let server = TestServer::start(&[]);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .write_all(b"\x16\x03\x01 this is not HTTP\r\n\r\n")
        .unwrap();
    let answer = read_until_closed(&mut stream, Duration::from_secs(10)).expect("closed");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 400"),
        "{answer:?}"
    );
    assert_eq!(get(&server, "/healthz").status, 200);
}
