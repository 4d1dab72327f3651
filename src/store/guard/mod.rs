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

    /// Checks the store's identity (adopting it on first use) and reads `extra` along
    /// in the same call; an error if the store lost data or this process saw it do so.
    ///
    /// The reply is judged against what this process knew *before* the read was sent:
    /// threads of one process taking their first lease on a new store at once must not
    /// take a reply that left before another thread wrote the identity for a store that
    /// lost it. Nothing is declared lost on one read: the identity is read again first.
    pub(crate) fn check(&self, extra: &[&str]) -> Result<Vec<Option<String>>, StoreError> {
        let mut names = vec![STORE_ID, LOST, REPLACES];
        names.extend_from_slice(extra);
        let before = self.knowledge();
        let mut values = self.records.get(&names)?;
        let rest = values.split_off(3);
        let (id, lost, replaces) = (values[0].take(), values[1].take(), values[2].take());
        if let Some(lost) = lost.filter(|l| !l.is_empty()) {
            let why = format!(
                "the store carries word that it lost data ({lost}); run `uidgen store repair` \
                 against it after checking it, then start again"
            );
            self.learn(before.generation, |state| {
                state.lost = Some(why.clone());
                state.lost_by_word = true;
            });
            return Err(self.lost_error(&why));
        }
        if before.lost_by_word {
            // The word is gone (repaired), unless a newer reply brought it meanwhile.
            self.learn(before.generation, |state| {
                state.lost_by_word = false;
                state.lost = None;
            });
        }
        let lost_here = before.lost.filter(|_| !before.lost_by_word);
        let replaces = replaces.unwrap_or_default();
        match (before.identity, id) {
            (Some(seen), Some(id)) if seen == id => {
                if let Some(why) = lost_here {
                    return Err(self.lost_error(&why));
                }
            }
            (Some(seen), Some(id)) if replaced(&replaces, &seen) => {
                // Repaired since: everything was raised past what was handed out.
                self.adopt(&id, &replaces)?;
                let mut was_lost = false;
                self.learn_always(|state| was_lost = state.lost.take().is_some());
                if was_lost {
                    tracing::warn!(store = %self.key, "uidgen: the store was repaired; taking from it again");
                }
            }
            (Some(_), _) if lost_here.is_some() => {
                return Err(self.lost_error(&lost_here.unwrap_or_default()));
            }
            (Some(seen), _) => {
                // Asked again: only what a second read still shows is taken as a loss.
                let mut again = self.records.get(&[STORE_ID, REPLACES])?;
                let (id, replaces) = (again[0].take(), again[1].take().unwrap_or_default());
                match id {
                    Some(id) if id == seen => {}
                    Some(id) if replaced(&replaces, &seen) => self.adopt(&id, &replaces)?,
                    None => {
                        return Err(
                            self.declare_lost(format!("its identity record {seen:?} vanished"))
                        )
                    }
                    Some(id) => {
                        return Err(self
                            .declare_lost(format!("its identity changed from {seen:?} to {id:?}")))
                    }
                }
            }
            (None, Some(id)) => {
                self.say_if_forgotten();
                self.adopt(&id, &replaces)?;
            }
            (None, None) => {
                if let Some(remembered) = self.remembered_identity()? {
                    // Another process of this machine may have made the identity since the
                    // read above (it writes the store first, then the memory): the store
                    // is asked again before it is called lost.
                    let now = self.records.get(&[STORE_ID])?.pop().flatten();
                    if now.as_deref() == Some(remembered.as_str()) {
                        self.adopt(&remembered, &replaces)?;
                        return Ok(rest);
                    }
                    self.load_memory_floors()?;
                    self.learn_always(|state| state.identity = Some(remembered.clone()));
                    return Err(self.declare_lost(format!(
                        "this machine used it before (identity {remembered:?}, remembered in {}), \
                         but it has no identity now: the store lost data (emptied or replaced: \
                         a restart without persistence, FLUSHALL, a new database); run `uidgen \
                         store repair` against it to raise it past what this machine handed out",
                        self.memory
                            .as_ref()
                            .map_or(String::new(), |m| m.path().display().to_string())
                    )));
                }
                if self.wiped() {
                    // Written before the identity, so that every process that sees the
                    // identity sees the floor in the same read.
                    let floor = now_ms().saturating_add(WIPED_STORE_AHEAD.as_millis() as u64);
                    raise_record(&*self.records, MARK_FLOOR, floor)?;
                    tracing::warn!(
                        store = %self.key,
                        "uidgen: this embedded store has no identity and this machine keeps no \
                         memory of it, but memory of an earlier store is kept beside it: it was \
                         wiped, and what was handed out from it is unknown; its leases start \
                         {} s ahead of the clock, past any time an earlier run may have borrowed",
                        WIPED_STORE_AHEAD.as_secs()
                    );
                }
                self.records.insert(STORE_ID, &new_identity())?;
                let id = self
                    .records
                    .get(&[STORE_ID])?
                    .pop()
                    .flatten()
                    .ok_or_else(|| {
                        self.lost_error("its identity record vanished right after it was written")
                    })?;
                self.adopt(&id, "")?;
                // Read again: what was read along came before the records written here (a
                // wiped store's mark floor among them).
                if !extra.is_empty() {
                    return self.records.get(extra);
                }
            }
        }
        Ok(rest)
    }

    /// What this process knows of the store now.
    fn knowledge(&self) -> Knowledge {
        let state = lock(&self.state);
        Knowledge {
            generation: state.generation,
            identity: state.identity.clone(),
            lost: state.lost.clone(),
            lost_by_word: state.lost_by_word,
        }
    }

    /// Applies what a reply showed, unless this process learned something since the read
    /// was sent (`generation`): then the reply is older than what the process knows.
    fn learn(&self, generation: u64, change: impl FnOnce(&mut State)) {
        let mut state = lock(&self.state);
        if state.generation == generation {
            change(&mut state);
            state.generation += 1;
        }
    }

    /// Applies a change whatever was learned meanwhile.
    fn learn_always(&self, change: impl FnOnce(&mut State)) {
        let mut state = lock(&self.state);
        change(&mut state);
        state.generation += 1;
    }

    /// An embedded store about to be given its first identity whose file was there
    /// before (emptied: `: > workers.sqlite3`), on a machine that kept memory of stores
    /// before but remembers no identity of this one (its state file removed or emptied):
    /// the store and its memory were wiped together. Runs on it moments ago may have used
    /// ticks up to [`WIPED_STORE_AHEAD`] past the clock, on worker IDs now free again, so
    /// its leases start past that. A new file (a new store, or one deleted rather than
    /// emptied) and a new machine (no memory folder yet) start at the clock: nothing tells
    /// them from a first use.
    fn wiped(&self) -> bool {
        self.kind() == StoreKind::Sqlite
            && self.file_was_there
            && self.memory.as_ref().is_some_and(Memory::folder_was_there)
    }

    /// Says once, at INFO, that an existing store has no state file on this machine (a
    /// new one, or one removed or emptied): nothing repeats (the store's own marks and counters hold),
    /// but an operator who removed it should know it is started again.
    fn say_if_forgotten(&self) {
        let Some(memory) = &self.memory else { return };
        if self.said_forgotten.load(Ordering::Relaxed) {
            return;
        }
        // Removed or emptied: no identity remembered (a damaged file is the adopt's error).
        if memory.read().is_ok_and(|r| r.identity.is_none())
            && !self.said_forgotten.swap(true, Ordering::Relaxed)
        {
            tracing::info!(
                store = %self.key,
                memory = %memory.path().display(),
                "uidgen keeps no memory of this store on this machine yet (a new, removed or \
                 emptied state file): starting one from what the store holds"
            );
        }
    }

    fn remembered_identity(&self) -> Result<Option<String>, StoreError> {
        match &self.memory {
            Some(memory) => Ok(memory.read()?.identity),
            None => Ok(None),
        }
    }

    /// Takes `id` as the store's identity, if local memory agrees, and loads the floors
    /// local memory holds.
    fn adopt(&self, id: &str, replaces: &str) -> Result<(), StoreError> {
        if let Some(memory) = &self.memory {
            let remembered = memory.read()?;
            if let Some(old) = &remembered.identity {
                if old != id && !replaced(replaces, old) {
                    self.load_memory_floors()?;
                    self.learn_always(|state| state.identity = Some(old.clone()));
                    return Err(self.declare_lost(format!(
                        "this machine last saw it with identity {old:?} (remembered in {}), and \
                         it now has {id:?}: it was replaced or lost its data (a restore of \
                         another copy, a restart without persistence, a new database); run \
                         `uidgen store repair` against it to raise it past what this machine \
                         handed out",
                        memory.path().display()
                    )));
                }
            }
            memory.update(|r| r.identity = Some(id.to_owned()))?;
            self.load_memory_floors()?;
        }
        self.learn_always(|state| state.identity = Some(id.to_owned()));
        Ok(())
    }

    /// Takes this machine's floors of the store into the process's.
    fn load_memory_floors(&self) -> Result<(), StoreError> {
        let Some(memory) = &self.memory else {
            return Ok(());
        };
        let remembered = memory.read()?;
        let mut state = lock(&self.state);
        for (key, end) in remembered.tags {
            let floor = state.floors.entry(key).or_default();
            *floor = (*floor).max(end);
        }
        for (key, mark) in remembered.marks {
            let floor = state.marks.entry(key).or_default();
            *floor = (*floor).max(mark);
        }
        Ok(())
    }

    /// Stops taking from the store, reports it, leaves word in the store (with every
    /// floor this process knows) and stops the leases on it; the error to return.
    pub(crate) fn declare_lost(&self, what: String) -> StoreError {
        let why = format!(
            "{what}: the store lost data (a restart without persistence, FLUSHALL, a restore, \
             a promoted replica); this process takes nothing more from it. After checking it, \
             run `uidgen store repair` against it, then start again"
        );
        {
            let mut state = lock(&self.state);
            if state.lost.is_some() {
                return self.lost_error(&why);
            }
            state.lost = Some(why.clone());
            state.generation += 1;
        }
        report(format!("{}: {what}", self.key));
        // Leases stop first; each notes how far its ticks really went, so the word left
        // below carries the marks of the ticks used, not the ones recorded ahead.
        let hooks: Vec<LossHook> = lock(&self.on_loss).drain(..).collect();
        for hook in hooks {
            hook(&why);
        }
        let (floors, marks) = {
            let state = lock(&self.state);
            (state.floors.clone(), state.marks.clone())
        };
        let word = format!(
            "{} {what}; seen by {}",
            now_ms(),
            crate::process::holder_identity()
        );
        let seen = lock(&self.state).identity.clone();
        let left = (|| {
            self.records.put(LOST, &word)?;
            if let Some(random) = seen.as_deref().and_then(|s| s.split_whitespace().next()) {
                let listed = self.records.get(&[LOST_IDENTITIES])?.pop().flatten();
                let mut listed: Vec<String> = listed
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                if !listed.iter().any(|l| l == random) {
                    listed.push(random.to_owned());
                    self.records.put(LOST_IDENTITIES, &listed.join(" "))?;
                }
            }
            for ((scope, tag), end) in &floors {
                raise_record(&*self.records, &floor_name(scope, tag), *end)?;
            }
            for ((scope, worker), mark) in &marks {
                raise_record(&*self.records, &mark_name(scope, *worker), *mark)?;
            }
            Ok::<(), StoreError>(())
        })();
        if let Err(e) = left {
            tracing::warn!(error = %e, store = %self.key, "uidgen could not leave word of the data loss in the store");
        }
        self.lost_error(&why)
    }

    /// After a repair: `id` is the identity, and the store is taken from again.
    pub(crate) fn adopt_repaired(&self, id: &str) -> Result<(), StoreError> {
        if let Some(memory) = &self.memory {
            memory.update(|r| r.identity = Some(id.to_owned()))?;
        }
        self.learn_always(|state| {
            state.identity = Some(id.to_owned());
            state.lost = None;
        });
        Ok(())
    }

    /// A network store whose identity is brand new may have just lost its data while
    /// processes that used the old one still run: waits until they have seen it and left
    /// word (the caller then checks again); `true` if it waited.
    pub(crate) fn young_wait(&self, kind: StoreKind) -> bool {
        if kind == StoreKind::Sqlite {
            return false;
        }
        match self.identity_age().filter(|age| *age < YOUNG_STORE) {
            Some(age) => {
                std::thread::sleep(YOUNG_STORE - age);
                true
            }
            None => false,
        }
    }

    /// How long ago the identity this process adopted was made, if it has one.
    pub(crate) fn identity_age(&self) -> Option<Duration> {
        let identity = lock(&self.state).identity.clone()?;
        let made: u64 = identity.split_whitespace().nth(1)?.parse().ok()?;
        Some(Duration::from_millis(now_ms().saturating_sub(made)))
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

/// What a process knew of a store at one moment (see [`Shared::check`]).
struct Knowledge {
    generation: u64,
    identity: Option<String>,
    lost: Option<String>,
    lost_by_word: bool,
}

/// Whether `identity` is one of those a repair replaced (listed by their random part).
fn replaced(replaces: &str, identity: &str) -> bool {
    let random = identity.split_whitespace().next().unwrap_or_default();
    !random.is_empty() && replaces.split_whitespace().any(|r| r == random)
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
