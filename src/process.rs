//! Who this process is, for leases and for the word it leaves in a store: a random
//! number, the host name, and the holder identity made of them.

/// This process's identity for leases: host name, process ID and a random number (so
/// two containers that both run as pid 1 differ).
pub fn holder_identity() -> String {
    format!(
        "{}/{}/{:016x}",
        host_name(),
        std::process::id(),
        random_u64()
    )
}

fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// A random number from the standard library's per-process random keys and the time (no
/// random-number crate is needed for one number per launch or lease).
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.write_u32(std::process::id());
    hasher.finish()
}
