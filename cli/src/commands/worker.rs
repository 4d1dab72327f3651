//! `uidgen worker`: lease a worker ID, show it and give it back; or, with `list`, the
//! store's leases.

use crate::args::LayoutArgs;
use crate::output::{Failure, Lines};
use crate::source::Source;
use crate::SUCCESS;
use std::io::Write;

/// `uidgen worker list`: every worker ID the store knows, with holder, mark and expiry,
/// and how many of the layout's worker IDs are held and free; for `--mysql-url`'s
/// WORKER_NODE, the rows used and the launches left.
pub(super) fn list(
    json: bool,
    source: &Source,
    layout: &LayoutArgs,
    stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    // Any layout, even one whose time has run out: this only counts worker IDs.
    let bits = layout.builder()?.build_unchecked_time()?;
    if let Some((registry, usage)) = source.registry_usage(&bits)? {
        let mut out = Lines::new(stdout);
        if json {
            out.line(serde_json::json!({
                "registry": registry,
                "layout": bits.to_string(),
                "worker_ids": crate::source::usage_json(&usage),
            }))?;
        } else {
            out.line(format_args!("registry {registry}"))?;
            out.line(format_args!("layout {bits}: {usage}"))?;
        }
        out.flush()?;
        return Ok(SUCCESS);
    }
    let range = source.range().map(|r| r.check(&bits)).transpose()?;
    let store = source.store()?;
    let leases = store.leases()?;
    // With --worker-ids: how much of this deployment's share is held.
    let in_range = range.map(|range| {
        let held = leases
            .iter()
            .filter(|l| range.contains(l.worker_id) && l.expires_in.is_some())
            .count() as u64;
        (range, held)
    });
    let mark = |ms: u64| {
        if ms == 0 {
            "-".to_owned()
        } else {
            uidgen::BitsAllocator::default().format_instant(ms)
        }
    };
    let mut out = Lines::new(stdout);
    if json {
        let rows: Vec<_> = leases
            .iter()
            .map(|lease| {
                serde_json::json!({
                    "worker_id": lease.worker_id,
                    "holder": lease.holder,
                    "live": lease.expires_in.is_some(),
                    "expires_in_ms": lease.expires_in.map(|d| d.as_millis() as u64),
                    "mark_ms": lease.mark_ms,
                })
            })
            .collect();
        out.line(serde_json::json!({
            "store": store.describe(),
            "leases": rows,
            "layout": bits.to_string(),
            "worker_ids": crate::source::usage_json(&uidgen::WorkerIdUsage::of_leases(&leases, &bits)),
            "range": in_range.map(|(range, held)| serde_json::json!({
                "first": range.first(),
                "last": range.last(),
                "held": held,
                "free": range.len() - held,
            })),
        }))?;
    } else {
        out.line(format_args!("store {}", store.describe()))?;
        out.line(format_args!(
            "{:>9}  {:<8}  {:<12}  {:<23}  holder",
            "worker_id", "state", "expires_in", "mark"
        ))?;
        for lease in &leases {
            let (state, expires) = match (lease.expires_in, &lease.holder) {
                (Some(left), _) => ("held", format!("{:.1}s", left.as_secs_f64())),
                (None, Some(_)) => ("expired", "-".to_owned()),
                (None, None) => ("free", "-".to_owned()),
            };
            out.line(format_args!(
                "{:>9}  {state:<8}  {expires:<12}  {:<23}  {}",
                lease.worker_id,
                mark(lease.mark_ms),
                lease.holder.as_deref().unwrap_or("-")
            ))?;
        }
        out.line(format_args!(
            "layout {bits}: {}",
            uidgen::WorkerIdUsage::of_leases(&leases, &bits)
        ))?;
        if let Some((range, held)) = in_range {
            out.line(format_args!(
                "range {range} (--worker-ids): {held} of {} held by live leases, {} free",
                range.len(),
                range.len() - held
            ))?;
        }
    }
    out.flush()?;
    Ok(SUCCESS)
}

/// `uidgen worker`: a worker ID taken from `source`, shown, and given back.
pub(super) fn show(
    json: bool,
    source: &Source,
    layout: &LayoutArgs,
    stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    let bits = layout.builder()?.build()?;
    // Taken and given back at the end: the worker ID shown is free again afterwards.
    let assigned = source.take(&bits, crate::source::MAX_TIME_AHEAD)?;
    let mut out = Lines::new(stdout);
    if json {
        out.line(serde_json::json!({
            "worker_id": assigned.worker_id,
            "source": assigned.source,
            "layout": bits.to_string(),
            "max_worker_id": bits.max_worker_id(),
        }))?;
    } else {
        out.line(format_args!("worker_id  {}", assigned.worker_id))?;
        out.line(format_args!("from       {}", assigned.source))?;
        out.line(format_args!(
            "layout     {bits} (max_worker_id {})",
            bits.max_worker_id()
        ))?;
    }
    out.flush()?;
    Ok(SUCCESS)
}
