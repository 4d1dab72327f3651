//! A running Leaf snowflake fleet on ZooKeeper, read and handed over to uidgen one worker
//! ID at a time. The facts of Leaf's node protocol (its `SnowflakeZookeeperHolder`, as
//! its documentation and source state them): a persistent sequential node
//! `/snowflake/{leaf.name}/forever/{ip}:{port}-{seq}` per Leaf server, whose 10-digit
//! sequence is its worker ID (never reused: a new `ip:port` gets a new node); its data
//! JSON `{"ip":"…","port":"8080","timestamp":ms}`, rewritten every 3 s; and at start, a
//! Leaf whose node's timestamp is ahead of its clock fails its check, and then starts
//! anyway on the worker ID of its cache file `{java.io.tmpdir}/{leaf.name}/leafconf/
//! {port}/workerID.properties` if that file is there (Leaf's `init` catches its own check's
//! exception and falls back to the file), without heartbeats: only with that file gone
//! does it refuse to start. So a hand-over also needs the file deleted (README's runbook).

use super::{children, mark_path, padded, sync, ZkConn, LEASE_NODE, STORE};
use crate::store::guard::now_ms;
use crate::store::StoreError;
use std::time::Duration;
use zookeeper_client::{Client, CreateMode, MultiWriteError};

/// Leaf's epoch: Twitter's, 2010-11-04T01:42:54.657Z (uidgen's preset `snowflake`).
pub const LEAF_EPOCH_MS: u64 = 1_288_834_974_657;

/// How often a Leaf server rewrites its node's timestamp.
pub const LEAF_HEARTBEAT: Duration = Duration::from_secs(3);

/// The shortest silence that counts a Leaf as stopped: two heartbeats, so one late
/// heartbeat (a GC pause) does not pass for a stop.
pub const MIN_SILENCE: Duration = Duration::from_secs(6);

/// The highest worker ID Leaf's layout holds (10 bits).
pub const LEAF_MAX_WORKER_ID: u64 = 1023;

/// The timestamp a handed-over node is rewritten with: 9999-12-31T23:59:59Z, ahead of
/// every clock, so a Leaf started again on that `ip:port` fails its check (and refuses to
/// start once its cache file is gone).
pub const LEAF_FENCE_MS: u64 = 253_402_300_799_000;

/// The address uidgen's own `forever` nodes carry (worker IDs uidgen takes from Leaf's
/// counter): no Leaf listens on it, so none ever takes such a node as its own.
pub const UIDGEN_LEAF_ADDRESS: &str = "0.0.0.0:0";

/// What a `forever` node holds, as Leaf writes it (its port a string).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Endpoint {
    ip: String,
    port: String,
    timestamp: u64,
}

/// One Leaf server's `forever` node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafWorker {
    /// `ip:port`, as the node's name gives it.
    pub address: String,
    /// The number after the `-`: the worker ID.
    pub worker_id: u64,
    /// The node's name under `forever`.
    pub node: String,
    /// The timestamp in its data (Unix ms), `None` when the data is not Leaf's JSON.
    pub timestamp_ms: Option<u64>,
    /// When the node last changed, by the ensemble's clock (Unix ms).
    pub changed_ms: u64,
    /// Whether it changed within [`LeafFleet::silent_for`] (its Leaf heartbeats).
    pub heartbeating: bool,
    /// Whether it was handed over (its timestamp is [`LEAF_FENCE_MS`]), or is one of
    /// uidgen's own ([`UIDGEN_LEAF_ADDRESS`]).
    pub uidgen: bool,
}

/// What [`LeafFleet::take`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handover {
    /// The worker, as it was read before the hand-over.
    pub worker: LeafWorker,
    /// The time mark uidgen's lease on it starts above (Unix ms).
    pub mark_ms: u64,
    /// `false` when it had been handed over already (nothing changed).
    pub changed: bool,
}

/// A Leaf snowflake fleet (`leaf.name`) on the ZooKeeper ensemble of `url`, and the
/// uidgen lease store at `url` that takes its worker IDs over.
///
/// [`workers`](Self::workers) lists the fleet; [`take`](Self::take) hands one worker ID
/// over once its Leaf has stopped heartbeating: in one multi-operation, its node is
/// rewritten with a timestamp ahead of every clock (so that Leaf, started again on that
/// `ip:port` with its cache file deleted, refuses to start) and uidgen's time mark for the
/// worker ID is set at or above the node's last timestamp and the take's time, plus Leaf's
/// 3 s heartbeat and a skew margin, so no ID uidgen
/// makes on it can equal one that Leaf made. A lease store in Leaf mode (`?leaf=NAME` in
/// its URL) then leases handed-over worker IDs, and takes new ones from Leaf's own
/// counter, never one a Leaf may hold.
#[derive(Debug, Clone)]
pub struct LeafFleet {
    conn: ZkConn,
    /// The node of uidgen's leases (as [`ZooKeeperLeaseStore`](crate::ZooKeeperLeaseStore)
    /// keeps them at the same URL).
    leases: String,
    name: String,
    silent_for: Duration,
    skew_margin: Duration,
}

/// `/snowflake/{name}/forever`.
pub(crate) fn forever_path(name: &str) -> String {
    format!("/snowflake/{name}/forever")
}

/// A Leaf name: one node name, printable, no `/`.
pub(crate) fn check_leaf_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty()
        || name.len() > 100
        || name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c.is_whitespace() || c.is_control())
    {
        return Err("a Leaf name (leaf.name) is 1 to 100 characters, without / or spaces");
    }
    Ok(())
}

/// The address and worker ID of a `forever` node's name (`ip:port-0000000007`), read as
/// Leaf reads it: the worker ID is what follows the first `-`.
pub(crate) fn parse_node(name: &str) -> Option<(String, u64)> {
    let (address, sequence) = name.split_once('-')?;
    let digits = sequence.split('-').next()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((address.to_owned(), digits.parse().ok()?))
}

/// A `forever` node's data, as Leaf writes it.
pub(crate) fn endpoint_json(address: &str, timestamp: u64) -> Vec<u8> {
    let (ip, port) = address.rsplit_once(':').unwrap_or((address, ""));
    serde_json::to_vec(&Endpoint {
        ip: ip.to_owned(),
        port: port.to_owned(),
        timestamp,
    })
    .unwrap_or_default()
}

fn read_endpoint(data: &[u8]) -> Option<Endpoint> {
    serde_json::from_slice(data).ok()
}

/// Takes a new worker ID from Leaf's counter: a `forever` node of uidgen's own
/// ([`UIDGEN_LEAF_ADDRESS`], fenced), whose sequence no Leaf can ever hold.
pub(crate) async fn reserve(
    conn: &ZkConn,
    client: &Client,
    name: &str,
) -> Result<u64, zookeeper_client::Error> {
    let forever = forever_path(name);
    let data = endpoint_json(UIDGEN_LEAF_ADDRESS, LEAF_FENCE_MS);
    let options = conn.options(CreateMode::PersistentSequential);
    let prefix = format!("{forever}/{UIDGEN_LEAF_ADDRESS}-");
    for first in [true, false] {
        match client.create(&prefix, &data, &options).await {
            Ok((_, sequence)) => return u64::try_from(sequence.into_i64()).map_err(|_| {
                zookeeper_client::Error::UnexpectedError("a negative sequence".into())
            }),
            Err(zookeeper_client::Error::NoNode) if first => conn.make_path(client, &forever).await?,
            Err(e) => return Err(e),
        }
    }
    Err(zookeeper_client::Error::NoNode)
}

impl LeafFleet {
    /// The fleet `leaf_name` on the ensemble of `url` (a `zookeeper://` URL whose path is
    /// uidgen's, as for [`ZooKeeperLeaseStore`](crate::ZooKeeperLeaseStore)); nothing is
    /// connected until the first step.
    pub fn new(url: &str, leaf_name: &str) -> Result<Self, StoreError> {
        check_leaf_name(leaf_name).map_err(|rule| StoreError::InvalidName {
            store: STORE,
            what: "Leaf name",
            name: leaf_name.chars().take(100).collect(),
            rule,
        })?;
        Ok(Self {
            conn: ZkConn::new(url)?,
            leases: ZkConn::new(url)?
                .with_prefix(LEASE_NODE)?
                .key_prefix()
                .to_owned(),
            name: leaf_name.to_owned(),
            silent_for: Duration::from_secs(10),
            skew_margin: Duration::from_secs(5),
        })
    }

    /// How long a node must stay unchanged for its Leaf to count as stopped (default
    /// 10 s; at least two of Leaf's 3 s heartbeats). [`take`](Self::take) watches the node
    /// for this long, timed on this machine's clock, before it hands the worker ID over.
    #[must_use]
    pub fn silent_for(mut self, silent_for: Duration) -> Self {
        self.silent_for = silent_for.max(MIN_SILENCE);
        self
    }

    /// How far a Leaf's clock may be ahead of uidgen's (default 5 s): added to the mark.
    #[must_use]
    pub fn skew_margin(mut self, margin: Duration) -> Self {
        self.skew_margin = margin;
        self
    }

    /// Every `forever` node of the fleet, lowest worker ID first.
    pub fn workers(&self) -> Result<Vec<LeafWorker>, StoreError> {
        let forever = forever_path(&self.name);
        let found = self.conn.run("listing Leaf's nodes", async |client| {
            sync(client, &forever).await?;
            let mut found = Vec::new();
            for node in children(client, &forever).await? {
                match client.get_data(&format!("{forever}/{node}")).await {
                    Ok((data, stat)) => found.push((node, data, stat.mtime)),
                    Err(zookeeper_client::Error::NoNode) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(found)
        })?;
        let now = now_ms();
        let silent_ms = u64::try_from(self.silent_for.as_millis()).unwrap_or(u64::MAX);
        let mut workers: Vec<LeafWorker> = found
            .into_iter()
            .filter_map(|(node, data, mtime)| {
                let (address, worker_id) = parse_node(&node)?;
                let endpoint = read_endpoint(&data);
                let changed_ms = u64::try_from(mtime).unwrap_or(0);
                let timestamp_ms = endpoint.as_ref().map(|e| e.timestamp);
                Some(LeafWorker {
                    uidgen: address == UIDGEN_LEAF_ADDRESS || timestamp_ms == Some(LEAF_FENCE_MS),
                    heartbeating: now.saturating_sub(changed_ms) < silent_ms,
                    address,
                    worker_id,
                    node,
                    timestamp_ms,
                    changed_ms,
                })
            })
            .collect();
        workers.sort_by_key(|worker| worker.worker_id);
        Ok(workers)
    }

    /// Hands over the worker ID of `which` (a worker ID, or a Leaf's `ip:port`), once its
    /// Leaf has stopped heartbeating: its node must stay unchanged while this watches it
    /// for [`silent_for`](Self::silent_for) (timed here, so no clock of another machine
    /// decides). Refused, naming why, while it heartbeats, or when its worker ID is past
    /// Leaf's 1023. The mark it sets is at or above both the node's last timestamp and
    /// this machine's clock at the take, plus Leaf's heartbeat and the skew margin: a Leaf
    /// whose last heartbeats failed made IDs past its last timestamp, never past its stop.
    pub fn take(&self, which: &str) -> Result<Handover, StoreError> {
        let refuse = |what: String| StoreError::Unexpected {
            store: STORE,
            location: self.conn.location().to_owned(),
            step: "handing a Leaf worker ID over",
            what,
        };
        let workers = self.workers()?;
        let worker = workers
            .iter()
            .find(|w| w.address == which || which.parse() == Ok(w.worker_id))
            .cloned()
            .ok_or_else(|| {
                refuse(format!(
                    "Leaf {:?} has no worker {which:?} (give a worker ID or an ip:port that \
                     `uidgen migrate leaf-zk list` shows)",
                    self.name
                ))
            })?;
        if worker.worker_id > LEAF_MAX_WORKER_ID {
            return Err(refuse(format!(
                "worker ID {} is past Leaf's layout (at most {LEAF_MAX_WORKER_ID})",
                worker.worker_id
            )));
        }
        if worker.address == UIDGEN_LEAF_ADDRESS {
            return Err(refuse(format!(
                "worker ID {} is one uidgen took from Leaf's counter itself: nothing to hand over",
                worker.worker_id
            )));
        }
        let heartbeat_ms = u64::try_from(LEAF_HEARTBEAT.as_millis()).unwrap_or(u64::MAX);
        let margin_ms = u64::try_from(self.skew_margin.as_millis()).unwrap_or(u64::MAX);
        if worker.timestamp_ms == Some(LEAF_FENCE_MS) {
            let mark_ms = self.mark_of(worker.worker_id)?.unwrap_or(0);
            return Ok(Handover {
                worker,
                mark_ms,
                changed: false,
            });
        }
        if worker.heartbeating {
            return Err(refuse(format!(
                "the Leaf at {} (worker ID {}) changed its node {} ms ago, less than {:?}: it \
                 still heartbeats. Stop it first, then take its worker ID",
                worker.address,
                worker.worker_id,
                now_ms().saturating_sub(worker.changed_ms),
                self.silent_for
            )));
        }
        // Watched on this machine's clock: a node that changes meanwhile has a live Leaf
        // (compared with the ensemble's mtime above, a clock ahead of the ensemble's
        // would pass a live Leaf as silent).
        std::thread::sleep(self.silent_for);
        let last = worker
            .timestamp_ms
            .unwrap_or(worker.changed_ms)
            .max(worker.changed_ms)
            .max(now_ms());
        let mark_ms = last
            .saturating_add(heartbeat_ms)
            .saturating_add(margin_ms);
        let node = format!("{}/{}", forever_path(&self.name), worker.node);
        let mark_path = mark_path(&self.leases, worker.worker_id);
        let lease_root = self.leases.clone();
        let fenced = endpoint_json(&worker.address, LEAF_FENCE_MS);
        let conn = &self.conn;
        let done = self.conn.run("handing a Leaf worker ID over", async |client| {
            conn.make_path(client, &lease_root).await?;
            for _ in 0..16 {
                let (_, stat) = client.get_data(&node).await?;
                if u64::try_from(stat.mtime).unwrap_or(0) != worker.changed_ms {
                    // Written since it was read: its Leaf is alive after all.
                    return Ok(None);
                }
                let marked = match client.get_data(&mark_path).await {
                    Ok((data, marked)) => Some((super::number(&data).unwrap_or(0), marked.version)),
                    Err(zookeeper_client::Error::NoNode) => None,
                    Err(e) => return Err(e),
                };
                let mut writes = client.new_multi_writer();
                writes.add_set_data(&node, &fenced, Some(stat.version))?;
                let mark = match marked {
                    Some((mark, version)) => {
                        let mark = mark.max(mark_ms);
                        writes.add_set_data(&mark_path, padded(mark).as_bytes(), Some(version))?;
                        mark
                    }
                    None => {
                        let options = conn.options(CreateMode::Persistent);
                        writes.add_create(&mark_path, padded(mark_ms).as_bytes(), &options)?;
                        mark_ms
                    }
                };
                match writes.commit().await {
                    Ok(_) => return Ok(Some(mark)),
                    Err(MultiWriteError::OperationFailed { index: 0, .. }) => return Ok(None),
                    // The mark moved (a lease of uidgen's on it): read it again.
                    Err(MultiWriteError::OperationFailed { .. }) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(None)
        })?;
        match done {
            Some(mark_ms) => Ok(Handover {
                worker,
                mark_ms,
                changed: true,
            }),
            None => Err(refuse(format!(
                "the Leaf at {} (worker ID {}) wrote its node while it was being handed over: \
                 it is alive. Stop it first, then take its worker ID",
                worker.address, worker.worker_id
            ))),
        }
    }

    /// uidgen's time mark for `worker_id`, if it has one.
    fn mark_of(&self, worker_id: u64) -> Result<Option<u64>, StoreError> {
        let path = mark_path(&self.leases, worker_id);
        self.conn.run("reading a time mark", async |client| {
            match client.get_data(&path).await {
                Ok((data, _)) => Ok(super::number(&data)),
                Err(zookeeper_client::Error::NoNode) => Ok(None),
                Err(e) => Err(e),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_read_as_leaf_reads_them() {
        assert_eq!(
            parse_node("10.0.0.7:8080-0000000012"),
            Some(("10.0.0.7:8080".to_owned(), 12))
        );
        assert_eq!(parse_node("0.0.0.0:0-0000001024"), Some(("0.0.0.0:0".into(), 1024)));
        assert_eq!(parse_node("10.0.0.7:8080"), None);
        assert_eq!(parse_node("10.0.0.7:8080-x1"), None);
        let data = endpoint_json("10.0.0.7:8080", 1_700_000_000_000);
        assert_eq!(
            std::str::from_utf8(&data).unwrap(),
            r#"{"ip":"10.0.0.7","port":"8080","timestamp":1700000000000}"#
        );
        assert_eq!(read_endpoint(&data).unwrap().timestamp, 1_700_000_000_000);
        assert!(check_leaf_name("leaf-order").is_ok());
        for bad in ["", "a/b", "a b", ".."] {
            assert!(check_leaf_name(bad).is_err(), "{bad:?}");
        }
    }
}
