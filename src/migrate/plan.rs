//! [`MigrationPlan`]: from an old scheme and its highest ID, a layout (or a segment
//! start) and the proof that new IDs sort above the old ones, or never equal them.

use crate::clock::format_utc;
use crate::error::ConfigError;
use crate::layout::{BitsAllocator, Preset, TimeUnit};

/// The largest ID any layout or segment store hands out: `i64::MAX`, the largest SQL
/// `BIGINT`.
const MAX_ID: u64 = i64::MAX as u64;
const DAY_MS: u64 = 86_400_000;
/// A mean Gregorian year.
const YEAR_MS: f64 = 31_556_952_000.0;
/// Finest first: the first tick length that holds the needs is chosen.
const UNITS: [TimeUnit; 3] = [
    TimeUnit::Milliseconds,
    TimeUnit::Centiseconds,
    TimeUnit::Seconds,
];

/// The scheme IDs come from today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OldScheme {
    /// A time-based layout (a preset, or bits, unit and epoch): where its worker field
    /// sits says which bits old IDs never set.
    Layout(BitsAllocator),
    /// An auto-increment column or any other counter: only the highest ID is known.
    Counter,
}

/// What the new generator must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// Worker IDs in use at once (processes).
    pub workers: u64,
    /// IDs a second each worker makes, at the most. Segment mode must hold the fleet's:
    /// `workers × ids_per_second`.
    pub ids_per_second: u64,
    /// Years the layout must last from now.
    pub years: u32,
}

impl Default for Needs {
    /// 1,024 workers, 1,000,000 IDs a second each, 20 years.
    fn default() -> Self {
        Self {
            workers: 1024,
            ids_per_second: 1_000_000,
            years: 20,
        }
    }
}

/// How a time-based plan keeps new IDs from old ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Guarantee {
    /// Every ID the layout makes from now on is above the old maximum, so `ORDER BY id`
    /// keeps time order across both schemes.
    Above,
    /// Every new ID has bit `bit` set (a region field of one bit, holding 1), which no old
    /// ID sets: old worker IDs up to `old_max_worker` never reach it. New IDs never
    /// equal an old one, but they do **not** sort above the old ones.
    Apart {
        /// The bit every new ID sets, counted from 0 at the lowest.
        bit: u32,
        /// The highest worker ID the old scheme ever used.
        old_max_worker: u64,
    },
}

/// A layout for the time-based generators, and what it holds.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TimeBasedPlan {
    /// The layout (its epoch chosen so that the guarantee holds from now on).
    pub layout: BitsAllocator,
    /// The preset it equals, when it does (then only the floor is new).
    pub preset: Option<Preset>,
    /// Above the old IDs, or apart from them.
    pub guarantee: Guarantee,
    /// The smallest ID the layout makes now (worker 0, sequence 0).
    pub first_id_now: u64,
    /// The first instant the layout cannot make IDs for (Unix ms).
    pub ends_millis: u64,
    /// Worker IDs it holds at once.
    pub workers: u64,
    /// IDs a second each worker makes before borrowing future ticks.
    pub ids_per_second: u64,
    /// Years from now until it ends.
    pub years_left: f64,
}

/// Segment mode's start: the first ID above the old maximum.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SegmentPlan {
    /// The first ID a tag hands out (`segment create --start`).
    pub start: u64,
    /// IDs from the start to the largest `BIGINT`.
    pub ids_left: u64,
    /// How long they last at the fleet's rate (`workers × ids_per_second`).
    pub years_at_need: f64,
}

/// A plan: a time-based layout, a segment start, or both, each proven above the old
/// maximum (a time-based one may be [`Guarantee::Apart`] where nothing fits above).
///
/// ```
/// use uidgen::{Guarantee, MigrationPlan, Needs, OldScheme, Preset};
///
/// // Leaf's snowflake IDs reach about 2.1e18 by now.
/// let leaf = Preset::Snowflake.builder().build()?;
/// let now = 1_795_000_000_000; // 2026-11-17
/// let max_id = leaf.allocate(leaf.tick_at(now)?, 1023, 4095)?;
/// let plan = MigrationPlan::new(OldScheme::Layout(leaf), max_id, None, Needs::default(), now)?;
/// let time_based = plan.time_based.expect("a layout above Leaf's IDs");
/// assert_eq!(time_based.guarantee, Guarantee::Above);
/// assert!(time_based.first_id_now > max_id);
/// assert!(time_based.years_left >= 20.0 && time_based.workers >= 1024);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MigrationPlan {
    /// The old scheme's highest ID: the floor no new ID goes down to.
    pub max_id: u64,
    /// What the new generator must hold.
    pub needs: Needs,
    /// The time-based layout, if one holds the needs.
    pub time_based: Option<TimeBasedPlan>,
    /// Why no layout sorts above the old IDs, when the time-based plan is
    /// [`Guarantee::Apart`] or there is none.
    pub not_above: Option<String>,
    /// Segment mode's start, if enough IDs are left above the maximum for the needs.
    pub segment: Option<SegmentPlan>,
    /// Why segment mode does not hold the needs, when it does not.
    pub not_segment: Option<String>,
}

/// Why there is no plan, naming the requirement to relax.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A need or the maximum is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Neither a layout nor a segment start holds the needs.
    #[error("no plan keeps new IDs apart from the old ones: {why}")]
    NoPlan {
        /// What fails for each kind of plan, and what to relax.
        why: String,
    },
}

impl MigrationPlan {
    /// Plans from `old`, its highest ID `max_id`, the highest worker ID it ever used
    /// (`old_max_worker`: for UidGenerator, `MAX(ID)` of `WORKER_NODE`; needed only when
    /// nothing fits above), the needs, and the time now (Unix ms).
    pub fn new(
        old: OldScheme,
        max_id: u64,
        old_max_worker: Option<u64>,
        needs: Needs,
        now_millis: u64,
    ) -> Result<Self, PlanError> {
        check_needs(&needs, max_id)?;
        let (time_based, not_above) = match above(max_id, &needs, now_millis) {
            Ok(plan) => (Some(plan), None),
            Err(not_above) => {
                let apart = match (old, old_max_worker) {
                    (OldScheme::Layout(layout), Some(worker)) => {
                        apart(&layout, worker, &needs, now_millis)
                    }
                    (OldScheme::Layout(_), None) => Err(
                        "nothing proves new IDs apart from the old without the highest \
                         worker ID the old scheme used (--old-max-worker; for UidGenerator, \
                         MAX(ID) of WORKER_NODE)"
                            .to_owned(),
                    ),
                    (OldScheme::Counter, _) => {
                        Err("a counter's IDs use every bit, so only IDs above them are safe".into())
                    }
                };
                match apart {
                    Ok(plan) => (Some(plan), Some(not_above)),
                    Err(not_apart) => (None, Some(format!("{not_above}; {not_apart}"))),
                }
            }
        };
        let (segment, not_segment) = match segment(max_id, &needs) {
            Ok(plan) => (Some(plan), None),
            Err(why) => (None, Some(why)),
        };
        if time_based.is_none() && segment.is_none() {
            return Err(PlanError::NoPlan {
                why: format!(
                    "time-based: {}; segment mode: {}",
                    not_above.unwrap_or_default(),
                    not_segment.unwrap_or_default()
                ),
            });
        }
        Ok(Self {
            max_id,
            needs,
            time_based,
            not_above,
            segment,
            not_segment,
        })
    }
}

fn check_needs(needs: &Needs, max_id: u64) -> Result<(), ConfigError> {
    let out = |field, value: String, limit: &str| ConfigError::OutOfRange {
        field,
        value,
        limit: limit.into(),
    };
    if !(1..=1 << 30).contains(&needs.workers) {
        return Err(out("workers", needs.workers.to_string(), "1 to 2^30"));
    }
    if !(1..=1 << 40).contains(&needs.ids_per_second) {
        return Err(out(
            "ids_per_second",
            needs.ids_per_second.to_string(),
            "1 to 2^40",
        ));
    }
    if !(1..=1000).contains(&needs.years) {
        return Err(out("years", needs.years.to_string(), "1 to 1000"));
    }
    if max_id > MAX_ID {
        return Err(out(
            "max_id",
            max_id.to_string(),
            "at most 9223372036854775807 (2^63 - 1, the largest BIGINT)",
        ));
    }
    Ok(())
}

/// The fewest bits that hold `count` distinct values (at least 1).
fn bits_for(count: u64) -> u32 {
    (u64::BITS - count.saturating_sub(1).leading_zeros()).max(1)
}

/// IDs a worker must make in one tick of `unit` to reach `per_second`.
fn per_tick(per_second: u64, unit: TimeUnit) -> u64 {
    (u128::from(per_second) * u128::from(unit.millis()))
        .div_ceil(1000)
        .try_into()
        .unwrap_or(u64::MAX)
}

fn years_between(from_millis: u64, to_millis: u64) -> f64 {
    to_millis.saturating_sub(from_millis) as f64 / YEAR_MS
}

/// A plan for `layout`, made at `now_millis`.
fn time_based(
    layout: BitsAllocator,
    preset: Option<Preset>,
    guarantee: Guarantee,
    now_millis: u64,
) -> TimeBasedPlan {
    let tick = layout.tick_at(now_millis).unwrap_or(0);
    TimeBasedPlan {
        first_id_now: layout.first_uid_of_tick(tick, 0),
        ends_millis: layout.end_millis(),
        workers: layout.max_worker_id() + 1,
        ids_per_second: (layout.max_sequence() + 1).saturating_mul(1000 / layout.unit().millis()),
        years_left: years_between(now_millis, layout.end_millis()),
        layout,
        preset,
        guarantee,
    }
}

/// A layout whose every ID from now on is above `max_id`: the default preset when it
/// holds the needs and is above already; else for the finest tick that works, the
/// fewest sequence bits (the most time bits) whose epoch, set back so that the first
/// tick now is above the maximum, falls after 1970.
fn above(max_id: u64, needs: &Needs, now: u64) -> Result<TimeBasedPlan, String> {
    if let Ok(default) = Preset::Default.builder().build_unchecked_time() {
        let plan = time_based(default, Some(Preset::Default), Guarantee::Above, now);
        if default.check_alive_at(now).is_ok()
            && plan.first_id_now > max_id
            && plan.workers >= needs.workers
            && plan.ids_per_second >= needs.ids_per_second
            && plan.years_left >= f64::from(needs.years)
        {
            return Ok(plan);
        }
    }
    let worker_bits = bits_for(needs.workers);
    let mut best: Option<TimeBasedPlan> = None;
    for unit in UNITS {
        let min_seq = bits_for(per_tick(needs.ids_per_second, unit));
        for seq_bits in min_seq..62u32.saturating_sub(worker_bits) {
            let time_bits = 63 - worker_bits - seq_bits;
            let first_tick = (max_id >> (worker_bits + seq_bits)) + 1;
            if first_tick >= 1 << time_bits {
                // The maximum's share of the ID space is the same at every split.
                break;
            }
            let Some(back) = first_tick.checked_mul(unit.millis()).filter(|b| *b <= now) else {
                continue; // More sequence bits move the epoch forward.
            };
            let epoch = (now - back) / DAY_MS * DAY_MS;
            let Ok(layout) = Preset::Default
                .builder()
                .bits(time_bits, worker_bits, seq_bits)
                .unit(unit)
                .epoch_millis(epoch)
                .build_unchecked_time()
            else {
                break;
            };
            let plan = time_based(layout, None, Guarantee::Above, now);
            if plan.years_left >= f64::from(needs.years) {
                return Ok(plan);
            }
            // More sequence bits only shorten the life.
            if best.as_ref().is_none_or(|b| b.years_left < plan.years_left) {
                best = Some(plan);
            }
            break;
        }
    }
    Err(match best {
        Some(best) => format!(
            "above {max_id}, the longest-lived layout that holds {} workers at {} IDs/s \
             each is {}, which lasts {:.1} years from now, not {}: lower --years, \
             --workers or --rate",
            needs.workers, needs.ids_per_second, best.layout, best.years_left, needs.years
        ),
        None => format!(
            "no layout holding {} workers at {} IDs/s each has room above {max_id} \
             (2^63 - 1 is the largest ID): lower --workers or --rate",
            needs.workers, needs.ids_per_second
        ),
    })
}

/// A layout with a one-bit region set to 1 at a bit the old layout's worker field holds
/// but no old worker ID up to `old_max_worker` ever set.
fn apart(
    old: &BitsAllocator,
    old_max_worker: u64,
    needs: &Needs,
    now: u64,
) -> Result<TimeBasedPlan, String> {
    let used = u64::BITS - old_max_worker.leading_zeros();
    let lowest = old.worker_lowest_bit() + used;
    let highest = (old.worker_lowest_bit() + old.worker_bits())
        .saturating_sub(1)
        .min(61);
    if used >= old.worker_bits() || lowest > highest {
        return Err(format!(
            "old worker IDs up to {old_max_worker} fill the old layout's {} worker bits, so \
             no bit is free of old IDs",
            old.worker_bits()
        ));
    }
    let worker_bits = bits_for(needs.workers);
    let epoch = now / DAY_MS * DAY_MS;
    let mut best: Option<TimeBasedPlan> = None;
    for unit in UNITS {
        let seq_bits =
            bits_for(per_tick(needs.ids_per_second, unit)).max(lowest.saturating_sub(worker_bits));
        let bit = worker_bits + seq_bits;
        if bit > highest {
            continue;
        }
        let Ok(layout) = Preset::Default
            .builder()
            .bits(62 - bit, worker_bits, seq_bits)
            .region(1, 1)
            .unit(unit)
            .epoch_millis(epoch)
            .build_unchecked_time()
        else {
            continue;
        };
        let guarantee = Guarantee::Apart {
            bit,
            old_max_worker,
        };
        let plan = time_based(layout, None, guarantee, now);
        if plan.years_left >= f64::from(needs.years) {
            return Ok(plan);
        }
        if best.as_ref().is_none_or(|b| b.years_left < plan.years_left) {
            best = Some(plan);
        }
    }
    Err(match best {
        Some(best) => format!(
            "apart from old IDs (a set bit from {lowest} to {highest}), the longest-lived \
             layout is {}, which lasts {:.1} years, not {}: lower --years, --workers or \
             --rate",
            best.layout, best.years_left, needs.years
        ),
        None => format!(
            "apart from old IDs, the new worker and sequence bits must end at bit {lowest} \
             to {highest}, and {} workers at {} IDs/s each need more: lower --workers or \
             --rate",
            needs.workers, needs.ids_per_second
        ),
    })
}

/// Segment mode from the first ID above the maximum, if the IDs left last the years at
/// the fleet's rate.
fn segment(max_id: u64, needs: &Needs) -> Result<SegmentPlan, String> {
    let start = max_id + 1;
    let ids_left = MAX_ID.saturating_sub(max_id);
    let rate = needs.workers.saturating_mul(needs.ids_per_second) as f64;
    let years_at_need = ids_left as f64 / rate / (YEAR_MS / 1000.0);
    if ids_left == 0 || years_at_need < f64::from(needs.years) {
        return Err(format!(
            "{ids_left} IDs are left above {max_id}, {years_at_need:.3} years at {} \
             workers × {} IDs/s, not {}",
            needs.workers, needs.ids_per_second, needs.years
        ));
    }
    Ok(SegmentPlan {
        start,
        ids_left,
        years_at_need,
    })
}

impl TimeBasedPlan {
    /// When the layout ends, as a UTC date and time.
    pub fn ends(&self) -> String {
        format_utc(self.ends_millis, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-27.
    const NOW: u64 = 1_795_737_600_000;

    fn max_of(layout: &BitsAllocator, at_millis: u64, max_worker: u64) -> u64 {
        let tick = layout.tick_at(at_millis).unwrap().min(layout.max_delta());
        layout
            .allocate(tick, max_worker, layout.max_sequence())
            .unwrap()
    }

    fn unchecked(preset: Preset) -> BitsAllocator {
        preset.builder().build_unchecked_time().unwrap()
    }

    #[test]
    fn every_planned_layout_starts_above_the_old_maximum_and_lasts_the_years() {
        let olds = [
            (unchecked(Preset::Snowflake), 1023),
            (unchecked(Preset::Sonyflake), 65_535),
            (unchecked(Preset::Instagram), 8191),
            // UidGenerator stopped in 2023.
            (unchecked(Preset::UidGenerator), 5000),
        ];
        for (old, max_worker) in olds {
            let at = if old.unit() == TimeUnit::Seconds {
                1_700_000_000_000
            } else {
                NOW
            };
            let max_id = max_of(&old, at, max_worker);
            let needs = Needs {
                workers: 64,
                ids_per_second: 100_000,
                years: 5,
            };
            let plan =
                MigrationPlan::new(OldScheme::Layout(old), max_id, None, needs, NOW).unwrap();
            let time = plan
                .time_based
                .unwrap_or_else(|| panic!("{old}: {:?}", plan.not_above));
            assert_eq!(time.guarantee, Guarantee::Above, "{old}");
            assert!(
                time.first_id_now > max_id,
                "{old}: {} <= {max_id}",
                time.first_id_now
            );
            assert!(time.layout.check_alive_at(NOW).is_ok());
            assert!(time.years_left >= 5.0 && time.workers >= 64);
            assert!(time.ids_per_second >= 100_000, "{}", time.ids_per_second);
            // The lowest ID at the epoch's first tick now is the one promised.
            let tick = time.layout.tick_at(NOW).unwrap();
            assert_eq!(time.layout.allocate(tick, 0, 0).unwrap(), time.first_id_now);
            assert_eq!(plan.segment.unwrap().start, max_id + 1);
        }
    }

    #[test]
    fn a_small_maximum_keeps_the_default_preset() {
        let plan =
            MigrationPlan::new(OldScheme::Counter, 1_000_000, None, Needs::default(), NOW).unwrap();
        let time = plan.time_based.unwrap();
        assert_eq!(time.preset, Some(Preset::Default));
        assert!(time.first_id_now > 1_000_000);
    }

    #[test]
    fn uidgenerator_run_to_its_end_is_planned_apart_and_no_new_id_reads_as_an_old_worker() {
        let old = unchecked(Preset::UidGenerator);
        let max_id = old
            .allocate(old.max_delta(), 5000, old.max_sequence())
            .unwrap();
        assert!(max_id > MAX_ID - (1 << 35));
        let plan = MigrationPlan::new(
            OldScheme::Layout(old),
            max_id,
            Some(5000),
            Needs::default(),
            NOW,
        )
        .unwrap();
        let time = plan.time_based.unwrap();
        let Guarantee::Apart { bit, .. } = time.guarantee else {
            panic!("{:?}", time.guarantee)
        };
        let not_above = plan.not_above.unwrap();
        assert!(
            not_above.contains("0.0 years") || not_above.contains("room above"),
            "{not_above}"
        );
        let new = time.layout;
        // The corners of the new layout, read in the old one: never an old worker ID.
        for tick in [0, 1, new.max_delta() / 2, new.max_delta()] {
            for worker in [0, 1, new.max_worker_id()] {
                for seq in [0, new.max_sequence()] {
                    let id = new.allocate(tick, worker, seq).unwrap();
                    assert_ne!(id & (1 << bit), 0);
                    assert!(old.parse(id).unwrap().worker_id > 5000, "{id}");
                }
            }
        }
        assert!(time.years_left >= 20.0);
        // Without the old worker IDs, nothing is proven.
        let err = MigrationPlan::new(OldScheme::Layout(old), max_id, None, Needs::default(), NOW)
            .unwrap_err();
        assert!(err.to_string().contains("--old-max-worker"), "{err}");
    }

    #[test]
    fn refusals_name_what_to_relax() {
        let err = MigrationPlan::new(OldScheme::Counter, MAX_ID - 1, None, Needs::default(), NOW)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no layout") && err.contains("IDs are left"),
            "{err}"
        );
        let greedy = Needs {
            workers: 1 << 30,
            ids_per_second: 1 << 40,
            years: 1000,
        };
        let err = MigrationPlan::new(OldScheme::Counter, 1 << 40, None, greedy, NOW)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--workers") || err.contains("--years"),
            "{err}"
        );
        let err = MigrationPlan::new(OldScheme::Counter, u64::MAX, None, Needs::default(), NOW)
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_id") && err.contains("2^63 - 1"), "{err}");
    }
}
