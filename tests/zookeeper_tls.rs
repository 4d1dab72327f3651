//! TLS to ZooKeeper (`zookeepers://`), against a ZooKeeper of the test's own that speaks
//! only TLS (its `secureClientPort`, Netty, the certificate of scripts/tls.sh's CA for
//! `localhost`): leases and ranges round trip with `?cacert=`; a certificate from another
//! CA and a wrong host name are refused naming why; a plain URL at the TLS port fails
//! naming the store, within its bound.

#[path = "support/servers.rs"]
mod servers;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use uidgen::{Acquired, LeaseRequest, StoreError, StoreUrl};

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run scripts/test, or source scripts/tls.sh and call ensure_tls_servers")
    })
}

struct TlsZooKeeper {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for TlsZooKeeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's ZooKeeper classpath, as scripts/zookeeper.sh finds it.
fn classpath() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/zookeeper.sh");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(". '{}' && zookeeper_classpath", script.display()))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "no ZooKeeper to start (Debian: apt-get install zookeeperd; scripts/test installs it)"
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn start() -> TlsZooKeeper {
    let ca = PathBuf::from(var("UIDGEN_TLS_CA"));
    let certs = ca.parent().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // ZooKeeper's PEM key store: the private key and its certificate in one file.
    let mut keystore = std::fs::read_to_string(certs.join("server.key")).unwrap();
    keystore.push_str(&std::fs::read_to_string(certs.join("server.pem")).unwrap());
    std::fs::write(dir.path().join("keystore.pem"), keystore).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(
        dir.path().join("zoo.cfg"),
        format!(
            "tickTime=500\ndataDir={data}\nsecureClientPort={port}\n\
             secureClientPortAddress=127.0.0.1\nadmin.enableServer=false\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={keystore}\nssl.keyStore.type=PEM\n\
             ssl.trustStore.location={ca}\nssl.trustStore.type=PEM\nssl.clientAuth=none\n",
            data = dir.path().join("data").display(),
            keystore = dir.path().join("keystore.pem").display(),
            ca = ca.display(),
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
    let child = Command::new("java")
        .args([
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
        ])
        .arg(classpath())
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(dir.path().join("zoo.cfg"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("java starts");
    let server = TlsZooKeeper {
        child,
        port,
        _dir: dir,
    };
    let began = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the TLS ZooKeeper did not come up: {}",
            std::fs::read_to_string(server._dir.path().join("server.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

fn url(scheme: &str, host: &str, port: u16, query: &str) -> StoreUrl {
    StoreUrl::parse(&format!(
        "{scheme}://{host}:{port}/uidgen-tls-{}{query}",
        servers::random_suffix()
    ))
    .unwrap()
    .timeout(Duration::from_secs(5))
}

fn refusal(url: &StoreUrl) -> StoreError {
    match url.lease_store().unwrap().leases() {
        Err(err) => err,
        Ok(rows) => panic!("connected, and read {rows:?}"),
    }
}

#[test]
fn zookeeper_over_tls_round_trips_and_refuses_a_wrong_ca_a_wrong_name_and_plain_text() {
    let server = start();
    let ca = var("UIDGEN_TLS_CA");
    let good = url(
        "zookeepers",
        "localhost",
        server.port,
        &format!("?cacert={ca}"),
    );
    let began = Instant::now();
    let leases = good.lease_store().unwrap();
    // The first connection may come while the server still starts its TLS side.
    let granted = loop {
        match leases.acquire(&LeaseRequest::new(
            "tls-holder",
            Duration::from_secs(5),
            1023,
        )) {
            Ok(granted) => break granted,
            Err(e) if began.elapsed() < Duration::from_secs(30) => {
                eprintln!("not yet: {e}");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert!(
        matches!(granted, Acquired::Granted { worker_id: 0, .. }),
        "{granted:?}"
    );
    assert!(leases
        .renew(0, "tls-holder", Duration::from_secs(5), 1_000)
        .unwrap());
    assert!(leases.release(0, "tls-holder", 1_200).unwrap());
    assert_eq!(leases.leases().unwrap()[0].mark_ms, 1_200);
    let segments = good.segment_store().unwrap();
    assert!(segments.create("tls", 1, 100, "").unwrap());
    assert_eq!(segments.allocate("tls", 100).unwrap(), 101);

    // Another CA: refused, naming why.
    let wrong = refusal(&url(
        "zookeepers",
        "localhost",
        server.port,
        &format!("?cacert={}", var("UIDGEN_TLS_WRONG_CA")),
    ));
    let text = wrong.to_string();
    assert!(matches!(wrong, StoreError::Tls { .. }), "{wrong:?}");
    assert!(
        text.contains("ZooKeeper") && text.contains("UnknownIssuer"),
        "{text}"
    );
    // The certificate is for localhost, not 127.0.0.1.
    let named = refusal(&url(
        "zookeepers",
        "127.0.0.1",
        server.port,
        &format!("?cacert={ca}"),
    ));
    let text = named.to_string();
    assert!(matches!(named, StoreError::Tls { .. }), "{named:?}");
    assert!(
        text.contains("not valid for name") && text.contains("127.0.0.1"),
        "{text}"
    );
    // Plain text at the TLS port: an error naming the store, within its bound.
    let asked = Instant::now();
    let plain = refusal(&url("zookeeper", "localhost", server.port, ""));
    assert!(plain.to_string().contains("ZooKeeper"), "{plain}");
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "{:?}",
        asked.elapsed()
    );
}
