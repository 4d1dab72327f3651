//! One HTTP GET to a service of ours, on `std::net`: for `uidgen probe` and for
//! `segment list --service`, which read a status line and a metrics page. A client crate
//! would add a dozen crates to every build of the binary for that.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The most of an answer read (a metrics page of a service with many tags fits).
const MAX_READ: u64 = 8 * 1024 * 1024;

/// An answer: its status, status line and body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) status_line: String,
    pub(crate) body: String,
}

/// GETs `url` (`http://HOST[:PORT][/PATH]`) within `timeout` for each step; the error
/// says what failed, naming the URL.
pub(crate) fn get(url: &str, timeout: Duration) -> Result<Answer, String> {
    let (authority, path) = split(url)?;
    let address = authority
        .to_socket_addrs()
        .map_err(|e| format!("{authority} cannot be resolved: {e}"))?
        .next()
        .ok_or_else(|| format!("{authority} has no address"))?;
    let mut stream = TcpStream::connect_timeout(&address, timeout)
        .map_err(|e| format!("{url}: cannot connect: {e}"))?;
    let io = |e: std::io::Error| format!("{url}: {e}");
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut answer = Vec::new();
    stream.take(MAX_READ).read_to_end(&mut answer).map_err(io)?;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status_line = head.lines().next().unwrap_or_default().to_owned();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/"))
        .ok_or_else(|| format!("{url}: not an HTTP answer"))?;
    Ok(Answer {
        status,
        status_line,
        body: body.to_owned(),
    })
}

/// `http://HOST[:PORT][/PATH]` as `HOST:PORT` (port 80 when absent) and the path.
fn split(url: &str) -> Result<(String, &str), String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        format!(
            "{url:?} is not an http:// URL (the service speaks plain HTTP; reach it from \
             where TLS is not needed)"
        )
    })?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let bad = |why: &str| format!("{url:?}: {why}");
    if authority.is_empty() {
        return Err(bad("no host"));
    }
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("the path has a space or a control character"));
    }
    let has_port = authority
        .rfind(':')
        .is_some_and(|at| !authority[at..].contains(']'));
    let authority = if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    Ok((authority, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_split_into_host_port_and_path() {
        let ok = |url| split(url).unwrap();
        assert_eq!(
            ok("http://127.0.0.1:8080/readyz"),
            ("127.0.0.1:8080".into(), "/readyz")
        );
        assert_eq!(ok("http://localhost"), ("localhost:80".into(), "/"));
        assert_eq!(ok("http://[::1]/healthz"), ("[::1]:80".into(), "/healthz"));
        assert_eq!(ok("http://[::1]:81/x"), ("[::1]:81".into(), "/x"));
        for bad in [
            "https://a/",
            "a:80/x",
            "http:///x",
            "http://a/x y",
            "http://a/\n",
        ] {
            assert!(split(bad).is_err(), "{bad}");
        }
    }
}
