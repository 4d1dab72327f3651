//! The loader's and the checks' tests, and the table held to the schema and the docs.

use super::*;
use std::path::Path;

/// `Config::load` of `toml` (as a file) and `vars`, then `check`.
fn load_checked(toml: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("serve.toml");
    std::fs::write(&file, toml).unwrap();
    let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    Config::load(Some(&file), vars).and_then(|c| c.check().map(|()| c))
}

#[test]
fn an_unknown_key_is_reported_on_its_own_line() {
    for (toml, line) in [
        ("max_cont = 5\n", 1),
        (
            "# a comment\n\nlisten = \"127.0.0.1:9000\"\nmax_cont = 5\n",
            4,
        ),
        ("layout = \"default\"\n\n\n\n\n\n\n\nmax_cont = 5\n", 9),
        ("[limits]\nmax_body_bytes = 100\nbogus = 1\n", 3),
    ] {
        let err = load_checked(toml, &[]).unwrap_err().to_string();
        assert!(err.contains(&format!("line {line}:")), "{toml:?}: {err}");
    }
}

#[test]
fn an_empty_tokens_file_is_refused_saying_how_to_run_without_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    for empty in ["", "\n\n", "# nobody yet\n   \n"] {
        std::fs::write(&file, empty).unwrap();
        let toml = format!("tokens_file = {:?}\n", file.display().to_string());
        let err = load_checked(&toml, &[]).unwrap_err().to_string();
        assert!(err.contains("holds no token"), "{err}");
        assert!(err.contains("leave out tokens_file"), "{err}");
    }
    // A variable set but empty is unset: the service runs with no tokens on loopback.
    let config = load_checked("", &[("UIDGEN_TOKENS", "")]).unwrap();
    assert!(config.tokens.is_empty());
}

#[test]
fn booleans_are_read_in_every_common_spelling() {
    for on in [
        "true", "TRUE", "True", "yes", "Yes", "on", "ON", "1", "y", "t",
    ] {
        let config = load_checked("", &[("UIDGEN_ALLOW_PUBLIC", on)]).unwrap();
        assert!(config.allow_public, "{on}");
        let err = load_checked("", &[("UIDGEN_CREATE_TAGS", on)]).unwrap_err();
        assert!(
            err.to_string().contains("UIDGEN_CREATE_TAGS"),
            "{on}: {err}"
        );
    }
    for off in [
        "false", "FALSE", "no", "No", "off", "0", "n", "f", " false ",
    ] {
        let config = load_checked("", &[("UIDGEN_ALLOW_PUBLIC", off)]).unwrap();
        assert!(!config.allow_public, "{off}");
        assert!(
            load_checked("", &[("UIDGEN_CREATE_TAGS", off)]).is_ok(),
            "{off}"
        );
    }
    let err = load_checked("", &[("UIDGEN_ALLOW_PUBLIC", "maybe")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("yes/no") && err.contains("maybe"), "{err}");
}

#[test]
fn cors_origins_must_be_origins() {
    let config = load_checked(
        "",
        &[(
            "UIDGEN_CORS_ORIGINS",
            "https://a.example, http://b.example:8080",
        )],
    )
    .unwrap();
    assert_eq!(
        config.cors_origins,
        ["https://a.example", "http://b.example:8080"]
    );
    assert!(load_checked("cors_origins = [\"*\"]\n", &[]).is_ok());
    for bad in [
        "a.example",
        "https://a.example/",
        "https://a.example/path",
        "ftp://a.example",
        "https://user:pw@a.example",
        "https://a.example?x=1",
        "https://",
    ] {
        let err = load_checked("", &[("UIDGEN_CORS_ORIGINS", bad)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cors_origins") && err.contains("no path"),
            "{bad}: {err}"
        );
        assert!(!err.contains("pw@"), "{err}");
    }
}

#[test]
fn neither_debug_nor_a_bad_file_shows_a_store_password() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("serve.toml");
    std::fs::write(&file, "store = \"mysql://ids:Sup3rSecret@db/ids\"\n").unwrap();
    let config = Config::load(Some(&file), Vec::new()).unwrap();
    assert!(!format!("{config:?}").contains("Sup3rSecret"), "{config:?}");
    for bad in [
        "store = \"mysql://ids:Sup3rSecret@db/ids\nmax_count = 5\n",
        "max_count = \"mysql://ids:Sup3rSecret@db/ids\"\n",
        "store = \"mysql://ids:Sup3rSecret@db/ids\"\nlisten = 5\n",
        "store = \"mysql://ids:Sup3rSecret@db/ids\"\nunknown = 1\n",
    ] {
        std::fs::write(&file, bad).unwrap();
        let err = Config::load(Some(&file), Vec::new())
            .expect_err(bad)
            .to_string();
        assert!(!err.contains("Sup3rSecret"), "{err}");
        assert!(err.contains("line"), "{err}");
    }
}

#[test]
fn tags_are_created_only_where_a_start_is_named() {
    let load = |toml: &str, vars: Vec<(String, String)>| {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("serve.toml");
        std::fs::write(&file, toml).unwrap();
        Config::load(Some(&file), vars).and_then(|c| c.check().map(|()| c))
    };
    let config = load("tags = [\"order\"]\n", Vec::new()).unwrap();
    assert_eq!(config.tag_start, None);
    let config = load("tag_start = 1000\n", Vec::new()).unwrap();
    assert_eq!(config.tag_start, Some(1000));
    let var = |v: &str| vec![("UIDGEN_TAG_START".to_string(), v.to_string())];
    assert_eq!(load("", var("7")).unwrap().tag_start, Some(7));
    for (toml, vars, wanted) in [
        (
            "tag_start = 0\n",
            Vec::new(),
            "tag_start = 0 is not allowed: 1 to",
        ),
        ("", var("0"), "tag_start = 0 is not allowed"),
        ("", var("-1"), "UIDGEN_TAG_START"),
        (
            "create_tags = true\n",
            Vec::new(),
            "create_tags = true is not allowed",
        ),
        (
            "",
            vec![("UIDGEN_CREATE_TAGS".into(), "true".into())],
            "UIDGEN_CREATE_TAGS = true is not allowed: no longer supported",
        ),
        (
            "",
            vec![("UIDGEN_CREATE_TAGS".into(), "1".into())],
            "UIDGEN_CREATE_TAGS = 1 is not allowed",
        ),
        // The largest start leaves room for one range of tag_step.
        (
            "tag_start = 9223372036854775807\n",
            Vec::new(),
            "1 to 9223372036854774807 (the largest BIGINT less tag_step)",
        ),
    ] {
        let err = load(toml, vars).unwrap_err().to_string();
        assert!(err.contains(wanted), "{toml:?}: {err}");
    }
    // The old switch set off is harmless.
    assert!(load("create_tags = false\n", Vec::new()).is_ok());
    let off = |v: &str| vec![("UIDGEN_CREATE_TAGS".to_string(), v.to_string())];
    assert!(load("", off("false")).is_ok() && load("", off("0")).is_ok());
    assert!(load("tag_start = 9223372036854774807\n", Vec::new()).is_ok());
}

#[test]
fn variables_override_the_file_and_bad_values_name_the_variable() {
    let config = Config::load(
        None,
        vec![
            ("UIDGEN_MAX_COUNT".into(), "7".into()),
            ("UIDGEN_TAGS".into(), " a, b ,,".into()),
        ],
    )
    .unwrap();
    assert_eq!(config.max_count, 7);
    assert_eq!(config.tags, ["a", "b"]);
    let err = Config::load(None, vec![("UIDGEN_MAX_COUNT".into(), "many".into())])
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("UIDGEN_MAX_COUNT") && err.contains("many"),
        "{err}"
    );
    let config = Config {
        max_count: 2_000_000,
        ..Config::default()
    };
    assert!(config
        .check()
        .unwrap_err()
        .to_string()
        .contains("1 to 1000000"));
}

/// An example value of each setting a line can set: as a variable or flag gives it, and
/// as a TOML value. A setting added without one fails the tests below.
fn example(key: &str, dir: &Path) -> Option<(String, String)> {
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let path = path.display().to_string();
        (path.clone(), format!("{path:?}"))
    };
    let (line, literal) = match key {
        "tokens_file" => return Some(file("tokens", "example-token-0123456789=*\n")),
        "opaque_keys_file" => return Some(file("keys", &format!("1:{}\n", "ab".repeat(32)))),
        "listen" => ("127.0.0.1:9001", "\"127.0.0.1:9001\""),
        "allow_public" => ("true", "true"),
        "store" => (
            "/tmp/uidgen-example.sqlite3",
            "\"/tmp/uidgen-example.sqlite3\"",
        ),
        "layout" => ("snowflake", "\"snowflake\""),
        "unit" => ("ms", "\"ms\""),
        "epoch" => ("2011-01-01", "\"2011-01-01\""),
        "region" => ("0", "0"),
        "id_floor" => ("99", "99"),
        "lease_ttl_ms" => ("4000", "4000"),
        "max_time_ahead_ms" => ("250", "250"),
        "tags" => ("order", "[\"order\"]"),
        "tag_start" => ("77", "77"),
        "tag_step" => ("50", "50"),
        "max_count" => ("9", "9"),
        "tinyid_loading_percent" => ("40", "40"),
        "cors_origins" => ("https://a.example", "[\"https://a.example\"]"),
        "access_log" => ("true", "true"),
        "wait_for_store_secs" => ("12", "12"),
        "worker_id" => ("5", "5"),
        "worker_ids" => ("4-9", "\"4-9\""),
        "pod_ordinal" => ("true", "true"),
        "pod_ordinal_offset" => ("3", "3"),
        "limits.request_timeout_ms" => ("1500", "1500"),
        "limits.header_timeout_ms" => ("1600", "1600"),
        "limits.max_connections" => ("17", "17"),
        "limits.max_body_bytes" => ("999", "999"),
        "limits.shutdown_grace_ms" => ("1700", "1700"),
        _ => return None,
    };
    Some((line.to_owned(), literal.to_owned()))
}

/// The keys serde takes at the top of the file, or in `[limits]`, as its error for an
/// unknown key lists them.
fn toml_keys(table: Option<&str>) -> Vec<String> {
    let text = match table {
        Some(table) => format!("[{table}]\nno_such_key = 1\n"),
        None => "no_such_key = 1\n".to_owned(),
    };
    let message = toml::from_str::<Config>(&text).err().unwrap().to_string();
    let expected = message.split("expected one of").nth(1).unwrap_or_default();
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|key| match table {
            Some(table) => format!("{table}.{key}"),
            None => key.to_owned(),
        })
        .collect()
}

#[test]
fn every_key_of_the_file_is_a_setting_of_the_table_and_nothing_else_is() {
    let mut in_file = toml_keys(None);
    assert!(in_file.len() > 20, "{in_file:?}");
    in_file.retain(|key| key != "limits");
    in_file.extend(toml_keys(Some("limits")));
    let mut in_table: Vec<String> = SETTINGS
        .iter()
        .filter_map(|s| s.key.map(String::from))
        .collect();
    in_file.sort();
    in_table.sort();
    assert_eq!(in_file, in_table);
}

#[test]
fn every_setting_has_all_three_spellings_unless_it_cannot_be_on_a_line_or_shown() {
    let mut seen = std::collections::HashSet::new();
    for setting in SETTINGS {
        let spellings = (setting.key, setting.variable, setting.flag);
        match setting.kind {
            SettingKind::Secret => assert!(
                matches!(spellings, (None, Some(_), None)),
                "a secret is a variable only: {setting:?}"
            ),
            SettingKind::Tables => assert!(
                matches!(spellings, (Some(_), None, None)),
                "tables are the file's only: {setting:?}"
            ),
            _ => assert!(
                matches!(spellings, (Some(_), Some(_), Some(_))),
                "{setting:?}"
            ),
        }
        for spelling in [setting.key, setting.variable, setting.flag]
            .into_iter()
            .flatten()
        {
            assert!(seen.insert(spelling), "{spelling} is spelled twice");
            assert_eq!(Setting::named(spelling).map(|s| s.help), Some(setting.help));
        }
        if let Some(variable) = setting.variable {
            assert!(variable.starts_with("UIDGEN_"), "{variable}");
        }
        if let Some(flag) = setting.flag {
            assert!(flag.starts_with("--") && !flag.contains('_'), "{flag}");
        }
        assert!(!setting.help.is_empty() && !setting.help.ends_with('.'));
    }
}

#[test]
fn a_setting_given_as_a_key_a_variable_or_a_flag_sets_the_same_and_flags_come_last() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("serve.toml");
    let default = format!("{:?}", Config::default());
    for setting in SETTINGS {
        let (Some(key), Some(variable), Some(flag)) = (setting.key, setting.variable, setting.flag)
        else {
            continue;
        };
        if setting.kind == SettingKind::Removed {
            continue;
        }
        let (line, literal) =
            example(key, dir.path()).unwrap_or_else(|| panic!("no example for {key}"));
        let toml = match key.split_once('.') {
            Some((table, key)) => format!("[{table}]\n{key} = {literal}\n"),
            None => format!("{key} = {literal}\n"),
        };
        std::fs::write(&file, &toml).unwrap();
        let from_file = format!("{:?}", Config::load(Some(&file), Vec::new()).unwrap());
        let from_variable = format!(
            "{:?}",
            Config::load(None, [(variable.to_owned(), line.clone())]).unwrap()
        );
        let from_flag = format!(
            "{:?}",
            Config::load_with_flags(None, Vec::new(), [(flag, vec![line.clone()])]).unwrap()
        );
        assert_ne!(from_file, default, "{key} changed nothing");
        assert_eq!(from_variable, from_file, "{variable}");
        assert_eq!(from_flag, from_file, "{flag}");
        // The layers: the variable over the file, the flag over both.
        std::fs::write(&file, format!("{toml}\n")).unwrap();
        let bad = "not-a-value-of-any-setting";
        let over = Config::load_with_flags(
            Some(&file),
            [(variable.to_owned(), bad.to_owned())],
            [(flag, vec![line.clone()])],
        );
        if let Ok(over) = over {
            assert_eq!(format!("{over:?}"), from_file, "{flag} over {variable}");
        } else {
            // A value the variable cannot take is refused, naming the variable.
            let err = over.unwrap_err().to_string();
            assert!(err.contains(variable) && err.contains(bad), "{err}");
        }
    }
}

#[test]
fn a_bad_value_names_the_spelling_it_came_in_and_the_removed_switch_says_why() {
    let err = Config::load_with_flags(None, Vec::new(), [("--max-count", vec!["x".into()])])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("--max-count = x is not allowed"), "{err}");
    let err = Config::load(None, [("UIDGEN_LEASE_TTL_MS".into(), "-1".into())])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("UIDGEN_LEASE_TTL_MS = -1"), "{err}");
    let err = Config::load_with_flags(None, Vec::new(), [("--create-tags", vec!["true".into()])])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--create-tags") && err.contains("no longer supported"),
        "{err}"
    );
    let err = Config::load_with_flags(None, Vec::new(), [("--no-such-flag", vec![])])
        .unwrap_err()
        .to_string();
    assert!(err.contains("--no-such-flag"), "{err}");
    // A flag's list keeps commas in a value; the variable splits at them.
    let config = Config::load_with_flags(
        None,
        Vec::new(),
        [("--tag", vec!["a,b".into(), "c".into()])],
    )
    .unwrap();
    assert_eq!(config.tags, ["a,b", "c"]);
}

/// The settings table of `server/README.md`, as the table makes it.
pub(crate) fn readme_table() -> String {
    let mut table = String::from(
        "| key | variable | flag of `uidgen serve` | what it does |\n|---|---|---|---|\n",
    );
    let cell = |spelling: Option<&str>| spelling.map_or("—".to_owned(), |s| format!("`{s}`"));
    for setting in SETTINGS {
        if setting.kind == SettingKind::Removed {
            continue;
        }
        let key = match setting.kind {
            SettingKind::Tables => setting.key.map(|k| format!("`[[{k}]]`")),
            _ => setting.key.map(|k| format!("`{k}`")),
        };
        let flag = setting.flag.map(|flag| match setting.kind {
            SettingKind::Switch => format!("`{flag}`"),
            _ => format!("`{flag} {}`", setting.value_name),
        });
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            key.unwrap_or_else(|| "—".into()),
            cell(setting.variable),
            flag.unwrap_or_else(|| "—".into()),
            setting.help.replace('|', "\\|"),
        ));
    }
    table
}

#[test]
fn the_readme_lists_the_settings_as_the_table_has_them() {
    let readme_path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(readme_path).unwrap();
    let (start, end) = ("<!-- settings:start -->\n", "<!-- settings:end -->");
    let (Some(a), Some(b)) = (readme.find(start), readme.find(end)) else {
        panic!("server/README.md has no {start:?} … {end:?} section");
    };
    let made = readme_table();
    if std::env::var_os("UIDGEN_WRITE_SETTINGS").is_some() {
        let written = format!("{}{start}{made}{}", &readme[..a], &readme[b..]);
        std::fs::write(readme_path, written).unwrap();
        return;
    }
    assert!(
        readme[a + start.len()..b] == made,
        "server/README.md's settings table is not what SETTINGS makes: run \
         UIDGEN_WRITE_SETTINGS=1 cargo test -p uidgen-server settings, and commit it"
    );
}

#[test]
fn a_worker_id_range_must_be_one_that_fits_the_layout_and_hold_a_fixed_worker_id() {
    let ok = load_checked("worker_ids = \"512-1023\"", &[]).unwrap();
    assert_eq!(
        ok.worker_id_range().unwrap().map(|r| r.to_string()),
        Some("512-1023".to_owned())
    );
    for (toml, vars, expected) in [
        ("worker_ids = \"9-3\"", vec![], "FIRST at most LAST"),
        (
            "",
            vec![("UIDGEN_WORKER_IDS", "zero-3")],
            "UIDGEN_WORKER_IDS = zero-3 is not allowed: not a whole number",
        ),
        (
            "worker_ids = \"0-1024\"",
            vec![],
            "at most 1023, which 10 worker bits hold",
        ),
        (
            "worker_ids = \"0-3\"\nworker_id = 9",
            vec![],
            "a worker ID in worker_ids, 0-3",
        ),
    ] {
        let err = load_checked(toml, &vars).unwrap_err().to_string();
        assert!(err.contains(expected), "{toml} {vars:?}: {err}");
        assert!(
            err.to_lowercase().contains("worker_id"),
            "{toml} {vars:?}: {err}"
        );
    }
}
