//! The row a launch records in `WORKER_NODE`: who it is, for people reading the table.

/// How a node runs, as UidGenerator records it in `WORKER_NODE.TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeType {
    /// In a container, with host and port given by its environment (1).
    Container = 1,
    /// On a machine, named by its host name and a per-launch port string (2).
    Actual = 2,
}

/// The row a launch inserts into `WORKER_NODE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerNode {
    /// `HOST_NAME`.
    pub host_name: String,
    /// `PORT`: the container's port, or `pid-random` on a machine (as UidGenerator's
    /// `timestamp-random`, it only needs to tell launches apart for people).
    pub port: String,
    /// `TYPE`.
    pub node_type: NodeType,
}

impl WorkerNode {
    /// From the environment: `UIDGEN_HOST` and `UIDGEN_PORT` (set both in containers)
    /// make a container node; otherwise this machine's host name and `pid-random`.
    pub fn from_env() -> Self {
        match (std::env::var("UIDGEN_HOST"), std::env::var("UIDGEN_PORT")) {
            (Ok(host), Ok(port)) if !host.is_empty() && !port.is_empty() => Self {
                host_name: host,
                port,
                node_type: NodeType::Container,
            },
            _ => Self {
                host_name: gethostname::gethostname().to_string_lossy().into_owned(),
                port: format!("{}-{}", std::process::id(), random_below(100_000)),
                node_type: NodeType::Actual,
            },
        }
    }
}

/// A random number below `bound`.
fn random_below(bound: u64) -> u64 {
    crate::process::random_u64() % bound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_come_from_the_environment_or_the_machine() {
        let node = WorkerNode::from_env();
        // Whichever branch: the row's fields are filled in.
        assert!(!node.host_name.is_empty() && !node.port.is_empty());
        if node.node_type == NodeType::Actual {
            assert!(node.port.starts_with(&format!("{}-", std::process::id())));
        }
    }

    #[test]
    fn random_numbers_stay_below_the_bound_and_vary() {
        let draws: std::collections::HashSet<u64> =
            (0..64).map(|_| random_below(100_000)).collect();
        assert!(draws.iter().all(|&n| n < 100_000));
        assert!(draws.len() > 32, "{draws:?}");
    }
}
