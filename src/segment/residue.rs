//! One tag over several independent stores, each handing out only IDs ≡ r (mod d): the
//! database auto-increment scheme (`auto_increment_increment = d`, an offset per
//! database) and Tinyid's `delta`/`remainder`, on segment generators. Losing a store
//! loses its share, nothing more: takes go to whichever store answers.
//!
//! Store `i`'s counter value `c` is the ID `c × d + r_i`, so each store's IDs are its
//! class and no two stores can meet. The class is written into the tag's description in
//! each store and checked at every start, so a store is never served under another class
//! (which could repeat IDs it gave before).

use super::error::SegmentError;
use super::generator::SegmentGenerator;
use crate::error::UidError;
use crate::store::segment::{check_tag, SegmentStore};
use crate::store::StoreError;
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::wait::take::{self, Supply};
use crate::wait::TakeRejectPolicy;
use std::fmt;
use std::sync::{OnceLock, Weak};
use std::time::Duration;

/// The largest modulus: more classes than stores anyone runs, and IDs stay dense enough.
pub const MAX_RESIDUE_MODULUS: u64 = 1024;

/// How long a store that could not be started waits before it is tried again (doubling
/// up to 30 s).
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// Builds a [`ResidueSegmentGenerator`]; from [`ResidueSegmentGenerator::builder`].
#[derive(Debug)]
#[must_use]
pub struct ResidueSegmentGeneratorBuilder {
    tag: String,
    modulus: u64,
    stores: Vec<(Arc<dyn SegmentStore>, u64)>,
    step: u64,
    create_at: Option<u64>,
    max_step: Option<u64>,
    policy: TakeRejectPolicy,
    floor: Option<u64>,
}

impl ResidueSegmentGeneratorBuilder {
    setters! {
        /// The base step of the tag's counter where this creates it (default 1000).
        step(step: u64) => self.step = step;

        /// Creates the tag in each store that lacks it when [`build`](Self::build) runs,
        /// every class's IDs at or above `first_id` (its counter at `first_id / d`
        /// rounded up, at least 1). Without this, a store without the tag is an error.
        /// A class retried in the background (its store down at build) is never
        /// created: a store that comes back without the tag may have lost it, and one
        /// created again low would repeat its IDs; that class stays off, with a warning,
        /// until the tag is created or the generator is built again.
        create_missing(first_id: u64) => self.create_at = Some(first_id);

        /// The largest range taken from one store at once (default: the segment
        /// generator's).
        max_step(max_step: u64) => self.max_step = Some(max_step);

        /// What a take does when no store has an ID fetched (as for
        /// [`SegmentGenerator`]); it waits on a store that is not failing.
        take_reject_policy(policy: TakeRejectPolicy) => self.policy = policy;

        /// No ID at or below `floor` is handed out: a class whose next ID is at or below
        /// it is refused at build, as is a [`create_missing`](Self::create_missing) start
        /// at or below it (the segment generator's
        /// [`floor`](crate::SegmentGeneratorBuilder::floor), in each class's counter).
        floor(floor: u64) => self.floor = Some(floor);
    }

    /// Adds a store whose IDs are ≡ `remainder` (mod the modulus).
    pub fn store(mut self, store: impl SegmentStore, remainder: u64) -> Self {
        self.stores.push((Arc::new(store), remainder));
        self
    }

    /// Checks the classes and starts every store that answers; a store that does not is
    /// retried in the background (its share is missing until then). Fails only if no
    /// store could be started, a store that answers has no such tag and
    /// [`create_missing`](Self::create_missing) was not asked, or a store's tag belongs
    /// to another class (or to no class: a plain tag's IDs could meet this one's).
    pub fn build(self) -> Result<ResidueSegmentGenerator, SegmentError> {
        if !(2..=MAX_RESIDUE_MODULUS).contains(&self.modulus) {
            return Err(SegmentError::out_of_range(
                "modulus",
                self.modulus.to_string(),
                format!("2..={MAX_RESIDUE_MODULUS}"),
            ));
        }
        if self.stores.is_empty() || self.stores.len() as u64 > self.modulus {
            return Err(SegmentError::out_of_range(
                "stores",
                self.stores.len().to_string(),
                format!("1..={} (one class each)", self.modulus),
            ));
        }
        let mut seen = Vec::new();
        for (_, remainder) in &self.stores {
            if *remainder >= self.modulus || seen.contains(remainder) {
                return Err(SegmentError::out_of_range(
                    "remainder",
                    remainder.to_string(),
                    format!(
                        "0..{} and one store per remainder ({seen:?} taken)",
                        self.modulus
                    ),
                ));
            }
            seen.push(*remainder);
        }
        for (store, _) in &self.stores {
            check_tag(store.kind().name(), &self.tag)?;
        }
        let inner = Arc::new(Inner {
            classes: self
                .stores
                .into_iter()
                .map(|(store, remainder)| Class {
                    store,
                    remainder,
                    generator: OnceLock::new(),
                })
                .collect(),
            tag: self.tag,
            modulus: self.modulus,
            step: self.step,
            create_at: self.create_at,
            max_step: self.max_step,
            policy: self.policy,
            floor: self.floor,
            next: AtomicU64::new(0),
        });
        let mut failures = Vec::new();
        for (index, class) in inner.classes.iter().enumerate() {
            match inner.start(class, inner.create_at) {
                Ok(generator) => {
                    let _ = class.generator.set(generator);
                }
                // Another class's tag, or a missing one not to be created, is a mistake
                // to fix, not an outage to ride out.
                Err(
                    err @ (SegmentError::Store(
                        StoreError::InvalidSegment { .. } | StoreError::MissingTag { .. },
                    )
                    | SegmentError::Config(_)),
                ) => return Err(err),
                Err(err) => {
                    tracing::warn!(
                        tag = %inner.tag,
                        store = %class.store.describe(),
                        "residue class {} mod {} not started (retried in the background): {err}",
                        class.remainder,
                        inner.modulus
                    );
                    failures.push(err);
                    retry_in_background(Arc::downgrade(&inner), index);
                }
            }
        }
        if failures.len() == inner.classes.len() {
            return Err(failures.swap_remove(0));
        }
        Ok(ResidueSegmentGenerator { inner })
    }
}

struct Class {
    store: Arc<dyn SegmentStore>,
    remainder: u64,
    /// Set once the store answered.
    generator: OnceLock<SegmentGenerator>,
}

struct Inner {
    classes: Vec<Class>,
    tag: String,
    modulus: u64,
    step: u64,
    /// Where missing tags are created at build (never by the background retry).
    create_at: Option<u64>,
    max_step: Option<u64>,
    policy: TakeRejectPolicy,
    floor: Option<u64>,
    /// Where the next take starts looking, so takes spread over the stores.
    next: AtomicU64,
}

impl Inner {
    fn description(&self, remainder: u64) -> String {
        format!(
            "uidgen residue class {remainder} mod {}: IDs are max_id x {} + {remainder}",
            self.modulus, self.modulus
        )
    }

    /// Creates the tag in `class`'s store if missing and `create_at` names where, checks
    /// its class, and builds its generator.
    fn start(
        &self,
        class: &Class,
        create_at: Option<u64>,
    ) -> Result<SegmentGenerator, SegmentError> {
        let wanted = self.description(class.remainder);
        if let (Some(first_id), Some(floor)) = (create_at, self.floor) {
            if first_id <= floor {
                return Err(SegmentError::Config(
                    crate::error::ConfigError::BelowFloor {
                        floor,
                        first: first_id,
                        why: format!("residue tag {:?} would start at {first_id}", self.tag),
                    },
                ));
            }
        }
        if let Some(first_id) = create_at {
            let counter = first_id.div_ceil(self.modulus).max(1);
            class
                .store
                .create(&self.tag, counter, self.step, &wanted)
                .map_err(|e| match e {
                    // The store speaks of its counter; the user gave an ID.
                    StoreError::DataLost {
                        store,
                        location,
                        what,
                    } => StoreError::DataLost {
                        store,
                        location,
                        what: format!(
                            "{what} (for residue class {} mod {}, these numbers are the \
                             store's counter: its IDs are counter x {} + {}, so a start \
                             for it is the counter named times {})",
                            class.remainder,
                            self.modulus,
                            self.modulus,
                            class.remainder,
                            self.modulus
                        ),
                    },
                    other => other,
                })?;
        }
        let record = class.store.tag(&self.tag)?;
        if let Some(record) = record.filter(|r| r.description != wanted) {
            return Err(SegmentError::Store(StoreError::InvalidSegment {
                store: class.store.kind().name(),
                tag: self.tag.clone(),
                problem: format!(
                    "in {} the tag is described {:?}, not {wanted:?}: it was made for another \
                     class or as a plain tag, and serving it as class {} mod {} could repeat \
                     its IDs; use another tag",
                    class.store.describe(),
                    record.description,
                    class.remainder,
                    self.modulus
                ),
            }));
        }
        let mut builder = SegmentGenerator::builder(Arc::clone(&class.store), &self.tag)
            .take_reject_policy(self.policy.clone())
            .store_prefetcher();
        if let Some(max_step) = self.max_step {
            builder = builder.max_step(max_step);
        }
        // IDs are counter × modulus + remainder: above the floor from the first counter
        // past (floor − remainder) / modulus.
        if let Some(floor) = self.floor.and_then(|f| f.checked_sub(class.remainder)) {
            builder = builder.floor(floor / self.modulus);
        }
        builder.build()
    }

    fn id(&self, class: &Class, counter: u64) -> Result<u64, UidError> {
        counter
            .checked_mul(self.modulus)
            .and_then(|id| id.checked_add(class.remainder))
            .filter(|&id| id <= i64::MAX as u64)
            .ok_or_else(|| UidError::SegmentExhausted {
                tag: self.tag.clone(),
                waited: Duration::ZERO,
                why: format!(
                    "counter {counter} in {} times {} is past the largest BIGINT",
                    class.store.describe(),
                    self.modulus
                ),
            })
    }
}

/// Tries to start class `index` until it starts or the generator is dropped.
fn retry_in_background(inner: Weak<Inner>, index: usize) {
    let spawned = std::thread::Builder::new()
        .name("uidgen-residue-retry".into())
        .spawn(move || {
            let mut wait = RETRY_FIRST;
            let mut warned = false;
            loop {
                crate::sync::sleep(wait);
                let Some(inner) = inner.upgrade() else { return };
                let class = &inner.classes[index];
                match inner.start(class, None) {
                    Ok(generator) => {
                        tracing::info!(tag = %inner.tag, store = %class.store.describe(), "residue class {} mod {} started", class.remainder, inner.modulus);
                        let _ = class.generator.set(generator);
                        return;
                    }
                    // Not created here (see `create_missing`), or refused: said once, at
                    // WARN, as a retry alone will not cure it.
                    Err(
                        err @ SegmentError::Store(
                            StoreError::MissingTag { .. }
                            | StoreError::InvalidSegment { .. }
                            | StoreError::DataLost { .. },
                        ),
                    ) if !warned => {
                        warned = true;
                        tracing::warn!(tag = %inner.tag, store = %class.store.describe(), "residue class {} mod {} stays off: the store answers but cannot serve it (a retry never creates the tag: it may have been lost): {err}", class.remainder, inner.modulus)
                    }
                    Err(err) => {
                        tracing::debug!(tag = %inner.tag, "residue class {} still not started: {err}", class.remainder)
                    }
                }
                wait = (wait * 2).min(RETRY_MAX);
            }
        });
    if let Err(err) = spawned {
        tracing::warn!("could not start a thread to retry a residue class: {err}");
    }
}

/// One segment tag served from several independent stores, store `i` handing out only
/// IDs ≡ `r_i` (mod `d`), as databases with `auto_increment_increment` and an offset each
/// do (and Tinyid's `delta`/`remainder`).
///
/// - **Unique**: store `i`'s counter value `c` is the ID `c × d + r_i`, so each store's
///   IDs are its own class; within a store, IDs are a [`SegmentGenerator`]'s. The class
///   is written into the tag's description in each store and checked at every start: a
///   store made for another class, or a plain tag, is refused.
/// - **Available**: a take tries the stores in turn (starting one further each time, so
///   load spreads) and returns the first fetched ID; a store that is down only loses its
///   share. Each store's ranges are fetched by a thread of that store's own (one per
///   store in the process, ended once no generator uses it), so a store that hangs
///   never delays another's fetches. A store
///   that does not answer at start is retried in the background.
/// - **Not ordered**: IDs from two stores interleave; each store's IDs increase.
///
/// ```
/// # #[cfg(feature = "sqlite")] {
/// use uidgen::{ResidueSegmentGenerator, SqliteSegmentStore};
///
/// let dir = std::env::temp_dir().join(format!("uidgen-residue-doc-{}", std::process::id()));
/// let orders = ResidueSegmentGenerator::builder("order", 2)
///     .store(SqliteSegmentStore::new(dir.join("a.db")), 0)
///     .store(SqliteSegmentStore::new(dir.join("b.db")), 1)
///     .create_missing(1) // a new tag: every class's IDs from 1 up
///     .build()?;
/// let (a, b) = (orders.next_uid()?, orders.next_uid()?);
/// assert_ne!(a % 2, b % 2); // one from each store
/// # drop(orders);
/// # std::fs::remove_dir_all(dir).ok();
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ResidueSegmentGenerator {
    inner: Arc<Inner>,
}

impl fmt::Debug for ResidueSegmentGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let classes: Vec<_> = self
            .inner
            .classes
            .iter()
            .map(|c| (c.remainder, c.store.describe(), c.generator.get().is_some()))
            .collect();
        f.debug_struct("ResidueSegmentGenerator")
            .field("tag", &self.inner.tag)
            .field("modulus", &self.inner.modulus)
            .field("classes (remainder, store, started)", &classes)
            .finish()
    }
}

impl ResidueSegmentGenerator {
    /// A builder for `tag` over stores with `modulus` classes (2 to [`MAX_RESIDUE_MODULUS`]);
    /// add each store with [`store`](ResidueSegmentGeneratorBuilder::store).
    pub fn builder(tag: &str, modulus: u64) -> ResidueSegmentGeneratorBuilder {
        ResidueSegmentGeneratorBuilder {
            tag: tag.to_owned(),
            modulus,
            stores: Vec::new(),
            step: 1000,
            create_at: None,
            max_step: None,
            policy: TakeRejectPolicy::default(),
            floor: None,
        }
    }

    /// The tag.
    pub fn tag(&self) -> &str {
        &self.inner.tag
    }

    /// The modulus `d`.
    pub fn modulus(&self) -> u64 {
        self.inner.modulus
    }

    /// The remainders of the stores serving now (started, whether or not they answer).
    pub fn started(&self) -> Vec<u64> {
        self.inner
            .classes
            .iter()
            .filter(|c| c.generator.get().is_some())
            .map(|c| c.remainder)
            .collect()
    }

    /// The next ID from the first store (in turn) that has one fetched; if none has,
    /// waits as the take policy allows on a store that is not failing.
    pub fn next_uid(&self) -> Result<u64, UidError> {
        self.take().map(|(_, id)| id)
    }

    /// The next ID if a store has one fetched; never blocks.
    pub fn try_next_uid(&self) -> Result<u64, UidError> {
        self.try_each().map(|(_, id)| id).map_err(|(_, err)| err)
    }

    /// Fills `out` from the front with new IDs of one store, in increasing order; returns
    /// how many (at least 1 unless `out` is empty; fewer when that store's fetched ranges
    /// ran out after the first).
    pub fn next_uids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        let Some((first, rest)) = out.split_first_mut() else {
            return Ok(0);
        };
        let (class, id) = self.take()?;
        *first = id;
        let Some(generator) = class.generator.get() else {
            return Ok(1);
        };
        let mut filled = 1;
        for slot in rest {
            match generator.try_next_uid().map(|c| self.inner.id(class, c)) {
                Ok(Ok(id)) => *slot = id,
                _ => break,
            }
            filled += 1;
        }
        Ok(filled)
    }

    /// The next ID, waiting on the tokio runtime (never blocking its thread) while no
    /// store has one fetched, as long as the take policy allows.
    #[cfg(feature = "tokio")]
    pub async fn next_uid_async(&self) -> Result<u64, UidError> {
        let (_, id) = match self.try_each() {
            Ok(taken) => taken,
            Err((false, err)) => return Err(err),
            Err((true, _)) => {
                take::on_runtime(self, &self.inner.policy, || self.try_each().ok()).await?
            }
        };
        Ok(id)
    }

    /// An ID and the class it is from, waiting (as the policy allows) for
    /// whichever store gets a range first if none has one fetched.
    fn take(&self) -> Result<(&Class, u64), UidError> {
        match self.try_each() {
            Ok(taken) => Ok(taken),
            // Every store is failing or not started: nothing to wait for.
            Err((false, err)) => Err(err),
            Err((true, _)) => take::blocking(self, &self.inner.policy, || self.try_each().ok()),
        }
    }

    fn started_generators(&self) -> impl Iterator<Item = &SegmentGenerator> {
        self.inner.classes.iter().filter_map(|c| c.generator.get())
    }

    /// Tries every started store once, from the next in turn: the class and its ID. On
    /// failure: whether a store is worth waiting on (its next range is on the way), and
    /// the error to return.
    fn try_each(&self) -> Result<(&Class, u64), (bool, UidError)> {
        let classes = &self.inner.classes;
        let start = self.inner.next.fetch_add(1, Ordering::Relaxed) as usize;
        let mut wait_on = false;
        let mut failures = Vec::new();
        for k in 0..classes.len() {
            let class = &classes[(start + k) % classes.len()];
            let Some(generator) = class.generator.get() else {
                failures.push(format!(
                    "class {} ({}): not started",
                    class.remainder,
                    class.store.describe()
                ));
                continue;
            };
            match generator.try_next_uid() {
                Ok(counter) => match self.inner.id(class, counter) {
                    Ok(id) => return Ok((class, id)),
                    // This class is used up; the others may still have IDs.
                    Err(err) => failures.push(format!("class {}: {err}", class.remainder)),
                },
                Err(UidError::WouldBlock { .. }) => wait_on = true,
                Err(err) => failures.push(format!("class {}: {err}", class.remainder)),
            }
        }
        let err = match wait_on {
            true => UidError::WouldBlock {
                why: "every store's fetched ranges are used up; the next are being fetched",
                wait: None,
            },
            false => UidError::SegmentExhausted {
                tag: self.inner.tag.clone(),
                waited: Duration::ZERO,
                why: format!("no store has IDs: {}", failures.join("; ")),
            },
        };
        Err((wait_on, err))
    }
}

/// How a take that found no store with an ID waits (`crate::wait::take`): it asks every
/// store's generator for more and takes from whichever has some first.
impl Supply for ResidueSegmentGenerator {
    fn found_empty(&self) {
        self.started_generators().for_each(Supply::found_empty);
    }

    fn ask_for_more(&self) {
        self.started_generators().for_each(Supply::ask_for_more);
    }

    /// Only when every class has started and every one has dried up.
    fn dried_up(&self, waited: Duration) -> Option<UidError> {
        let classes = &self.inner.classes;
        let dried: Vec<String> = classes
            .iter()
            .filter_map(|c| Some((c, c.generator.get()?.dried_up(waited)?)))
            .map(|(c, err)| format!("class {}: {err}", c.remainder))
            .collect();
        (dried.len() == classes.len()).then(|| self.exhausted(waited, dried))
    }

    fn gave_up(&self, waited: Duration) -> UidError {
        let why = self
            .inner
            .classes
            .iter()
            .map(|c| match c.generator.get() {
                Some(generator) => format!("class {}: {}", c.remainder, generator.gave_up(waited)),
                None => format!(
                    "class {} ({}): not started",
                    c.remainder,
                    c.store.describe()
                ),
            })
            .collect();
        self.exhausted(waited, why)
    }
}

impl ResidueSegmentGenerator {
    fn exhausted(&self, waited: Duration, why: Vec<String>) -> UidError {
        UidError::SegmentExhausted {
            tag: self.inner.tag.clone(),
            waited,
            why: format!("no store has IDs: {}", why.join("; ")),
        }
    }
}

super::generator::id_source_from_inherent!(ResidueSegmentGenerator);
