//! Worker-ID leases on ZooKeeper sessions: a worker ID's time mark is a persistent node
//! that only rises and outlives every holder; its holder is an ephemeral node under it,
//! made by a session of the lease's own, so the ensemble ends the lease when that
//! session expires (its clock, not ours). Take, renew and give back are versioned
//! multi-operations; the algorithm over the steps is the one every store follows.

use super::{
    block_on, children, ended, mark_path, node_data, number, padded, sync, ZkConn, LEASE_NODE,
    STORE,
};
// This machine's clock: ZooKeeper has none to read (it decides expiry itself).
use crate::store::guard::now_ms;
use crate::store::lease::{first_unused, LeaseRecord, LeaseRow, LeaseSteps};
use crate::store::{StoreError, StoreKind};
use crate::sync::{lock, Arc, Mutex};
use std::collections::HashMap;
use std::time::Duration;
use zookeeper_client::{Client, CreateMode, MultiReadResult, MultiWriteError};

/// The shortest session a lease gets: ZooKeeper's client pings every third of it, and
/// those pings must get through a loaded machine. A lease asked for less lasts this long
/// on the ensemble (longer is safe: a successor only waits longer).
const MIN_LEASE_SESSION: Duration = Duration::from_secs(2);

/// How many worker IDs one multi-read asks about.
const READ_BATCH: usize = 256;

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) on a
/// ZooKeeper ensemble (the `zookeeper` feature):
/// `zookeeper://host:2181,host:2181,host:2181/PATH`, every member named so the client
/// goes on through the loss of any of them.
///
/// Under `PATH/lease` (or [`prefix`](Self::prefix)): a persistent node per worker ID,
/// named by its 20 digits, holding its time mark; and under it `holder`, an ephemeral
/// node made by a ZooKeeper session of the lease's own, whose timeout is the lease's TTL
/// (at least 2 s). The session is pinged by a thread of this process between renewals;
/// a renewal raises the mark in a multi-operation that checks the holder node. When the
/// session expires (a process stopped, paused or cut off for longer than the TTL) the
/// ensemble deletes the holder node, the lease is over, and the next holder starts above
/// the mark. Only members that serve the quorum are asked.
///
/// In Leaf mode (`?leaf=NAME` in the URL) worker IDs are only those handed over from the
/// Leaf snowflake fleet NAME ([`LeafFleet::take`](crate::LeafFleet::take)), or new ones
/// taken from that fleet's own counter, never one a Leaf may hold.
///
/// Every step (connecting, authenticating, each request) is bounded by
/// [`timeout`](Self::timeout). With `user:password@` in the URL, the session
/// authenticates as that digest user and the nodes it makes are that user's alone.
/// `Debug` and errors never show the password.
///
/// ```no_run
/// use uidgen::{BitsAllocator, WorkerLease, ZooKeeperLeaseStore};
///
/// let store = ZooKeeperLeaseStore::new("zookeeper://10.0.0.1,10.0.0.2,10.0.0.3/ids")?;
/// let lease = WorkerLease::builder(store).acquire(&BitsAllocator::default())?;
/// println!("worker ID {}", lease.worker_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ZooKeeperLeaseStore {
    steps: ZkLeases,
}

/// A lease by its holder and worker ID.
type LeaseKey = (String, u64);

/// The lease steps: the connection, and the session of each lease this store holds.
#[derive(Clone)]
struct ZkLeases {
    conn: ZkConn,
    /// The session of each lease held, by holder and worker ID.
    held: Arc<Mutex<HashMap<LeaseKey, Arc<LeaseSession>>>>,
    /// Sessions whose lease was given back, kept for the next take with the same TTL.
    idle: Arc<Mutex<Vec<Arc<LeaseSession>>>>,
}

/// A lease's own ZooKeeper session, on a runtime that runs only during the lease's
/// steps: nothing pings the session between them, so it lives exactly as long as the
/// lease is renewed, and a holder that stops renewing (stuck, paused, cut off) loses it
/// on the ensemble's clock, as a lease on any other store expires.
struct LeaseSession {
    /// `None` only while dropping (the client goes before its runtime).
    client: Option<Client>,
    runtime: Option<tokio::runtime::Runtime>,
    /// The TTL it was opened for.
    ttl: Duration,
    /// When its last step began: an idle session is only reused while surely alive.
    used: Mutex<std::time::Instant>,
    /// When its last step that reached the ensemble began.
    answered: Mutex<std::time::Instant>,
}

impl Drop for LeaseSession {
    fn drop(&mut self) {
        self.client = None;
        // Dropping a runtime inside another runtime's task panics; this never blocks.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl LeaseSession {
    fn client(&self) -> &Client {
        self.client.as_ref().expect("only taken while dropping")
    }

    /// Runs `work` on the session, within `timeout`.
    fn run<T: Send>(
        &self,
        conn: &ZkConn,
        step: &'static str,
        work: impl AsyncFnOnce(&Client) -> Result<T, zookeeper_client::Error> + Send,
    ) -> Result<Result<T, zookeeper_client::Error>, StoreError> {
        let began = std::time::Instant::now();
        *lock(&self.used) = began;
        let runtime = self.runtime.as_ref().expect("only taken while dropping");
        let client = self.client();
        let answer = block_on(runtime, move || async move {
            tokio::time::timeout(conn.timeout, work(client))
                .await
                .map_err(|_| conn.timed_out(step))
        });
        let reached = match &answer {
            Ok(Ok(_)) => true,
            Ok(Err(e)) => !matches!(
                e,
                zookeeper_client::Error::ConnectionLoss
                    | zookeeper_client::Error::Timeout
                    | zookeeper_client::Error::SessionExpired
                    | zookeeper_client::Error::ClientClosed
            ),
            Err(_) => false,
        };
        if reached {
            *lock(&self.answered) = began;
        }
        answer
    }

    /// Whether the ensemble has surely expired the session: no step reached it for longer
    /// than the session's timeout (so no request could have kept it alive).
    fn surely_expired(&self) -> bool {
        ended(self.client()) || lock(&self.answered).elapsed() > self.client().session_timeout()
    }

    /// Whether it can take another lease: alive, and idle for less than a quarter of its
    /// timeout (nothing pinged it meanwhile).
    fn reusable(&self, ttl: Duration) -> bool {
        self.ttl == ttl
            && !ended(self.client())
            && lock(&self.used).elapsed() < self.client().session_timeout() / 4
    }
}

crate::store::net::key_value_store_face!(
    ZooKeeperLeaseStore,
    steps.conn,
    "ZooKeeper ensemble",
    "lease, under the URL's own path"
);

impl ZooKeeperLeaseStore {
    /// The store on the ensemble at `url`; nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            steps: ZkLeases {
                conn: ZkConn::new(url)?.with_prefix(LEASE_NODE)?,
                held: Default::default(),
                idle: Default::default(),
            },
        })
    }

    /// Deletes the store's nodes, with every lease and time mark. Only for a store no
    /// generator will use again (tests, a retired deployment).
    pub fn destroy(&self) -> Result<(), StoreError> {
        let prefix = self.steps.conn.key_prefix().to_owned();
        self.steps.conn.run("deleting the nodes", async |client| {
            ZkConn::delete_tree(client, &prefix).await
        })
    }
}

/// The data of a holder node: how long its session lasts without a ping, and who.
fn holder_data(session: Duration, holder: &str) -> String {
    format!("{} {holder}", session.as_millis())
}

/// The session timeout and holder of a holder node's data.
fn read_holder(data: &[u8]) -> Option<(u64, String)> {
    let text = std::str::from_utf8(data).ok()?;
    let (ms, holder) = text.split_once(' ')?;
    Some((ms.parse().ok()?, holder.to_owned()))
}

/// Whether a step's error is a node that changed or went between the read and the
/// write (someone was faster), rather than trouble with the ensemble.
fn lost_race(err: &MultiWriteError) -> bool {
    use zookeeper_client::Error as E;
    matches!(
        err,
        MultiWriteError::OperationFailed {
            source: E::NodeExists | E::NoNode | E::BadVersion,
            ..
        }
    )
}

impl ZkLeases {
    fn mark_path(&self, worker_id: u64) -> String {
        mark_path(self.conn.key_prefix(), worker_id)
    }

    fn holder_path(&self, worker_id: u64) -> String {
        format!("{}/holder", self.mark_path(worker_id))
    }

    /// A session for a lease of `ttl`: an idle one opened for the same, or a new one. A
    /// session the ensemble grants shorter than `ttl` is refused: the lease would end on
    /// the ensemble before its holder stops using it.
    fn session(&self, ttl: Duration) -> Result<Arc<LeaseSession>, StoreError> {
        let kept = {
            let mut idle = lock(&self.idle);
            idle.retain(|session| session.reusable(ttl));
            idle.pop()
        };
        if let Some(session) = kept {
            return Ok(session);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Other {
                store: STORE,
                location: self.conn.location().to_owned(),
                step: "starting a tokio runtime",
                source: Box::new(e),
            })?;
        let conn = &self.conn;
        let client = block_on(&runtime, move || async move {
            conn.connect(ttl.max(MIN_LEASE_SESSION)).await
        })?;
        let now = std::time::Instant::now();
        let session = LeaseSession {
            client: Some(client),
            runtime: Some(runtime),
            ttl,
            used: Mutex::new(now),
            answered: Mutex::new(now),
        };
        if session.client().session_timeout() < ttl {
            return Err(StoreError::Unexpected {
                store: STORE,
                location: self.conn.location().to_owned(),
                step: "opening a lease's session",
                what: format!(
                    "the ensemble grants sessions of at most {:?}, less than the lease's TTL \
                     of {ttl:?}: lower the TTL, or raise the ensemble's maxSessionTimeout",
                    session.client().session_timeout()
                ),
            });
        }
        Ok(Arc::new(session))
    }

    /// Keeps `session` for a later take, when it can be.
    fn keep_idle(&self, session: Arc<LeaseSession>) {
        if session.reusable(session.ttl) {
            let mut idle = lock(&self.idle);
            if idle.len() < 8 {
                idle.push(session);
            }
        }
    }

    /// The session holding `worker_id` for `holder`, if this store has it.
    fn held_by(&self, holder: &str, worker_id: u64) -> Option<Arc<LeaseSession>> {
        lock(&self.held)
            .get(&(holder.to_owned(), worker_id))
            .cloned()
    }

    fn hold(&self, holder: &str, worker_id: u64, session: Arc<LeaseSession>) {
        lock(&self.held).insert((holder.to_owned(), worker_id), session);
    }

    fn forget(&self, holder: &str, worker_id: u64) -> Option<Arc<LeaseSession>> {
        lock(&self.held).remove(&(holder.to_owned(), worker_id))
    }

    /// The answer of a renewal or a give-back: a lease whose holder node is gone, or
    /// whose session expired (said by the ensemble, or sure from the time no step reached
    /// it), is over, and its session forgotten. Any other failure may pass: it is an
    /// error, and the lease's keeper tries again.
    fn settle(
        &self,
        holder: &str,
        worker_id: u64,
        step: &'static str,
        answer: Result<bool, zookeeper_client::Error>,
    ) -> Result<bool, StoreError> {
        let expired = || {
            self.held_by(holder, worker_id)
                .is_some_and(|session| session.surely_expired())
        };
        match answer {
            Ok(true) => Ok(true),
            Ok(false) | Err(zookeeper_client::Error::SessionExpired) => {
                self.forget(holder, worker_id);
                Ok(false)
            }
            Err(_) if expired() => {
                self.forget(holder, worker_id);
                Ok(false)
            }
            Err(e) => Err(self.conn.explain(e, step)),
        }
    }

    /// A renewal for another TTL than the lease's session was opened for: the holder
    /// node moves to a session of that TTL, in one multi-operation that checks it is
    /// still this holder's, and the mark is raised with it.
    fn move_lease(
        &self,
        from: &LeaseSession,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        let (mark_path, holder_path) = (self.mark_path(worker_id), self.holder_path(worker_id));
        let step = "renewing the lease for another TTL";
        let owner = from.client().session_id().0;
        let data = holder_data(ttl.max(MIN_LEASE_SESSION), holder);
        let options = self.conn.options(CreateMode::Ephemeral);
        let moved = self.with_session(step, ttl, async |client| {
            // A new session may be on a member behind the leader.
            sync(client, &holder_path).await?;
            let (held, stat) = match client.get_data(&holder_path).await {
                Ok(found) => found,
                Err(zookeeper_client::Error::NoNode) => return Ok(false),
                Err(e) => return Err(e),
            };
            if stat.ephemeral_owner != owner || read_holder(&held).is_none_or(|(_, by)| by != holder)
            {
                return Ok(false);
            }
            let (mark, marked) = client.get_data(&mark_path).await?;
            let mut writes = client.new_multi_writer();
            writes.add_delete(&holder_path, Some(stat.version))?;
            writes.add_create(&holder_path, data.as_bytes(), &options)?;
            // The mark's version checked either way: a take since the read moved it.
            if number(&mark).is_none_or(|mark| mark < mark_ms) {
                writes.add_set_data(&mark_path, padded(mark_ms).as_bytes(), Some(marked.version))?;
            } else {
                writes.add_check_version(&mark_path, marked.version)?;
            }
            match writes.commit().await {
                Ok(_) => Ok(true),
                Err(e) if lost_race(&e) => Ok(false),
                Err(e) => Err(e.into()),
            }
        })?;
        match moved {
            Some(session) => {
                self.hold(holder, worker_id, session);
                Ok(true)
            }
            None => {
                self.forget(holder, worker_id);
                Ok(false)
            }
        }
    }

    /// Runs a step with a new lease session (or an idle one) opened for `ttl`: the
    /// session when the step took the lease (`Some`). A step that took nothing leaves
    /// the session as it was, kept for another take; one that failed leaves its state
    /// unknown, so the session is dropped (its nodes go when it expires).
    fn with_session(
        &self,
        step: &'static str,
        ttl: Duration,
        work: impl AsyncFnOnce(&Client) -> Result<bool, zookeeper_client::Error> + Send,
    ) -> Result<Option<Arc<LeaseSession>>, StoreError> {
        let session = self.session(ttl)?;
        match session.run(&self.conn, step, work)? {
            Ok(true) => Ok(Some(session)),
            Ok(false) => {
                self.keep_idle(session);
                Ok(None)
            }
            Err(e) => Err(self.conn.explain(e, step)),
        }
    }
}

impl LeaseSteps for ZkLeases {
    fn describe(&self) -> String {
        self.conn.describe()
    }

    fn kind(&self) -> StoreKind {
        StoreKind::ZooKeeper
    }

    fn check_layout(&self, bits: &crate::BitsAllocator) -> Result<(), StoreError> {
        let Some(leaf) = self.conn.leaf() else {
            return Ok(());
        };
        // Leaf's IDs: 41 bits of ms since its epoch, 10 of worker ID, 12 of sequence.
        let leaf_layout = crate::Preset::Snowflake
            .builder()
            .build()
            .map_err(|e| self.conn.unexpected("checking the layout", e.to_string()))?;
        let shape = |b: &crate::BitsAllocator| {
            (
                b.time_bits(),
                b.worker_bits(),
                b.seq_bits(),
                b.region_bits(),
                b.unit(),
                b.epoch_millis(),
            )
        };
        if shape(bits) == shape(&leaf_layout) {
            return Ok(());
        }
        Err(self.conn.unexpected(
            "checking the layout",
            format!(
                "in Leaf mode (leaf={leaf}) worker IDs are shared with Leaf's fleet, so IDs \
                 must have Leaf's layout: 41 time bits of ms since 2010-11-04T01:42:54.657Z \
                 (epoch {}), 10 worker bits, 12 sequence bits (preset snowflake, --layout \
                 snowflake); this one has {} time bits of {:?} since epoch {}, {} worker bits, \
                 {} sequence bits, {} region bits, and its IDs would not stay above Leaf's",
                leaf_layout.epoch_millis(),
                bits.time_bits(),
                bits.unit(),
                bits.epoch_millis(),
                bits.worker_bits(),
                bits.seq_bits(),
                bits.region_bits()
            ),
        ))
    }

    fn read(&self, worker_id: u64) -> Result<(Option<LeaseRow>, u64), StoreError> {
        let (mark, holder) = (self.mark_path(worker_id), self.holder_path(worker_id));
        let prefix = self.conn.key_prefix().to_owned();
        let found = self.conn.run("reading the lease", async |client| {
            sync(client, &prefix).await?;
            let mut reads = client.new_multi_reader();
            reads.add_get_data(&mark)?;
            reads.add_get_data(&holder)?;
            let answers = reads.commit().await?;
            if node_data(answers.first())?.is_none() {
                return Ok(None);
            }
            Ok(Some(
                node_data(answers.get(1))?.and_then(|(data, _)| read_holder(data)),
            ))
        })?;
        let now = now_ms();
        let row = found.map(|held| LeaseRow {
            expires_ms: held.as_ref().map_or(0, |(ms, _)| now.saturating_add(*ms)),
            holder: held.map(|(_, holder)| holder),
        });
        Ok((row, now))
    }

    fn lowest(&self, min: u64, max: u64) -> Result<(Option<u64>, u64), StoreError> {
        let prefix = self.conn.key_prefix().to_owned();
        let (marked, free) = self
            .conn
            .run("looking for a free worker ID", async |client| {
                sync(client, &prefix).await?;
                let mut marked: Vec<u64> = children(client, &prefix)
                    .await?
                    .iter()
                    .filter_map(|name| number(name.as_bytes()))
                    .collect();
                marked.sort_unstable();
                let candidates: Vec<u64> = marked
                    .iter()
                    .copied()
                    .filter(|id| (min..=max).contains(id))
                    .collect();
                for batch in candidates.chunks(READ_BATCH) {
                    let mut reads = client.new_multi_reader();
                    for id in batch {
                        reads.add_get_children(&format!("{prefix}/{}", padded(*id)))?;
                    }
                    let answers = reads.commit().await?;
                    for (id, answer) in batch.iter().zip(&answers) {
                        match answer {
                            MultiReadResult::Children { children } if children.is_empty() => {
                                return Ok((marked, Some(*id)));
                            }
                            MultiReadResult::Children { .. }
                            | MultiReadResult::Error {
                                err: zookeeper_client::Error::NoNode,
                            } => {}
                            MultiReadResult::Error { err } => return Err(err.clone()),
                            _ => {}
                        }
                    }
                }
                Ok((marked, None))
            })?;
        let Some(leaf) = self.conn.leaf() else {
            return Ok((free, first_unused(&marked, min)));
        };
        // Leaf mode: never a worker ID of uidgen's choosing, which a Leaf may hold; a
        // handed-over one, or a new one from Leaf's counter, its mark made with it.
        if free.is_some() {
            return Ok((free, u64::MAX));
        }
        let conn = &self.conn;
        let reserved = self
            .conn
            .run("taking a worker ID from Leaf's counter", async |client| {
                let worker_id = super::leaf::reserve(conn, client, leaf).await?;
                if worker_id > max {
                    return Ok(None);
                }
                conn.make_path(client, &prefix).await?;
                let options = conn.options(CreateMode::Persistent);
                let mark = format!("{prefix}/{}", padded(worker_id));
                client.create(&mark, padded(0).as_bytes(), &options).await?;
                Ok(Some(worker_id))
            })?;
        Ok((reserved.filter(|id| *id >= min), u64::MAX))
    }

    fn take(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<Option<u64>, StoreError> {
        let (mark_path, holder_path) = (self.mark_path(worker_id), self.holder_path(worker_id));
        // The mark and its version, and whether a holder is there (and if so, whose
        // session made it).
        // Read without a sync: `lowest` (or `read`) synced just before, and a stale
        // version only fails the multi-operation below.
        let seen = self.conn.run("taking the lease", async |client| {
            let mut reads = client.new_multi_reader();
            reads.add_get_data(&mark_path)?;
            reads.add_get_data(&holder_path)?;
            let answers = reads.commit().await?;
            let Some((mark, stat)) = node_data(answers.first())? else {
                return Ok(None);
            };
            let by = node_data(answers.get(1))?.map(|(_, held)| held.ephemeral_owner);
            Ok(Some((number(mark), stat.version, by)))
        })?;
        let Some((mark, version, by)) = seen else {
            return Ok(None);
        };
        let mark = mark
            .ok_or_else(|| self.conn.unexpected("taking the lease", "a mark that is not a number"))?;
        if let Some(owner) = by {
            // This lease's own session (an answer lost, asked again), or another's.
            let ours = self
                .held_by(holder, worker_id)
                .is_some_and(|session| session.client().session_id().0 == owner);
            return Ok(ours.then_some(mark));
        }
        let data = holder_data(ttl.max(MIN_LEASE_SESSION), holder);
        let options = self.conn.options(CreateMode::Ephemeral);
        let taken = self.with_session("taking the lease", ttl, async |session| {
            let mut writes = session.new_multi_writer();
            // The mark rewritten with its own value: its version moves, so a step of an
            // earlier holder read before this take (whose holder node, made anew, has
            // version 0 as its own had) fails its check of the mark's version.
            writes.add_set_data(&mark_path, padded(mark).as_bytes(), Some(version))?;
            writes.add_create(&holder_path, data.as_bytes(), &options)?;
            match writes.commit().await {
                Ok(_) => Ok(true),
                Err(e) if lost_race(&e) => Ok(false),
                Err(e) => Err(e.into()),
            }
        })?;
        Ok(taken.map(|session| {
            self.hold(holder, worker_id, session);
            mark
        }))
    }

    fn insert(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        if let Some(leaf) = self.conn.leaf() {
            return Err(self.conn.unexpected(
                "creating a lease row",
                format!(
                    "worker ID {worker_id} was never handed over from Leaf {leaf:?} nor taken \
                     from its counter, so a Leaf may hold it; in Leaf mode ask for no worker \
                     ID, or hand it over first (uidgen migrate leaf-zk take)"
                ),
            ));
        }
        let (mark_path, holder_path) = (self.mark_path(worker_id), self.holder_path(worker_id));
        let prefix = self.conn.key_prefix().to_owned();
        let data = holder_data(ttl.max(MIN_LEASE_SESSION), holder);
        let (persistent, ephemeral) = (
            self.conn.options(CreateMode::Persistent),
            self.conn.options(CreateMode::Ephemeral),
        );
        let conn = &self.conn;
        let inserted = self.with_session("creating a lease row", ttl, async |session| {
            for first in [true, false] {
                let mut writes = session.new_multi_writer();
                writes.add_create(&mark_path, padded(0).as_bytes(), &persistent)?;
                writes.add_create(&holder_path, data.as_bytes(), &ephemeral)?;
                match writes.commit().await {
                    Ok(_) => return Ok(true),
                    // The store's node is not there yet: made once, then again.
                    Err(MultiWriteError::OperationFailed {
                        index: 0,
                        source: zookeeper_client::Error::NoNode,
                    }) if first => conn.make_path(session, &prefix).await?,
                    Err(e) if lost_race(&e) => return Ok(false),
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(false)
        })?;
        Ok(inserted
            .map(|session| self.hold(holder, worker_id, session))
            .is_some())
    }

    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        let Some(session) = self.held_by(holder, worker_id) else {
            // Not taken through this store object: its session is not ours to keep.
            return Ok(false);
        };
        let (mark_path, holder_path) = (self.mark_path(worker_id), self.holder_path(worker_id));
        let step = "renewing the lease";
        if session.ttl != ttl {
            return self.move_lease(&session, worker_id, holder, ttl, mark_ms);
        }
        let answer = session.run(&self.conn, step, async |client| {
            raise_mark(client, &mark_path, &holder_path, holder, mark_ms, false).await
        });
        match answer {
            Ok(answer) => self.settle(holder, worker_id, step, answer),
            Err(_) if session.surely_expired() => {
                self.forget(holder, worker_id);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        let (mark_path, holder_path) = (self.mark_path(worker_id), self.holder_path(worker_id));
        let step = "releasing the lease";
        let answer = match self.held_by(holder, worker_id) {
            Some(session) => session.run(&self.conn, step, async |client| {
                raise_mark(client, &mark_path, &holder_path, holder, mark_ms, true).await
            })?,
            // Taken by another store object of this holder (another process's view of
            // it): given back through the shared session, checked by the holder's name.
            None => self.conn.run(step, async |client| {
                Ok(raise_mark(client, &mark_path, &holder_path, holder, mark_ms, true).await)
            })?,
        };
        let released = self.settle(holder, worker_id, step, answer)?;
        if released {
            if let Some(session) = self.forget(holder, worker_id) {
                self.keep_idle(session);
            }
        }
        Ok(released)
    }
    fn list(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        let prefix = self.conn.key_prefix().to_owned();
        let step = "listing the leases";
        let found = self.conn.run(step, async |client| {
            sync(client, &prefix).await?;
            let mut ids: Vec<u64> = children(client, &prefix)
                .await?
                .iter()
                .filter_map(|name| number(name.as_bytes()))
                .collect();
            ids.sort_unstable();
            let mut found = Vec::with_capacity(ids.len());
            for batch in ids.chunks(READ_BATCH) {
                let mut reads = client.new_multi_reader();
                for id in batch {
                    let mark = format!("{prefix}/{}", padded(*id));
                    reads.add_get_data(&mark)?;
                    reads.add_get_data(&format!("{mark}/holder"))?;
                }
                let answers = reads.commit().await?;
                for (id, pair) in batch.iter().zip(answers.chunks(2)) {
                    let data = |answer| {
                        node_data(answer).map(|found| found.map(|(data, _)| data.to_vec()))
                    };
                    found.push((*id, data(pair.first())?, data(pair.get(1))?));
                }
            }
            Ok(found)
        })?;
        let now = now_ms();
        found
            .into_iter()
            // A mark deleted between the listing and the read: no lease.
            .filter(|(_, mark, _)| mark.is_some())
            .map(|(id, mark, held)| {
                let mark = mark
                    .as_deref()
                    .and_then(number)
                    .ok_or_else(|| self.conn.unexpected(step, "a mark that is not a number"))?;
                let held = held.as_deref().and_then(read_holder);
                let expires_ms = held.as_ref().map_or(0, |(ms, _)| now.saturating_add(*ms));
                Ok(LeaseRecord::new(
                    id,
                    held.map(|(_, holder)| holder),
                    expires_ms,
                    now,
                    mark,
                ))
            })
            .collect()
    }
}

/// Raises the mark to `mark_ms` (never lowers it) while the holder node is `holder`'s,
/// in one multi-operation that checks the holder node's version; with `give_back`, the
/// holder node is deleted in the same operation and the mark set to `mark_ms`. Whether
/// the holder was there.
async fn raise_mark(
    client: &Client,
    mark_path: &str,
    holder_path: &str,
    holder: &str,
    mark_ms: u64,
    give_back: bool,
) -> Result<bool, zookeeper_client::Error> {
    for _ in 0..16 {
        // Both in one read.
        let mut reads = client.new_multi_reader();
        reads.add_get_data(holder_path)?;
        reads.add_get_data(mark_path)?;
        let answers = reads.commit().await?;
        let (Some((data, held)), Some((mark, marked))) =
            (node_data(answers.first())?, node_data(answers.get(1))?)
        else {
            return Ok(false);
        };
        if read_holder(data).is_none_or(|(_, by)| by != holder) {
            return Ok(false);
        }
        let mut writes = client.new_multi_writer();
        if give_back {
            writes.add_delete(holder_path, Some(held.version))?;
        } else {
            writes.add_check_version(holder_path, held.version)?;
        }
        // A renewal only raises the mark; a give-back, which knows the exact ticks used,
        // sets it.
        if give_back || number(mark).is_none_or(|mark| mark < mark_ms) {
            writes.add_set_data(mark_path, padded(mark_ms).as_bytes(), Some(marked.version))?;
        } else {
            // Checked either way: a take since the read moved the mark's version (the
            // holder node it made has version 0, as this holder's had).
            writes.add_check_version(mark_path, marked.version)?;
        }
        match writes.commit().await {
            Ok(_) => return Ok(true),
            // The mark moved between the read and the write: read again.
            Err(MultiWriteError::OperationFailed {
                index: 1,
                source: zookeeper_client::Error::BadVersion,
            }) => continue,
            Err(e) if lost_race(&e) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(false)
}

crate::store::lease::lease_store_over_steps!(ZooKeeperLeaseStore, steps);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_node_reads_back_with_its_session_and_name() {
        let data = holder_data(Duration::from_millis(2500), "host/12/ab cd");
        assert_eq!(
            read_holder(data.as_bytes()),
            Some((2500, "host/12/ab cd".to_owned()))
        );
        assert_eq!(read_holder(b"x y"), None);
        assert_eq!(read_holder(b"100"), None);
    }
}
