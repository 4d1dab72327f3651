//! A digest user on its own path, as the README sets a ZooKeeper deployment up: on the
//! suite's ensemble, a store URL with `user:password@` takes, renews and releases worker
//! IDs and takes ranges, every node it makes readable and writable by that user alone; a
//! store with another user, or the same user with a wrong password (another digest to
//! ZooKeeper), is refused naming the user, never the password.

#[path = "support/servers.rs"]
mod servers;

use std::time::Duration;
use uidgen::{Acquired, LeaseRequest, StoreError, StoreUrl};

fn url(user: &str, path: &str) -> StoreUrl {
    let (hosts, _) = servers::zookeeper_store_url()
        .strip_prefix("zookeeper://")
        .expect("a zookeeper:// URL")
        .split_once('/')
        .map(|(hosts, path)| (hosts.to_owned(), path.to_owned()))
        .expect("zookeeper://HOSTS/PATH");
    StoreUrl::parse(&format!("zookeeper://{user}@{hosts}/{path}"))
        .unwrap()
        .timeout(Duration::from_secs(5))
}

/// The error, with its source, as a person reads it.
fn said(err: &StoreError) -> String {
    format!(
        "{err} {err:?}: {}",
        std::error::Error::source(err).map_or(String::new(), |s| s.to_string())
    )
}

#[test]
fn a_digest_user_keeps_its_nodes_to_itself_and_others_are_refused_without_a_password_shown() {
    let path = format!("uidgen-auth-{}", servers::random_suffix());
    let owner = url("ids:0wner-Pw", &path);
    let leases = owner.lease_store().unwrap();
    assert!(!format!("{leases:?}").contains("0wner-Pw"));
    let request = LeaseRequest::new("holder-a", Duration::from_secs(5), 1023);
    let Acquired::Granted { worker_id, mark_ms } = leases.acquire(&request).unwrap() else {
        panic!("not granted");
    };
    assert_eq!((worker_id, mark_ms), (0, 0));
    assert!(leases
        .renew(0, "holder-a", Duration::from_secs(5), 1_000)
        .unwrap());
    assert_eq!(leases.leases().unwrap()[0].mark_ms, 1_000);
    assert!(leases.release(0, "holder-a", 1_200).unwrap());
    let segments = owner.segment_store().unwrap();
    assert!(segments.create("order", 1, 100, "").unwrap());
    assert_eq!(segments.allocate("order", 100).unwrap(), 101);

    // Another digest user, and the owner with a wrong password: neither may read.
    for (user, shown, secret) in [
        ("other:0ther-Pw", "other", "0ther-Pw"),
        ("ids:Wr0ng-Pw", "ids", "Wr0ng-Pw"),
    ] {
        let stranger = url(user, &path);
        let refused = stranger.segment_store().unwrap().tag("order").unwrap_err();
        assert!(
            matches!(refused, StoreError::AccessDenied { .. }),
            "{user}: {refused:?}"
        );
        let text = said(&refused);
        assert!(
            text.contains(shown) && !text.contains(secret) && !text.contains("0wner-Pw"),
            "{text}"
        );
        let refused = stranger
            .lease_store()
            .unwrap()
            .acquire(&request)
            .unwrap_err();
        let text = said(&refused);
        assert!(
            matches!(refused, StoreError::AccessDenied { .. }) && !text.contains(secret),
            "{user}: {text}"
        );
    }
    // The owner still goes on above what it handed out.
    assert_eq!(segments.allocate("order", 100).unwrap(), 201);
    let cleanup = uidgen::ZooKeeperLeaseStore::new(&format!(
        "zookeeper://ids:0wner-Pw@{}/{path}",
        servers::zookeeper_store_url()
            .trim_start_matches("zookeeper://")
            .split('/')
            .next()
            .unwrap()
    ))
    .and_then(|s| s.prefix(""))
    .and_then(|s| s.destroy());
    assert!(cleanup.is_ok(), "{cleanup:?}");
}
