//! Where the test servers are (UIDGEN_MYSQL_URL, UIDGEN_POSTGRES_URL, UIDGEN_REDIS_URL,
//! else the local defaults scripts/test makes reachable), and names no other run uses.
#![allow(dead_code)]

pub fn mysql_url() -> String {
    std::env::var("UIDGEN_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into())
}

pub fn postgres_url() -> String {
    std::env::var("UIDGEN_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// The suite's Redis keeps nothing on disk (the machine's, and the private one
/// scripts/redis.sh starts), so its URL says it accepts that.
pub fn redis_url() -> String {
    std::env::var("UIDGEN_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379/?accept_data_loss=true".into())
}

/// The suite's etcd cluster (scripts/etcd.sh starts a private 3-member one), every
/// member in the URL.
pub fn etcd_url() -> String {
    std::env::var("UIDGEN_ETCD_URL").unwrap_or_else(|_| "etcd://127.0.0.1:2379/uidgen-test".into())
}

/// The suite's ZooKeeper ensemble for the store tests (scripts/zookeeper.sh starts a
/// private 3-member one), every member in the URL.
pub fn zookeeper_store_url() -> String {
    std::env::var("UIDGEN_ZOOKEEPER_STORE_URL")
        .unwrap_or_else(|_| "zookeeper://127.0.0.1:2181/uidgen-test".into())
}

/// Twelve hex digits from the clock and a random hasher: a table or key prefix of a
/// test's own.
pub fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}
