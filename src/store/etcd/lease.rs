//! Worker-ID leases on etcd's own leases: a worker ID's holder key is attached to an
//! etcd lease and goes when it expires (the cluster decides expiry, not a clock of
//! ours); its time mark is a key of its own that outlives every lease and only rises.
//! Each step is one transaction, so two racing acquirers never both win; the algorithm
//! over the steps is the one every store follows.

use super::{got, number, padded, read_together, EtcdConn};
// This machine's clock: etcd has none to read (it decides expiry itself, and the
// remaining TTL it reports is added to this).
use crate::store::guard::now_ms;
use crate::store::lease::{first_unused, LeaseRecord, LeaseRow, LeaseSteps};
use crate::store::{StoreError, StoreKind};
use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use std::collections::BTreeMap;

/// The lock of the TTL map (a panic while it was held leaves nothing half-written).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
use std::time::Duration;

/// The key prefix under the URL's, when no name is given.
const DEFAULT_NAME: &str = "lease/";

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) on an etcd
/// cluster (the `etcd` feature): `etcd://host:2379,host:2379,host:2379/PREFIX`, every
/// member named so the client goes on through the loss of any of them.
///
/// Under `PREFIX/lease/` (or [`prefix`](Self::prefix)): `holder/N`, the holder of worker
/// ID N, attached to an etcd lease of the requested TTL (whole seconds: a TTL of 1.5 s
/// is 2 s on etcd, and a log line says so), and `mark/N`, its time mark, which no lease
/// carries away. A renewal is a keep-alive of that etcd lease and, in one transaction
/// that checks the holder, a raise of the mark; a lease etcd let expire is never
/// renewed (its holder key is gone): the next holder takes the ID above the mark.
/// Requests go only to a member that has a leader, so a member cut off from the others
/// never answers from its own state.
///
/// Every step (connecting, authenticating, each request) is bounded by
/// [`timeout`](Self::timeout). `etcds://` connects over TLS (the `tls` feature), with
/// `?cacert=PATH` as the only CA trusted. `Debug` and errors never show the password.
///
/// ```no_run
/// use uidgen::{BitsAllocator, EtcdLeaseStore, WorkerLease};
///
/// let store = EtcdLeaseStore::new("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/ids")?;
/// let lease = WorkerLease::builder(store).acquire(&BitsAllocator::default())?;
/// println!("worker ID {}", lease.worker_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct EtcdLeaseStore {
    steps: EtcdLeases,
}

/// The lease steps: the connection, and the TTL each etcd lease of this process was
/// asked for (a renewal for the same TTL keeps its lease, even where etcd's minimum TTL
/// granted more).
#[derive(Clone)]
struct EtcdLeases {
    conn: EtcdConn,
    asked: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<i64, i64>>>,
}

crate::store::net::key_value_store_face!(
    EtcdLeaseStore,
    steps.conn,
    "etcd cluster",
    "lease/, under the URL's own prefix"
);

impl EtcdLeaseStore {
    /// The store on the cluster at `url`; nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            steps: EtcdLeases {
                conn: EtcdConn::new(url)?.with_prefix(DEFAULT_NAME)?,
                asked: Default::default(),
            },
        })
    }

    /// Deletes the store's keys, with every lease and time mark. Only for a store no
    /// generator will use again (tests, a retired deployment).
    pub fn destroy(&self) -> Result<(), StoreError> {
        let prefix = self.steps.conn.key_prefix().to_owned();
        self.steps
            .conn
            .run("deleting the keys", async |client| {
                client
                    .delete(
                        prefix,
                        Some(etcd_client::DeleteOptions::new().with_prefix()),
                    )
                    .await
            })
            .map(drop)
    }
}

/// etcd's TTL for a requested one: whole seconds, rounded up (at least 1).
fn ttl_secs(ttl: Duration) -> i64 {
    let whole = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    if ttl.subsec_nanos() > 0 {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            tracing::info!(
                requested = ?ttl,
                used_secs = whole,
                "etcd leases last whole seconds: the TTL is rounded up"
            );
        });
    }
    i64::try_from(whole.max(1)).unwrap_or(i64::MAX)
}

/// A worker ID's place in a key: 20 digits, so the keys list in the IDs' order.
fn id_key(prefix: &str, kind: &str, worker_id: u64) -> String {
    format!("{}{}", kind_prefix(prefix, kind), padded(worker_id))
}

/// The prefix of every key of one kind (`holder`, `mark`).
fn kind_prefix(prefix: &str, kind: &str) -> String {
    format!("{prefix}{kind}/")
}

/// The worker ID at the end of a key.
fn id_of(key: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(key).ok()?;
    number(text.rsplit('/').next()?.as_bytes())
}

/// Whether etcd lease `lease` is alive (0, no lease: a key written without one, as a
/// restore writes it, holds nothing).
async fn live_lease(client: &mut Client, lease: i64) -> Result<bool, etcd_client::Error> {
    if lease == 0 {
        return Ok(false);
    }
    Ok(client.lease_time_to_live(lease, None).await?.ttl() > 0)
}

impl EtcdLeases {
    fn holder_key(&self, worker_id: u64) -> String {
        id_key(self.conn.key_prefix(), "holder", worker_id)
    }

    fn mark_key(&self, worker_id: u64) -> String {
        id_key(self.conn.key_prefix(), "mark", worker_id)
    }

    /// Grants an etcd lease of `ttl` and runs `txn(lease)`; the lease is revoked again
    /// when the transaction did not take it. Answers whether it succeeded, and its
    /// answers.
    fn with_new_lease(
        &self,
        step: &'static str,
        ttl: Duration,
        txn: impl Fn(i64) -> Txn + Send + Sync,
    ) -> Result<(bool, Vec<etcd_client::TxnOpResponse>), StoreError> {
        let secs = ttl_secs(ttl);
        let asked = std::sync::Arc::clone(&self.asked);
        self.conn.run(step, async |client: &mut Client| {
            let lease = client.lease_grant(secs, None).await?.id();
            let answer = client.txn(txn(lease)).await?;
            if answer.succeeded() {
                lock(&asked).insert(lease, secs);
            } else {
                // Unused: let it go now rather than at its expiry.
                let _ = client.lease_revoke(lease).await;
            }
            Ok((answer.succeeded(), answer.op_responses()))
        })
    }
}

impl LeaseSteps for EtcdLeases {
    fn describe(&self) -> String {
        self.conn.describe()
    }

    fn kind(&self) -> StoreKind {
        StoreKind::Etcd
    }

    fn read(&self, worker_id: u64) -> Result<(Option<LeaseRow>, u64), StoreError> {
        let (holder, mark) = (self.holder_key(worker_id), self.mark_key(worker_id));
        let (row, ttl_left) = self.conn.run("reading the lease", async |client| {
            let answer = client
                .txn(read_together(&[
                    (holder.as_str(), false),
                    (mark.as_str(), false),
                ]))
                .await?;
            let answers = answer.op_responses();
            let held = got(&answers, 0)
                .first()
                .map(|kv| (String::from_utf8_lossy(kv.value()).into_owned(), kv.lease()));
            let exists = !got(&answers, 1).is_empty();
            let ttl_left = match &held {
                Some((_, lease)) if *lease != 0 => {
                    client.lease_time_to_live(*lease, None).await?.ttl().max(0)
                }
                _ => 0,
            };
            Ok(((exists, held), ttl_left))
        })?;
        let now = now_ms();
        let (exists, held) = row;
        let row = exists.then(|| LeaseRow {
            expires_ms: match &held {
                Some(_) => now + u64::try_from(ttl_left).unwrap_or(0) * 1000,
                None => 0,
            },
            holder: held.map(|(holder, _)| holder),
        });
        Ok((row, now))
    }

    fn lowest(&self, min: u64, max: u64) -> Result<(Option<u64>, u64), StoreError> {
        let holders = kind_prefix(self.conn.key_prefix(), "holder");
        let marks = kind_prefix(self.conn.key_prefix(), "mark");
        let (held, marked) = self
            .conn
            .run("looking for a free worker ID", async |client| {
                let answer = client
                    .txn(read_together(&[
                        (holders.as_str(), true),
                        (marks.as_str(), true),
                    ]))
                    .await?;
                let answers = answer.op_responses();
                // A holder key with no lease (restored from a backup) holds nothing.
                let ids = |index, leased: bool| -> Vec<u64> {
                    got(&answers, index)
                        .iter()
                        .filter(|kv| !leased || kv.lease() != 0)
                        .filter_map(|kv| id_of(kv.key()))
                        .collect()
                };
                Ok((ids(0, true), ids(1, false)))
            })?;
        let free = marked
            .iter()
            .copied()
            .filter(|id| (min..=max).contains(id))
            .find(|id| held.binary_search(id).is_err());
        Ok((free, first_unused(&marked, min)))
    }

    fn take(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<Option<u64>, StoreError> {
        let (holder_key, mark_key) = (self.holder_key(worker_id), self.mark_key(worker_id));
        // Free, already this holder's (an answer lost, asked again), or held by a key
        // that no live lease carries (restored from a backup): replaced at the revision
        // seen, so a holder that came between makes the transaction fail.
        let seen = self.conn.run("taking the lease", async |client| {
            let answer = client.get(holder_key.clone(), None).await?;
            let Some(kv) = answer.kvs().first() else {
                return Ok(None);
            };
            let ours = kv.value() == holder.as_bytes();
            let live = ours || live_lease(client, kv.lease()).await?;
            Ok(Some((live && !ours, kv.mod_revision())))
        })?;
        let held_by_us = match seen {
            Some((true, _)) => return Ok(None),
            Some((false, revision)) => Some(revision),
            None => None,
        };
        let (taken, answers) = self.with_new_lease("taking the lease", ttl, |lease| {
            let free_or_ours = match held_by_us {
                Some(revision) => {
                    Compare::mod_revision(holder_key.clone(), CompareOp::Equal, revision)
                }
                None => Compare::create_revision(holder_key.clone(), CompareOp::Equal, 0),
            };
            Txn::new()
                .when([
                    Compare::create_revision(mark_key.clone(), CompareOp::NotEqual, 0),
                    free_or_ours,
                ])
                .and_then([
                    TxnOp::put(
                        holder_key.clone(),
                        holder,
                        Some(PutOptions::new().with_lease(lease)),
                    ),
                    TxnOp::get(mark_key.clone(), None),
                ])
        })?;
        if !taken {
            return Ok(None);
        }
        let mark = got(&answers, 1)
            .first()
            .and_then(|kv| number(kv.value()))
            .ok_or_else(|| self.conn.unexpected("taking the lease", "no time mark"))?;
        Ok(Some(mark))
    }

    fn insert(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        let (holder_key, mark_key) = (self.holder_key(worker_id), self.mark_key(worker_id));
        let (inserted, answers) = self.with_new_lease("creating a lease row", ttl, |lease| {
            Txn::new()
                .when([Compare::create_revision(
                    mark_key.clone(),
                    CompareOp::Equal,
                    0,
                )])
                .and_then([
                    TxnOp::put(mark_key.clone(), padded(0), None),
                    TxnOp::put(
                        holder_key.clone(),
                        holder,
                        Some(PutOptions::new().with_lease(lease)),
                    ),
                ])
                .or_else([
                    TxnOp::get(holder_key.clone(), None),
                    TxnOp::get(mark_key.clone(), None),
                ])
        })?;
        if inserted {
            return Ok(true);
        }
        // Created already: by this holder, whose answer was lost, when it still holds it
        // with the mark it was created with.
        let ours = got(&answers, 0)
            .first()
            .is_some_and(|kv| kv.value() == holder.as_bytes());
        let unused = got(&answers, 1)
            .first()
            .is_some_and(|kv| number(kv.value()) == Some(0));
        Ok(ours && unused)
    }

    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        let (holder_key, mark_key) = (self.holder_key(worker_id), self.mark_key(worker_id));
        let wanted = ttl_secs(ttl);
        let asked = std::sync::Arc::clone(&self.asked);
        self.conn.run("renewing the lease", async |client| {
            // The mark first: it only rises, and only while the key is this holder's (a
            // mark raised by a holder whose lease just expired only makes the next
            // holder start higher). The answer names the holder key's lease.
            let raised = client
                .txn(
                    Txn::new()
                        .when([
                            Compare::value(holder_key.clone(), CompareOp::Equal, holder),
                            Compare::value(mark_key.clone(), CompareOp::Less, padded(mark_ms)),
                        ])
                        .and_then([
                            TxnOp::put(mark_key.clone(), padded(mark_ms), None),
                            TxnOp::get(holder_key.clone(), None),
                        ])
                        .or_else([TxnOp::get(holder_key.clone(), None)]),
                )
                .await?;
            let answers = raised.op_responses();
            let index = usize::from(raised.succeeded());
            let Some(kv) = got(&answers, index).first() else {
                // Its etcd lease expired (or it was released): never renewed.
                return Ok(false);
            };
            if kv.value() != holder.as_bytes() || kv.lease() == 0 {
                return Ok(false);
            }
            let lease = kv.lease();
            let (mut keeper, mut stream) = client.lease_keep_alive(lease).await?;
            keeper.keep_alive().await?;
            let granted = match stream.message().await? {
                Some(answer) if answer.ttl() > 0 => answer.ttl(),
                // Expired on the cluster: a new acquire, above the mark, is the way back.
                _ => return Ok(false),
            };
            let asked_for = lock(&asked).get(&lease).copied();
            if granted != wanted && asked_for != Some(wanted) {
                // A keep-alive renews for the TTL the lease was granted with: another TTL
                // takes a new lease, moved under the key while it is still this holder's
                // on the old one (etcd's minimum TTL may still make it longer).
                let new = client.lease_grant(wanted, None).await?.id();
                lock(&asked).insert(new, wanted);
                let moved = client
                    .txn(
                        Txn::new()
                            .when([
                                Compare::value(holder_key.clone(), CompareOp::Equal, holder),
                                Compare::lease(holder_key.clone(), CompareOp::Equal, lease),
                            ])
                            .and_then([TxnOp::put(
                                holder_key.clone(),
                                holder,
                                Some(PutOptions::new().with_lease(new)),
                            )]),
                    )
                    .await?;
                let unused = if moved.succeeded() { lease } else { new };
                lock(&asked).remove(&unused);
                let _ = client.lease_revoke(unused).await;
                return Ok(moved.succeeded());
            }
            Ok(true)
        })
    }

    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        let (holder_key, mark_key) = (self.holder_key(worker_id), self.mark_key(worker_id));
        let asked = std::sync::Arc::clone(&self.asked);
        self.conn.run("releasing the lease", async |client| {
            let answer = client
                .txn(
                    Txn::new()
                        .when([Compare::value(holder_key.clone(), CompareOp::Equal, holder)])
                        .and_then([
                            TxnOp::get(holder_key.clone(), None),
                            TxnOp::delete(holder_key.clone(), None),
                            TxnOp::put(mark_key.clone(), padded(mark_ms), None),
                        ]),
                )
                .await?;
            if !answer.succeeded() {
                return Ok(false);
            }
            let answers = answer.op_responses();
            if let Some(lease) = got(&answers, 0).first().map(|kv| kv.lease()) {
                // Its only key is gone; the lease would expire by itself.
                lock(&asked).remove(&lease);
                let _ = client.lease_revoke(lease).await;
            }
            Ok(true)
        })
    }

    fn list(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        let holders = kind_prefix(self.conn.key_prefix(), "holder");
        let marks = kind_prefix(self.conn.key_prefix(), "mark");
        let step = "listing the leases";
        let (held, marked) = self.conn.run(step, async |client| {
            let answer = client
                .txn(read_together(&[
                    (holders.as_str(), true),
                    (marks.as_str(), true),
                ]))
                .await?;
            let answers = answer.op_responses();
            let mut held = BTreeMap::new();
            for kv in got(&answers, 0) {
                if let Some(id) = id_of(kv.key()) {
                    let left = match kv.lease() {
                        0 => 0,
                        lease => client.lease_time_to_live(lease, None).await?.ttl(),
                    };
                    let holder = String::from_utf8_lossy(kv.value()).into_owned();
                    held.insert(id, (holder, left.max(0)));
                }
            }
            let marked: Vec<(Option<u64>, Option<u64>)> = got(&answers, 1)
                .iter()
                .map(|kv| (id_of(kv.key()), number(kv.value())))
                .collect();
            Ok((held, marked))
        })?;
        let now = now_ms();
        marked
            .into_iter()
            .map(|(id, mark)| match (id, mark) {
                (Some(id), Some(mark)) => {
                    let (holder, expires_ms) = match held.get(&id) {
                        Some((holder, left)) => (
                            Some(holder.clone()),
                            now + u64::try_from(*left).unwrap_or(0) * 1000,
                        ),
                        None => (None, 0),
                    };
                    Ok(LeaseRecord::new(id, holder, expires_ms, now, mark))
                }
                _ => Err(self
                    .conn
                    .unexpected(step, "a mark key that is not a worker ID's")),
            })
            .collect()
    }
}

crate::store::lease::lease_store_over_steps!(EtcdLeaseStore, steps);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_whole_seconds_rounded_up() {
        assert_eq!(ttl_secs(Duration::from_secs(10)), 10);
        assert_eq!(ttl_secs(Duration::from_millis(1500)), 2);
        assert_eq!(ttl_secs(Duration::from_millis(1)), 1);
        assert_eq!(ttl_secs(Duration::ZERO), 1);
    }

    #[test]
    fn keys_list_in_the_order_of_their_worker_ids() {
        let keys: Vec<String> = [10, 2, 1000]
            .map(|id| id_key("p/lease/", "mark", id))
            .to_vec();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(sorted, [&keys[1], &keys[0], &keys[2]].map(String::clone));
        assert_eq!(id_of(keys[2].as_bytes()), Some(1000));
    }
}
