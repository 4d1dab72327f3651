//! One module per command, and the dispatcher: it reads the worker options and the
//! environment once, into the worker source or store a command takes, so that no command
//! reads them itself.

mod bench;
mod completions;
mod layout;
mod migrate;
mod next;
mod parse;
mod probe;
mod segment;
mod serve;
mod worker;

use crate::args::Command;
use crate::output::{Failure, Lines};
use crate::source::{Source, StoreChoice, Taken, MAX_TIME_AHEAD};
use crate::{usage_error, Env};
use std::io::{BufRead, Write};
use uidgen::{BitsAllocator, CachedUidGenerator, DefaultUidGenerator};

/// Runs one command: its worker source or store first (from the options and `env`), then
/// the command.
pub(crate) fn execute(
    command: Command,
    env: Env,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<u8, Failure> {
    match command {
        Command::Next {
            count,
            generator,
            on_rollback,
            json,
            format,
            id_floor,
            worker,
            layout,
        } => {
            let source = Source::from_args(&worker, env)?;
            let format = (!json).then_some(format.into());
            next::run(
                next::Run {
                    count,
                    generator,
                    on_rollback,
                    format,
                    id_floor,
                },
                &source,
                &layout,
                stdout,
            )
        }
        Command::Parse {
            uids,
            format,
            layout,
        } => parse::run(
            &uids,
            format.map(Into::into),
            &layout,
            stdin,
            stdout,
            stderr,
        ),
        Command::Worker {
            action,
            json,
            worker,
            layout,
        } => {
            let source = Source::from_args(&worker, env)?;
            match action.as_deref() {
                Some("list") => worker::list(json, &source, &layout, stdout),
                _ => worker::show(json, &source, &layout, stdout),
            }
        }
        Command::Segment { action } => {
            let store = StoreChoice::from_option(action.store(), env);
            segment::run(&action, &store, stdout, stderr)
        }
        Command::Store { action } => {
            let crate::args::StoreAction::Repair {
                margin,
                ahead,
                store,
            } = action;
            let url = StoreChoice::from_option(store.store.as_deref(), env).url()?;
            let report = url.repair(margin, ahead)?;
            let mut out = Lines::new(stdout);
            out.line(format_args!("repaired {url}:\n{report}"))?;
            out.flush()?;
            Ok(crate::SUCCESS)
        }
        Command::Layout { json, layout } => layout::run(json, &layout, stdout),
        Command::Migrate {
            action: crate::args::MigrateAction::Plan(args),
        } => migrate::plan(&args, stdout),
        Command::Migrate {
            action: crate::args::MigrateAction::LeafZk(args),
        } => migrate::leaf_zk(&args, stdout),
        Command::Bench(args) => {
            // The command line's own checks first: a misplaced option is a usage error.
            if let Some(problem) = args.misplaced_option() {
                return Ok(usage_error("bench", &problem, stdout, stderr));
            }
            if let Some(name) = &args.scheme {
                return bench::schemes::run(&args, name, env, stdout);
            }
            let options = bench::options(&args)?;
            let supply = bench::Supply::choose(&args, env)?;
            bench::run(&args, &options, supply, stdout)
        }
        Command::Serve(args) => serve::run(&args, env, stdout),
        Command::Completions { shell } => completions::run(shell, stdout),
        Command::Probe { url, timeout } => {
            probe::run(&url, std::time::Duration::from_secs(timeout), stdout)
        }
    }
}

/// Writes `count` IDs, taken in batches by `take`, each through `line`; stops at the
/// first failure (the IDs before it are written).
fn write_ids(
    out: &mut Lines<'_>,
    count: u64,
    mut take: impl FnMut(&mut [u64]) -> Result<usize, uidgen::UidError>,
    mut line: impl FnMut(&mut Lines<'_>, u64) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut batch = [0u64; 256];
    let mut left = count;
    while left > 0 {
        let want = usize::try_from(left)
            .unwrap_or(batch.len())
            .min(batch.len());
        let n = take(&mut batch[..want])?;
        for &uid in &batch[..n] {
            line(out, uid)?;
        }
        left -= n as u64;
    }
    Ok(())
}

/// The ring's slots for the cached generator: UidGenerator's eight ticks' worth, at most
/// 2^17 slots (1 MiB). Layouts with many sequence bits (30/9/24) would otherwise want
/// more than the library's 2^26-slot limit, or half a gigabyte for a single ID.
fn ring_slots(bits: &BitsAllocator) -> usize {
    1usize << (bits.seq_bits() + 3).min(17)
}

/// The cached generator on the worker ID taken (its lease, if any, goes with it).
fn cached_generator(
    bits: BitsAllocator,
    taken: Taken,
    id_floor: Option<u64>,
) -> Result<CachedUidGenerator, Failure> {
    // Borrowed time is capped as in `uidgen serve`: a run faster than the layout's rate
    // waits for the clock (a tick at most) instead of stamping IDs far in the future,
    // which a store that later lost the mark would expose.
    let tick = std::time::Duration::from_millis(bits.unit().millis());
    let mut builder = CachedUidGenerator::builder()
        .allocator(bits)
        .ring_capacity(ring_slots(&bits))
        .max_time_ahead(MAX_TIME_AHEAD)
        .take_reject_policy(uidgen::TakeRejectPolicy::wait(
            tick + std::time::Duration::from_secs(2),
        ));
    if let Some(floor) = id_floor {
        builder = builder.floor(floor);
    }
    Ok(match taken.lease {
        Some(lease) => builder.lease(lease),
        None => builder.worker_id(taken.worker_id),
    }
    .build()?)
}

/// The default generator on the worker ID taken (its lease, if any, goes with it); with
/// `spares`, `SpareWorker` on them (their leases go with it too).
fn default_generator(
    bits: BitsAllocator,
    taken: Taken,
    on_rollback: uidgen::RollbackStrategy,
    spares: Vec<Taken>,
    id_floor: Option<u64>,
) -> Result<DefaultUidGenerator, Failure> {
    let mut builder = DefaultUidGenerator::builder()
        .allocator(bits)
        .rollback_strategy(on_rollback);
    if let Some(floor) = id_floor {
        builder = builder.floor(floor);
    }
    builder = match taken.lease {
        Some(lease) => builder.lease(lease),
        None => builder.worker_id(taken.worker_id),
    };
    if !spares.is_empty() {
        let ids: Vec<u64> = spares.iter().map(|s| s.worker_id).collect();
        let leases: Vec<uidgen::WorkerLease> = spares.into_iter().filter_map(|s| s.lease).collect();
        builder = if leases.is_empty() {
            builder.rollback_strategy(uidgen::RollbackStrategy::SpareWorker { spares: ids })
        } else {
            builder.spare_leases(leases)
        };
    }
    Ok(builder.build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_fit_every_layout() {
        for seq in 1..=61 {
            let bits = BitsAllocator::builder()
                .bits(62 - seq, 1, seq)
                .build_unchecked_time()
                .unwrap();
            let slots = ring_slots(&bits);
            assert!(slots.is_power_of_two() && (16..=1 << 17).contains(&slots));
        }
        assert_eq!(ring_slots(&BitsAllocator::default()), 1 << 16);
    }
}
