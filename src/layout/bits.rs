//! The ID layout: `sign | time delta | worker id | sequence`, packed into 64 bits.

use super::epoch::parse_epoch;
use super::parts::UidParts;
use super::unit::TimeUnit;
use crate::clock::{format_utc, Clock, SystemClock};
use crate::error::{ConfigError, InvalidUidReason, UidError};
use std::fmt;
use std::str::FromStr;

/// Bits available to the three fields: 64 less the sign bit, which stays 0 so every ID
/// is positive as an `i64` too (Java's `long`, SQL's `BIGINT`).
pub const TOTAL_BITS: u32 = 63;

/// Well-known layouts. [`Preset::Default`] is ours; the others reproduce other generators'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Preset {
    /// uidgen's default: 40 time / 10 worker / 13 sequence bits, milliseconds, epoch
    /// 2026-01-01.
    ///
    /// Sized for leased worker IDs ([`WorkerLease`](crate::WorkerLease)), which are reused
    /// safely thanks to each worker ID's time mark, so 1,024 of them serve any number of
    /// launches: 2^10 = 1,024 processes at once; 2^13 = 8,192 IDs a millisecond (8.2M a
    /// second) per worker before the cached generator borrows any future time; and 2^40
    /// ms = 34.8 years of life, until 2060-11. Millisecond ticks keep an ID's timestamp
    /// near its creation time at any rate below that; the second-based presets below
    /// (UidGenerator's) give 8,192 IDs a second, which a busy service outruns into
    /// borrowed time.
    Default,
    /// UidGenerator's original code defaults: 28/22/13, seconds, epoch 2016-05-20.
    /// It ran out on 2024-11-20, so building it today is refused.
    UidGenerator,
    /// The split UidGenerator's README recommends: 29/21/13, seconds, epoch 2016-09-20
    /// (runs out in 2033).
    UidGeneratorReadme,
    /// Twitter snowflake: 41/10/12, milliseconds, epoch 1288834974657 ms (2010-11-04).
    Snowflake,
    /// Instagram's sharded IDs, kept within 63 bits: 40/13/10, milliseconds, epoch
    /// 1314220021721 ms (2011-08-24, the epoch in Instagram's engineering post).
    ///
    /// Instagram's published split is 41/13/10, which uses all 64 bits; its IDs stay
    /// positive in a signed `BIGINT` only while the top time bit is 0, i.e. for 2^40 ms
    /// (34.8 years, until 2046). We keep the sign bit, so the time field is that 40 bits.
    Instagram,
    /// Safe in JavaScript: every ID is at most 2^53 − 1 (`Number.MAX_SAFE_INTEGER`), so
    /// `JSON.parse` and a JavaScript `number` keep it exact. 53 bits: 40 time / 7 worker
    /// / 6 sequence, milliseconds, epoch 2026-01-01: 34.8 years of life (until
    /// 2060-11), 128 worker IDs at once (leases reuse them), and 64 IDs a millisecond
    /// (64,000 a second) per worker before the cached generator borrows future time.
    JsSafe,
    /// Sonyflake (v1): 39 time / 8 sequence / 16 machine bits, 10 ms ticks, epoch
    /// 2014-09-01. The sequence sits above the machine ID, so this layout reads old
    /// Sonyflake IDs (`uidgen parse --layout sonyflake`); generators refuse it (they put
    /// the worker ID above the sequence).
    Sonyflake,
    /// Sonyflake v2's defaults: the same split and tick, epoch 2025-01-01. An upgrade with
    /// defaults makes IDs below the v1 ones; `uidgen migrate plan` says what to do.
    SonyflakeV2,
}

/// The largest integer JavaScript's `number` holds exactly: 2^53 − 1.
pub const JS_MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

impl Preset {
    /// Every preset, for listings.
    pub const ALL: [Preset; 8] = [
        Preset::Default,
        Preset::UidGenerator,
        Preset::UidGeneratorReadme,
        Preset::Snowflake,
        Preset::Instagram,
        Preset::JsSafe,
        Preset::Sonyflake,
        Preset::SonyflakeV2,
    ];

    /// Other names [`FromStr`] reads: Leaf's and Twitter's snowflake are one layout.
    pub const ALIASES: [(&'static str, Preset); 2] =
        [("leaf", Preset::Snowflake), ("twitter", Preset::Snowflake)];

    /// The name the CLI and [`FromStr`] use.
    pub const fn name(self) -> &'static str {
        match self {
            Preset::Default => "default",
            Preset::UidGenerator => "uidgenerator",
            Preset::UidGeneratorReadme => "uidgenerator-readme",
            Preset::Snowflake => "snowflake",
            Preset::Instagram => "instagram",
            Preset::JsSafe => "js-safe",
            Preset::Sonyflake => "sonyflake",
            Preset::SonyflakeV2 => "sonyflake-v2",
        }
    }

    /// A builder holding this preset's settings, to adjust or build.
    pub fn builder(self) -> LayoutBuilder {
        let (time, worker, seq, unit, epoch) = match self {
            Preset::Default => (
                40,
                10,
                13,
                TimeUnit::Milliseconds,
                Epoch::Date("2026-01-01"),
            ),
            Preset::UidGenerator => (28, 22, 13, TimeUnit::Seconds, Epoch::Date("2016-05-20")),
            Preset::UidGeneratorReadme => {
                (29, 21, 13, TimeUnit::Seconds, Epoch::Date("2016-09-20"))
            }
            Preset::Snowflake => (
                41,
                10,
                12,
                TimeUnit::Milliseconds,
                Epoch::Millis(1_288_834_974_657),
            ),
            Preset::Instagram => (
                40,
                13,
                10,
                TimeUnit::Milliseconds,
                Epoch::Millis(1_314_220_021_721),
            ),
            Preset::JsSafe => (40, 7, 6, TimeUnit::Milliseconds, Epoch::Date("2026-01-01")),
            Preset::Sonyflake => (39, 16, 8, TimeUnit::Centiseconds, Epoch::Date("2014-09-01")),
            Preset::SonyflakeV2 => (39, 16, 8, TimeUnit::Centiseconds, Epoch::Date("2025-01-01")),
        };
        let builder = LayoutBuilder {
            time_bits: time,
            worker_bits: worker,
            seq_bits: seq,
            total_bits: if self == Preset::JsSafe {
                53
            } else {
                TOTAL_BITS
            },
            unit,
            epoch: String::new(),
            epoch_millis: None,
            sequence_first: matches!(self, Preset::Sonyflake | Preset::SonyflakeV2),
            region: None,
        };
        match epoch {
            Epoch::Date(date) => builder.epoch(date),
            Epoch::Millis(ms) => builder.epoch_millis(ms),
        }
    }
}

enum Epoch {
    Date(&'static str),
    Millis(u64),
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Preset {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim();
        Preset::ALL
            .into_iter()
            .map(|p| (p.name(), p))
            .chain(Preset::ALIASES)
            .find(|(known, _)| known.eq_ignore_ascii_case(name))
            .map(|(_, p)| p)
            .ok_or_else(|| ConfigError::OutOfRange {
                field: "preset",
                value: s.to_owned(),
                limit: format!("one of {}", Preset::names()),
            })
    }
}

impl Preset {
    /// Every name [`FromStr`] reads, for error messages and help: `default, …, leaf, twitter`.
    pub fn names() -> String {
        Preset::ALL
            .map(Preset::name)
            .into_iter()
            .chain(Preset::ALIASES.map(|(alias, _)| alias))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl LayoutBuilder {
    /// A layout as the command line and the service's config write it: a preset name
    /// (or alias), `TIME/WORKER/SEQ`, or `TIME/REGION/WORKER/SEQ` (the region's value
    /// from [`region`](Self::region), default 0). A split given by hand counts seconds
    /// from 2026-01-01 until [`unit`](Self::unit) and [`epoch`](Self::epoch) say
    /// otherwise, as UidGenerator's splits do.
    ///
    /// ```
    /// use uidgen::LayoutBuilder;
    ///
    /// let leaf = LayoutBuilder::parse("leaf")?.build()?;
    /// assert_eq!(leaf.to_string(), "41/10/12 ms epoch 2010-11-04 01:42:54.657");
    /// let split = LayoutBuilder::parse("36/1/11/15")?.region(1, 1).build()?;
    /// assert_eq!((split.region_bits(), split.region()), (1, 1));
    /// assert!(LayoutBuilder::parse("40/10").unwrap_err().to_string().contains("TIME/WORKER/SEQ"));
    /// # Ok::<(), uidgen::ConfigError>(())
    /// ```
    pub fn parse(spec: &str) -> Result<LayoutBuilder, ConfigError> {
        let shown = || {
            let head: String = spec.chars().take(64).collect();
            format!("{head:?}")
        };
        if !spec.contains('/') {
            return spec.parse::<Preset>().map(Preset::builder).map_err(|_| {
                ConfigError::OutOfRange {
                    field: "layout",
                    value: shown(),
                    limit: format!(
                        "one of {}, or bits as TIME/WORKER/SEQ (or TIME/REGION/WORKER/SEQ) \
                         adding up to 63",
                        Preset::names()
                    ),
                }
            });
        }
        let numbers: Option<Vec<u32>> = spec
            .split('/')
            .map(|part| part.trim().parse::<u32>().ok())
            .collect();
        let builder = Preset::Default.builder().unit(TimeUnit::Seconds);
        match numbers.as_deref() {
            Some(&[time, worker, seq]) => Ok(builder.bits(time, worker, seq)),
            Some(&[time, region, worker, seq]) => Ok(LayoutBuilder {
                region: Some((region, 0)),
                ..builder.bits(time, worker, seq)
            }),
            _ => Err(ConfigError::OutOfRange {
                field: "layout",
                value: shown(),
                limit: "TIME/WORKER/SEQ (or TIME/REGION/WORKER/SEQ) as whole numbers adding \
                        up to 63, or a preset"
                    .into(),
            }),
        }
    }

    /// Sets the region's value, keeping the region bits [`parse`](Self::parse) read (or
    /// refusing a layout without them).
    pub fn region_value(self, region: u64) -> Result<LayoutBuilder, ConfigError> {
        match self.region {
            Some((bits, _)) => Ok(self.region(bits, region)),
            None => Err(ConfigError::OutOfRange {
                field: "region",
                value: region.to_string(),
                limit: "a region needs a layout with region bits: TIME/REGION/WORKER/SEQ".into(),
            }),
        }
    }
}

/// Settings for a [`BitsAllocator`]; start from [`BitsAllocator::builder`] (our default
/// layout) or a [`Preset`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct LayoutBuilder {
    time_bits: u32,
    worker_bits: u32,
    seq_bits: u32,
    total_bits: u32,
    unit: TimeUnit,
    epoch: String,
    epoch_millis: Option<u64>,
    sequence_first: bool,
    region: Option<(u32, u64)>,
}

impl LayoutBuilder {
    /// Sets the three field widths; they must add up to 63, or to
    /// [`total_bits`](Self::total_bits) when that caps the layout.
    pub fn bits(mut self, time_bits: u32, worker_bits: u32, seq_bits: u32) -> Self {
        self.time_bits = time_bits;
        self.worker_bits = worker_bits;
        self.seq_bits = seq_bits;
        self
    }

    setters! {
        /// Sets the tick length.
        unit(unit: TimeUnit) => self.unit = unit;

        /// Caps the layout at this many bits (3 to 63; default 63): the three fields must
        /// add up to it, and every ID is below 2^total_bits. 53 keeps IDs within
        /// JavaScript's exact integers ([`Preset::JsSafe`] is such a layout).
        ///
        /// ```
        /// use uidgen::{BitsAllocator, JS_MAX_SAFE_INTEGER};
        ///
        /// let bits = BitsAllocator::builder().total_bits(53).bits(41, 6, 6).build()?;
        /// assert_eq!(bits.max_uid(), JS_MAX_SAFE_INTEGER);
        /// # Ok::<(), uidgen::ConfigError>(())
        /// ```
        total_bits(bits: u32) => self.total_bits = bits;

        /// Puts the sequence above the worker ID (Sonyflake's order) rather than below
        /// it. Such a layout reads IDs; generators refuse it.
        sequence_first(yes: bool) => self.sequence_first = yes;
    }

    /// A region field of `bits` bits between the time and the worker ID, holding
    /// `region` in every ID this layout makes: two regions whose stores are apart can
    /// never make the same ID, and `uidgen migrate plan` uses a set region bit to keep
    /// new IDs apart from an old scheme's. The four fields must then add up to 63 (or
    /// the [`total_bits`](Self::total_bits)).
    ///
    /// ```
    /// use uidgen::BitsAllocator;
    ///
    /// let bits = BitsAllocator::builder().bits(38, 10, 13).region(2, 3).build()?;
    /// let parts = bits.parse(bits.allocate(5, 7, 1)?)?;
    /// assert_eq!((parts.region, parts.worker_id, parts.sequence), (Some(3), 7, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn region(mut self, bits: u32, region: u64) -> Self {
        self.region = (bits > 0).then_some((bits, region));
        self
    }

    /// Sets the epoch as a UTC date (`"2016-05-20"`) or an RFC 3339 instant.
    pub fn epoch(mut self, date: &str) -> Self {
        self.epoch = date.to_owned();
        self.epoch_millis = None;
        self
    }

    /// Sets the epoch in milliseconds since the Unix epoch.
    pub fn epoch_millis(mut self, unix_millis: u64) -> Self {
        self.epoch = String::new();
        self.epoch_millis = Some(unix_millis);
        self
    }

    /// Checks the layout and that it is alive now by the system clock.
    pub fn build(self) -> Result<BitsAllocator, ConfigError> {
        self.build_with_clock(&SystemClock)
    }

    /// Checks the layout and that it is alive at `clock`'s current time: the epoch is not
    /// in the future and the time bits are not used up.
    pub fn build_with_clock(self, clock: &dyn Clock) -> Result<BitsAllocator, ConfigError> {
        let allocator = self.build_unchecked_time()?;
        allocator.check_alive_at(clock.now_millis())?;
        Ok(allocator)
    }

    /// Checks only what does not depend on the time of day (for reading old IDs with a
    /// layout that has since run out).
    pub fn build_unchecked_time(self) -> Result<BitsAllocator, ConfigError> {
        let epoch_millis = match self.epoch_millis {
            Some(ms) => ms,
            None => parse_epoch(&self.epoch)?,
        };
        let mut allocator = BitsAllocator::new(
            [self.time_bits, self.worker_bits, self.seq_bits],
            self.total_bits,
            self.unit,
            epoch_millis,
            self.region,
        )?;
        if self.sequence_first {
            allocator.worker_shift = 0;
            allocator.seq_shift = allocator.worker_bits;
        }
        Ok(allocator)
    }
}

/// The layout of an ID: packs `(delta, worker_id, sequence)` into a `u64` and back.
///
/// ```
/// use uidgen::{BitsAllocator, Preset};
///
/// let bits = Preset::UidGeneratorReadme.builder().build()?;
/// assert_eq!((bits.max_worker_id(), bits.max_sequence()), ((1 << 21) - 1, 8191));
/// let uid = bits.allocate(10_498_546, 4, 9)?;
/// assert_eq!(uid, 180_363_646_902_239_241);
/// let parts = bits.parse(uid)?;
/// assert_eq!(parts.to_string(),
///     r#"{"UID":"180363646902239241","timestamp":"2017-01-19 12:15:46","workerId":"4","sequence":"9"}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BitsAllocator {
    time_bits: u32,
    worker_bits: u32,
    seq_bits: u32,
    total_bits: u32,
    unit: TimeUnit,
    epoch_millis: u64,
    max_delta: u64,
    max_worker_id: u64,
    max_sequence: u64,
    region_bits: u32,
    /// `region << region_shift`, set in every ID.
    region_part: u64,
    time_shift: u32,
    worker_shift: u32,
    seq_shift: u32,
}

impl Default for BitsAllocator {
    /// [`Preset::Default`], without checking the clock (its epoch is fixed and its end
    /// is decades away).
    fn default() -> Self {
        Preset::Default
            .builder()
            .build_unchecked_time()
            .expect("the default preset is a valid layout")
    }
}

impl BitsAllocator {
    /// A builder starting from [`Preset::Default`].
    pub fn builder() -> LayoutBuilder {
        Preset::Default.builder()
    }

    /// Builds a preset, checked against the system clock.
    pub fn preset(preset: Preset) -> Result<Self, ConfigError> {
        preset.builder().build()
    }

    fn new(
        [time_bits, worker_bits, seq_bits]: [u32; 3],
        total_bits: u32,
        unit: TimeUnit,
        epoch_millis: u64,
        region: Option<(u32, u64)>,
    ) -> Result<Self, ConfigError> {
        for (field, bits) in [
            ("time_bits", time_bits),
            ("worker_bits", worker_bits),
            ("seq_bits", seq_bits),
        ] {
            if bits == 0 {
                return Err(ConfigError::ZeroBits { field });
            }
        }
        if !(3..=TOTAL_BITS).contains(&total_bits) {
            return Err(ConfigError::OutOfRange {
                field: "total_bits",
                value: total_bits.to_string(),
                limit: format!("3 to {TOTAL_BITS} (64 bits less the sign bit)"),
            });
        }
        let (region_bits, region) = region.unwrap_or((0, 0));
        let sum = time_bits
            .saturating_add(worker_bits)
            .saturating_add(seq_bits);
        if region_bits > 0 {
            let all = sum.saturating_add(region_bits);
            if all != total_bits {
                return Err(ConfigError::OutOfRange {
                    field: "region_bits",
                    value: region_bits.to_string(),
                    limit: format!(
                        "time {time_bits} + region {region_bits} + worker {worker_bits} + \
                         sequence {seq_bits} = {all}, but must be exactly {total_bits}"
                    ),
                });
            }
            if region_bits >= 63 || region >> region_bits != 0 {
                return Err(ConfigError::OutOfRange {
                    field: "region",
                    value: region.to_string(),
                    limit: format!(
                        "0 to {} ({region_bits} region bits)",
                        (1u64 << region_bits.min(62)) - 1
                    ),
                });
            }
        } else if sum != total_bits {
            return Err(if total_bits == TOTAL_BITS {
                ConfigError::BitsSum {
                    time_bits,
                    worker_bits,
                    seq_bits,
                    sum,
                }
            } else {
                ConfigError::BitsTotal {
                    time_bits,
                    worker_bits,
                    seq_bits,
                    sum,
                    total: total_bits,
                }
            });
        }
        let mask = |bits: u32| (1u64 << bits) - 1;
        let low = worker_bits + seq_bits;
        Ok(Self {
            time_bits,
            worker_bits,
            seq_bits,
            total_bits,
            unit,
            epoch_millis,
            max_delta: mask(time_bits),
            max_worker_id: mask(worker_bits),
            max_sequence: mask(seq_bits),
            region_bits,
            region_part: region << low,
            time_shift: low + region_bits,
            worker_shift: seq_bits,
            seq_shift: 0,
        })
    }

    /// Refuses an epoch after `now_millis`, or a layout whose last tick is before it.
    pub fn check_alive_at(&self, now_millis: u64) -> Result<(), ConfigError> {
        if self.epoch_millis > now_millis {
            return Err(ConfigError::EpochInFuture {
                epoch_millis: self.epoch_millis,
                now_millis,
            });
        }
        if now_millis > self.last_instant_millis() {
            return Err(ConfigError::LayoutExhausted {
                time_bits: self.time_bits,
                worker_bits: self.worker_bits,
                seq_bits: self.seq_bits,
                unit: self.unit.symbol(),
                epoch_millis: self.epoch_millis,
                end_millis: self.end_millis(),
                max_delta: self.max_delta,
            });
        }
        Ok(())
    }

    /// Refuses a worker ID the worker bits cannot hold.
    pub fn check_worker_id(&self, worker_id: u64) -> Result<(), ConfigError> {
        if worker_id > self.max_worker_id {
            return Err(ConfigError::WorkerIdTooLarge {
                worker_id,
                max_worker_id: self.max_worker_id,
                worker_bits: self.worker_bits,
            });
        }
        Ok(())
    }

    /// Packs the three fields; each must be within its maximum.
    pub fn allocate(&self, delta: u64, worker_id: u64, sequence: u64) -> Result<u64, UidError> {
        for (field, value, max) in [
            ("delta", delta, self.max_delta),
            ("worker_id", worker_id, self.max_worker_id),
            ("sequence", sequence, self.max_sequence),
        ] {
            if value > max {
                return Err(UidError::FieldTooLarge { field, value, max });
            }
        }
        Ok(self.pack(delta, worker_id, sequence))
    }

    /// Packs fields the caller has already bounded (the generators' hot paths).
    #[inline]
    pub(crate) fn pack(&self, delta: u64, worker_id: u64, sequence: u64) -> u64 {
        debug_assert!(delta <= self.max_delta);
        debug_assert!(worker_id <= self.max_worker_id);
        debug_assert!(sequence <= self.max_sequence);
        (delta << self.time_shift)
            | self.region_part
            | (worker_id << self.worker_shift)
            | (sequence << self.seq_shift)
    }

    /// The delta (ticks since the epoch) of an ID this layout made.
    #[inline]
    pub(crate) fn delta_of(&self, uid: u64) -> u64 {
        uid >> self.time_shift
    }

    /// Unpacks an ID. An ID with the sign bit set was not made by any layout.
    pub fn parse(&self, uid: u64) -> Result<UidParts, UidError> {
        if uid >> self.total_bits != 0 {
            return Err(UidError::InvalidUid {
                input: uid.to_string(),
                reason: if uid >> TOTAL_BITS != 0 {
                    InvalidUidReason::SignBitSet
                } else {
                    InvalidUidReason::AboveLayout {
                        total_bits: self.total_bits,
                    }
                },
            });
        }
        let delta = self.delta_of(uid);
        Ok(UidParts {
            uid,
            delta,
            timestamp_millis: self.tick_start_millis(delta),
            worker_id: (uid >> self.worker_shift) & self.max_worker_id,
            sequence: (uid >> self.seq_shift) & self.max_sequence,
            unit: self.unit,
            region: (self.region_bits > 0).then(|| {
                (uid >> (self.worker_bits + self.seq_bits)) & ((1 << self.region_bits) - 1)
            }),
        })
    }

    /// Reads an ID from text (decimal, surrounding white space ignored), naming the
    /// input and the limit when it is not one.
    pub fn parse_str(&self, input: &str) -> Result<UidParts, UidError> {
        let invalid = |reason| UidError::InvalidUid {
            input: input.to_owned(),
            reason,
        };
        let text = input.trim();
        if text.is_empty() {
            return Err(invalid(InvalidUidReason::Empty));
        }
        if text.starts_with('-') {
            return Err(invalid(InvalidUidReason::Negative));
        }
        // `u64::from_str` accepts a leading '+'; an ID is digits only.
        if !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid(InvalidUidReason::NotDecimal));
        }
        let uid: u64 = text
            .parse()
            .map_err(|_| invalid(InvalidUidReason::NotDecimal))?;
        self.parse(uid)
    }

    /// The tick containing `now_millis`, or why there is none.
    #[inline]
    pub fn tick_at(&self, now_millis: u64) -> Result<u64, UidError> {
        let since = now_millis.checked_sub(self.epoch_millis).ok_or({
            UidError::ClockBeforeEpoch {
                now_millis,
                epoch_millis: self.epoch_millis,
            }
        })?;
        Ok(since / self.unit.millis())
    }

    /// The error for a delta past [`max_delta`](Self::max_delta).
    pub(crate) fn time_exhausted(&self) -> UidError {
        UidError::TimeExhausted {
            last_instant_millis: self.last_instant_millis(),
        }
    }

    /// Unix milliseconds at which tick `delta` begins (saturating, for any delta).
    pub fn tick_start_millis(&self, delta: u64) -> u64 {
        self.epoch_millis
            .saturating_add(delta.saturating_mul(self.unit.millis()))
    }

    /// The first instant the layout cannot represent (Unix milliseconds).
    pub fn end_millis(&self) -> u64 {
        self.tick_start_millis(self.max_delta.saturating_add(1))
    }

    /// The last instant the layout can represent (Unix milliseconds): the last
    /// millisecond of its last tick.
    pub fn last_instant_millis(&self) -> u64 {
        self.end_millis().saturating_sub(1)
    }

    /// How long the layout lives from its epoch.
    pub fn lifetime(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.end_millis() - self.epoch_millis)
    }

    /// Formats an instant the way this layout's timestamps print (with milliseconds
    /// for millisecond layouts).
    pub fn format_instant(&self, unix_millis: u64) -> String {
        format_utc(unix_millis, self.unit.shows_millis())
    }

    /// Bits the three fields use together: 63, or less for a capped layout.
    pub fn total_bits(&self) -> u32 {
        self.total_bits
    }

    /// The largest ID this layout can make: 2^total_bits − 1.
    pub fn max_uid(&self) -> u64 {
        (1u64 << self.total_bits) - 1
    }

    /// Bits of the time delta.
    pub fn time_bits(&self) -> u32 {
        self.time_bits
    }
    /// Bits of the worker ID.
    pub fn worker_bits(&self) -> u32 {
        self.worker_bits
    }
    /// Bits of the sequence.
    pub fn seq_bits(&self) -> u32 {
        self.seq_bits
    }
    /// The tick length.
    pub fn unit(&self) -> TimeUnit {
        self.unit
    }
    /// The epoch, in Unix milliseconds.
    pub fn epoch_millis(&self) -> u64 {
        self.epoch_millis
    }
    /// The largest delta (ticks since the epoch).
    pub fn max_delta(&self) -> u64 {
        self.max_delta
    }
    /// The largest worker ID.
    pub fn max_worker_id(&self) -> u64 {
        self.max_worker_id
    }
    /// The largest sequence number; a worker makes `max_sequence + 1` IDs per tick.
    pub fn max_sequence(&self) -> u64 {
        self.max_sequence
    }
    /// Bits of the region field (0: none).
    pub fn region_bits(&self) -> u32 {
        self.region_bits
    }
    /// The region every ID of this layout holds (0 without region bits).
    pub fn region(&self) -> u64 {
        if self.region_bits == 0 {
            0
        } else {
            self.region_part >> (self.worker_bits + self.seq_bits)
        }
    }
    /// The position of the worker ID's lowest bit in an ID (its shift).
    pub fn worker_lowest_bit(&self) -> u32 {
        self.worker_shift
    }
    /// Whether the sequence sits above the worker ID (Sonyflake's order): such a layout
    /// reads IDs, and generators refuse it.
    pub fn sequence_first(&self) -> bool {
        self.seq_shift > 0
    }
    /// The smallest ID worker `worker_id` makes in tick `delta` (saturating at the
    /// layout's end).
    pub fn first_uid_of_tick(&self, delta: u64, worker_id: u64) -> u64 {
        self.pack(
            delta.min(self.max_delta),
            worker_id.min(self.max_worker_id),
            0,
        )
    }

    /// The first tick whose IDs from `worker_id` are all above `floor` (past
    /// [`max_delta`](Self::max_delta) when none is).
    pub(crate) fn floor_tick(&self, worker_id: u64, floor: u64) -> u64 {
        let tick = self.delta_of(floor);
        if self.first_uid_of_tick(tick, worker_id) > floor {
            tick
        } else {
            tick.saturating_add(1)
        }
    }

    /// Whether worker `worker_id`'s first ID at `now_ms` (Unix ms, within the layout's
    /// life) is above `floor`: else [`ConfigError::BelowFloor`], saying from when it
    /// would be, or that it never is. What every generator checks at build time with
    /// its floor (`uidgen migrate plan` prints one), for callers that check settings
    /// without building one.
    pub fn check_floor_at(
        &self,
        floor: u64,
        worker_id: u64,
        now_ms: u64,
    ) -> Result<(), ConfigError> {
        let tick = self.tick_at(now_ms).unwrap_or(0);
        let first = self.first_uid_of_tick(tick, worker_id);
        if first > floor {
            return Ok(());
        }
        let from = self.floor_tick(worker_id, floor);
        Err(ConfigError::BelowFloor {
            floor,
            first,
            why: if from > self.max_delta() {
                format!("layout {self} never makes an ID above it for worker ID {worker_id}")
            } else {
                format!(
                    "layout {self} makes IDs above it for worker ID {worker_id} only from {}",
                    self.format_instant(self.tick_start_millis(from))
                )
            },
        })
    }
}

impl fmt::Display for BitsAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/", self.time_bits)?;
        if self.region_bits > 0 {
            write!(f, "{}/", self.region_bits)?;
        }
        write!(f, "{}/{}", self.worker_bits, self.seq_bits)?;
        if self.region_bits > 0 {
            write!(f, " region {}", self.region())?;
        }
        write!(
            f,
            "{} {} epoch {}",
            if self.sequence_first() {
                " (sequence above worker)"
            } else {
                ""
            },
            self.unit.symbol(),
            format_utc(self.epoch_millis, !self.epoch_millis.is_multiple_of(1000))
        )
    }
}
