//! Turns `uidgen bench --scheme NAME --json` results (one file a scheme, and a
//! `NAME.skipped` file holding why for each scheme the run could not measure) into
//! `results/schemes.md` and its charts. `scripts/schemes` runs it; by hand:
//! `cargo run --release -p uidgen-cli --example schemes_report -- DIR`
//! (machine details come from the environment variables `scripts/schemes` sets).

use std::path::Path;
use uidgen_cli::schemes::report::{self, Machine, Skipped, CHARTS};
use uidgen_cli::schemes::result::SchemeResult;
use uidgen_cli::schemes::{chart, names};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: schemes_report DIR (the directory of NAME.json results)")?;
    let (mut results, mut skipped) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => {
                let text = std::fs::read_to_string(&path)?;
                let result: SchemeResult =
                    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                results.push(result);
            }
            Some("skipped") => skipped.push(Skipped {
                scheme: stem,
                why: std::fs::read_to_string(&path)?.trim().to_owned(),
            }),
            _ => {}
        }
    }
    if results.is_empty() {
        return Err(format!("no NAME.json results in {dir}").into());
    }
    // The order of `uidgen bench --scheme list`.
    let order = names();
    let rank = |name: &str| order.iter().position(|n| *n == name).unwrap_or(order.len());
    results.sort_by_key(|r| rank(&r.scheme));
    skipped.sort_by_key(|s| rank(&s.scheme));
    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| "?".to_owned());
    let machine = Machine {
        date: env("UIDGEN_BENCH_DATE"),
        command: std::env::var("UIDGEN_SCHEMES_COMMAND")
            .unwrap_or_else(|_| "schemes_report".to_owned()),
        cores: env("UIDGEN_BENCH_NPROC"),
        cpu: env("UIDGEN_BENCH_CPU"),
        rustc: env("UIDGEN_BENCH_RUSTC"),
    };
    let out = Path::new("results");
    std::fs::create_dir_all(out)?;
    std::fs::write(
        out.join("schemes.md"),
        report::markdown(&results, &skipped, &machine),
    )?;
    for (file, _) in CHARTS {
        let svg = match file {
            "schemes-throughput.svg" => chart::throughput_by_threads(&results)?,
            "schemes-side-by-side.svg" => chart::side_by_side(&results, 1)?,
            _ => chart::latency_cdf(&results, 1)?,
        };
        std::fs::write(out.join(file), svg)?;
    }
    println!(
        "wrote results/schemes.md and {} charts ({} schemes, {} skipped)",
        CHARTS.len(),
        results.len(),
        skipped.len()
    );
    Ok(())
}
