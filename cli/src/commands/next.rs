//! `uidgen next`: new IDs, one a line in a form (or each taken apart, as JSON).

use super::{cached_generator, default_generator, write_ids};
use crate::args::{GeneratorKind, LayoutArgs, OnRollback};
use crate::output::{Failure, Lines};
use crate::source::Source;
use crate::SUCCESS;
use std::io::Write;
use uidgen::{IdFormat, UidGenerator};

/// What `next` was asked for.
pub(super) struct Run {
    pub(super) count: u64,
    pub(super) generator: GeneratorKind,
    pub(super) on_rollback: OnRollback,
    /// `None`: each ID taken apart, as JSON.
    pub(super) format: Option<IdFormat>,
    pub(super) id_floor: Option<u64>,
}

pub(super) fn run(
    run: Run,
    source: &Source,
    layout: &LayoutArgs,
    stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    let Run {
        count,
        generator,
        on_rollback,
        format,
        id_floor,
    } = run;
    let bits = layout.builder()?.build()?;
    if bits.sequence_first() {
        return Err(uidgen::ConfigError::ReadOnlyLayout {
            layout: bits.to_string(),
        }
        .into());
    }
    if count == 0 {
        // Nothing to make: check the settings, take no registry row. The floor is checked
        // for the lowest worker ID, whose first ID is the smallest.
        source.check(&bits)?;
        if let Some(floor) = id_floor {
            use uidgen::Clock;
            bits.check_floor_at(floor, 0, uidgen::SystemClock.now_millis())?;
        }
        return Ok(SUCCESS);
    }
    // The default generator waits at most 1 s for a worker ID's mark; the cached one
    // borrows up to its cap past it.
    let prefer_within = match generator {
        GeneratorKind::Default => std::time::Duration::from_secs(1),
        GeneratorKind::Cached => crate::source::MAX_TIME_AHEAD,
    };
    if let OnRollback::Spares(n) = on_rollback {
        // Before the main one is taken: a range too small for all of them never will be.
        source.range_holds(
            n + 1,
            &format!("--on-rollback spare:{n} and the main generator"),
        )?;
    }
    let taken = source.take(&bits, prefer_within)?;
    let generator: Box<dyn UidGenerator> = match generator {
        GeneratorKind::Default => {
            let (strategy, spares) = match on_rollback {
                OnRollback::Strategy(strategy) => (strategy, Vec::new()),
                // Taken now, beside the main one, with marks at most as far ahead as the
                // main one's: a spare is only of use with its mark behind the clock.
                OnRollback::Spares(n) => (
                    uidgen::RollbackStrategy::Fail,
                    source.take_spares(&bits, n, prefer_within)?,
                ),
            };
            Box::new(default_generator(bits, taken, strategy, spares, id_floor)?)
        }
        GeneratorKind::Cached => Box::new(cached_generator(bits, taken, id_floor)?),
    };
    let mut out = Lines::new(stdout);
    let made = write_ids(
        &mut out,
        count,
        |batch| generator.next_uids(batch),
        |out, uid| match format {
            None => out.line(bits.parse(uid)?),
            Some(format) => out.line(format.display(uid)),
        },
    );
    // The IDs made before a failure are good: write them, then report it.
    let flushed = out.flush();
    made?;
    flushed?;
    Ok(SUCCESS)
}
