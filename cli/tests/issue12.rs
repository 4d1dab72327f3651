//! Issue 12, "the uidgen CLI as a hostile user meets it": each numbered case with the
//! command the issue gives, run on the real binary. The cases that need a MySQL server
//! (a wrong password, error 1044, LOCK TABLES, a resolver that never answers) are in
//! `mysql_cli.rs`.

mod common;

use common::{
    assert_fails_with, assert_no_secret, output, printed_ids, stderr_of, stdout_of, success_stdout,
    temp_registry, uidgen,
};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use uidgen::{BitsAllocator, Preset, TimeUnit};

fn run(args: &[&str]) -> Output {
    output(&mut uidgen(args))
}

/// `bash -c SCRIPT` with `$0` the uidgen binary and pipefail on, so a pipeline's status
/// is that of its first failing command.
fn pipeline(script: &str) -> Output {
    let mut bash = Command::new("bash");
    bash.arg("-c")
        .arg(format!("set -o pipefail; {script}"))
        .arg(env!("CARGO_BIN_EXE_uidgen"));
    output(common::clean(&mut bash))
}

fn default_layout() -> BitsAllocator {
    BitsAllocator::default()
}

// 1. Passwords printed ---------------------------------------------------------------

/// The issue's URLs, each with the password in another place or shape.
const PASSWORD_URLS: [&str; 6] = [
    "mysql:u:SECRETPW@127.0.0.1/db",
    "u:SECRETPW@127.0.0.1/db",
    "mysql:/u:SECRETPW@127.0.0.1/db",
    "mysql://u:SEC@RETPW@h:99999/db",
    "mysql://u@127.0.0.1:1/db?password=SECRETPW",
    // Well formed, nothing listening: the password must not show in "cannot reach".
    "mysql://u:SECRETPW@127.0.0.1:1/db",
];

#[test]
fn case1_no_password_is_printed_by_flag_or_environment_at_any_log_level() {
    for url in PASSWORD_URLS {
        for rust_log in [None, Some("trace")] {
            // UidGenerator's layout: one WORKER_NODE row per run needs its 21 worker bits.
            let layout = ["--layout", "uidgenerator-readme"];
            let mut by_flag = uidgen(&[&["worker", "--mysql-url", url][..], &layout].concat());
            let mut by_env = uidgen(&[&["worker"][..], &layout].concat());
            by_env.env("UIDGEN_MYSQL_URL", url);
            for cmd in [&mut by_flag, &mut by_env] {
                if let Some(level) = rust_log {
                    cmd.env("RUST_LOG", level);
                }
                let out = output(cmd);
                assert_fails_with(&out, 1, &["uidgen: "]);
                assert_no_secret(&out);
                let err = stderr_of(&out);
                if cfg!(feature = "mysql") {
                    assert!(
                        err.contains("invalid MySQL URL") || err.contains("cannot reach"),
                        "{url}: {err}"
                    );
                } else {
                    assert!(err.contains("without MySQL support"), "{err}");
                }
            }
        }
    }
}

#[test]
fn case1_a_url_clap_echoes_back_is_scrubbed() {
    for args in [
        // The flag forgotten: clap repeats the unexpected argument.
        &["worker", "mysql://u:SECRETPW@h/db"][..],
        // A misspelt flag.
        &["worker", "--mysql-urll=mysql://u:SEC@RETPW@h/db"],
        // The URL given to another option: clap repeats the invalid value.
        &["next", "--worker-id", "mysql://u:SECRETPW@h/db"],
        &["parse", "--layout", "u:SECRETPW@127.0.0.1/db"],
    ] {
        let mut cmd = uidgen(args);
        cmd.env("RUST_LOG", "trace");
        let out = output(&mut cmd);
        assert!(
            matches!(out.status.code(), Some(1 | 2)),
            "{args:?}: {out:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_no_secret(&out);
    }
}

// 2. Wrong output ---------------------------------------------------------------------

#[test]
fn case2_options_after_ids_are_read_as_options() {
    let snowflake = Preset::Snowflake.builder().build_unchecked_time().unwrap();
    for args in [
        &["parse", "5", "--layout", "snowflake"][..],
        &["parse", "5", "--layout=snowflake"],
    ] {
        let out = run(args);
        assert_eq!(
            success_stdout(&out),
            format!("{}\n", snowflake.parse(5).unwrap()),
            "{args:?}"
        );
        assert!(out.stderr.is_empty());
    }
    let with_epoch = BitsAllocator::builder()
        .epoch("2020-01-01")
        .build_unchecked_time()
        .unwrap();
    let out = run(&["parse", "5", "--epoch", "2020-01-01"]);
    assert_eq!(
        success_stdout(&out),
        format!("{}\n", with_epoch.parse(5).unwrap())
    );
}

#[test]
fn case2_help_after_an_id_prints_help_and_decodes_nothing() {
    for flag in ["-h", "--help"] {
        let out = run(&["parse", "5", flag]);
        let text = success_stdout(&out);
        assert!(text.contains("Usage: uidgen parse"), "{text}");
        assert!(!text.contains("\"UID\""), "{text}");
    }
}

#[test]
fn case2_double_dash_ends_options() {
    let out = run(&["parse", "--", "5", "--layout"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout_of(&out),
        format!("{}\n", default_layout().parse(5).unwrap())
    );
    assert!(
        stderr_of(&out).contains("invalid UID \"--layout\""),
        "{}",
        stderr_of(&out)
    );
    // A negative number is an ID (refused as one), not an unknown option.
    let out = run(&["parse", "-5"]);
    assert_fails_with(&out, 1, &["IDs are never negative"]);
}

// 4. Panics ---------------------------------------------------------------------------

fn to_dev_full(args: &[&str], registry: Option<&std::path::Path>) -> Output {
    let mut cmd = uidgen(args);
    if let Some(path) = registry {
        cmd.env("UIDGEN_WORKER_DB", path);
    }
    cmd.stdout(File::create("/dev/full").expect("/dev/full"));
    output(&mut cmd)
}

#[test]
fn case4_a_full_disk_is_an_error_message_not_a_panic() {
    let (_dir, registry) = temp_registry();
    for (args, registry) in [
        (&["layout"][..], None),
        (&["worker"], Some(registry.as_path())),
        (
            &["bench", "--json", "--seconds", "0.1", "--worker-id", "41"],
            None,
        ),
        (&["next", "-n", "100000", "--worker-id", "42"], None),
        (&["parse", "5"], None),
        (&["completions", "bash"], None),
        (&["--help"], None),
    ] {
        let out = to_dev_full(args, registry);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = stderr_of(&out);
        assert_eq!(
            err, "uidgen: cannot write to stdout: No space left on device (os error 28)\n",
            "{args:?}"
        );
    }
}

#[test]
fn case4_a_reader_that_quits_at_once_is_not_an_error() {
    let (_dir, registry) = temp_registry();
    let db = registry.display().to_string();
    for script in [
        r#""$0" layout | true"#.to_owned(),
        r#""$0" layout --json | true"#.to_owned(),
        format!(r#"UIDGEN_WORKER_DB='{db}' "$0" worker | true"#),
        r#""$0" --help | true"#.to_owned(),
        r#""$0" completions zsh | true"#.to_owned(),
    ] {
        let out = pipeline(&script);
        assert_eq!(out.status.code(), Some(0), "{script}: {out:?}");
        assert!(out.stderr.is_empty(), "{script}: {}", stderr_of(&out));
    }
}

// 5. Pipes ----------------------------------------------------------------------------

#[test]
fn case5_head_closing_the_pipe_ends_next_and_parse_quietly() {
    let out = pipeline(r#""$0" next -n 10000000 --worker-id 3 | head -1"#);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty(), "{}", stderr_of(&out));
    let ids = printed_ids(&out);
    assert_eq!(ids.len(), 1);
    assert_eq!(default_layout().parse(ids[0]).unwrap().worker_id, 3);

    let out = pipeline(
        r#""$0" next -n 300000 --worker-id 3 | "$0" parse | head -1 | grep -c '"workerId":"3"'"#,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(stdout_of(&out), "1\n");
    assert!(out.stderr.is_empty(), "{}", stderr_of(&out));

    // From stdin, through a file: a first command killed by SIGPIPE would fail the
    // pipeline for its own sake.
    let mut ids = tempfile::NamedTempFile::new().unwrap();
    for i in 0..300_000u64 {
        std::io::Write::write_all(
            &mut ids,
            format!("{}\n", 241_691_364_662_738_944 + i).as_bytes(),
        )
        .unwrap();
    }
    let out = pipeline(&format!(
        r#""$0" parse < '{}' | head -1"#,
        ids.path().display()
    ));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(stdout_of(&out).lines().count(), 1);
    assert!(out.stderr.is_empty(), "{}", stderr_of(&out));
}

#[test]
fn case5_next_killed_by_sigterm_leaves_only_whole_lines() {
    let bits = default_layout();
    for round in 0..4u64 {
        // A worker ID per round: a killed run keeps its lease until the lease expires.
        let worker_id = (90 + round).to_string();
        let mut child = uidgen(&["next", "-n", "1000000000", "--worker-id", &worker_id])
            .spawn()
            .expect("spawn");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        // Read a varying amount, so the kill lands at different points of a chunk.
        let mut first = Vec::new();
        let mut line = String::new();
        for _ in 0..(20_000 + round * 37_003) {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            first.push(line.clone());
        }
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "killed: {status:?}");
        let all: String = first.concat() + &rest;
        assert!(
            all.ends_with('\n'),
            "a cut last line: {:?}",
            all.lines().last()
        );
        let mut previous = 0u64;
        for line in all.lines() {
            let uid: u64 = line.parse().unwrap_or_else(|_| panic!("line {line:?}"));
            assert!(uid > previous);
            assert_eq!(bits.parse(uid).unwrap().worker_id, 90 + round, "{line}");
            previous = uid;
        }
    }
}

// 6. Layouts the library accepts -------------------------------------------------------

/// Runs `cmd` with at most `bytes` of address space (RLIMIT_AS), so a run that wants
/// more fails instead of succeeding slowly.
fn with_memory_limit(cmd: &mut Command, bytes: u64) -> Output {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec, and only calls
    // setrlimit, which is async-signal-safe; the struct it reads is a copy on its stack.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    output(cmd)
}

#[test]
fn case6_layouts_with_many_sequence_bits_work_fast_and_small() {
    let own_store = tempfile::tempdir().unwrap();
    for layout in ["30/9/24", "30/10/23", "25/1/37"] {
        let start = Instant::now();
        // 256 MiB: the library's default ring for 30/10/23 alone would be 512 MiB.
        let out = with_memory_limit(
            // A store of its own: worker ID 1 is leased by other tests' runs at the same time.
            uidgen(&[
                "next",
                "--worker-id",
                "1",
                "--layout",
                layout,
                "--epoch",
                "2026-01-01",
            ])
            .env("UIDGEN_WORKER_DB", own_store.path().join("w.sqlite3")),
            256 << 20,
        );
        let took = start.elapsed();
        let ids = printed_ids(&out);
        let (t, rest) = layout.split_once('/').unwrap();
        let (w, s) = rest.split_once('/').unwrap();
        // The CLI counts seconds for a split given by hand.
        let bits = BitsAllocator::builder()
            .bits(t.parse().unwrap(), w.parse().unwrap(), s.parse().unwrap())
            .unit(uidgen::TimeUnit::Seconds)
            .build()
            .unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(bits.parse(ids[0]).unwrap().worker_id, 1);
        // Not a speed goal (those live in benchmarks): a ring sized by the layout's
        // sequence instead of by demand fills for minutes, or runs out of the memory above.
        assert!(took < Duration::from_secs(10), "{layout}: {took:?}");
    }
}

#[test]
fn case6_every_split_works_or_is_refused_with_an_option_the_cli_has() {
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    for seq in 1..=61u32 {
        for unit in ["s", "ms"] {
            let layout = format!("{}/1/{seq}", 62 - seq);
            let out = run(&[
                "next",
                "-n",
                "3",
                "--worker-id",
                "1",
                "--layout",
                &layout,
                "--unit",
                unit,
                "--epoch",
                &yesterday,
            ]);
            let bits = BitsAllocator::builder()
                .bits(62 - seq, 1, seq)
                .unit(if unit == "s" {
                    TimeUnit::Seconds
                } else {
                    TimeUnit::Milliseconds
                })
                .epoch(&yesterday)
                .build();
            let err = stderr_of(&out);
            match bits {
                Ok(bits) => {
                    let ids = printed_ids(&out);
                    assert_eq!(ids.len(), 3, "{layout} {unit}");
                    assert!(ids.iter().all(|&id| bits.parse(id).unwrap().worker_id == 1));
                }
                Err(_) => {
                    assert_fails_with(&out, 1, &["ran out"]);
                }
            }
            for unknown in ["boost_power", "ring_capacity", "padding_factor"] {
                assert!(!err.contains(unknown), "{layout} {unit}: {err}");
            }
        }
    }
}

// 7. Settings that vanish ---------------------------------------------------------------

#[test]
fn case7_empty_environment_variables_mean_unset() {
    // UIDGEN_WORKER_DB empty: the default registry, here in the private home.
    let mut cmd = uidgen(&["worker"]);
    cmd.env("UIDGEN_WORKER_DB", "");
    let out = output(&mut cmd);
    let text = success_stdout(&out);
    let default_path = common::private_home().join("data/uidgen/workers.sqlite3");
    assert!(text.contains(&default_path.display().to_string()), "{text}");
    assert!(default_path.exists());

    // UIDGEN_MYSQL_URL empty: no MySQL, so no conflict with --worker-id.
    let mut cmd = uidgen(&["next", "--worker-id", "5"]);
    cmd.env("UIDGEN_MYSQL_URL", "").env("UIDGEN_WORKER_DB", "");
    let ids = printed_ids(&output(&mut cmd));
    assert_eq!(default_layout().parse(ids[0]).unwrap().worker_id, 5);
}

#[test]
fn case7_conflicting_settings_are_an_error_naming_both() {
    let (_dir, registry) = temp_registry();
    let db = registry.display().to_string();
    let unreachable = "mysql://u:SECRETPW@127.0.0.1:1/db";
    // (arguments, environment, the two settings the message must name)
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, [&'a str; 2]);
    let cases: Vec<Case> = vec![
        (
            vec!["next", "--worker-db", &db],
            vec![("UIDGEN_MYSQL_URL", unreachable)],
            ["--worker-db", "UIDGEN_MYSQL_URL"],
        ),
        (
            vec!["next", "--worker-id", "5", "--mysql-url", unreachable],
            vec![],
            ["--worker-id", "--mysql-url"],
        ),
        (
            vec!["worker", "--worker-id", "5"],
            vec![("UIDGEN_MYSQL_URL", unreachable)],
            ["--worker-id", "UIDGEN_MYSQL_URL"],
        ),
        (
            vec!["worker"],
            vec![("UIDGEN_MYSQL_URL", unreachable), ("UIDGEN_WORKER_DB", &db)],
            ["UIDGEN_MYSQL_URL", "UIDGEN_WORKER_DB"],
        ),
        (
            vec!["next", "--create-table", "--worker-id", "1"],
            vec![],
            ["--create-table", "--mysql-url"],
        ),
        (
            vec!["next", "--mysql-timeout", "1", "--worker-id", "1"],
            vec![],
            ["--mysql-timeout", "--mysql-url"],
        ),
    ];
    for (args, env, named) in cases {
        let mut cmd = uidgen(&args);
        cmd.envs(env.iter().copied());
        let out = output(&mut cmd);
        assert_fails_with(&out, 1, &named);
        assert_no_secret(&out);
    }
    assert!(!registry.exists(), "no registry row was taken");
}

/// An RFC 3339 instant `ahead` before the end of a 20-time-bit second layout: the
/// layout ends `ahead` from now.
fn epoch_ending_in(ahead: Duration) -> String {
    let epoch = chrono::Utc::now() - chrono::Duration::seconds(1 << 20)
        + chrono::Duration::from_std(ahead).unwrap();
    epoch.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[test]
fn case7_library_warnings_show_by_default_and_rust_log_chooses() {
    let epoch = epoch_ending_in(Duration::from_secs(60));
    let args = [
        "next",
        "--worker-id",
        "71",
        "--layout",
        "20/20/23",
        "--epoch",
        &epoch,
    ];
    let out = run(&args);
    assert_eq!(printed_ids(&out).len(), 1, "stdout holds the ID alone");
    let err = stderr_of(&out);
    assert!(
        err.contains("WARN") && err.contains("near its end"),
        "{err}"
    );
    assert!(!err.contains('\x1b'), "no colours off a terminal: {err:?}");

    let mut quiet = uidgen(&args);
    quiet.env("RUST_LOG", "error");
    let out = output(&mut quiet);
    assert_eq!(printed_ids(&out).len(), 1);
    assert!(out.stderr.is_empty(), "{}", stderr_of(&out));

    let mut bad = uidgen(&args);
    bad.env("RUST_LOG", "uidgen=notalevel");
    let out = output(&mut bad);
    assert_eq!(printed_ids(&out).len(), 1);
    let err = stderr_of(&out);
    assert!(err.contains("ignoring RUST_LOG"), "{err}");
    assert!(err.contains("near its end"), "warnings still shown: {err}");
}

// 8. Messages that mislead ---------------------------------------------------------------

#[test]
fn case8_a_fixed_worker_id_too_large_is_not_blamed_on_a_registry() {
    let out = run(&["next", "--worker-id", "1048576"]);
    assert_fails_with(&out, 1, &["1048576", "max_worker_id 1023"]);
    assert!(!stderr_of(&out).contains("registry"), "{}", stderr_of(&out));
}

#[test]
fn case8_parse_names_the_input_once() {
    let out = run(&["parse", "12x"]);
    assert_fails_with(&out, 1, &["invalid UID \"12x\""]);
    assert_eq!(stderr_of(&out).matches("12x").count(), 1);
    let mut from_stdin = uidgen(&["parse"]);
    from_stdin.stdin(stdin_of("5\n  12x\n"));
    let out = output(&mut from_stdin);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_of(&out),
        "uidgen: stdin line 2: invalid UID \"12x\": not an ID in any form: 3 characters, \
         not all digits; decimal is digits only, base62 has 11 characters, base32 13, hex 16 \
         (or 0x and 1 to 16 hex digits)\n"
    );
}

#[test]
fn case8_the_top_of_a_61_bit_time_field_is_said_in_words() {
    let out = run(&[
        "parse",
        "9223372036854775807",
        "--layout",
        "61/1/1",
        "--unit",
        "ms",
    ]);
    let text = success_stdout(&out);
    assert!(!text.contains("18446744073709551615"), "{text}");
    assert!(
        text.contains("\"timestamp\":\"after the year 262143\""),
        "{text}"
    );
    for args in [
        &["layout", "--layout", "61/1/1"][..],
        &["layout", "--layout", "61/1/1", "--unit", "ms", "--json"],
    ] {
        let text = success_stdout(&run(args));
        assert!(!text.contains("18446744073709551615 ms"), "{text}");
        assert!(text.contains("after the year 262143"), "{text}");
    }
}

#[test]
fn case8_a_huge_argument_is_not_echoed_back_whole() {
    let huge = "7".repeat(100_000);
    let huge_word = "x".repeat(100_000);
    for (args, status) in [
        (vec!["parse", huge.as_str()], 1),
        (vec!["parse", "--layout", huge_word.as_str(), "5"], 1),
        (vec!["parse", "--epoch", huge_word.as_str(), "5"], 1),
        (vec!["next", huge_word.as_str()], 2),
        (vec!["next", "--worker-id", huge.as_str()], 2),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(status), "{:?}", &args[..2]);
        assert!(
            out.stderr.len() < 2_000,
            "{:?}: {} bytes of stderr",
            &args[..2],
            out.stderr.len()
        );
    }
    // From stdin too, where a word is never even kept whole.
    let mut cmd = uidgen(&["parse"]);
    cmd.stdin(stdin_of(&huge));
    let out = output(&mut cmd);
    assert_fails_with(&out, 1, &["stdin line 1", "100000 bytes long"]);
    assert!(out.stderr.len() < 1_000);
}

// 9. Missing conveniences -----------------------------------------------------------------

/// A file holding `text`, as stdin.
fn stdin_of(text: &str) -> Stdio {
    let mut file = tempfile::tempfile().unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    std::io::Seek::rewind(&mut file).unwrap();
    Stdio::from(file)
}

#[test]
fn case9_parse_reads_stdin_with_no_ids_or_a_dash() {
    let out = pipeline(r#""$0" next -n 2 --worker-id 7 | "$0" parse"#);
    let text = success_stdout(&out);
    assert_eq!(text.lines().count(), 2);
    assert!(
        text.lines().all(|l| l.contains("\"workerId\":\"7\"")),
        "{text}"
    );

    let bits = default_layout();
    let mut cmd = uidgen(&["parse", "1", "-", "4"]);
    cmd.stdin(stdin_of("2\n\n 3 \n"));
    let expected: String = [1, 2, 3, 4]
        .iter()
        .map(|&id| format!("{}\n", bits.parse(id).unwrap()))
        .collect();
    assert_eq!(success_stdout(&output(&mut cmd)), expected);
}

#[test]
fn case9_json_for_next_layout_and_worker() {
    let bits = default_layout();
    let out = run(&["next", "-n", "3", "--worker-id", "12", "--json"]);
    let text = success_stdout(&out);
    assert_eq!(text.lines().count(), 3);
    for line in text.lines() {
        let json: serde_json::Value = serde_json::from_str(line).unwrap();
        let uid: u64 = json["UID"].as_str().unwrap().parse().unwrap();
        assert_eq!(line, bits.parse(uid).unwrap().to_string());
        assert_eq!(json["workerId"], "12");
    }

    let json: serde_json::Value =
        serde_json::from_str(&success_stdout(&run(&["layout", "--json"]))).unwrap();
    assert_eq!(json["layout"], bits.to_string());
    assert_eq!(json["max_worker_id"], 1_023);
    assert_eq!(json["ids_per_tick"], 8192);
    assert_eq!(json["usable_now"], true);

    let json: serde_json::Value = serde_json::from_str(&success_stdout(&run(&[
        "worker",
        "--worker-id",
        "12",
        "--json",
    ])))
    .unwrap();
    assert_eq!(json["worker_id"], 12);
    let source = json["source"].as_str().unwrap();
    assert!(
        source.starts_with("a lease from the embedded SQLite store"),
        "{source}"
    );
}

#[test]
fn case9_completions_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let text = success_stdout(&run(&["completions", shell]));
        assert!(
            text.contains("uidgen") && text.contains("worker-id"),
            "{shell}"
        );
    }
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn case9_help_texts_are_plain_and_complete() {
    let bench = success_stdout(&run(&["bench", "--help"]));
    assert!(bench.contains("Which generator makes the IDs"), "{bench}");
    for command in [
        &["--help"][..],
        &["next", "--help"],
        &["parse", "--help"],
        &["worker", "--help"],
        &["layout", "--help"],
        &["bench", "--help"],
        &["completions", "--help"],
        &["store", "repair", "--help"],
        &["segment", "create", "--help"],
    ] {
        let text = success_stdout(&run(command));
        assert!(!text.contains('`'), "{command:?}: {text}");
    }
}

#[test]
fn case9_next_with_zero_ids_takes_no_worker_id() {
    let (_dir, registry) = temp_registry();
    let mut cmd = uidgen(&["next", "-n", "0"]);
    cmd.env("UIDGEN_WORKER_DB", &registry);
    let out = output(&mut cmd);
    assert_eq!(success_stdout(&out), "");
    assert!(!registry.exists(), "no registry row was taken");

    // Nor does it look up a MySQL server.
    let start = Instant::now();
    let out = run(&[
        "next",
        "-n",
        "0",
        "--mysql-url",
        "mysql://root@db.example.com/t",
        "--layout",
        "uidgenerator-readme",
    ]);
    assert_eq!(success_stdout(&out), "");
    assert!(start.elapsed() < Duration::from_secs(2));
    if cfg!(feature = "mysql") {
        // But a layout too small for one WORKER_NODE row per run is refused, as a run
        // taking IDs would be.
        let out = run(&[
            "next",
            "-n",
            "0",
            "--mysql-url",
            "mysql://root@db.example.com/t",
        ]);
        assert_fails_with(&out, 1, &["10 worker bits", "1023 runs"]);
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    // The settings are still checked.
    let out = run(&["next", "-n", "0", "--worker-id", "1048576"]);
    assert_fails_with(&out, 1, &["max_worker_id 1023"]);
}
