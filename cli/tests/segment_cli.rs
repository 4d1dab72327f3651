//! `uidgen segment` (next, list, create) and `uidgen bench --generator segment`, as a
//! user runs them: on the embedded store by default, and on a file given with --store.

mod common;

use common::{assert_fails_with, assert_no_secret, output, printed_ids, stdout_of, success_stdout};
use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use uidgen::SegmentStore;

fn uidgen(db: &Path, args: &[&str]) -> Command {
    let mut cmd = common::uidgen(args);
    cmd.env("UIDGEN_WORKER_DB", db);
    cmd
}

#[test]
fn runs_one_after_another_go_on_after_the_last_id_printed() {
    let (_dir, db) = common::temp_registry();
    let out = output(&mut uidgen(&db, &["segment", "next", "--tag", "order"]));
    assert_fails_with(
        &out,
        1,
        &[
            "tag \"order\" does not exist",
            "uidgen segment create --tag order",
        ],
    );
    // The command's flags, not the library's methods.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !said.contains("SegmentStore::create") && !said.contains("create_missing"),
        "{said}"
    );
    let created = output(&mut uidgen(
        &db,
        &[
            "segment",
            "create",
            "--tag",
            "order",
            "--step",
            "1000",
            "--description",
            "web orders",
        ],
    ));
    assert!(success_stdout(&created).contains("created tag \"order\""));
    let mut expected = 1u64;
    for n in [1u64, 5, 2500, 3] {
        let n_text = n.to_string();
        let ids = printed_ids(&output(&mut uidgen(
            &db,
            &["segment", "next", "--tag", "order", "-n", &n_text],
        )));
        assert_eq!(
            ids,
            (expected..expected + n).collect::<Vec<_>>(),
            "dense, no gap"
        );
        expected += n;
    }
    // Listed with the next ID, the base step and the description.
    let listed = success_stdout(&output(&mut uidgen(&db, &["segment", "list"])));
    let row = listed.lines().find(|l| l.starts_with("order")).unwrap();
    assert!(
        row.contains(&expected.to_string()) && row.contains("1000") && row.contains("web orders"),
        "{listed}"
    );
    let json: serde_json::Value = serde_json::from_str(&success_stdout(&output(&mut uidgen(
        &db,
        &["segment", "list", "--json"],
    ))))
    .unwrap();
    assert_eq!(json["tags"][0]["max_id"], expected);
    assert_eq!(json["tags"][0]["step"], 1000);
    // Creating it again leaves it as it is, and says so.
    let again = success_stdout(&output(&mut uidgen(
        &db,
        &["segment", "create", "--tag", "order", "--step", "5"],
    )));
    assert!(again.contains("exists already"), "{again}");
}

#[test]
fn list_with_a_sample_shows_each_tags_rate_and_runway() {
    let (_dir, db) = common::temp_registry();
    for tag in ["busy", "still"] {
        let created = output(&mut uidgen(
            &db,
            &["segment", "create", "--tag", tag, "--step", "1000"],
        ));
        success_stdout(&created);
    }
    let list = |args: &[&str]| {
        let mut all = vec!["segment", "list"];
        all.extend_from_slice(args);
        success_stdout(&output(&mut uidgen(&db, &all)))
    };
    let row = |json: &serde_json::Value, tag: &str| {
        json["tags"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tag"] == tag)
            .unwrap()
            .clone()
    };
    // Without --sample nothing is measured, and the table says so.
    let plain: serde_json::Value = serde_json::from_str(&list(&["--json"])).unwrap();
    assert!(row(&plain, "busy")["rate_per_sec"].is_null(), "{plain}");
    assert!(row(&plain, "busy")["runway_secs"].is_null(), "{plain}");
    let text = list(&[]);
    assert!(text.lines().nth(1).unwrap().contains("runway"), "{text}");
    // A process takes ranges of "busy" (1,000 IDs each, never given back) while the list
    // samples, so the counter only rises, by whole ranges.
    let store = uidgen::SqliteSegmentStore::new(&db);
    let stop = AtomicBool::new(false);
    let (json, text) = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                store.allocate("busy", 1000).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        // Stops the taker however this ends: the scope waits for it before a panic here
        // goes on, so a failed list must not leave it running.
        let _stop = StopOnDrop(&stop);
        let json: serde_json::Value =
            serde_json::from_str(&list(&["--sample", "2", "--json"])).unwrap();
        (json, list(&["--sample", "1"]))
    });
    // The seconds between the reads, measured: at least the window asked for.
    let secs = json["sample_secs"].as_f64().unwrap();
    assert!((2.0..60.0).contains(&secs), "{json}");
    let busy = row(&json, "busy");
    let rate = busy["rate_per_sec"].as_f64().unwrap();
    // The rate is the counter's rise over those seconds: whole ranges of 1,000.
    let moved = rate * secs;
    let ranges = (moved / 1000.0).round();
    assert!(
        ranges >= 1.0 && (moved - ranges * 1000.0).abs() < 1e-3,
        "{moved} IDs moved in {secs} s: {busy}"
    );
    let ids_left = busy["ids_left"].as_u64().unwrap() as f64;
    let runway = busy["runway_secs"].as_f64().unwrap();
    assert!(
        (runway * rate / ids_left - 1.0).abs() < 1e-9,
        "runway is IDs left over the rate: {busy}"
    );
    assert_eq!(busy["sample"], "measured");
    let still = row(&json, "still");
    assert!(still["runway_secs"].is_null(), "{still}");
    assert!(still["rate_per_sec"].is_null(), "{still}");
    // Created (its row changed) within the minute: a service may hold a range of it.
    assert_eq!(still["sample"], "between fetches");
    let line = |tag: &str| {
        text.lines()
            .find(|l| l.starts_with(tag))
            .unwrap_or_else(|| panic!("{tag} not listed: {text}"))
            .to_owned()
    };
    // i64::MAX IDs at some thousands a second: millions of years, in powers of ten.
    let busy_line = line("busy");
    let years = busy_line
        .split("  ")
        .map(str::trim)
        .find_map(|cell| cell.strip_suffix(" years"))
        .unwrap_or_else(|| panic!("no runway in years: {text}"));
    assert!(
        years.contains('e') && years.parse::<f64>().unwrap() >= 1e4,
        "{text}"
    );
    assert!(line("still").contains(" between fetches "), "{text}");
}

struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn processes_started_at_once_on_one_tag_print_distinct_ids() {
    let (_dir, db) = common::temp_registry();
    let out = output(&mut uidgen(
        &db,
        &["segment", "create", "--tag", "t", "--step", "100"],
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let children: Vec<_> = (0..6)
        .map(|_| {
            uidgen(&db, &["segment", "next", "--tag", "t", "-n", "20000"])
                .spawn()
                .unwrap()
        })
        .collect();
    let mut all = HashSet::new();
    for child in children {
        let ids = printed_ids(&child.wait_with_output().unwrap());
        assert_eq!(ids.len(), 20_000);
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "increasing");
        for id in ids {
            assert!(all.insert(id), "{id} printed twice");
        }
    }
}

/// What an unreachable server's error says: its address, or, in a uidgen built without
/// the store's feature, how to get it.
fn reached(built: bool, feature: &str) -> &'static str {
    match (built, feature) {
        (true, _) => "127.0.0.1:1",
        (false, "mysql") => "built without mysql support",
        (false, "redis") => "built without redis support",
        (false, _) => "built without postgres support",
    }
}

#[test]
fn hostile_command_lines_are_refused_by_name_and_never_echo_a_password() {
    let (_dir, db) = common::temp_registry();
    let long = "x".repeat(200);
    for (args, expected) in [
        (
            vec!["segment", "create", "--tag", "a", "--step", "0"],
            vec!["step 0 is out of range: 1..=2147483647"],
        ),
        (
            vec![
                "segment", "create", "--tag", "a", "--step", "10", "--start", "0",
            ],
            vec!["first ID 0 is out of range"],
        ),
        (
            vec!["segment", "create", "--tag", &long, "--step", "10"],
            vec!["1 to 128 characters"],
        ),
        (
            vec!["segment", "next", "--tag", "a", "--store", "ftp://x"],
            vec!["unknown scheme \"ftp\""],
        ),
        (
            vec!["segment", "list", "--store", ":memory:"],
            vec!["in-memory databases"],
        ),
        (
            vec!["segment", "next", "--tag", "a", "--create-step", "10"],
            vec![
                "--create-step is no longer supported",
                "uidgen segment create",
            ],
        ),
        (
            vec!["segment", "list", "--sample", "0"],
            vec!["expected a number of seconds from 0.001 to 86400"],
        ),
        (
            vec![
                "segment",
                "next",
                "--tag",
                "a",
                "--store",
                "mysql://root:SECRETPW@127.0.0.1:1/db",
            ],
            vec![reached(cfg!(feature = "mysql"), "mysql")],
        ),
        (
            vec![
                "segment",
                "list",
                "--store",
                "redis://:SECRETPW@127.0.0.1:1",
            ],
            vec![reached(cfg!(feature = "redis"), "redis")],
        ),
        (
            vec![
                "segment",
                "list",
                "--store",
                "postgres://u:SECRETPW@127.0.0.1:1/db",
            ],
            vec![reached(cfg!(feature = "postgres"), "postgres")],
        ),
        (
            vec!["bench", "--tag", "x", "--seconds", "0.1"],
            vec!["--tag applies only to --generator segment"],
        ),
        (
            vec![
                "bench",
                "--generator",
                "segment",
                "--worker-id",
                "3",
                "--seconds",
                "0.1",
            ],
            vec!["segment mode has none"],
        ),
    ] {
        let out = output(&mut uidgen(&db, &args));
        let status = out.status.code();
        assert!(
            status == Some(1) || status == Some(2),
            "{args:?}: {status:?}"
        );
        assert_fails_with(&out, status.unwrap(), &expected);
        assert_no_secret(&out);
    }
}

#[test]
fn bench_measures_segment_mode_with_and_without_prefetch() {
    let (_dir, db) = common::temp_registry();
    for extra in [&[][..], &["--no-prefetch", "--max-step", "1000"][..]] {
        let mut args = vec![
            "bench",
            "--generator",
            "segment",
            "--seconds",
            "0.5",
            "--warmup",
            "0",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = output(&mut uidgen(&db, &args));
        let report: serde_json::Value = serde_json::from_str(&success_stdout(&out)).unwrap();
        assert_eq!(report["generator"], "segment", "{}", stdout_of(&out));
        assert_eq!(report["duplicates"], 0);
        assert_eq!(report["out_of_order"], 0);
        assert_eq!(report["errors"], 0);
        assert!(report["total_ids"].as_u64().unwrap() > 1000);
    }
    // alternate:N takes tags TAG-0 to TAG-N-1. A user's tags are never made by the
    // bench: missing, they are an error; created, they are benched.
    let alternate = [
        "bench",
        "--generator",
        "segment",
        "--pattern",
        "alternate:3",
        "--seconds",
        "0.3",
        "--warmup",
        "0",
        "--tag",
        "alt",
    ];
    let out = output(&mut uidgen(&db, &alternate));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("\"alt-0\" does not exist"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for tag in ["alt-0", "alt-1", "alt-2"] {
        let created = output(&mut uidgen(
            &db,
            &["segment", "create", "--tag", tag, "--step", "1000"],
        ));
        assert!(created.status.success());
    }
    let out = output(&mut uidgen(&db, &alternate));
    assert!(success_stdout(&out).contains("3 generators (tags)"));
    let listed = success_stdout(&output(&mut uidgen(&db, &["segment", "list"])));
    for tag in ["alt-0", "alt-1", "alt-2", "uidgen-bench"] {
        assert!(
            listed.lines().any(|l| l.starts_with(tag)),
            "{tag}: {listed}"
        );
    }
}
