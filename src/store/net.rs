//! Name resolution with a bound, for the stores that connect without `mysql_async`.

use super::StoreError;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

/// The address of `host:port`. The system resolver blocks, and may block far longer than
/// our bound (`timeout × attempts` of resolv.conf), so it runs on a thread of its own
/// that is left behind if it does not answer within `timeout`.
pub(crate) fn resolve(
    store: &'static str,
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<SocketAddr, StoreError> {
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let resolve_error = |source| StoreError::Resolve {
        store,
        host: host.to_owned(),
        source,
    };
    let (send, receive) = mpsc::channel();
    let target = (host.to_owned(), port);
    std::thread::Builder::new()
        .name("uidgen-resolve".into())
        .spawn(move || {
            let _ = send.send(target.to_socket_addrs().map(|mut addrs| addrs.next()));
        })
        .map_err(resolve_error)?;
    match receive.recv_timeout(timeout) {
        Ok(Ok(Some(address))) => Ok(address),
        Ok(Ok(None)) => Err(resolve_error(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the name has no address",
        ))),
        Ok(Err(source)) => Err(resolve_error(source)),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(resolve_error(std::io::Error::other(
            "the resolver thread ended without an answer",
        ))),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(StoreError::Timeout {
            store,
            host: host.to_owned(),
            port,
            step: "resolving the host name",
            timeout,
        }),
    }
}
