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
fn layout_reports_capacity_and_end() {
    let out = uidgen(&["layout"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("30/20/13 s"), "{text}");
    assert!(text.contains("1048576 worker IDs"), "{text}");
    assert!(text.contains("8192 IDs per tick"), "{text}");
    assert!(text.contains("runs out       2060-01-10"), "{text}");

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
