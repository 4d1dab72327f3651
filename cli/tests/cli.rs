//! The `uidgen` binary as a user runs it.

mod common;

use common::printed_ids;
use std::collections::HashSet;
use std::process::Output;

/// Runs uidgen with a clean environment (no registry of the user's, never MySQL).
fn uidgen(args: &[&str]) -> Output {
    common::output(&mut common::uidgen(args))
}

fn stdout_lines(out: &Output) -> Vec<String> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn today_utc() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

#[test]
fn next_prints_n_distinct_ids_that_parse_to_today_and_the_worker() {
    let out = uidgen(&["next", "-n", "5", "--worker-id", "77"]);
    assert!(out.status.success(), "{out:?}");
    let ids = stdout_lines(&out);
    assert_eq!(ids.len(), 5);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 5);

    let out = uidgen(&["parse", &ids[4]]);
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["UID"], ids[4].as_str());
    assert_eq!(json["workerId"], "77");
    assert!(
        json["timestamp"]
            .as_str()
            .unwrap()
            .starts_with(&today_utc()),
        "{json}"
    );
}

#[test]
fn cached_generator_prints_many_distinct_ids_at_once() {
    let out = uidgen(&[
        "next",
        "-n",
        "100000",
        "--generator",
        "cached",
        "--worker-id",
        "5",
    ]);
    let ids = printed_ids(&out);
    assert_eq!(ids.len(), 100_000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "IDs increase");
}

#[test]
fn parse_prints_uidgenerator_json_for_the_known_answer() {
    let out = uidgen(&[
        "parse",
        "--layout",
        "uidgenerator-readme",
        "180363646902239241",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout_lines(&out),
        [
            r#"{"UID":"180363646902239241","timestamp":"2017-01-19 12:15:46","workerId":"4","sequence":"9"}"#
        ]
    );
}

#[test]
fn malformed_and_negative_uids_fail_naming_the_argument_once() {
    for bad in ["-5", "12x", "9223372036854775808"] {
        let out = uidgen(&["parse", "1", bad]);
        assert_eq!(out.status.code(), Some(1), "{bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches(&format!("{bad:?}")).count(), 1, "{err}");
        assert!(err.starts_with("uidgen: invalid UID"), "{err}");
        assert_eq!(
            stdout_lines(&out).len(),
            1,
            "the good argument is still printed"
        );
    }
}

#[test]
fn next_writes_every_form_and_parse_reads_each_back() {
    let decimal = stdout_lines(&uidgen(&["next", "-n", "3", "--worker-id", "78"]));
    let expected = stdout_lines(&uidgen(&[&["parse"][..], &to_strs(&decimal)].concat()));
    assert_eq!(expected.len(), 3);
    for (format, width) in [("hex", 16), ("base62", 11), ("base32", 13)] {
        let out = uidgen(&["next", "-n", "3", "--worker-id", "78", "--format", format]);
        assert!(out.status.success(), "{out:?}");
        let ids = stdout_lines(&out);
        assert!(ids.iter().all(|id| id.len() == width), "{format}: {ids:?}");
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids, "{format} strings sort as their IDs were made");
        // Read as the form they look like, and as the form named.
        for args in [vec!["parse"], vec!["parse", "--format", format]] {
            let out = uidgen(&[&args[..], &to_strs(&ids)].concat());
            assert!(out.status.success(), "{out:?}");
            let parsed = stdout_lines(&out);
            // The JSON parse gives for the same IDs in decimal.
            for (line, id) in parsed.iter().zip(&ids) {
                let json: serde_json::Value = serde_json::from_str(line).unwrap();
                assert_eq!(json["workerId"], "78", "{format} {id}");
                let uid = uidgen::decode_any(id).unwrap();
                assert_eq!(json["UID"], uid.to_string(), "{format} {id}");
            }
        }
    }
    // The same ID in every form, stdin included, gives the same line.
    let all = [
        "241187831286865920",
        "0358df0e00002000",
        "0x358df0e00002000",
        "0Hodr1ScMMa",
        "06p6z1r0oo8oo",
    ];
    let out = uidgen(&[&["parse"][..], &all].concat());
    let lines = stdout_lines(&out);
    assert_eq!(lines.len(), all.len(), "{out:?}");
    assert!(lines.iter().all(|line| line == &lines[0]), "{lines:?}");
    // A fixed-width string of digits only is decimal unless the form is named.
    let out = uidgen(&["parse", "--format", "hex", "0000000000000010"]);
    assert!(
        stdout_lines(&out)[0].starts_with(r#"{"UID":"16","#),
        "{out:?}"
    );
    let out = uidgen(&["parse", "0000000000000010"]);
    assert!(
        stdout_lines(&out)[0].starts_with(r#"{"UID":"10","#),
        "{out:?}"
    );
    // --json writes the parts, so it takes no form.
    let out = uidgen(&["next", "--json", "--format", "hex"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn ids_in_no_form_fail_naming_the_form_the_problem_and_the_limit() {
    for (args, message) in [
        (
            &["parse", "0000000000!"][..],
            "uidgen: invalid UID \"0000000000!\": base62 ID: '!' at index 10 is not a base62 \
             digit (0-9, A-Z, a-z)\n",
        ),
        (
            &["parse", "--format", "base32", "0000000000000U"],
            "uidgen: invalid UID \"0000000000000U\": base32 ID: expected 13 characters, got 14 \
             characters\n",
        ),
        (
            &["parse", "--format", "base32", "000000000000U"],
            "uidgen: invalid UID \"000000000000U\": base32 ID: 'U' at index 12 is not a \
             Crockford base32 digit (0-9 and A-Z but U, any case; I and L read as 1, O as 0)\n",
        ),
        (
            &["parse", "AzL8n0Y58m8"],
            "uidgen: invalid UID \"AzL8n0Y58m8\": base62 ID: the value exceeds 2^63 - 1 = \
             9223372036854775807, the largest ID (IDs never set the sign bit)\n",
        ),
        (
            &["parse", "--format", "hex", "8000000000000000"],
            "uidgen: invalid UID \"8000000000000000\": hex ID: the value exceeds 2^63 - 1 = \
             9223372036854775807, the largest ID (IDs never set the sign bit)\n",
        ),
    ] {
        let out = uidgen(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), message);
        assert!(out.stdout.is_empty());
    }
    let out = uidgen(&["parse", "--format", "base64", "5"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[possible values: decimal, hex, base62, base32]"),
        "{err}"
    );
}

fn to_strs(lines: &[String]) -> Vec<&str> {
    lines.iter().map(String::as_str).collect()
}

#[test]
fn layout_reports_capacity_and_end() {
    let out = uidgen(&["layout"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("40/10/13 ms"), "{text}");
    assert!(text.contains("1024 worker IDs"), "{text}");
    assert!(text.contains("8192 IDs per tick"), "{text}");
    assert!(text.contains("runs out       2060-11-03"), "{text}");

    let out = uidgen(&["layout", "--layout", "uidgenerator"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("not usable now") && text.contains("2024-11-20"),
        "{text}"
    );
}

#[test]
fn bad_layouts_and_worker_ids_are_errors_not_panics() {
    for args in [
        &["next", "--layout", "uidgenerator"][..],
        &["next", "--layout", "30/20/12"],
        &["next", "--layout", "a/b/c"],
        &["next", "--layout", "nope"],
        &["next", "--epoch", "2999-01-01"],
        &["next", "--worker-id", "1048576"],
    ] {
        let out = uidgen(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("uidgen: ") && !err.contains("panicked"),
            "{err}"
        );
    }
}

/// A successful `uidgen bench ARGS --json` (ARGS separated by spaces), read.
fn bench_json(args: &str) -> serde_json::Value {
    let args: Vec<&str> = args.split_whitespace().collect();
    let out = uidgen(&[&["bench", "--json"][..], &args].concat());
    serde_json::from_str(&common::success_stdout(&out)).expect("one JSON report")
}

/// What every bench run must show: IDs, none twice, every call in the histogram.
fn assert_sound_bench(report: &serde_json::Value) -> u64 {
    let ids = report["total_ids"].as_u64().unwrap();
    assert!(ids > 0, "{report}");
    assert_eq!(report["duplicates"], 0, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(
        report["latency_ns"]["calls"], ids,
        "every call timed: {report}"
    );
    ids
}

#[test]
fn bench_churn_runs_the_threads_asked_for() {
    let report = bench_json("--pattern churn --count 200 --threads 8 --seconds 30 --worker-id 40");
    assert_eq!(assert_sound_bench(&report), 200);
    assert_eq!(report["pattern"], "churn");
    assert_eq!(report["threads_run"], 200);
    assert_eq!(report["threads"], 8);
    assert!(report["slots_per_id"].is_number() && report["discarded_stale"].is_number());
}

#[test]
fn bench_alternate_uses_consecutive_worker_ids_and_counts_slots_over_all() {
    let report = bench_json("--pattern alternate:3 --threads 2 --seconds 0.3 --worker-id 41");
    assert_sound_bench(&report);
    assert_eq!(report["pattern"], "alternate:3");
    assert_eq!(report["generators"], 3);
    assert_eq!(report["worker_ids"], serde_json::json!([41, 42, 43]));
    assert_eq!(report["out_of_order"], 0);
    // Taken from three rings in turn: a figure over one ring alone would be about 1/3.
    let slots = report["slots_per_id"].as_f64().unwrap();
    assert!(slots >= 0.99, "{slots} slots per ID: {report}");
}

#[test]
fn bench_alternate_takes_one_registry_row_per_generator() {
    let (_dir, registry) = common::temp_registry();
    let mut cmd = common::uidgen(&[
        "bench",
        "--json",
        "--pattern",
        "alternate:2",
        "--generator",
        "default",
        "--seconds",
        "0.1",
        "--layout",
        "snowflake",
    ]);
    cmd.env("UIDGEN_WORKER_DB", &registry);
    let report: serde_json::Value =
        serde_json::from_str(&common::success_stdout(&common::output(&mut cmd))).unwrap();
    assert_sound_bench(&report);
    // One lease per generator, lowest first.
    assert_eq!(report["worker_ids"], serde_json::json!([0, 1]));
    assert!(report["slots_per_id"].is_null(), "no ring: {report}");
}

#[test]
fn bench_fetch_add_runs_the_baseline_in_the_same_harness() {
    let report = bench_json("--generator fetch-add --threads 2 --seconds 0.3");
    assert_sound_bench(&report);
    assert_eq!(report["generator"], "fetch-add");
    // One counter shared by both threads: each thread's IDs still go up.
    assert_eq!(report["out_of_order"], 0, "{report}");
    assert!(report["slots_per_id"].is_null(), "no ring: {report}");
    // One counter per generator, apart: alternating between them repeats nothing.
    let alternate = bench_json("--generator fetch-add --pattern alternate:3 --seconds 0.2");
    assert_sound_bench(&alternate);
    let batched = bench_json("--generator fetch-add --batch 16 --seconds 0.2");
    assert_eq!(batched["total_ids"].as_u64().unwrap() % 16, 0, "{batched}");
    assert_eq!(batched["duplicates"], 0, "{batched}");
}

#[test]
fn bench_light_makes_one_call_per_thread_and_interval() {
    let report =
        bench_json("--pattern light --threads 10 --interval-ms 100 --seconds 0.5 --worker-id 44");
    let calls = assert_sound_bench(&report) as f64;
    // 10 threads × 0.5 s × 1000 / 100 ms, by schedule, whatever the machine's speed.
    assert!((calls - 50.0).abs() <= 5.0, "{calls} calls: {report}");
    assert_eq!(report["pattern"], "light");
    assert_eq!(report["interval_ms"], 100);
    // 100 IDs/s offered against the default layout's 8,192,000 IDs/s.
    let share = report["offered_share_of_layout"].as_f64().unwrap();
    assert!((share - 100.0 / 8_192_000.0).abs() < 1e-12, "{share}");
    assert!(report["time_ahead_start_secs"].is_number(), "{report}");
}

#[test]
fn bench_light_defaults_to_400_threads() {
    let report = bench_json("--pattern light --interval-ms 1000 --seconds 0.2 --worker-id 45");
    assert_eq!(report["threads"], 400);
    // The threads start 2.5 ms apart within the 1 s interval: those starting in the
    // first 0.2 s, 80 of them, make one call each.
    let calls = assert_sound_bench(&report);
    assert!(
        (72..=88).contains(&calls),
        "{calls} calls, expected 80: {report}"
    );
}

#[test]
fn bench_pattern_values_and_misplaced_options_are_usage_errors() {
    for (pattern, says) in [
        ("alternate:1", "from 2 to 64"),
        ("alternate:65", "from 2 to 64"),
        ("alternate", "alternate:N with N from 2 to 64"),
        (
            "bursty",
            "single, alternate:N (N from 2 to 64), churn or light",
        ),
    ] {
        let out = uidgen(&["bench", "--pattern", pattern, "--worker-id", "1"]);
        common::assert_fails_with(&out, 2, &[pattern, says]);
    }
    for (args, says) in [
        (
            &["--count", "5"][..],
            "--count applies only to --pattern churn",
        ),
        (
            &["--pattern", "churn", "--interval-ms", "5"],
            "--interval-ms applies only to --pattern light",
        ),
        (&["--pattern", "light", "--batch", "8"], "--batch above 1"),
        (&["--pattern", "light", "--threads", "1025"], "1..=1024"),
    ] {
        let out = uidgen(&[&["bench", "--worker-id", "1"][..], args].concat());
        common::assert_fails_with(&out, 2, &[says]);
    }
    // Worker IDs past the layout's: the settings are read, then refused (status 1).
    let out = uidgen(&["bench", "--pattern", "alternate:2", "--worker-id", "1023"]);
    common::assert_fails_with(&out, 1, &["1023 to 1024", "max_worker_id 1023"]);
}

#[test]
fn rollback_strategies_out_of_range_are_usage_errors_naming_the_limit() {
    for (strategy, says) in [
        ("spare:0", "from 1 to 8"),
        ("spare:9", "from 1 to 8"),
        ("spare:x", "from 1 to 8"),
        ("wait:0", "from 0.001 to 86400"),
        ("sometimes", "spare:N (1 to 8)"),
    ] {
        let out = uidgen(&["next", "--generator", "default", "--on-rollback", strategy]);
        common::assert_fails_with(&out, 2, &[strategy, says]);
    }
}
