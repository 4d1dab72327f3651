//! What keeps a store that loses data (a Redis restarted without persistence or
//! FLUSHed, a dump restored, a replica promoted, an older SQLite file) from making uidgen
//! repeat an ID: written once here, over each engine's few steps for its own records
//! ([`RecordSteps`]).
//!
//! - **A store identity**: a random `store_id` written when the store is first set up.
//!   Every process remembers the one it saw and checks it on every store call and once a
//!   second; if it changes or vanishes, the process stops taking from that store and
//!   leaves word in it (`lost`), so processes started afterwards refuse it too, until
//!   `uidgen store repair` raises everything past what was handed out.
//! - **Floors**: the highest range end per tag and the highest time mark per worker ID,
//!   kept by the process, in the store's records (left by repairs and by processes that
//!   saw a loss) and in local memory ([`remember_stores_in`]). A range below a floor is
//!   refused and the counter raised past it (compare-and-set, never lowered); a lease's
//!   mark below one is raised at acquire.
//! - **No re-creation below a floor**: creating a tag that this store (or machine) is
//!   known to have served is refused below what was served.
//!
//! The stores opened through [`StoreUrl`](crate::StoreUrl) are guarded this way.

mod identity;
mod leases;
mod memory;
mod repair;
mod segments;

pub(crate) use self::leases::GuardedLeases;
pub use self::memory::remember_stores_in;
pub(crate) use self::memory::Memory;
pub(crate) use self::repair::repair;
pub use self::repair::RepairReport;
pub(crate) use self::segments::GuardedSegments;

use super::segment::SegmentStore;
use super::{StoreError, StoreKind};
use crate::sync::outside_loom::{lock, read, write, Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::sync::{RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// One engine's steps for the store's own records: a name and a value each.
pub(crate) trait RecordSteps: Send + Sync + 'static {
    /// Where the records are, for people and errors (never with a password).
    fn describe(&self) -> String;
    fn kind(&self) -> StoreKind;
    /// The values of `names`, in order (`None`: no such record).
    fn get(&self, names: &[&str]) -> Result<Vec<Option<String>>, StoreError>;
    /// Every record.
    fn all(&self) -> Result<Vec<(String, String)>, StoreError>;
    /// Writes `name` unless it exists; `true` if this call wrote it.
    fn insert(&self, name: &str, value: &str) -> Result<bool, StoreError>;
    /// Writes `name`, replacing any value.
    fn put(&self, name: &str, value: &str) -> Result<(), StoreError>;
    /// The file the store lives in, for an embedded store.
    fn local_file(&self) -> Option<std::path::PathBuf> {
        None
    }
}

/// The store's identity: a random number and when it was made (Unix ms).
pub(crate) const STORE_ID: &str = "store_id";
/// Word left by a process that saw the store lose data; empty once repaired.
pub(crate) const LOST: &str = "lost";
/// The identities a repair replaced, separated by spaces: machines that remember one of
/// them accept the new one.
pub(crate) const REPLACES: &str = "replaces";
/// The lowest time mark any lease is granted (Unix ms), set by a repair.
pub(crate) const MARK_FLOOR: &str = "mark_floor";
/// The identities that processes saw vanish or change (their random parts), left with
/// the word: a repair from any machine replaces them.
pub(crate) const LOST_IDENTITIES: &str = "lost_identities";

/// How far ahead of the clock the holders of an embedded store that was wiped may have
/// borrowed time: the cap of `uidgen next` and `uidgen serve`. An embedded store whose
/// file was emptied together with its state file (the state folder kept) starts its
/// leases this far ahead of the clock. A generator built with a larger `max_time_ahead`
/// (or none) on an embedded store that may be wiped is not covered: `uidgen serve` warns
/// when configured so.
pub const WIPED_STORE_AHEAD: Duration = Duration::from_secs(5);

/// How far past the highest ID known a counter is raised when the store went back: more
/// than any one range (Leaf's largest step) that a process missing from the count may hold.
pub const REPAIR_MARGIN: u64 = 1_000_000;

/// The record of the highest range end known for `tag` in `scope` (a table or prefix).
pub(crate) fn floor_name(scope: &str, tag: &str) -> String {
    short_name("floor", scope, tag)
}

/// The record that `tag` in `scope` was created through uidgen.
pub(crate) fn tag_name(scope: &str, tag: &str) -> String {
    short_name("tag", scope, tag)
}

/// The record of the highest mark of a worker ID in `scope`.
pub(crate) fn mark_name(scope: &str, worker_id: u64) -> String {
    short_name("mark", scope, &worker_id.to_string())
}

/// `kind:scope<TAB>what`, with `what` hashed when the name would not fit a record's
/// 255 characters.
fn short_name(kind: &str, scope: &str, what: &str) -> String {
    let name = format!("{kind}:{scope}\t{what}");
    if name.chars().count() <= 250 {
        return name;
    }
    let hash = what.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!(
        "{kind}:{}\t#{hash:016x}",
        scope.chars().take(200).collect::<String>()
    )
}

/// `value` raised by `margin`, if that is still a `BIGINT` a counter can hold.
pub(crate) fn past(value: u64, margin: u64) -> Option<u64> {
    value
        .checked_add(margin)
        .filter(|raised| *raised <= i64::MAX as u64)
}

/// A number in a record, 0 when absent or unreadable.
pub(crate) fn number(value: Option<&String>) -> u64 {
    value
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

static EVENTS: AtomicU64 = AtomicU64::new(0);
static LAST_EVENT: Mutex<Option<String>> = Mutex::new(None);

/// How many times this process found a store that lost data (a range below one handed
/// out, an identity that changed or vanished, a lease row gone) since it started.
pub fn data_loss_events() -> u64 {
    EVENTS.load(Ordering::Relaxed)
}

/// The last such finding, in words (store, tag or worker ID, what was done).
pub fn last_data_loss() -> Option<String> {
    lock(&LAST_EVENT).clone()
}

/// Counts a finding and logs it once, at ERROR.
pub(crate) fn report(what: String) {
    tracing::error!("uidgen: a store lost data: {what}");
    EVENTS.fetch_add(1, Ordering::Relaxed);
    *lock(&LAST_EVENT) = Some(what);
}

/// Unix milliseconds now (the machine's clock; only for records people read, the marks a
/// repair sets, and etcd's lease expiries, which etcd reports as a TTL left).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A new identity: 16 random hex digits and the time.
pub(crate) fn new_identity() -> String {
    format!("{:016x} {}", crate::process::random_u64(), now_ms())
}

/// Called with the reason when a store is found to have lost data.
pub(crate) type LossHook = Box<dyn Fn(&str) + Send + Sync>;

/// What a process knows of one store: shared by every guarded store of that place in
/// the process (its lease store and its segment store), found by the records' place.
pub(crate) struct Shared {
    records: Box<dyn RecordSteps>,
    key: String,
    memory: Option<Memory>,
    state: Mutex<State>,
    /// Called with the reason when the store is found to have lost data: leases stop.
    on_loss: Mutex<Vec<LossHook>>,
    /// The segment stores of this place in the process, by scope: the watcher compares
    /// their counters with the floors once a second.
    counters: Mutex<Vec<(String, Weak<dyn SegmentStore>)>>,
    /// An embedded store's file was there before this process first opened the store.
    file_was_there: bool,
    /// [`Shared::say_if_forgotten`] spoke.
    said_forgotten: std::sync::atomic::AtomicBool,
    /// Allocations hold it shared, give-backs alone: a floor lowered by a give-back is
    /// never compared with a range taken by a call that began before it.
    gate: RwLock<()>,
}

#[derive(Default)]
struct State {
    /// Counts every change of `identity`, `lost` or `lost_by_word`: a reply is judged
    /// against what this process knew when the read was sent, and a change since
    /// (another thread of this process adopted the identity, or saw word of a loss,
    /// while the reply was on its way) means the reply is older than that knowledge.
    generation: u64,
    /// The identity this process adopted.
    identity: Option<String>,
    /// Why this process takes nothing more from the store.
    lost: Option<String>,
    /// `lost` came from the store's own word (so it ends when a repair clears the word).
    lost_by_word: bool,
    /// (scope, tag) → the highest range end handed out or known.
    floors: HashMap<(String, String), u64>,
    /// (scope, worker ID) → the highest mark known.
    marks: HashMap<(String, u64), u64>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("store", &self.key)
            .finish_non_exhaustive()
    }
}

/// Every store place this process guards.
static REGISTRY: Mutex<Vec<(String, Weak<Shared>)>> = Mutex::new(Vec::new());

/// How many tags' counters the watcher compares with their floors a round.
const COUNTERS_A_ROUND: usize = 64;

/// How often a process checks each store's identity while it holds one of its stores.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// How old a network store's identity must be before a lease on it is used: by then
/// every process that held a lease before the store lost its data (and still reaches it)
/// has seen the identity change, stopped, and left word, which the new holder reads.
pub const YOUNG_STORE: Duration = Duration::from_millis(2_500);

impl Shared {
    /// The process's knowledge of the store whose records `records` reaches.
    pub(crate) fn of(records: Box<dyn RecordSteps>) -> Arc<Shared> {
        let key = records.describe();
        let mut registry = lock(&REGISTRY);
        registry.retain(|(_, weak)| weak.strong_count() > 0);
        if let Some(shared) = registry
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, weak)| weak.upgrade())
        {
            return shared;
        }
        let file_was_there = records.local_file().is_some_and(|file| file.exists());
        let shared = Arc::new(Shared {
            file_was_there,
            memory: Memory::for_store(&key),
            key: key.clone(),
            records,
            state: Mutex::new(State::default()),
            on_loss: Mutex::new(Vec::new()),
            gate: RwLock::new(()),
            counters: Mutex::new(Vec::new()),
            said_forgotten: std::sync::atomic::AtomicBool::new(false),
        });
        registry.push((key, Arc::downgrade(&shared)));
        let weak = Arc::downgrade(&shared);
        // The watcher ends once no store of this place is left.
        let _ = std::thread::Builder::new()
            .name("uidgen-store-watch".into())
            .spawn(move || loop {
                std::thread::sleep(WATCH_EVERY);
                let Some(shared) = weak.upgrade() else { return };
                let watching = {
                    let state = lock(&shared.state);
                    state.identity.is_some() && state.lost.is_none()
                };
                if watching && shared.check(&[]).is_ok() {
                    shared.check_counters();
                }
            });
        shared
    }

    pub(crate) fn kind(&self) -> StoreKind {
        self.records.kind()
    }

    pub(crate) fn records(&self) -> &dyn RecordSteps {
        &*self.records
    }

    pub(crate) fn memory(&self) -> Option<&Memory> {
        self.memory.as_ref()
    }

    /// Lets the watcher look at the counters of `scope` through `store`.
    pub(crate) fn watch_counters(&self, scope: &str, store: Weak<dyn SegmentStore>) {
        let mut counters = lock(&self.counters);
        counters.retain(|(_, store)| store.strong_count() > 0);
        counters.push((scope.to_owned(), store));
    }

    /// A counter below what this process knows was handed out (a dump restored, a
    /// replica promoted, while this process runs): raised past it at once, and reported,
    /// rather than at this process's next fetch, so others taking from the counter
    /// meanwhile do not get those IDs again. Up to [`COUNTERS_A_ROUND`] tags a round.
    fn check_counters(&self) {
        let stores: Vec<(String, Arc<dyn SegmentStore>)> = lock(&self.counters)
            .iter()
            .filter_map(|(scope, store)| Some((scope.clone(), store.upgrade()?)))
            .collect();
        for (scope, store) in stores {
            let floors: Vec<(String, u64)> = lock(&self.state)
                .floors
                .iter()
                .filter(|((s, _), _)| *s == scope)
                .map(|((_, tag), end)| (tag.clone(), *end))
                .take(COUNTERS_A_ROUND)
                .collect();
            for (tag, floor) in floors {
                // A give-back of this process lowers counter and floor together.
                let _gate = self.allocating();
                let Ok(Some(record)) = store.tag(&tag) else {
                    continue;
                };
                if record.max_id >= floor || record.max_id >= self.floor(&scope, &tag) {
                    continue;
                }
                let Some(to) = past(floor, REPAIR_MARGIN) else {
                    continue;
                };
                if let Ok(raised) = store.raise(&tag, record.max_id, to) {
                    report(format!(
                        "{}: tag {tag:?}'s counter went back to {} while this process had IDs \
                         up to {} (restored, or a replica behind); {}",
                        store.describe(),
                        record.max_id,
                        floor - 1,
                        if raised {
                            format!("raised to {to}")
                        } else {
                            "it moved meanwhile; the next fetch checks it".into()
                        }
                    ));
                    if raised {
                        let _ = raise_record(&*self.records, &floor_name(&scope, &tag), to);
                    }
                }
            }
        }
    }

    /// Held by an allocation from its floor snapshot to its check.
    pub(crate) fn allocating(&self) -> RwLockReadGuard<'_, ()> {
        read(&self.gate)
    }

    /// Held by a give-back and the floor it lowers.
    pub(crate) fn giving_back(&self) -> RwLockWriteGuard<'_, ()> {
        write(&self.gate)
    }

    /// Runs `hook` with the reason when this store is found to have lost data.
    pub(crate) fn on_loss(&self, hook: Box<dyn Fn(&str) + Send + Sync>) {
        if let Some(why) = lock(&self.state).lost.clone() {
            hook(&why);
            return;
        }
        lock(&self.on_loss).push(hook);
    }

    /// The error for a store this process no longer takes from.
    pub(crate) fn lost_error(&self, what: &str) -> StoreError {
        StoreError::DataLost {
            store: self.kind().name(),
            location: self.key.clone(),
            what: what.to_owned(),
        }
    }

    /// The highest range end known for a tag (process and local memory).
    pub(crate) fn floor(&self, scope: &str, tag: &str) -> u64 {
        lock(&self.state)
            .floors
            .get(&(scope.to_owned(), tag.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// Notes that `[.., end)` of `tag` was handed to this process: in the process, and
    /// durably in local memory before it is used.
    pub(crate) fn record_floor(&self, scope: &str, tag: &str, end: u64) -> Result<(), StoreError> {
        {
            let mut state = lock(&self.state);
            let floor = state
                .floors
                .entry((scope.to_owned(), tag.to_owned()))
                .or_default();
            *floor = (*floor).max(end);
        }
        if let Some(memory) = &self.memory {
            memory.update(|r| {
                let floor = r
                    .tags
                    .entry((scope.to_owned(), tag.to_owned()))
                    .or_default();
                *floor = (*floor).max(end);
            })?;
        }
        Ok(())
    }

    /// A range `[to, from)` of `tag` was given back (no one allocated after it): the
    /// floors that stood at `from` come down to `to`.
    pub(crate) fn lower_floor(
        &self,
        scope: &str,
        tag: &str,
        from: u64,
        to: u64,
    ) -> Result<(), StoreError> {
        let key = (scope.to_owned(), tag.to_owned());
        {
            let mut state = lock(&self.state);
            if state.floors.get(&key) == Some(&from) {
                state.floors.insert(key.clone(), to);
            }
        }
        if let Some(memory) = &self.memory {
            memory.update(|r| {
                if r.tags.get(&key) == Some(&from) {
                    r.tags.insert(key.clone(), to);
                }
            })?;
        }
        Ok(())
    }

    /// The highest mark known for a worker ID (process and local memory).
    pub(crate) fn mark(&self, scope: &str, worker_id: u64) -> u64 {
        lock(&self.state)
            .marks
            .get(&(scope.to_owned(), worker_id))
            .copied()
            .unwrap_or(0)
    }

    /// Notes a mark recorded in the store, durably in local memory too. With `exact`
    /// (a release, which records the mark of the ticks really used) it may come down.
    pub(crate) fn record_mark(
        &self,
        scope: &str,
        worker_id: u64,
        mark: u64,
        exact: bool,
    ) -> Result<(), StoreError> {
        let key = (scope.to_owned(), worker_id);
        let settle = |floor: &mut u64| *floor = if exact { mark } else { (*floor).max(mark) };
        settle(lock(&self.state).marks.entry(key.clone()).or_default());
        if let Some(memory) = &self.memory {
            memory.update(|r| settle(r.marks.entry(key.clone()).or_default()))?;
        }
        Ok(())
    }
}

/// Raises the number in record `name` to at least `value` (never lowers it).
pub(crate) fn raise_record(
    records: &dyn RecordSteps,
    name: &str,
    value: u64,
) -> Result<(), StoreError> {
    let current = number(records.get(&[name])?.first().and_then(Option::as_ref));
    if value > current {
        records.put(name, &value.to_string())?;
    }
    Ok(())
}
