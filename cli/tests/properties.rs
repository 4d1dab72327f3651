//! 10,000 random command lines, run in-process through `uidgen_cli::run`: never a panic,
//! never a password, and never output other than what the command line asked for (every
//! decoded ID is checked against the library, under the layout read from the command line
//! by a small parser of our own here, not by clap).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::collections::HashMap;
use std::ffi::OsString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use uidgen::{LayoutBuilder, Preset, TimeUnit};

const CASES: u32 = 10_000;

/// Options that take a value, as the CLI has them.
const VALUED: [&str; 13] = [
    "--layout",
    "--unit",
    "--epoch",
    "--worker-id",
    "-n",
    "--count",
    "--generator",
    "--mysql-url",
    "--worker-db",
    "--mysql-timeout",
    "--seconds",
    "--threads",
    "--batch",
];

fn layout_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "default", "uidgenerator", "uidgenerator-readme", "snowflake", "instagram",
            "SnowFlake", " default ",
        ])
        .prop_map(str::to_owned),
        // Bits, mostly adding up to 63, with at least 2 sequence bits so the default
        // generator never waits for a tick for 3 IDs.
        4 => (2u32..=40, 1u32..=24).prop_map(|(seq, worker)| {
            format!("{}/{worker}/{seq}", 63u32.saturating_sub(seq + worker).max(1))
        }),
        1 => (0u32..70, 0u32..70, 0u32..70).prop_map(|(t, w, s)| format!("{t}/{w}/{s}")),
        1 => prop::sample::select(vec!["a/b/c", "", "30/20", "30/20/13/0", "nope", "-1/20/44"])
            .prop_map(str::to_owned),
    ]
}

fn id_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u64..=i64::MAX as u64).prop_map(|id| id.to_string()),
        2 => (0u64..100_000).prop_map(|id| id.to_string()),
        1 => any::<u64>().prop_map(|id| id.to_string()),
        1 => prop::sample::select(vec![
            "9223372036854775807", "9223372036854775808", "12x", "-5", "+5", "007", "-",
            "99999999999999999999999", "0",
        ])
        .prop_map(str::to_owned),
    ]
}

/// One element of a command line.
#[derive(Debug, Clone)]
enum Piece {
    /// An option and its value, written `--opt value` or `--opt=value`.
    Opt(&'static str, String, bool),
    Flag(&'static str),
    Word(String),
}

fn piece() -> impl Strategy<Value = Piece> {
    let opt = |name: &'static str, values: BoxedStrategy<String>| {
        (values, any::<bool>()).prop_map(move |(v, eq)| Piece::Opt(name, v, eq))
    };
    let strings =
        |values: Vec<&'static str>| prop::sample::select(values).prop_map(str::to_owned).boxed();
    prop_oneof![
        6 => opt("--layout", layout_value().boxed()),
        2 => opt("--unit", strings(vec!["s", "ms", "seconds", "x", ""])),
        2 => opt("--epoch", strings(vec![
            "2016-05-20", "2020-01-01", "2026-01-01", "2999-01-01", "1969-12-31", "2016-13-01",
            "2020-01-01T00:00:00Z", "",
        ])),
        3 => opt("--worker-id", prop_oneof![
            4 => (0u64..2_000).prop_map(|w| w.to_string()),
            1 => (0u64..=(1 << 24)).prop_map(|w| w.to_string()),
            1 => strings(vec!["abc", "-1", "", "18446744073709551616"]),
        ].boxed()),
        2 => opt("-n", prop_oneof![
            5 => (0u64..=3).prop_map(|n| n.to_string()),
            1 => strings(vec!["x", "-1", ""]),
        ].boxed()),
        1 => opt("--generator", strings(vec!["default", "cached", "fast"])),
        1 => opt("--mysql-url", strings(vec![
            "mysql://u:SECRETPW@127.0.0.1:1/db",
            "mysql:u:SECRETPW@127.0.0.1/db",
            "u:SECRETPW@127.0.0.1/db",
            "mysql://u:SEC@RETPW@h:99999/db",
            "mysql://u@127.0.0.1:1/db?password=SECRETPW",
            "",
        ])),
        1 => opt("--mysql-timeout", strings(vec!["0.2", "0", "x"])),
        2 => Just(Piece::Flag("--json")),
        1 => prop::sample::select(vec!["-h", "--help", "--create-table", "--bogus", "-x", "--", "-"])
            .prop_map(Piece::Flag),
        8 => id_value().prop_map(Piece::Word),
        1 => prop::sample::select(vec![
            "mysql://u:SECRETPW@127.0.0.1:1/db", "--layout", "=", "--json=1", "-n5", "é",
        ])
        .prop_map(|w| Piece::Word(w.to_owned())),
    ]
}

#[derive(Debug, Clone)]
struct Vector {
    args: Vec<String>,
    stdin: String,
    mysql_env: bool,
}

fn vector() -> impl Strategy<Value = Vector> {
    let command = prop::sample::select(vec![
        "parse",
        "parse",
        "parse",
        "parse",
        "next",
        "next",
        "next",
        "layout",
        "layout",
        "worker",
        "completions",
        "",
        "nope",
    ]);
    (
        command,
        prop::collection::vec(piece(), 0..7),
        prop::option::of(0usize..7),
        prop::collection::vec(id_value(), 0..4),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(command, pieces, dashdash, stdin_ids, mysql_env)| {
            let mut args = vec!["uidgen".to_owned()];
            if !command.is_empty() {
                args.push(command.to_owned());
            }
            if command == "completions" {
                args.push("bash".to_owned());
            }
            for (i, piece) in pieces.iter().enumerate() {
                if dashdash == Some(i) {
                    args.push("--".to_owned());
                }
                match piece {
                    Piece::Opt(name, value, true) if name.starts_with("--") => {
                        args.push(format!("{name}={value}"));
                    }
                    Piece::Opt(name, value, _) => {
                        args.push((*name).to_owned());
                        args.push(value.clone());
                    }
                    Piece::Flag(flag) => args.push((*flag).to_owned()),
                    Piece::Word(word) => args.push(word.clone()),
                }
            }
            Vector {
                args,
                stdin: stdin_ids.join(" \n"),
                mysql_env,
            }
        })
}

/// What the command line says, read by our own simple rules: options anywhere before
/// `--`, `--opt value` or `--opt=value`, the last one of a name wins.
#[derive(Default, Debug)]
struct Seen {
    options: HashMap<String, String>,
    flags: Vec<String>,
    positionals: Vec<String>,
}

fn scan(args: &[String]) -> Seen {
    let mut seen = Seen::default();
    let mut rest = args.iter().skip(2); // program and subcommand
    let mut options_end = false;
    while let Some(arg) = rest.next() {
        if options_end {
            seen.positionals.push(arg.clone());
        } else if arg == "--" {
            options_end = true;
        } else if let Some((name, value)) = arg.split_once('=').filter(|_| arg.starts_with("--")) {
            seen.options.insert(name.to_owned(), value.to_owned());
        } else if let Some(value) = arg.strip_prefix("-n").filter(|v| !v.is_empty()) {
            // A short option with its value attached: -n5, -n=5.
            let value = value.strip_prefix('=').unwrap_or(value);
            seen.options.insert("-n".to_owned(), value.to_owned());
        } else if VALUED.contains(&arg.as_str()) {
            let value = rest.next().cloned().unwrap_or_default();
            seen.options.insert(arg.clone(), value);
        } else if arg.starts_with('-') && arg.len() > 1 && arg.parse::<i64>().is_err() {
            seen.flags.push(arg.clone());
        } else {
            seen.positionals.push(arg.clone());
        }
    }
    seen
}

/// Whether clap must accept `args`, by the CLI's documented options: each known option
/// at most once with a valid value (written `--opt value`, `--opt=value` or `-nN`), known
/// flags, IDs only for parse, anything after `--` an ID. `None` when it is not sure
/// (help, or a subcommand this does not model).
fn should_accept(args: &[String]) -> Option<bool> {
    let command = args.get(1)?.as_str();
    let layout = ["--layout", "--unit", "--epoch"];
    let worker = [
        "--worker-id",
        "--mysql-url",
        "--mysql-timeout",
        "--worker-db",
    ];
    let allowed: Vec<&str> = match command {
        "parse" => layout.to_vec(),
        "layout" => layout.to_vec(),
        "next" => [&layout[..], &worker, &["-n", "--count", "--generator"]].concat(),
        "worker" => [&layout[..], &worker].concat(),
        _ => return None,
    };
    let flags: &[&str] = match command {
        "parse" => &[],
        "layout" => &["--json"],
        _ => &["--json", "--create-table"],
    };
    let valid = |name: &str, value: &str| match name {
        "--unit" => ["s", "sec", "seconds", "ms", "millis", "milliseconds"].contains(&value),
        "--worker-id" | "-n" | "--count" => value.parse::<u64>().is_ok(),
        "--generator" => value == "default" || value == "cached",
        "--mysql-url" | "--worker-db" => !value.is_empty(),
        "--mysql-timeout" => value
            .parse::<f64>()
            .is_ok_and(|v| (0.001..=3600.0).contains(&v)),
        _ => true,
    };
    let mut seen = std::collections::HashSet::new();
    let mut rest = args.iter().skip(2);
    let mut options_end = false;
    while let Some(arg) = rest.next() {
        let (name, value) = if options_end {
            ("", Some(arg.as_str()))
        } else if arg == "--" {
            options_end = true;
            continue;
        } else if arg == "-h" || arg == "--help" {
            return None;
        } else if let Some((name, value)) = arg.split_once('=').filter(|_| arg.starts_with("--")) {
            (name, Some(value))
        } else if let Some(value) = arg.strip_prefix("-n").filter(|v| !v.is_empty()) {
            ("-n", Some(value.strip_prefix('=').unwrap_or(value)))
        } else if arg.starts_with('-') && arg != "-" && arg.parse::<i64>().is_err() {
            (arg.as_str(), None)
        } else {
            ("", Some(arg.as_str()))
        };
        if name.is_empty() {
            if command != "parse" {
                return Some(false);
            }
            continue;
        }
        let canonical = if name == "--count" { "-n" } else { name };
        if !seen.insert(canonical.to_owned()) {
            return Some(false);
        }
        if flags.contains(&name) {
            if value.is_some() {
                return Some(false);
            }
            continue;
        }
        if !allowed.contains(&name) {
            return Some(false);
        }
        let value = match value {
            Some(v) => v,
            None => match rest.next() {
                Some(v) if !v.starts_with('-') || v == "-" => v.as_str(),
                // Whether clap takes a negative number as a value depends on the
                // subcommand's other arguments: not modelled.
                Some(v) if v.parse::<i64>().is_ok() => return None,
                _ => return Some(false),
            },
        };
        if !valid(name, value) {
            return Some(false);
        }
    }
    Some(true)
}

/// The layout the command line asks for, built by the library; `None` when it names none
/// that can be built.
fn layout_of(seen: &Seen) -> Option<LayoutBuilder> {
    let text = seen
        .options
        .get("--layout")
        .map_or("default", String::as_str);
    let parts: Vec<&str> = text.split('/').collect();
    let mut builder = if parts.len() == 3 {
        let n: Vec<u32> = parts
            .iter()
            .map(|p| p.trim().parse().ok())
            .collect::<Option<_>>()?;
        Preset::Default
            .builder()
            .bits(n[0], n[1], n[2])
            .unit(TimeUnit::Seconds)
    } else {
        text.parse::<Preset>().ok()?.builder()
    };
    if let Some(unit) = seen.options.get("--unit") {
        builder = builder.unit(match unit.as_str() {
            "s" | "sec" | "seconds" => TimeUnit::Seconds,
            "ms" | "millis" | "milliseconds" => TimeUnit::Milliseconds,
            _ => return None,
        });
    }
    if let Some(epoch) = seen.options.get("--epoch") {
        builder = builder.epoch(epoch);
    }
    Some(builder)
}

fn check(vector: &Vector, status: u8, stdout: &str, stderr: &str) -> Result<(), TestCaseError> {
    let args = &vector.args;
    prop_assert!(status <= 2, "status {status}");
    for secret in ["SECRETPW", "RETPW"] {
        prop_assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret} shown"
        );
    }
    if let Some(accept) = should_accept(args) {
        prop_assert_eq!(
            status == 2,
            !accept,
            "clap accepts by the documented options"
        );
    }
    if status == 2 {
        // A usage error (or the help clap shows for a missing subcommand) on stderr.
        prop_assert!(stdout.is_empty() && !stderr.is_empty(), "{stderr}");
        return Ok(());
    }
    let seen = scan(args);
    if status == 0 && seen.flags.iter().any(|f| f == "-h" || f == "--help") {
        prop_assert!(stdout.contains("Usage: uidgen"), "help: {stdout}");
        prop_assert!(!stdout.contains("\"UID\""), "help decoded an ID: {stdout}");
        return Ok(());
    }
    let command = args.get(1).map_or("", String::as_str);
    match command {
        "parse" => {
            let Some(bits) = layout_of(&seen).and_then(|b| b.build_unchecked_time().ok()) else {
                prop_assert_eq!(status, 1, "a layout the library refuses was used");
                prop_assert!(stdout.is_empty());
                return Ok(());
            };
            let mut ids: Vec<&str> = Vec::new();
            let mut stdin_read = false;
            let stdin_ids: Vec<&str> = vector.stdin.split_whitespace().collect();
            let positionals: Vec<&str> = if seen.positionals.is_empty() {
                vec!["-"]
            } else {
                seen.positionals.iter().map(String::as_str).collect()
            };
            for word in positionals {
                if word != "-" {
                    ids.push(word);
                } else if !std::mem::replace(&mut stdin_read, true) {
                    ids.extend(&stdin_ids);
                }
            }
            let mut expected = String::new();
            let mut errors = 0;
            for id in &ids {
                match bits.parse_str(id) {
                    Ok(parts) => expected.push_str(&format!("{parts}\n")),
                    Err(_) => errors += 1,
                }
            }
            prop_assert_eq!(stdout, expected.as_str(), "decoded under {}", bits);
            prop_assert_eq!(status, u8::from(errors > 0));
            prop_assert_eq!(stderr.lines().count(), errors, "{}", stderr);
        }
        "next" if status == 0 => {
            let bits = layout_of(&seen).and_then(|b| b.build().ok());
            prop_assert!(bits.is_some(), "made IDs with a layout the library refuses");
            let bits = bits.unwrap_or_default();
            let count: usize = seen
                .options
                .get("-n")
                .map_or(1, |n| n.parse().unwrap_or(99));
            let lines: Vec<&str> = stdout.lines().collect();
            prop_assert_eq!(lines.len(), count);
            let json = seen.flags.iter().any(|f| f == "--json");
            let fixed: Option<u64> = seen.options.get("--worker-id").and_then(|w| w.parse().ok());
            let mut previous = None;
            for line in lines {
                let uid: u64 = if json {
                    let value: serde_json::Value = serde_json::from_str(line)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    value["UID"]
                        .as_str()
                        .unwrap_or("x")
                        .parse()
                        .unwrap_or(u64::MAX)
                } else {
                    line.parse().unwrap_or(u64::MAX)
                };
                let parts = bits.parse(uid);
                prop_assert!(parts.is_ok(), "{line} under {bits}");
                let parts = parts.unwrap_or_else(|_| unreachable!());
                if json {
                    prop_assert_eq!(line, parts.to_string());
                }
                if let Some(worker) = fixed {
                    prop_assert_eq!(parts.worker_id, worker);
                }
                prop_assert!(previous.is_none_or(|p| p < uid), "IDs increase");
                previous = Some(uid);
            }
            prop_assert!(stderr.is_empty(), "{stderr}");
        }
        "layout" if status == 0 => {
            let bits = layout_of(&seen).and_then(|b| b.build_unchecked_time().ok());
            prop_assert!(bits.is_some(), "showed a layout the library refuses");
            let bits = bits.unwrap_or_default().to_string();
            if seen.flags.iter().any(|f| f == "--json") {
                let value: serde_json::Value =
                    serde_json::from_str(stdout).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(value["layout"].as_str(), Some(bits.as_str()));
            } else {
                let expected = format!("layout         {bits}\n");
                prop_assert!(stdout.starts_with(&expected), "{stdout}");
            }
        }
        "worker" if status == 0 => {
            let bits = layout_of(&seen).and_then(|b| b.build().ok());
            prop_assert!(
                bits.is_some(),
                "took a worker ID for a layout the library refuses"
            );
            let bits = bits.unwrap_or_default().to_string();
            prop_assert!(stdout.contains(&bits), "{stdout}");
            if let Some(id) = seen.options.get("--worker-id") {
                let expected = if seen.flags.iter().any(|f| f == "--json") {
                    format!("\"worker_id\":{id}")
                } else {
                    format!("worker_id  {id}\n")
                };
                prop_assert!(stdout.contains(&expected), "{stdout}");
            }
        }
        _ => {}
    }
    Ok(())
}

#[test]
fn ten_thousand_random_command_lines() {
    // A registry of this test's own: on a memory file system where there is one, for speed.
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let registry_text: OsString = dir.path().join("workers.sqlite3").into();
    // Belt and braces: should any command line still reach the default registry, it is
    // in a home of this test's own. (The only test in this binary, so no thread reads
    // the environment while it is set.)
    std::env::set_var("HOME", dir.path());
    std::env::set_var("XDG_DATA_HOME", dir.path().join("data"));
    std::env::remove_var("UIDGEN_WORKER_DB");

    let config = Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let start = std::time::Instant::now();
    // (command, status) -> runs, to show what the vectors reached.
    let tally = std::sync::Mutex::new(std::collections::BTreeMap::<(String, u8), u32>::new());
    let result = runner.run(&vector(), |vector| {
        // The registry is always given, unless the command line chooses another source:
        // nothing may fall back to the user's own default registry.
        let other_source = vector.args.iter().any(|a| {
            ["--worker-id", "--mysql-url", "--worker-db"]
                .iter()
                .any(|o| a.starts_with(o))
        });
        let mut env: HashMap<&str, OsString> = HashMap::new();
        if !other_source {
            env.insert("UIDGEN_WORKER_DB", registry_text.clone());
        }
        if vector.mysql_env {
            env.insert(
                "UIDGEN_MYSQL_URL",
                "mysql://u:SECRETPW@127.0.0.1:1/db".into(),
            );
        }
        let lookup = |name: &str| env.get(name).cloned();
        let mut stdin = vector.stdin.as_bytes();
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let args: Vec<OsString> = vector.args.iter().map(OsString::from).collect();
        let status = catch_unwind(AssertUnwindSafe(|| {
            uidgen_cli::run(args, &lookup, &mut stdin, &mut stdout, &mut stderr)
        }))
        .map_err(|_| TestCaseError::fail(format!("panicked: {:?}", vector.args)))?;
        let command = match vector.args.get(1).map(String::as_str) {
            Some(c @ ("parse" | "next" | "layout" | "worker" | "completions")) => c.to_owned(),
            _ => "(none)".to_owned(),
        };
        if let Ok(mut tally) = tally.lock() {
            *tally.entry((command, status)).or_default() += 1;
        }
        let (stdout, stderr) = (
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr),
        );
        check(&vector, status, &stdout, &stderr).map_err(|e| {
            TestCaseError::fail(format!(
                "{e}\nargs: {:?}\nstdout: {stdout}\nstderr: {stderr}",
                vector.args
            ))
        })
    });
    eprintln!("{CASES} command lines in {:?}", start.elapsed());
    if let Err(err) = result {
        panic!("{err}");
    }
    let tally = tally.into_inner().unwrap_or_default();
    eprintln!("(command, status) -> runs: {tally:?}");
    let parsed_ok = tally.get(&("parse".to_owned(), 0)).copied().unwrap_or(0);
    let made_ok = tally.get(&("next".to_owned(), 0)).copied().unwrap_or(0);
    // The vectors must reach real work, not only usage errors.
    assert!(parsed_ok > 500 && made_ok > 200, "{tally:?}");
}
