//! A TCP relay for tests of a store that dies mid-run, shared by the store tests.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Relaying both ways.
const UP: u8 = 0;
/// Every connection closed, new ones refused.
const REFUSING: u8 = 1;
/// Connections accepted and held open, nothing forwarded either way: a server that hangs
/// (or a black-holed route), which a client notices only by its own timeouts.
const SILENT: u8 = 2;

type Open = Arc<Mutex<Vec<(u64, TcpStream)>>>;

/// A TCP relay to a server that can be cut (every connection closed, new ones refused),
/// silenced (connections held open but nothing forwarded) and restored: a store that
/// dies, or hangs, mid-run and comes back.
pub struct Relay {
    pub addr: std::net::SocketAddr,
    mode: Arc<AtomicU8>,
    /// Every open connection's streams, by connection number: closed by a cut and
    /// forgotten when the connection ends (a client that reconnects for minutes must not
    /// run the test process out of file descriptors).
    open: Open,
    /// Where new connections go: moved by [`Relay::point_to`] (a failover).
    upstream: Arc<Mutex<std::net::SocketAddr>>,
}

impl Relay {
    pub fn to(upstream: std::net::SocketAddr) -> Self {
        Self::listening(TcpListener::bind("127.0.0.1:0").unwrap(), upstream)
    }

    /// A relay on `addr` (a port that was free), as a server that comes up late.
    pub fn at(addr: std::net::SocketAddr, upstream: std::net::SocketAddr) -> Self {
        Self::listening(TcpListener::bind(addr).unwrap(), upstream)
    }

    fn listening(listener: TcpListener, upstream: std::net::SocketAddr) -> Self {
        let relay = Relay {
            addr: listener.local_addr().unwrap(),
            mode: Arc::new(AtomicU8::new(UP)),
            open: Arc::default(),
            upstream: Arc::new(Mutex::new(upstream)),
        };
        let (mode, open, target) = (
            relay.mode.clone(),
            relay.open.clone(),
            relay.upstream.clone(),
        );
        std::thread::spawn(move || {
            for (number, client) in (0u64..).zip(listener.incoming().flatten()) {
                match mode.load(Ordering::SeqCst) {
                    REFUSING => continue, // dropped: refused
                    SILENT => {
                        // Held open, never answered.
                        open.lock().unwrap().push((number, client));
                        continue;
                    }
                    _ => {}
                }
                let upstream = *target.lock().unwrap();
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                // Out of descriptors, the connection is dropped as a refused one.
                let (Ok(c1), Ok(s1), Ok(s2), Ok(c2)) = (
                    client.try_clone(),
                    server.try_clone(),
                    server.try_clone(),
                    client.try_clone(),
                ) else {
                    continue;
                };
                let mut held = open.lock().unwrap();
                // A cut, silence or failover that came while this connection was being
                // made has already drained `open`: checked again under its lock, so no
                // connection made across one outlives it (CI30 saw one serve a store
                // "dead" for seconds).
                let now = mode.load(Ordering::SeqCst);
                if now != UP || *target.lock().unwrap() != upstream {
                    let _ = server.shutdown(Shutdown::Both);
                    if now == SILENT {
                        held.push((number, client));
                    } else {
                        let _ = client.shutdown(Shutdown::Both);
                    }
                    continue;
                }
                for (from, to) in [(c1, s1), (s2, c2)] {
                    let (mode, open) = (mode.clone(), open.clone());
                    std::thread::spawn(move || {
                        forward(from, to, &mode);
                        open.lock().unwrap().retain(|(n, _)| *n != number);
                    });
                }
                held.push((number, client));
                held.push((number, server));
            }
        });
        relay
    }

    /// Closes every connection and refuses new ones.
    pub fn cut(&self) {
        self.mode.store(REFUSING, Ordering::SeqCst);
        for (_, stream) in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Stops forwarding on every connection, open or new, and holds them open.
    pub fn silence(&self) {
        self.mode.store(SILENT, Ordering::SeqCst);
    }

    pub fn restore(&self) {
        self.mode.store(UP, Ordering::SeqCst);
    }

    /// Sends new connections to `upstream` and closes the open ones: a failover behind
    /// one address (a virtual IP, a DNS name, a proxy).
    pub fn point_to(&self, upstream: std::net::SocketAddr) {
        *self.upstream.lock().unwrap() = upstream;
        for (_, stream) in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// Copies `from` to `to` until either end closes; while silent, what arrives is dropped.
fn forward(mut from: TcpStream, mut to: TcpStream, mode: &AtomicU8) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if mode.load(Ordering::SeqCst) == SILENT {
            continue;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}

/// `url` with its host:port replaced by `addr`.
pub fn via(url: &str, addr: std::net::SocketAddr) -> (String, std::net::SocketAddr) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((user, hostport)) => (format!("{user}@"), hostport),
        None => (String::new(), authority),
    };
    // Of an etcd URL's members, the first: the relayed URL names the relay alone.
    let hostport = hostport.split(',').next().unwrap_or(hostport);
    let upstream = std::net::ToSocketAddrs::to_socket_addrs(hostport)
        .unwrap()
        .next()
        .unwrap();
    (
        format!("{scheme}://{userinfo}{addr}{}", &rest[authority_end..]),
        upstream,
    )
}
