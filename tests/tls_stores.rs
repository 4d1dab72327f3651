//! TLS to MariaDB, PostgreSQL and Redis, against servers that speak only what their
//! certificates allow: scripts/tls.sh starts them with a CA of its own and exports
//! UIDGEN_TLS_CA, UIDGEN_TLS_WRONG_CA and the three ports. The certificate names
//! `localhost` and no IP address, so `127.0.0.1` is a wrong host name for it.
//!
//! Lease and segment round trips go through `StoreUrl`, with the parameters the engines'
//! own clients use; each refusal names why.

#[path = "support/servers.rs"]
mod servers;

use std::time::Duration;
use uidgen::{
    Acquired, BitsAllocator, LeaseRequest, SegmentStore, StoreError, StoreKind, StoreUrl,
    WorkerLease,
};

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run scripts/test, or source scripts/tls.sh and call ensure_tls_servers")
    })
}

/// The URL of `kind`'s TLS server at `host`, checking as much as `mode` says, trusting
/// `ca`.
fn url(kind: StoreKind, host: &str, mode: &str, ca: &str) -> String {
    match kind {
        StoreKind::MySql => format!(
            "mysql://root@{host}:{}/test?ssl-mode={mode}&ssl-ca={ca}",
            var("UIDGEN_MYSQL_TLS_PORT")
        ),
        StoreKind::Postgres => format!(
            "postgres://postgres@{host}:{}/test?sslmode={mode}&sslrootcert={ca}",
            var("UIDGEN_POSTGRES_TLS_PORT")
        ),
        _ => format!(
            "rediss://{host}:{}/?cacert={ca}&accept_data_loss=true",
            var("UIDGEN_REDIS_TLS_PORT")
        ),
    }
}

/// The strictest mode of each engine: the chain and the host name.
fn full(kind: StoreKind) -> &'static str {
    match kind {
        StoreKind::MySql => "VERIFY_IDENTITY",
        StoreKind::Postgres => "verify-full",
        _ => "",
    }
}

const NETWORK: [StoreKind; 3] = [StoreKind::MySql, StoreKind::Postgres, StoreKind::Redis];

fn open(url: &str) -> StoreUrl {
    StoreUrl::parse(url)
        .unwrap_or_else(|e| panic!("{url}: {e}"))
        .timeout(Duration::from_secs(5))
}

#[test]
fn leases_and_segments_round_trip_over_verified_tls() {
    let ca = var("UIDGEN_TLS_CA");
    for kind in NETWORK {
        let url = open(&url(kind, "localhost", full(kind), &ca));
        let name = match kind {
            StoreKind::Redis => format!("uidgen:tls:{}:", servers::random_suffix()),
            _ => format!("tls_{}", servers::random_suffix()),
        };
        // Leases: acquire, a generator on the lease, release with its mark.
        let bits = BitsAllocator::default();
        let store = url.lease_store_in(&name).unwrap();
        let lease = WorkerLease::builder(store)
            .acquire(&bits)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(lease.worker_id(), 0, "{kind:?}");
        let generator = uidgen::DefaultUidGenerator::builder()
            .allocator(bits)
            .lease(lease)
            .build()
            .unwrap();
        let first = uidgen::UidGenerator::next_uid(&generator).unwrap();
        drop(generator);
        let store = url.lease_store_in(&name).unwrap();
        let records = store.leases().unwrap();
        assert_eq!(records.len(), 1, "{kind:?}");
        assert!(first > 0);
        assert!(
            records[0].holder.is_none() && records[0].mark_ms > 0,
            "{kind:?}: the release recorded the mark over TLS: {records:?}"
        );
        match store
            .acquire(&LeaseRequest::new("again", Duration::from_secs(5), 1023))
            .unwrap()
        {
            Acquired::Granted { worker_id: 0, .. } => {}
            other => panic!("{kind:?}: {other:?}"),
        }
        // Segments: create, allocate, give back.
        let segments = url.segment_store_in(&format!("{name}s")).unwrap();
        assert!(segments.create("tls", 1, 100, "").unwrap(), "{kind:?}");
        assert_eq!(segments.allocate("tls", 100).unwrap(), 101, "{kind:?}");
        assert!(segments.give_back("tls", 101, 1).unwrap(), "{kind:?}");
        assert_eq!(segments.allocate("tls", 100).unwrap(), 101, "{kind:?}");
        destroy(kind, &name);
    }
}

/// Drops a test's tables (keys) through the engine's own store types.
fn destroy(kind: StoreKind, name: &str) {
    let raw = url(kind, "localhost", full(kind), &var("UIDGEN_TLS_CA"));
    let segments = format!("{name}s");
    let dropped = match kind {
        StoreKind::MySql => uidgen::MySqlLeaseStore::new(&raw)
            .and_then(|s| s.table(name))
            .and_then(|s| s.destroy())
            .and_then(|()| uidgen::MySqlSegmentStore::new(&raw))
            .and_then(|s| s.table(&segments))
            .and_then(|s| s.destroy()),
        StoreKind::Postgres => uidgen::PostgresLeaseStore::new(&raw)
            .and_then(|s| s.table(name))
            .and_then(|s| s.destroy())
            .and_then(|()| uidgen::PostgresSegmentStore::new(&raw))
            .and_then(|s| s.table(&segments))
            .and_then(|s| s.destroy()),
        _ => uidgen::RedisLeaseStore::new(&raw)
            .and_then(|s| s.prefix(name))
            .and_then(|s| s.destroy())
            .and_then(|()| uidgen::RedisSegmentStore::new(&raw))
            .and_then(|s| s.prefix(&segments))
            .and_then(|s| s.destroy()),
    };
    dropped.unwrap_or_else(|e| panic!("{kind:?}: dropping the test's tables: {e}"));
}

/// What a refused connection says, from a lease store's first step.
fn refusal(url: &str) -> StoreError {
    let store = open(url).lease_store_in("tls_refused").unwrap();
    match store.leases() {
        Err(err) => err,
        Ok(rows) => panic!("{url}: connected, and read {rows:?}"),
    }
}

#[test]
fn a_certificate_from_another_ca_is_refused_naming_why() {
    let wrong = var("UIDGEN_TLS_WRONG_CA");
    for kind in NETWORK {
        let err = refusal(&url(kind, "localhost", full(kind), &wrong));
        let text = err.to_string();
        assert!(matches!(err, StoreError::Tls { .. }), "{kind:?}: {err:?}");
        assert!(
            text.contains(kind.name()) && text.contains("UnknownIssuer"),
            "{kind:?}: {text}"
        );
    }
}

#[test]
fn a_wrong_host_name_is_refused_when_names_are_checked_and_passes_when_not() {
    let ca = var("UIDGEN_TLS_CA");
    for kind in NETWORK {
        // The certificate is for localhost, not 127.0.0.1.
        let err = refusal(&url(kind, "127.0.0.1", full(kind), &ca));
        let text = err.to_string();
        assert!(matches!(err, StoreError::Tls { .. }), "{kind:?}: {err:?}");
        assert!(
            text.contains("not valid for name") && text.contains("127.0.0.1"),
            "{kind:?}: {text}"
        );
    }
    // The chain only (verify-ca): the same address is accepted.
    let store = open(&url(StoreKind::Postgres, "127.0.0.1", "verify-ca", &ca))
        .lease_store_in("tls_chain_only")
        .unwrap();
    store.leases().unwrap();
    // MySQL's driver cannot check the chain without the name: refused, saying what works.
    let err = StoreUrl::parse(&url(StoreKind::MySql, "127.0.0.1", "VERIFY_CA", &ca)).unwrap_err();
    assert!(
        err.to_string().contains("give ssl-mode=VERIFY_IDENTITY"),
        "{err}"
    );
    // Encryption without checks (REQUIRED, require): accepted at any name, with no CA.
    for plain in [
        format!(
            "mysql://root@127.0.0.1:{}/test?ssl-mode=REQUIRED",
            var("UIDGEN_MYSQL_TLS_PORT")
        ),
        format!(
            "postgres://postgres@127.0.0.1:{}/test?sslmode=require",
            var("UIDGEN_POSTGRES_TLS_PORT")
        ),
    ] {
        let store = open(&plain).lease_store_in("tls_encrypt_only").unwrap();
        store.leases().unwrap_or_else(|e| panic!("{plain}: {e}"));
    }
}

#[test]
fn a_tls_server_refuses_plain_text_and_a_plain_url_says_what_failed() {
    // The TLS-only Redis port, reached without TLS: an error naming the store, not a hang.
    let plain = format!("redis://localhost:{}/", var("UIDGEN_REDIS_TLS_PORT"));
    let err = refusal(&plain);
    assert!(err.to_string().contains("Redis"), "{err}");
}
