//! Helpers shared by the command-line tests.
// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use std::process::Output;

/// What a command printed, after asserting it succeeded (its stderr as the message).
pub fn success_stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
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
