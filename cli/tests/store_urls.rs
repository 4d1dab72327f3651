//! `--store` as a user types it, typos included: every store is opened through the
//! library's one URL parser. A URL it cannot read is refused, naming the accepted forms
//! and never the password, and creates no file (the review found `mysql:u:PW@host/db`
//! leasing worker 0 from a new local file of that name, on every machine with the typo).

mod common;

use common::{assert_no_secret, output, stderr_of, uidgen};

/// The typos of the review, and more of their kind.
const TYPOS: [&str; 8] = [
    "mysql:u:SECRETPW@127.0.0.1/db",
    "u:SECRETPW@127.0.0.1/db",
    "mysql:/u:SECRETPW@127.0.0.1/db",
    "postgres:u:SECRETPW@127.0.0.1/db",
    "mysq://u:SECRETPW@127.0.0.1/db",
    "redis:SECRETPW@127.0.0.1",
    "rediss//:SECRETPW@127.0.0.1",
    "http://u:SECRETPW@127.0.0.1/db",
];

fn in_dir(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    output(uidgen(args).current_dir(dir))
}

fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = walk(dir)
        .into_iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect();
    names.sort();
    names
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .flat_map(|entry| {
            let path = entry.path();
            let mut found = vec![path.clone()];
            if path.is_dir() {
                found.extend(walk(&path));
            }
            found
        })
        .collect()
}

#[test]
fn every_typo_is_refused_naming_the_accepted_forms_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for typo in TYPOS {
        for args in [
            &["worker", "--store", typo][..],
            &["next", "-n", "1", "--store", typo][..],
            &["segment", "list", "--store", typo][..],
            &["worker", "list", "--store", typo][..],
        ] {
            let out = in_dir(dir.path(), args);
            let stderr = stderr_of(&out);
            assert!(!out.status.success(), "{args:?} succeeded: {stderr}");
            assert!(out.stdout.is_empty(), "{args:?} printed {:?}", out.stdout);
            assert!(
                stderr.contains("mysql://") && stderr.contains("sqlite:PATH"),
                "{args:?}: the accepted forms are named: {stderr}"
            );
            assert_no_secret(&out);
            assert_eq!(files_in(dir.path()), Vec::<String>::new(), "{args:?}");
        }
    }
}

#[test]
fn a_path_must_name_a_file_in_a_folder_that_exists() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    for (store, says) in [
        ("folder", "it is a folder"),
        ("no/such/folder/ids.sqlite3", "does not exist"),
        ("sqlite:no/such/folder/ids.sqlite3", "does not exist"),
        (":memory:", "in-memory"),
    ] {
        let out = in_dir(dir.path(), &["worker", "--store", store]);
        assert!(!out.status.success(), "{store}");
        assert!(
            stderr_of(&out).contains(says),
            "{store}: {}",
            stderr_of(&out)
        );
    }
    assert_eq!(files_in(dir.path()), ["folder"]);
}

#[test]
fn each_accepted_form_of_a_file_opens_the_same_embedded_store() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ids.sqlite3");
    let forms = [
        "ids.sqlite3".to_owned(),
        format!("sqlite:{}", file.display()),
        format!("sqlite://{}", file.display()),
        "SQLite:ids.sqlite3".to_owned(),
    ];
    for (i, store) in forms.iter().enumerate() {
        // Fixed worker IDs, so each run takes its own lease; all land in the one file.
        let id = i.to_string();
        let out = in_dir(
            dir.path(),
            &["worker", "--store", store, "--worker-id", &id],
        );
        assert!(out.status.success(), "{store}: {}", stderr_of(&out));
    }
    let out = in_dir(
        dir.path(),
        &["worker", "list", "--store", &file.display().to_string()],
    );
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", stderr_of(&out));
    for id in 0..forms.len() {
        assert!(
            listed
                .lines()
                .any(|line| line.trim_start().starts_with(&id.to_string())),
            "worker {id} in {listed}"
        );
    }
    assert_eq!(files_in(dir.path()), ["ids.sqlite3"]);
}
