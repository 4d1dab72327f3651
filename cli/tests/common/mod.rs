//! Helpers shared by the command-line tests.
// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

pub mod machine;
pub mod serve;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// Passwords the tests put into URLs; none may ever be printed.
pub const SECRETS: [&str; 3] = ["SECRETPW", "RETPW", "ENVPW"];

/// A home of this test process's own: the default registry path
/// (`$XDG_DATA_HOME/uidgen/workers.sqlite3`) lands here, never in the user's
/// `~/.local/share`, even for a command that uses no `UIDGEN_WORKER_DB`.
pub fn private_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().expect("a temporary home"))
        .path()
}

/// `uidgen ARGS` with a clean environment: no UIDGEN_* variables, no RUST_LOG, a private
/// home; stdin empty, stdout and stderr captured.
pub fn uidgen(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_uidgen"));
    cmd.args(args);
    clean(&mut cmd);
    cmd
}

/// Gives `cmd` the clean environment and streams of [`uidgen`].
pub fn clean(cmd: &mut Command) -> &mut Command {
    cmd.env_remove("UIDGEN_MYSQL_URL")
        .env_remove("UIDGEN_WORKER_DB")
        .env_remove("RUST_LOG")
        .env_remove("UIDGEN_STATE_DIR")
        .env("HOME", private_home())
        .env("XDG_DATA_HOME", private_home().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
}

/// A fresh registry file in its own temporary folder (kept alive by the returned guard).
pub fn temp_registry() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("workers.sqlite3");
    (dir, path)
}

/// Runs a command to its end.
pub fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("run uidgen")
}

pub fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What a command printed, after asserting it succeeded (its stderr as the message).
pub fn success_stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The IDs a successful `uidgen next` printed, one a line.
pub fn printed_ids(out: &Output) -> Vec<u64> {
    success_stdout(out)
        .lines()
        .map(|line| line.parse().expect("an ID a line"))
        .collect()
}

/// Asserts the exit status, an empty stdout, a stderr that starts `uidgen: ` and holds
/// `expected`, and no panic.
pub fn assert_fails_with(out: &Output, status: i32, expected: &[&str]) {
    let err = stderr_of(out);
    assert_eq!(out.status.code(), Some(status), "stderr: {err}");
    assert!(out.stdout.is_empty(), "stdout: {}", stdout_of(out));
    assert!(!err.contains("panicked"), "{err}");
    for want in expected {
        assert!(err.contains(want), "{want:?} not in: {err}");
    }
}

/// Asserts that no test password appears in stdout or stderr.
pub fn assert_no_secret(out: &Output) {
    let (stdout, stderr) = (stdout_of(out), stderr_of(out));
    for secret in SECRETS {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret} printed:\nstdout: {stdout}\nstderr: {stderr}"
        );
    }
}

/// Compiles the Java client in `server/tests/<folder>/src` (written for these tests)
/// into `out`, with the JDK's plain `javac`.
pub fn build_java_client(folder: &str, out: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../server/tests")
        .join(folder)
        .join("src");
    let mut sources: Vec<_> = std::fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "java"))
        .collect();
    sources.sort();
    assert!(!sources.is_empty(), "no Java sources in {}", src.display());
    let status = Command::new("javac")
        .args(["-encoding", "UTF-8", "-d"])
        .arg(out)
        .args(&sources)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "javac does not run ({e}): JDK 17's javac is needed: apt-get install \
                 openjdk-17-jdk-headless"
            )
        });
    assert!(status.success(), "javac failed on {}", src.display());
}

/// Runs `class`, the self-check of a Java client [`build_java_client`] compiled into
/// `classes` (against fake servers of its own), and fails with its output if it fails.
pub fn java_self_check(classes: &Path, class: &str) {
    let check = Command::new("java")
        .arg("-cp")
        .arg(classes)
        .arg(class)
        .output()
        .expect("java runs");
    assert!(
        check.status.success(),
        "the client's self-check {class} failed: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}
