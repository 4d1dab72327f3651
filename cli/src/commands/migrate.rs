//! `uidgen migrate plan`: a layout (or segment start) above an old scheme's IDs, with the
//! proof, and the flags, config keys and builder calls that apply it.

use crate::args::{LayoutArgs, PlanArgs};
use crate::output::{Failure, Lines};
use crate::SUCCESS;
use std::io::Write;
use uidgen::{
    BitsAllocator, Clock, Guarantee, MigrationPlan, Needs, OldScheme, StoreUrl, SystemClock,
    TimeBasedPlan, TimeUnit,
};

pub(super) fn plan(args: &PlanArgs, stdout: &mut dyn Write) -> Result<u8, Failure> {
    let old = old_scheme(args)?;
    let (max_id, read_from) = max_id(args)?;
    let needs = Needs {
        workers: args.workers,
        ids_per_second: args.rate,
        years: args.years,
    };
    let now = SystemClock.now_millis();
    let plan = MigrationPlan::new(old, max_id, args.old_max_worker, needs, now)?;
    let mut out = Lines::new(stdout);
    if args.json {
        out.line(json(args, old, &plan, read_from.as_deref()))?;
    } else {
        out.text(&text(args, old, &plan, read_from.as_deref()))?;
    }
    out.flush()?;
    Ok(SUCCESS)
}

fn old_scheme(args: &PlanArgs) -> Result<OldScheme, Failure> {
    let name = args.from.trim();
    if ["auto-increment", "autoincrement", "counter"].contains(&name.to_ascii_lowercase().as_str())
    {
        return Ok(OldScheme::Counter);
    }
    let layout = LayoutArgs {
        layout: name.to_owned(),
        unit: args.from_unit,
        epoch: args.from_epoch.clone(),
        region: None,
    };
    // An old layout may have run out (UidGenerator's did in 2024): read it as it was.
    let bits = layout.builder().map_err(|e| {
        Failure::msg(format!(
            "--from: {}",
            e.to_string().replace("--layout", "the old scheme") + " (or auto-increment)"
        ))
    })?;
    Ok(OldScheme::Layout(bits.build_unchecked_time()?))
}

/// The highest ID in use: given, or the highest of `MAX(column)` over the tables.
fn max_id(args: &PlanArgs) -> Result<(u64, Option<String>), Failure> {
    if let Some(max) = args.max_id {
        return Ok((max, None));
    }
    let Some(db) = &args.db else {
        return Err(Failure::msg(
            "give the highest ID in use: --max-id N, or --db URL --table TABLE [--column id] \
             to read it with MAX(column)",
        ));
    };
    let url = StoreUrl::parse(db)?;
    let mut highest = 0;
    for table in &args.table {
        let max = url.column_max(table, &args.column)?.unwrap_or(0);
        highest = highest.max(max);
    }
    let tables = args.table.join(", ");
    Ok((
        highest,
        Some(format!("MAX({}) of {tables} in {url}", args.column)),
    ))
}

fn old_name(old: OldScheme) -> String {
    match old {
        OldScheme::Layout(bits) => format!("layout {bits}"),
        OldScheme::Counter => "auto-increment (a counter)".into(),
    }
}

/// The epoch as `--epoch` reads it: a date when it is a midnight, else RFC 3339.
fn date(bits: &BitsAllocator) -> String {
    let shown = bits.format_instant(bits.epoch_millis());
    if bits.epoch_millis().is_multiple_of(86_400_000) {
        shown.split(' ').next().unwrap_or_default().to_owned()
    } else {
        format!("{}Z", shown.replacen(' ', "T", 1))
    }
}

/// The layout as `--layout`, `--unit`, `--epoch` and `--region` write it.
fn layout_flags(plan: &TimeBasedPlan) -> Vec<(&'static str, String)> {
    let bits = &plan.layout;
    if let Some(preset) = plan.preset {
        return vec![("layout", preset.name().to_owned())];
    }
    let split = if bits.region_bits() > 0 {
        format!(
            "{}/{}/{}/{}",
            bits.time_bits(),
            bits.region_bits(),
            bits.worker_bits(),
            bits.seq_bits()
        )
    } else {
        format!(
            "{}/{}/{}",
            bits.time_bits(),
            bits.worker_bits(),
            bits.seq_bits()
        )
    };
    let mut flags = vec![
        ("layout", split),
        ("unit", bits.unit().symbol().to_owned()),
        ("epoch", date(bits)),
    ];
    if bits.region_bits() > 0 {
        flags.push(("region", bits.region().to_string()));
    }
    flags
}

fn unit_path(unit: TimeUnit) -> &'static str {
    match unit {
        TimeUnit::Seconds => "TimeUnit::Seconds",
        TimeUnit::Milliseconds => "TimeUnit::Milliseconds",
        TimeUnit::Centiseconds => "TimeUnit::Centiseconds",
    }
}

fn builder_call(plan: &TimeBasedPlan, floor: Option<u64>) -> String {
    let bits = &plan.layout;
    let layout = match plan.preset {
        Some(preset) => format!("Preset::{preset:?}.builder().build()?"),
        None => {
            let region = if bits.region_bits() > 0 {
                format!(".region({}, {})", bits.region_bits(), bits.region())
            } else {
                String::new()
            };
            format!(
                "BitsAllocator::builder().bits({}, {}, {}){region}.unit({}).epoch(\"{}\").build()?",
                bits.time_bits(),
                bits.worker_bits(),
                bits.seq_bits(),
                unit_path(bits.unit()),
                date(bits)
            )
        }
    };
    let floor = floor.map_or(String::new(), |floor| format!(".floor({floor})"));
    format!("CachedUidGenerator::builder().allocator({layout}){floor}")
}

fn text(args: &PlanArgs, old: OldScheme, plan: &MigrationPlan, read_from: Option<&str>) -> String {
    let max = plan.max_id;
    let mut s = format!(
        "old scheme     {}\nhighest ID     {max}{} (stop every writer of the old scheme \
         before reading it: one still running makes IDs above it)\nneeds          {} workers at once, {} IDs/s each, {} years\n\n",
        old_name(old),
        read_from.map_or(String::new(), |from| format!(" ({from})")),
        plan.needs.workers,
        plan.needs.ids_per_second,
        plan.needs.years,
    );
    match &plan.time_based {
        Some(time) => {
            let bits = &time.layout;
            match time.guarantee {
                Guarantee::Above => {
                    s += &format!(
                    "time-based     every ID it makes from now on is above {max}, so ORDER BY id \
                     keeps time order across both schemes\n\
                     \x20 layout       {bits}{}\n\
                     \x20 proof        its smallest ID now (worker 0, sequence 0) is {} > {max}; \
                     IDs only grow from there, and the floor refuses any that would not\n",
                    time.preset.map_or(String::new(), |p| format!(" (the {p} preset)")),
                    time.first_id_now,
                )
                }
                Guarantee::Apart {
                    bit,
                    old_max_worker,
                } => {
                    s += &format!(
                        "time-based     NO layout sorts above {max}: {}\n\
                     \x20              next best: new IDs never equal an old one, but they \
                     sort BELOW the old ones (ORDER BY id no longer follows time)\n\
                     \x20 layout       {bits}\n\
                     \x20 proof        every new ID has bit {bit} set (its region bit, 1); old \
                     IDs never do, as their worker IDs (at most {old_max_worker}) never reach \
                     it: read as an old ID, a new one has a worker ID of at least {}\n",
                        plan.not_above.as_deref().unwrap_or(""),
                        apart_worker(old, bit),
                    )
                }
                _ => {}
            }
            s += &format!(
                "  holds        {} workers, {} IDs/s each, until {} UTC ({:.1} years from now)\n",
                time.workers,
                time.ids_per_second,
                time.ends(),
                time.years_left
            );
            // Apart, new IDs are below the old maximum: no floor then.
            let floor = (time.guarantee == Guarantee::Above).then_some(max);
            let mut flags = layout_flags(time);
            let mut config: Vec<String> = flags
                .iter()
                .map(|(k, v)| match *k {
                    "region" => format!("{k} = {v}"),
                    _ => format!("{k} = \"{v}\""),
                })
                .collect();
            if let Some(floor) = floor {
                flags.push(("id-floor", floor.to_string()));
                config.push(format!("id_floor = {floor}"));
            }
            s += &format!(
                "  flags        {}\n",
                flags
                    .iter()
                    .map(|(k, v)| format!("--{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            s += &format!("  config       {}\n", config.join("  "));
            s += &format!("  builder      {}\n", builder_call(time, floor));
        }
        None => {
            s += &format!(
                "time-based     none: {}\n",
                plan.not_above.as_deref().unwrap_or("")
            )
        }
    }
    s.push('\n');
    match &plan.segment {
        Some(segment) => {
            s += &format!(
                "segment mode   start at {}: every ID is above {max}\n\
                 \x20 holds        {} IDs up to the largest BIGINT: {:.1} years at {} workers × {} IDs/s\n\
                 \x20 command      uidgen segment create --tag {} --step 1000 --start {} --id-floor {max}\n\
                 \x20 config       tag_start = {}  id_floor = {max}\n\
                 \x20 builder      SegmentGenerator::builder(store, {:?}).floor({max}).create_missing({}, 1000)\n",
                segment.start,
                segment.ids_left,
                segment.years_at_need,
                plan.needs.workers,
                plan.needs.ids_per_second,
                shell_word(&args.tag),
                segment.start,
                segment.start,
                args.tag,
                segment.start,
            );
        }
        None => {
            s += &format!(
                "segment mode   none: {}\n",
                plan.not_segment.as_deref().unwrap_or("")
            )
        }
    }
    s
}

/// `word` as a shell reads it back: as it is when plain, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-.:/@+=,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The smallest worker ID a new ID shows when read in the old layout.
fn apart_worker(old: OldScheme, bit: u32) -> u64 {
    match old {
        OldScheme::Layout(bits) => 1u64 << bit.saturating_sub(bits.worker_lowest_bit()).min(63),
        OldScheme::Counter => 0,
    }
}

fn json(
    args: &PlanArgs,
    old: OldScheme,
    plan: &MigrationPlan,
    read_from: Option<&str>,
) -> serde_json::Value {
    let max = plan.max_id;
    let time_based = plan.time_based.as_ref().map(|time| {
        let bits = &time.layout;
        let (guarantee, bit) = match time.guarantee {
            Guarantee::Above => ("above", None),
            Guarantee::Apart { bit, .. } => ("apart", Some(bit)),
            _ => ("other", None),
        };
        let floor = (time.guarantee == Guarantee::Above).then_some(max);
        let flags = layout_flags(time);
        serde_json::json!({
            "guarantee": guarantee,
            "set_bit": bit,
            "layout": bits.to_string(),
            "preset": time.preset.map(|p| p.name()),
            "time_bits": bits.time_bits(),
            "region_bits": bits.region_bits(),
            "region": bits.region(),
            "worker_bits": bits.worker_bits(),
            "seq_bits": bits.seq_bits(),
            "unit": bits.unit().symbol(),
            "epoch": date(bits),
            "epoch_millis": bits.epoch_millis(),
            "first_id_now": time.first_id_now,
            "ends": time.ends(),
            "end_millis": time.ends_millis,
            "years_left": time.years_left,
            "workers": time.workers,
            "ids_per_second": time.ids_per_second,
            "flags": flags
                .iter()
                .flat_map(|(k, v)| [format!("--{k}"), v.clone()])
                .chain(floor.into_iter().flat_map(|f| ["--id-floor".to_owned(), f.to_string()]))
                .collect::<Vec<_>>(),
            "id_floor": floor,
            "builder": builder_call(time, floor),
        })
    });
    let segment = plan.segment.as_ref().map(|segment| {
        serde_json::json!({
            "start": segment.start,
            "ids_left": segment.ids_left,
            "years_at_need": segment.years_at_need,
            "command": format!(
                "uidgen segment create --tag {} --step 1000 --start {} --id-floor {max}",
                shell_word(&args.tag),
                segment.start
            ),
        })
    });
    serde_json::json!({
        "old": old_name(old),
        "max_id": max,
        "read_from": read_from,
        "needs": {
            "workers": plan.needs.workers,
            "ids_per_second": plan.needs.ids_per_second,
            "years": plan.needs.years,
        },
        "time_based": time_based,
        "not_above": plan.not_above,
        "segment": segment,
        "not_segment": plan.not_segment,
    })
}

/// `uidgen migrate leaf-zk list|take`: a Leaf snowflake fleet on ZooKeeper, read and
/// handed over one worker ID at a time.
#[cfg(feature = "zookeeper")]
pub(super) fn leaf_zk(
    args: &crate::args::LeafZkArgs,
    stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    use crate::args::LeafZkAction;
    let fleet =
        uidgen::LeafFleet::new(&args.zookeeper, &args.leaf_name)?.silent_for(args.silent_for);
    let mut out = Lines::new(stdout);
    match &args.action {
        LeafZkAction::List => {
            let workers = fleet.workers()?;
            if args.json {
                for worker in &workers {
                    out.line(leaf_worker_json(worker))?;
                }
            } else if workers.is_empty() {
                out.line(format!(
                    "Leaf {:?} has no servers under /snowflake/{}/forever",
                    args.leaf_name, args.leaf_name
                ))?;
            } else {
                out.line("worker ID  ip:port                last timestamp (UTC)      state")?;
                for worker in &workers {
                    out.line(format!(
                        "{:<10} {:<22} {:<25} {}",
                        worker.worker_id,
                        worker.address,
                        leaf_time(worker.timestamp_ms),
                        leaf_state(worker)
                    ))?;
                }
            }
        }
        LeafZkAction::Take { which, skew_margin } => {
            let handover = fleet.skew_margin(*skew_margin).take(which)?;
            let worker = &handover.worker;
            if args.json {
                let mut object = leaf_worker_json(worker);
                object["mark_ms"] = handover.mark_ms.into();
                object["changed"] = handover.changed.into();
                out.line(object)?;
            } else {
                out.line(format!(
                    "{} worker ID {} (Leaf at {}): uidgen's IDs on it start after {} (UTC)",
                    if handover.changed {
                        "handed over"
                    } else {
                        "already handed over:"
                    },
                    worker.worker_id,
                    worker.address,
                    leaf_time(Some(handover.mark_ms)),
                ))?;
                let (host, port) = worker
                    .address
                    .rsplit_once(':')
                    .unwrap_or((worker.address.as_str(), "PORT"));
                out.line(format!(
                    "now delete Leaf's cache file on {host}: \
                     {{java.io.tmpdir}}/{}/leafconf/{port}/workerID.properties (/tmp/{}/leafconf/{port}/workerID.properties \
                     by default); while it is there, a Leaf started again on {} starts on worker ID {} anyway (Leaf \
                     falls back to it when its own time check fails), and without it Leaf refuses to start",
                    args.leaf_name, args.leaf_name, worker.address, worker.worker_id
                ))?;
                out.line(format!(
                    "serve it: uidgen serve --store '{}' --layout snowflake",
                    leaf_store_url(&args.zookeeper, &args.leaf_name)
                ))?;
            }
        }
    }
    out.flush()?;
    Ok(SUCCESS)
}

#[cfg(not(feature = "zookeeper"))]
pub(super) fn leaf_zk(
    _args: &crate::args::LeafZkArgs,
    _stdout: &mut dyn Write,
) -> Result<u8, Failure> {
    Err(Failure::msg(
        "migrate leaf-zk needs a uidgen built with the zookeeper feature \
         (cargo install uidgen-cli --features zookeeper)",
    ))
}

/// The store URL that leases handed-over worker IDs (Leaf mode), shown without a
/// password.
#[cfg(feature = "zookeeper")]
fn leaf_store_url(url: &str, leaf_name: &str) -> String {
    let shown = uidgen::redact_url(url);
    let joiner = if shown.contains('?') { '&' } else { '?' };
    format!("{shown}{joiner}leaf={leaf_name}")
}

#[cfg(feature = "zookeeper")]
fn leaf_state(worker: &uidgen::LeafWorker) -> &'static str {
    match (worker.uidgen, worker.heartbeating) {
        (true, _) if worker.address == uidgen::UIDGEN_LEAF_ADDRESS => {
            "uidgen's (from Leaf's counter)"
        }
        (true, _) => "handed over to uidgen",
        (false, true) => "heartbeating",
        (false, false) => "stopped",
    }
}

#[cfg(feature = "zookeeper")]
fn leaf_time(ms: Option<u64>) -> String {
    match ms {
        Some(uidgen::LEAF_FENCE_MS) => "(fenced: 9999-12-31)".into(),
        Some(ms) => i64::try_from(ms)
            .ok()
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map_or_else(
                || ms.to_string(),
                |t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
            ),
        None => "(not Leaf's JSON)".into(),
    }
}

#[cfg(feature = "zookeeper")]
fn leaf_worker_json(worker: &uidgen::LeafWorker) -> serde_json::Value {
    serde_json::json!({
        "worker_id": worker.worker_id,
        "address": worker.address,
        "node": worker.node,
        "timestamp_ms": worker.timestamp_ms,
        "changed_ms": worker.changed_ms,
        "heartbeating": worker.heartbeating,
        "state": leaf_state(worker),
    })
}
