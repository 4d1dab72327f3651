//! `uidgen layout`: a layout, its capacity and when it runs out.

use crate::args::LayoutArgs;
use crate::output::{Failure, Lines};
use crate::SUCCESS;
use std::io::Write;
use uidgen::{BitsAllocator, Clock, SystemClock, TimeUnit};

pub(super) fn run(json: bool, layout: &LayoutArgs, stdout: &mut dyn Write) -> Result<u8, Failure> {
    let bits = layout.builder()?.build_unchecked_time()?;
    let now = SystemClock.now_millis();
    let mut out = Lines::new(stdout);
    if json {
        out.line(layout_json(&bits, now))?;
    } else {
        out.text(&describe(&bits, now))?;
    }
    out.flush()?;
    Ok(SUCCESS)
}

const YEAR_MS: f64 = 365.25 * 86_400_000.0;

fn layout_json(bits: &BitsAllocator, now_millis: u64) -> serde_json::Value {
    let alive = bits.check_alive_at(now_millis);
    serde_json::json!({
        "layout": bits.to_string(),
        "time_bits": bits.time_bits(),
        "worker_bits": bits.worker_bits(),
        "seq_bits": bits.seq_bits(),
        "unit": bits.unit().symbol(),
        "epoch": bits.format_instant(bits.epoch_millis()),
        "epoch_millis": bits.epoch_millis(),
        "max_delta": bits.max_delta(),
        "max_worker_id": bits.max_worker_id(),
        "ids_per_tick": bits.max_sequence() + 1,
        "region_bits": bits.region_bits(),
        "region": bits.region(),
        "sequence_first": bits.sequence_first(),
        "lifetime_years": bits.lifetime().as_millis() as f64 / YEAR_MS,
        "runs_out": bits.format_instant(bits.end_millis()),
        "end_millis": bits.end_millis(),
        "usable_now": alive.is_ok(),
        "problem": alive.err().map(|e| e.to_string()),
    })
}

fn describe(bits: &BitsAllocator, now_millis: u64) -> String {
    let unit = match bits.unit() {
        TimeUnit::Seconds => "1 s",
        TimeUnit::Milliseconds => "1 ms",
        TimeUnit::Centiseconds => "10 ms",
    };
    let region = if bits.region_bits() > 0 {
        format!(
            "region bits    {} (every ID holds region {}, above the worker ID)\n",
            bits.region_bits(),
            bits.region()
        )
    } else {
        String::new()
    };
    let order = if bits.sequence_first() {
        "order          sequence above the worker ID (Sonyflake's): read-only, generators \
         refuse it\n"
    } else {
        ""
    };
    let end = bits.end_millis();
    let status = match bits.check_alive_at(now_millis) {
        Ok(()) => format!(
            "{:.1} years from now",
            end.saturating_sub(now_millis) as f64 / YEAR_MS
        ),
        Err(err) => format!("not usable now: {err}"),
    };
    let capped = if bits.total_bits() < uidgen::TOTAL_BITS {
        format!(
            "unused bits    {} below the sign bit, always 0 (every ID is at most {})\n",
            uidgen::TOTAL_BITS - bits.total_bits(),
            bits.max_uid()
        )
    } else {
        String::new()
    };
    format!(
        "layout         {bits}\n\
         sign bit       1 bit, always 0 (IDs are positive as i64)\n\
         {capped}\
         time bits      {} (ticks of {unit}, max delta {})\n\
         {region}\
         worker bits    {} ({} worker IDs, 0..={})\n\
         sequence bits  {} ({} IDs per tick per worker)\n\
         {order}\
         lifetime       {:.1} years from the epoch\n\
         runs out       {} UTC ({status})\n",
        bits.time_bits(),
        bits.max_delta(),
        bits.worker_bits(),
        bits.max_worker_id() + 1,
        bits.max_worker_id(),
        bits.seq_bits(),
        bits.max_sequence() + 1,
        bits.lifetime().as_millis() as f64 / YEAR_MS,
        bits.format_instant(end),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_end_past_the_calendar_is_said_in_words() {
        let bits = BitsAllocator::builder()
            .bits(61, 1, 1)
            .unit(TimeUnit::Milliseconds)
            .build_unchecked_time()
            .unwrap();
        let text = describe(&bits, SystemClock.now_millis());
        assert!(!text.contains("18446744073709551615"), "{text}");
        assert!(text.contains("after the year 262143"), "{text}");
    }
}
