//! Per-period segment tags: IDs `yyyyMMdd` (or `yyyyMM`) then a sequence that restarts
//! each period, as order numbers on receipts are. Each period has its own counter in the
//! store (tag `name:yyyyMMdd`), so no two periods can share an ID, and one
//! [`SegmentGenerator`] at a time serves the current period.

use super::error::SegmentError;
use super::generator::SegmentGenerator;
use crate::clock::{Clock, SystemClock};
use crate::error::{ConfigError, UidError};
use crate::store::segment::{check_tag, SegmentStore, TagRecord};
use crate::store::{StoreError, StoreKind};
use crate::sync::outside_loom::{lock, read, try_read, write, Mutex, RwLock};
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::wait::TakeRejectPolicy;
use chrono::{DateTime, Datelike, FixedOffset};
use std::fmt;
use std::time::{Duration, Instant};

/// How long a period lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Period {
    /// A calendar day: IDs start with `yyyyMMdd`.
    Day,
    /// A calendar month: IDs start with `yyyyMM`.
    Month,
}

impl Period {
    /// The most sequence digits after the period: the largest ID (year 9999, every digit
    /// of the sequence 9) then stays below 2^63 − 1.
    pub const fn max_sequence_digits(self) -> u32 {
        match self {
            Period::Day => 10,
            Period::Month => 12,
        }
    }

    /// The period's number at `unix_millis` in the zone `offset`: `yyyyMMdd` or `yyyyMM`.
    fn number(self, unix_millis: u64, offset: FixedOffset) -> u64 {
        let at = i64::try_from(unix_millis)
            .ok()
            .and_then(DateTime::from_timestamp_millis)
            .unwrap_or_default()
            .with_timezone(&offset);
        self.of(&at)
    }

    /// The period's number of a date: `yyyyMMdd` or `yyyyMM`.
    fn of(self, date: &impl Datelike) -> u64 {
        let (year, month) = (
            u64::try_from(date.year()).unwrap_or(0),
            u64::from(date.month()),
        );
        match self {
            Period::Day => (year * 100 + month) * 100 + u64::from(date.day()),
            Period::Month => year * 100 + month,
        }
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Period::Day => "day",
            Period::Month => "month",
        })
    }
}

impl std::str::FromStr for Period {
    type Err = ConfigError;
    fn from_str(text: &str) -> Result<Self, ConfigError> {
        match text {
            "day" => Ok(Period::Day),
            "month" => Ok(Period::Month),
            _ => Err(ConfigError::OutOfRange {
                field: "period",
                value: text.chars().take(32).collect(),
                limit: "day or month".into(),
            }),
        }
    }
}

/// Builds a [`PeriodSegmentGenerator`]; from [`PeriodSegmentGenerator::builder`].
#[must_use]
pub struct PeriodSegmentGeneratorBuilder {
    store: Arc<dyn SegmentStore>,
    tag: String,
    period: Period,
    utc_offset_minutes: i32,
    digits: Option<u32>,
    first_sequence: u64,
    step: u64,
    max_step: Option<u64>,
    policy: TakeRejectPolicy,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for PeriodSegmentGeneratorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeriodSegmentGeneratorBuilder")
            .field("store", &self.store)
            .field("tag", &self.tag)
            .field("period", &self.period)
            .field("utc_offset_minutes", &self.utc_offset_minutes)
            .finish_non_exhaustive()
    }
}

impl PeriodSegmentGeneratorBuilder {
    setters! {
        /// A day (the default) or a month.
        period(period: Period) => self.period = period;

        /// The time zone periods change in, as minutes east of UTC (default 0, UTC;
        /// `480` for China Standard Time; −1439 to 1439). A fixed offset: a zone with
        /// daylight saving time changes period an hour off for part of the year.
        utc_offset_minutes(minutes: i32) => self.utc_offset_minutes = minutes;

        /// Decimal digits of the sequence after the period (default: the most that
        /// always fit, 10 for a day and 12 for a month). With a day and 7 digits (or a
        /// month and 9) every ID stays below 2^53, exact in JavaScript.
        sequence_digits(digits: u32) => self.digits = Some(digits);

        /// Each period's first sequence number (default 1).
        first_sequence(first: u64) => self.first_sequence = first;

        /// The base step of each period's counter (default 1000), as
        /// [`create_missing`](super::SegmentGeneratorBuilder::create_missing) takes it.
        step(step: u64) => self.step = step;

        /// The largest range taken at once (default: the segment generator's).
        max_step(max_step: u64) => self.max_step = Some(max_step);

        /// What a take does when the fetched ranges are used up (as for
        /// [`SegmentGenerator`]).
        take_reject_policy(policy: TakeRejectPolicy) => self.policy = policy;
    }

    /// Where the period is read (default the system clock; a
    /// [`ManualClock`](crate::ManualClock) in tests).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Checks the settings and starts the current period: the latest of the clock's and
    /// any later period another process has begun in the store.
    pub fn build(self) -> Result<PeriodSegmentGenerator, SegmentError> {
        let max_digits = self.period.max_sequence_digits();
        let digits = self.digits.unwrap_or(max_digits);
        if digits == 0 || digits > max_digits {
            return Err(SegmentError::out_of_range(
                "sequence_digits",
                digits.to_string(),
                format!("1..={max_digits} for a {} period", self.period),
            ));
        }
        let span = 10u64.pow(digits);
        if self.first_sequence == 0 || self.first_sequence >= span {
            return Err(SegmentError::out_of_range(
                "first_sequence",
                self.first_sequence.to_string(),
                format!("1..={} for {digits} digits", span - 1),
            ));
        }
        let offset = FixedOffset::east_opt(self.utc_offset_minutes.saturating_mul(60))
            .filter(|_| self.utc_offset_minutes.abs() < 24 * 60)
            .ok_or_else(|| {
                SegmentError::out_of_range(
                    "utc_offset_minutes",
                    self.utc_offset_minutes.to_string(),
                    "-1439..=1439".into(),
                )
            })?;
        // The longest row name: the tag, ':' and 8 digits.
        check_tag(self.store.kind().name(), &format!("{}:00000000", self.tag))?;
        let shared = Arc::new(Shared {
            store: self.store,
            tag: self.tag,
            period: self.period,
            offset,
            span,
            first_sequence: self.first_sequence,
            step: self.step,
            max_step: self.max_step,
            policy: self.policy,
            clock: self.clock,
            later: AtomicU64::new(0),
        });
        // Never back: the highest period any process began in the store counts, not only
        // the clock's (a restart after a clock that ran ahead and was set right).
        let now = shared.clock_period();
        let highest = shared.highest_row()?;
        if highest > now {
            tracing::warn!(
                tag = %shared.tag,
                "uidgen serves period {highest} of tag {:?}, ahead of the clock's {now}: a \
                 process began it when its clock was ahead; its IDs carry {highest} until \
                 the clock gets there",
                shared.tag
            );
        }
        let current = shared.open(now.max(highest))?;
        Ok(PeriodSegmentGenerator {
            current: RwLock::new(current),
            opening: Mutex::new(None),
            shared,
        })
    }
}

/// What every period's generator shares.
struct Shared {
    store: Arc<dyn SegmentStore>,
    tag: String,
    period: Period,
    offset: FixedOffset,
    /// 10^digits: IDs are `period × span + sequence`.
    span: u64,
    first_sequence: u64,
    step: u64,
    max_step: Option<u64>,
    policy: TakeRejectPolicy,
    clock: Arc<dyn Clock>,
    /// The latest period a range fetch found begun in the store (0: none later).
    later: AtomicU64,
}

/// The period being served.
struct Current {
    period: u64,
    generator: SegmentGenerator,
}

impl Shared {
    fn clock_period(&self) -> u64 {
        self.period.number(self.clock.now_millis(), self.offset)
    }

    fn row(&self, period: u64) -> String {
        format!("{}:{period}", self.tag)
    }

    /// The highest period whose row exists in the store (0: none).
    fn highest_row(&self) -> Result<u64, StoreError> {
        let prefix = format!("{}:", self.tag);
        let digits = match self.period {
            Period::Day => 8,
            Period::Month => 6,
        };
        Ok(self
            .store
            .tags()?
            .iter()
            .filter_map(|record| record.tag.strip_prefix(&prefix))
            .filter(|rest| rest.len() == digits && rest.bytes().all(|b| b.is_ascii_digit()))
            .filter_map(|rest| rest.parse().ok())
            .max()
            .unwrap_or(0))
    }

    /// The period after `period` (by the calendar: the day after 20261130 is 20261201).
    fn next(&self, period: u64) -> u64 {
        let (year, rest) = match self.period {
            Period::Day => (period / 10_000, period % 10_000),
            Period::Month => (period / 100, (period % 100) * 100 + 1),
        };
        let (month, day) = ((rest / 100) as u32, (rest % 100) as u32);
        let date = chrono::NaiveDate::from_ymd_opt(year as i32, month, day);
        let next = match self.period {
            Period::Day => date.and_then(|d| d.succ_opt()),
            Period::Month => date.and_then(|d| d.checked_add_months(chrono::Months::new(1))),
        };
        next.map_or(u64::MAX, |d| self.period.of(&d))
    }

    /// A generator for `period`, or for the next period if another process has begun it
    /// already (so no process opens a period once a later one is under way).
    fn open(self: &Arc<Self>, period: u64) -> Result<Current, SegmentError> {
        let next = self.next(period);
        let period = if self.store.tag(&self.row(next))?.is_some() {
            next
        } else {
            period
        };
        let store = PeriodRows {
            shared: Arc::clone(self),
            next: self.next(period),
        };
        // A new period's row starts at the first sequence (left as it is if it exists).
        self.store.create(
            &self.row(period),
            self.first_sequence,
            self.step,
            &format!("uidgen period tag {} ({})", self.tag, self.period),
        )?;
        let mut builder = SegmentGenerator::builder(store, &self.row(period))
            .take_reject_policy(self.policy.clone());
        if let Some(max_step) = self.max_step {
            builder = builder.max_step(max_step);
        }
        Ok(Current {
            period,
            generator: builder.build()?,
        })
    }
}

/// The store as one period's generator sees it: after each range it takes, it looks for
/// the next period's row, so a process whose clock is behind learns that another has
/// moved on at its next range fetch.
struct PeriodRows {
    shared: Arc<Shared>,
    next: u64,
}

impl fmt::Debug for PeriodRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.shared.store.fmt(f)
    }
}

impl SegmentStore for PeriodRows {
    fn describe(&self) -> String {
        self.shared.store.describe()
    }
    fn kind(&self) -> StoreKind {
        self.shared.store.kind()
    }
    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        let new = self.shared.store.allocate(tag, step)?;
        // A failed look is only a later switch; the range is good either way.
        if let Ok(Some(_)) = self.shared.store.tag(&self.shared.row(self.next)) {
            self.shared.later.fetch_max(self.next, Ordering::Relaxed);
        }
        Ok(new)
    }
    fn create(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
        description: &str,
    ) -> Result<bool, StoreError> {
        self.shared.store.create(tag, first_id, step, description)
    }
    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        self.shared.store.give_back(tag, from, to)
    }
    fn raise(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        self.shared.store.raise(tag, from, to)
    }
    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        self.shared.store.tag(tag)
    }
    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        self.shared.store.tags()
    }
}

/// Segment IDs that start with the period they were handed out in: `yyyyMMdd` (or
/// `yyyyMM`) then a sequence of fixed width that restarts at 1 each period, e.g.
/// `20261124_0000000001` (without the underscore) for the first ID of 24 November 2026.
///
/// - **Never a repeat**: each period has its own counter row in the store
///   (`tag:yyyyMMdd`), so IDs of two periods differ in their first digits, and a period's
///   IDs are a [`SegmentGenerator`]'s.
/// - **Never backwards**: the period served only moves forward, even if the clock steps
///   back. When it changes, one take sets the new period up in the store while the
///   others wait for it (if the store fails, takes fail with its error at once for a
///   second, then one tries again), then the generator switches under a write lock that
///   waits for takes in flight: every take that starts after the first ID of the new
///   period was handed out gets a new-period ID.
/// - **Across processes whose clocks differ**: a generator that starts, or switches,
///   while the store already has the next period's row begins that period instead; and
///   after each range it fetches it looks for that row, so a process whose clock is
///   behind moves on at its next range fetch (what it fetched before may still go out:
///   segment IDs of two processes interleave by range in any period).
/// - **A full period** (every sequence number used) is an error naming it, never an ID
///   of another period.
///
/// The first take of a new period waits for the store (its row is created then).
///
/// ```
/// # #[cfg(feature = "sqlite")] {
/// use uidgen::{ManualClock, Period, PeriodSegmentGenerator, SqliteSegmentStore};
///
/// let dir = std::env::temp_dir().join(format!("uidgen-period-doc-{}", std::process::id()));
/// let store = SqliteSegmentStore::new(dir.join("segments.db"));
/// let clock = ManualClock::new(1_796_054_399_000); // 2026-11-30 23:59:59 in UTC+8
/// let orders = PeriodSegmentGenerator::builder(store, "order")
///     .utc_offset_minutes(8 * 60)
///     .sequence_digits(6)
///     .clock(clock.clone())
///     .build()?;
/// assert_eq!(orders.next_uid()?, 20261130_000001);
/// clock.advance(std::time::Duration::from_secs(1));
/// assert_eq!(orders.next_uid()?, 20261201_000001);
/// assert_eq!(orders.split(20261201_000001), (20261201, 1));
/// # drop(orders);
/// # std::fs::remove_dir_all(dir).ok();
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PeriodSegmentGenerator {
    current: RwLock<Current>,
    /// Held by the one take setting a new period up; the last failure and when.
    opening: Mutex<Option<(Instant, UidError)>>,
    shared: Arc<Shared>,
}

/// How long a failure to set a new period up is remembered (takes meanwhile fail with it
/// at once).
const OPEN_RETRY: Duration = Duration::from_secs(1);

impl fmt::Debug for PeriodSegmentGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeriodSegmentGenerator")
            .field("tag", &self.shared.tag)
            .field("period", &self.shared.period)
            .field("current", &read(&self.current).period)
            .field("store", &self.shared.store)
            .finish_non_exhaustive()
    }
}

impl PeriodSegmentGenerator {
    /// A builder for `tag`'s per-period IDs on `store`. Each period's counter is the row
    /// `tag:yyyyMMdd` (or `tag:yyyyMM`), created when the period is first served.
    pub fn builder(store: impl SegmentStore, tag: &str) -> PeriodSegmentGeneratorBuilder {
        PeriodSegmentGeneratorBuilder {
            store: Arc::new(store),
            tag: tag.to_owned(),
            period: Period::Day,
            utc_offset_minutes: 0,
            digits: None,
            first_sequence: 1,
            step: 1000,
            max_step: None,
            policy: TakeRejectPolicy::default(),
            clock: Arc::new(SystemClock),
        }
    }

    /// The tag (without a period).
    pub fn tag(&self) -> &str {
        &self.shared.tag
    }

    /// The period the clock reads now (`yyyyMMdd` or `yyyyMM`, in the tag's UTC offset).
    pub fn clock_period(&self) -> u64 {
        self.shared.clock_period()
    }

    /// The period being served (`yyyyMMdd` or `yyyyMM`): never lower than before, and
    /// ahead of [`clock_period`](Self::clock_period) only while a period another process
    /// began under a clock that ran ahead is still in the future.
    pub fn current_period(&self) -> u64 {
        read(&self.current).period
    }

    /// An ID's period and sequence.
    pub fn split(&self, id: u64) -> (u64, u64) {
        (id / self.shared.span, id % self.shared.span)
    }

    /// The next ID: the current period's, after switching to a new period if the clock
    /// (or another process, through the store) has moved on. Waits as the take policy
    /// allows when the fetched ranges are used up; the first take of a period waits for
    /// the store.
    pub fn next_uid(&self) -> Result<u64, UidError> {
        loop {
            let target = self.target();
            {
                let current = read(&self.current);
                if target <= current.period {
                    let sequence = current.generator.next_uid()?;
                    return self.compose(current.period, sequence);
                }
            }
            self.switch(target)?;
        }
    }

    /// The next ID if one is fetched already and the period has not changed; never
    /// blocks ([`UidError::WouldBlock`] otherwise: call [`next_uid`](Self::next_uid),
    /// which begins the new period).
    pub fn try_next_uid(&self) -> Result<u64, UidError> {
        let target = self.target();
        // A switch holds the lock across store calls: never wait for it here.
        let Some(current) = try_read(&self.current) else {
            return Err(UidError::WouldBlock {
                why: "a new period begins; its counter is being set up in the store",
                wait: None,
            });
        };
        if target > current.period {
            return Err(UidError::WouldBlock {
                why: "a new period begins; its counter is being set up in the store",
                wait: None,
            });
        }
        let sequence = current.generator.try_next_uid()?;
        self.compose(current.period, sequence)
    }

    /// Fills `out` from the front with new IDs of one period, in increasing order;
    /// returns how many (at least 1 unless `out` is empty; fewer when the fetched ranges
    /// or the period's sequence numbers ran out after the first).
    pub fn next_uids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        if out.is_empty() {
            return Ok(0);
        }
        out[0] = self.next_uid()?;
        let period = self.split(out[0]).0;
        let current = read(&self.current);
        if current.period != period {
            return Ok(1);
        }
        let mut filled = 1;
        for slot in &mut out[1..] {
            match current
                .generator
                .try_next_uid()
                .map(|sequence| self.compose(period, sequence))
            {
                Ok(Ok(id)) => *slot = id,
                _ => break,
            }
            filled += 1;
        }
        Ok(filled)
    }

    fn target(&self) -> u64 {
        self.shared
            .clock_period()
            .max(self.shared.later.load(Ordering::Relaxed))
    }

    fn compose(&self, period: u64, sequence: u64) -> Result<u64, UidError> {
        if sequence >= self.shared.span {
            return Err(UidError::SegmentExhausted {
                tag: self.shared.row(period),
                waited: Duration::ZERO,
                why: format!(
                    "period {period} has used every sequence number below {} \
                     ({} digits); the next period starts again at {}",
                    self.shared.span,
                    self.shared.span.ilog10(),
                    self.shared.first_sequence
                ),
            });
        }
        // Years past 9999 (a clock set far ahead) would not fit: an error, not a wrap.
        period
            .checked_mul(self.shared.span)
            .and_then(|id| id.checked_add(sequence))
            .filter(|&id| id <= i64::MAX as u64)
            .ok_or_else(|| UidError::SegmentExhausted {
                tag: self.shared.row(period),
                waited: Duration::ZERO,
                why: format!(
                    "period {period} with {} sequence digits is past the largest ID 2^63 - 1 \
                     (is the clock set past the year 9999?)",
                    self.shared.span.ilog10()
                ),
            })
    }

    /// Moves to `target` (or a later period the store has begun) unless another take
    /// moved already. The store calls run outside the lock takes read (one opener at a
    /// time, the others waiting for it); a failure is remembered for [`OPEN_RETRY`], so
    /// takes meanwhile fail at once with it rather than each waiting on the store again.
    /// The old generator gives its tail back after both locks are released.
    fn switch(&self, target: u64) -> Result<(), UidError> {
        let mut failed = lock(&self.opening);
        if read(&self.current).period >= target {
            return Ok(());
        }
        if let Some((_, err)) = failed.as_ref().filter(|(at, _)| at.elapsed() < OPEN_RETRY) {
            return Err(err.clone());
        }
        let opened = match self.shared.open(target) {
            Ok(opened) => opened,
            Err(err) => {
                let err = UidError::SegmentExhausted {
                    tag: self.shared.row(target),
                    waited: Duration::ZERO,
                    why: format!("could not begin period {target}: {err}"),
                };
                *failed = Some((Instant::now(), err.clone()));
                return Err(err);
            }
        };
        *failed = None;
        let old = std::mem::replace(&mut *write(&self.current), opened);
        drop(failed);
        drop(old);
        Ok(())
    }
}

super::generator::id_source_from_inherent!(PeriodSegmentGenerator);
