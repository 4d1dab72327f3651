//! A TCP relay for tests of a store that dies mid-run, shared by the store tests.
#![allow(dead_code)]

use std::sync::Arc;

/// A TCP relay to a server that can be cut (every connection closed, new ones refused)
/// and restored: a store that dies mid-run and comes back.
pub struct Relay {
    pub addr: std::net::SocketAddr,
    up: Arc<std::sync::atomic::AtomicBool>,
    open: Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl Relay {
    pub fn to(upstream: std::net::SocketAddr) -> Self {
        use std::net::{TcpListener, TcpStream};
        use std::sync::atomic::Ordering;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let relay = Relay {
            addr: listener.local_addr().unwrap(),
            up: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            open: Arc::default(),
        };
        let (up, open) = (relay.up.clone(), relay.open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !up.load(Ordering::SeqCst) {
                    continue; // dropped: refused
                }
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let mut open = open.lock().unwrap();
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server.try_clone().unwrap(), client.try_clone().unwrap()),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
                open.push(client);
                open.push(server);
            }
        });
        relay
    }

    pub fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    pub fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
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
    let upstream = std::net::ToSocketAddrs::to_socket_addrs(hostport)
        .unwrap()
        .next()
        .unwrap();
    (
        format!("{scheme}://{userinfo}{addr}{}", &rest[authority_end..]),
        upstream,
    )
}
