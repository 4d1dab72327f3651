//! Moving to uidgen from another scheme, end to end, as a team would (issue 45).
//!
//! For each old scheme (UidGenerator 28/22/13 s stopped in 2023, and run to its end with
//! worker IDs up to 5,000; Leaf/Twitter; Sonyflake; Instagram; auto-increment maxima of
//! 10^12 and 2^62): old IDs across the scheme's epoch-to-stop range and its worker IDs
//! (the highest corner among them) go into a table on MariaDB and on PostgreSQL;
//! `uidgen migrate plan --db URL --table T --json` plans from it; `uidgen layout` must
//! show the lifetime, rate and workers the plan promised; then 1,000,000 IDs through
//! `uidgen next` and 1,000,000 through `uidgen serve`, each with the plan's own flags,
//! and, where the plan has a segment start, 1,000,000 of a tag created there:
//! every new ID is above every old one, or (UidGenerator run to its end) has the plan's
//! bit set and reads in the old layout as a worker ID no old worker had.
//!
//! The refusals: an old maximum of 2^63 − 2; needs no layout holds; a floor above what a
//! configured layout makes now (the CLI and `serve`); a tag created below its floor.
//!
//! Stores: the test servers scripts/test makes reachable, or UIDGEN_MYSQL_URL and
//! UIDGEN_POSTGRES_URL.

mod common;
#[path = "../../tests/support/servers.rs"]
mod servers;

use common::serve::{curl, ids_of, Serve};
use common::{output, stderr_of, success_stdout, temp_registry, uidgen};
use serde_json::Value;
use std::collections::HashSet;
use std::process::{Command, Stdio};
use uidgen::{BitsAllocator, Preset};

const NEW_IDS: usize = 1_000_000;
const OLD_IDS: usize = 3_000;
/// 2023-06-01, when the first UidGenerator deployment stopped.
const STOPPED_2023_MS: u64 = 1_685_577_600_000;

struct Scheme {
    name: &'static str,
    /// `--from`.
    from: &'static str,
    /// The old layout, or `None` for a counter.
    layout: Option<BitsAllocator>,
    /// When it stopped (its last tick), for layouts.
    stopped_ms: u64,
    /// The highest worker ID it used, or the counter's maximum.
    max: u64,
    /// More `migrate plan` options.
    extra: &'static [&'static str],
}

fn schemes() -> Vec<Scheme> {
    let layout = |preset: Preset| Some(preset.builder().build_unchecked_time().unwrap());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let uidgenerator = layout(Preset::UidGenerator).unwrap();
    vec![
        Scheme {
            name: "uidgenerator_2023",
            from: "uidgenerator",
            layout: Some(uidgenerator),
            stopped_ms: STOPPED_2023_MS,
            max: 5000,
            extra: &["--years", "10"],
        },
        Scheme {
            name: "uidgenerator_end",
            from: "uidgenerator",
            layout: Some(uidgenerator),
            stopped_ms: uidgenerator.last_instant_millis(),
            max: 5000,
            extra: &["--old-max-worker", "5000"],
        },
        Scheme {
            name: "leaf",
            from: "leaf",
            layout: layout(Preset::Snowflake),
            stopped_ms: now,
            max: 1023,
            extra: &[],
        },
        Scheme {
            name: "sonyflake",
            from: "sonyflake",
            layout: layout(Preset::Sonyflake),
            stopped_ms: now,
            max: 65_535,
            extra: &[],
        },
        Scheme {
            name: "instagram",
            from: "instagram",
            layout: layout(Preset::Instagram),
            stopped_ms: now,
            max: 8191,
            extra: &[],
        },
        Scheme {
            name: "counter_1e12",
            from: "auto-increment",
            layout: None,
            stopped_ms: now,
            max: 1_000_000_000_000,
            extra: &[],
        },
        Scheme {
            name: "counter_2e62",
            from: "auto-increment",
            layout: None,
            stopped_ms: now,
            max: 1 << 62,
            extra: &[],
        },
    ]
}

/// A small deterministic generator: the same old IDs every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        // xorshift64*; bound ≥ 1.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound.max(1)
    }
}

/// Old IDs across the scheme's range, its highest corner among them; and that maximum.
fn old_ids(scheme: &Scheme) -> (Vec<u64>, u64) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ scheme.max);
    let mut ids = HashSet::new();
    let max_id = match scheme.layout {
        Some(bits) => {
            let last = bits
                .tick_at(scheme.stopped_ms)
                .unwrap()
                .min(bits.max_delta());
            for _ in 0..OLD_IDS {
                let id = bits
                    .allocate(
                        rng.below(last + 1),
                        rng.below(scheme.max + 1),
                        rng.below(bits.max_sequence() + 1),
                    )
                    .unwrap();
                ids.insert(id);
            }
            bits.allocate(last, scheme.max, bits.max_sequence())
                .unwrap()
        }
        None => {
            for _ in 0..OLD_IDS {
                ids.insert(1 + rng.below(scheme.max));
            }
            scheme.max
        }
    };
    ids.insert(max_id);
    let mut ids: Vec<u64> = ids.into_iter().collect();
    ids.sort_unstable();
    assert_eq!(ids.last(), Some(&max_id));
    (ids, max_id)
}

fn insert_statements(table: &str, ids: &[u64]) -> Vec<String> {
    let mut statements = vec![
        format!("DROP TABLE IF EXISTS {table}"),
        format!("CREATE TABLE {table} (id BIGINT PRIMARY KEY, note VARCHAR(20))"),
    ];
    for chunk in ids.chunks(1000) {
        let values: Vec<String> = chunk.iter().map(|id| format!("({id}, 'old')")).collect();
        statements.push(format!(
            "INSERT INTO {table} (id, note) VALUES {}",
            values.join(",")
        ));
    }
    statements
}

fn on_mysql(statements: &[String]) {
    use mysql_async::prelude::Queryable;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut conn = mysql_async::Conn::from_url(servers::mysql_url())
            .await
            .expect("MariaDB answers (scripts/test starts it)");
        for statement in statements {
            conn.query_drop(statement.as_str()).await.unwrap();
        }
        conn.disconnect().await.unwrap();
    });
}

fn on_postgres(statements: &[String]) {
    use std::io::Write;
    let mut psql = Command::new("psql")
        .args([
            servers::postgres_url().as_str(),
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
        ])
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("psql runs (scripts/test installs PostgreSQL)");
    let mut stdin = psql.stdin.take().unwrap();
    for statement in statements {
        writeln!(stdin, "{statement};").unwrap();
    }
    drop(stdin);
    assert!(psql.wait().unwrap().success(), "psql failed");
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// Every new ID keeps apart from the old ones as the plan says.
fn check_new(scheme: &Scheme, plan: &Value, max_id: u64, ids: &[u64], via: &str) {
    let time = &plan["time_based"];
    assert!(ids.len() >= NEW_IDS, "{via}: {} IDs", ids.len());
    let unique: HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "{}: {via} repeated an ID",
        scheme.name
    );
    if time["guarantee"] == "apart" {
        let bit = time["set_bit"].as_u64().unwrap();
        let old = scheme.layout.unwrap();
        for &id in ids {
            assert_ne!(id & (1 << bit), 0, "{via}: {id} lacks bit {bit}");
            let as_old = old.parse(id).unwrap();
            assert!(
                as_old.worker_id > scheme.max,
                "{}: {via}: {id} reads as old worker {}",
                scheme.name,
                as_old.worker_id
            );
        }
    } else {
        let lowest = ids.iter().min().unwrap();
        assert!(
            *lowest > max_id,
            "{}: {via}: new ID {lowest} is not above the old maximum {max_id}",
            scheme.name
        );
    }
}

/// The plan's promises, as `uidgen layout` shows the planned layout.
fn check_layout(time: &Value, flags: &[String]) {
    let layout_flags: Vec<&str> = flags
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .chunks(2)
        .filter(|pair| pair[0] != "--id-floor")
        .flatten()
        .copied()
        .collect();
    let out = output(&mut uidgen(
        &[&["layout", "--json"][..], &layout_flags].concat(),
    ));
    let shown: Value = serde_json::from_str(&success_stdout(&out)).unwrap();
    assert_eq!(shown["end_millis"], time["end_millis"], "{shown}");
    assert_eq!(shown["usable_now"], true, "{shown}");
    let per_second =
        shown["ids_per_tick"].as_u64().unwrap() * (1000 / tick_ms(shown["unit"].as_str().unwrap()));
    assert_eq!(per_second, time["ids_per_second"].as_u64().unwrap());
    assert_eq!(
        shown["max_worker_id"].as_u64().unwrap() + 1,
        time["workers"].as_u64().unwrap()
    );
}

fn tick_ms(symbol: &str) -> u64 {
    match symbol {
        "s" => 1000,
        "10ms" => 10,
        _ => 1,
    }
}

/// `count` IDs from a running service, 100,000 a request.
fn draw(serve: &Serve, path: &str, count: usize) -> Vec<u64> {
    let mut ids = Vec::with_capacity(count);
    while ids.len() < count {
        let (status, body) = curl(&[&serve.url(&format!("{path}?count=100000"))]);
        assert_eq!(status, 200, "{path}: {body}");
        ids.extend(ids_of(&body));
    }
    ids
}

fn plan_from(db: &str, table: &str, scheme: &Scheme) -> Value {
    let mut args = vec![
        "migrate",
        "plan",
        "--json",
        "--from",
        scheme.from,
        "--db",
        db,
        "--table",
        table,
    ];
    args.extend_from_slice(scheme.extra);
    let out = output(&mut uidgen(&args));
    serde_json::from_str(&success_stdout(&out)).unwrap()
}

fn run_scheme(scheme: &Scheme, db: &str, load: fn(&[String])) {
    let (old, max_id) = old_ids(scheme);
    let table = format!("mig_{}_{}", scheme.name, servers::random_suffix());
    load(&insert_statements(&table, &old));
    let plan = plan_from(db, &table, scheme);
    assert_eq!(plan["max_id"].as_u64(), Some(max_id), "{plan}");
    assert!(
        plan["read_from"].as_str().unwrap().contains(&table),
        "{plan}"
    );
    let time = &plan["time_based"];
    assert!(
        time.is_object(),
        "{}: no time-based plan: {plan}",
        scheme.name
    );
    let expected = if scheme.name == "uidgenerator_end" {
        "apart"
    } else {
        "above"
    };
    assert_eq!(time["guarantee"], expected, "{}: {plan}", scheme.name);
    let flags = strings(&time["flags"]);
    check_layout(time, &flags);

    // The CLI, on a registry of its own.
    let (_dir, registry) = temp_registry();
    let count = NEW_IDS.to_string();
    let flag_refs: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut next = uidgen(&[&["next", "-n", count.as_str()][..], &flag_refs].concat());
    next.env("UIDGEN_WORKER_DB", &registry);
    let out = output(&mut next);
    let ids: Vec<u64> = success_stdout(&out)
        .lines()
        .map(|line| line.parse().unwrap())
        .collect();
    check_new(scheme, &plan, max_id, &ids, "uidgen next");

    // The service, its worker ID leased from the same database; and the segment tag.
    let mut serve_args = vec!["--store", db];
    serve_args.extend(&flag_refs);
    let tag = format!("mig_{}", servers::random_suffix());
    let start = plan["segment"]["start"].as_u64();
    if let Some(start) = start {
        fine(&format!(
            "segment create --store {db} --tag {tag} --step 1000 --start {start} --id-floor {max_id}"
        ));
        // The plan's flags hold the floor, which the tag is held to as well.
        serve_args.extend(["--tag", tag.as_str()]);
    }
    let serve = Serve::start(&serve_args, &[]);
    let snowflake_ids = draw(&serve, "/v1/snowflake", NEW_IDS);
    check_new(scheme, &plan, max_id, &snowflake_ids, "serve");
    if let Some(start) = start {
        let segment_ids = draw(&serve, &format!("/v1/segment/{tag}"), NEW_IDS);
        assert_eq!(segment_ids.first().copied(), Some(start), "{}", scheme.name);
        assert!(segment_ids.windows(2).all(|w| w[0] < w[1]));
    }
    let (status, stderr) = serve.terminate();
    assert!(status.success(), "{stderr}");
}

/// A text column sorts '9' above '10'; a float has lost digits: either would give a floor
/// below the real maximum, so both are refused.
fn refuses_columns_that_are_not_integers(db: &str, load: fn(&[String])) {
    let table = format!("mig_text_{}", servers::random_suffix());
    load(&[
        format!("CREATE TABLE {table} (id VARCHAR(30), amount REAL)"),
        format!(
            "INSERT INTO {table} VALUES ('9', 1.5), ('7623573822388641791', 7623573822388641791)"
        ),
    ]);
    for column in ["id", "amount"] {
        let err = refused(&format!(
            "migrate plan --from uidgenerator --db {db} --table {table} --column {column}"
        ));
        assert!(err.contains("integer column"), "{column}: {err}");
    }
    load(&[format!("DROP TABLE {table}")]);
}

#[test]
fn every_old_scheme_on_mariadb_gets_a_plan_whose_new_ids_stay_apart() {
    for scheme in schemes() {
        run_scheme(&scheme, &servers::mysql_url(), on_mysql);
    }
    refuses_columns_that_are_not_integers(&servers::mysql_url(), on_mysql);
}

#[test]
fn every_old_scheme_on_postgres_gets_a_plan_whose_new_ids_stay_apart() {
    for scheme in schemes() {
        run_scheme(&scheme, &servers::postgres_url(), on_postgres);
    }
    refuses_columns_that_are_not_integers(&servers::postgres_url(), on_postgres);
}

/// `uidgen ARGS` (split at spaces) that must fail with status 1 and print nothing: its
/// stderr.
fn refused(args: &str) -> String {
    let args: Vec<&str> = args.split_whitespace().collect();
    let out = output(&mut uidgen(&args));
    assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
    assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    stderr_of(&out)
}

/// `uidgen ARGS` (split at spaces) that must succeed: its stdout.
fn fine(args: &str) -> String {
    let args: Vec<&str> = args.split_whitespace().collect();
    success_stdout(&output(&mut uidgen(&args)))
}

/// `uidgen serve ARGS` (split at spaces) that must refuse to start: its stderr, once it
/// exits (within 60 s, or it is killed and the test fails).
fn serve_refused(args: &str) -> String {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_uidgen"));
    common::clean(&mut serve)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args.split_whitespace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = serve.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("uidgen serve {args} started although it should have refused");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "{out:?}");
    stderr_of(&out)
}

#[test]
fn plans_that_cannot_be_kept_are_refused_naming_what_to_relax() {
    // Nothing is left above 2^63 − 2, and a counter has no free bit.
    let err = refused("migrate plan --from auto-increment --max-id 9223372036854775806");
    assert!(
        err.contains("no plan") && err.contains("IDs are left"),
        "{err}"
    );
    // Needs no layout holds.
    let err = refused(
        "migrate plan --from leaf --max-id 2126103709090840575 --workers 1073741824 \
         --rate 1099511627776 --years 1000",
    );
    assert!(
        err.contains("--workers") && err.contains("--rate") && err.contains("--years"),
        "{err}"
    );
    // Out-of-range needs and maxima are named with their limits.
    for (args, limit) in [
        ("--workers 0 --max-id 5", "1 to 2^30"),
        ("--years 1001 --max-id 5", "1 to 1000"),
        ("--max-id 9223372036854775808", "2^63 - 1"),
    ] {
        let err = refused(&format!("migrate plan --from leaf {args}"));
        assert!(err.contains(limit), "{args}: {err}");
    }
    // A table name that is not a plain identifier never reaches the SQL.
    let err = refused(&format!(
        "migrate plan --from leaf --db {} --table t;DROP",
        servers::mysql_url()
    ));
    assert!(err.contains("table name"), "{err}");
}

#[test]
fn a_floor_above_what_the_layout_makes_now_is_refused_by_the_cli_and_the_service() {
    let (_dir, registry) = temp_registry();
    // Leaf's IDs today are far above the default layout's.
    for generator in ["cached", "default"] {
        let mut next = uidgen(&[
            "next",
            "--generator",
            generator,
            "--id-floor",
            "2126103709090840575",
        ]);
        next.env("UIDGEN_WORKER_DB", &registry);
        let out = output(&mut next);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(out.stdout.is_empty());
        let err = stderr_of(&out);
        assert!(
            err.contains("2126103709090840575") && err.contains("uidgen migrate plan"),
            "{err}"
        );
    }
    let err = serve_refused(&format!(
        "--store {} --id-floor 2126103709090840575",
        registry.display()
    ));
    assert!(err.contains("uidgen migrate plan"), "{err}");
    // `-n 0` checks the settings, the floor among them.
    let err = refused("next -n 0 --id-floor 2126103709090840575");
    assert!(err.contains("uidgen migrate plan"), "{err}");
    // Sonyflake's layout reads old IDs but makes none.
    let err = refused("next --layout sonyflake");
    assert!(err.contains("Sonyflake's order"), "{err}");
}

#[test]
fn a_tag_created_below_its_floor_is_refused_and_a_service_will_not_serve_it() {
    let (_dir, registry) = temp_registry();
    let on = |args: &str| format!("{args} --store {}", registry.display());
    let err = refused(&on(
        "segment create --tag low --step 10 --start 500 --id-floor 500",
    ));
    assert!(err.contains("not above --id-floor 500"), "{err}");
    // Created without the floor, it is refused by takers that have one.
    fine(&on("segment create --tag low --step 10 --start 100"));
    let err = refused(&on("segment next --tag low --id-floor 500"));
    assert!(err.contains("uidgen migrate plan"), "{err}");
    let err = refused(&on(
        "segment create --tag low --step 10 --start 900 --id-floor 500",
    ));
    assert!(err.contains("hands out 100 next"), "{err}");
    let err = serve_refused(&on("--tag low --id-floor 500"));
    assert!(err.contains("ID floor 500"), "{err}");
    // Nor are its IDs given out as ranges, nor its on-demand setup.
    let serve = Serve::start(
        &["--store", registry.to_str().unwrap(), "--id-floor", "500"],
        &[],
    );
    for (method, path) in [
        ("POST", "/v1/segment/low/range?count=3"),
        ("GET", "/v1/segment/low"),
    ] {
        let (status, body) = curl(&["-X", method, &serve.url(path)]);
        assert_eq!(status, 503, "{path}: {body}");
        assert!(body.contains("floor 500"), "{path}: {body}");
    }
    drop(serve);
    // Above the floor, the first ID is the one after it.
    fine(&on(
        "segment create --tag high --step 10 --start 501 --id-floor 500",
    ));
    let ids = fine(&on("segment next --tag high --id-floor 500 -n 3"));
    assert_eq!(ids, "501\n502\n503\n");
}
