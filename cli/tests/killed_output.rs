//! What a `next` killed with SIGKILL leaves behind (cli/README.md, "Output, errors and
//! exit status"): through a pipe, only whole lines; in a regular file, whole lines except
//! that the last one may be cut where Linux cuts a write, at a page boundary.

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const KILLS: u64 = 50;

/// `uidgen next` for a billion IDs, on the lowest free worker ID of `registry` (each
/// killed run keeps its lease until it expires, so every round gets a new one).
fn endless_next(registry: &Path, stdout: Stdio) -> Child {
    common::uidgen(&["next", "-n", "1000000000"])
        .env("UIDGEN_WORKER_DB", registry)
        .stdout(stdout)
        .spawn()
        .expect("spawn uidgen")
}

/// Every line of `text` is an ID above the one before it (a line cut short is a smaller
/// number, so this also catches a cut that left a newline behind).
fn assert_increasing_ids(text: &str, round: u64) {
    let mut previous = 0u64;
    for line in text.lines() {
        let id: u64 = line
            .parse()
            .unwrap_or_else(|_| panic!("round {round}: line {line:?} is not an ID"));
        assert!(id > previous, "round {round}: {id} after {previous}");
        previous = id;
    }
}

#[test]
fn next_killed_with_sigkill_leaves_only_whole_lines_in_a_pipe() {
    let (_dir, registry) = common::temp_registry();
    for round in 0..KILLS {
        let mut child = endless_next(&registry, Stdio::piped());
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        // Read a varying amount, then stop reading: the pipe fills, and the kill finds the
        // child in the middle of a write that is waiting for room.
        let mut read = String::new();
        for _ in 0..(1 + round * 997) {
            if stdout.read_line(&mut read).unwrap() == 0 {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(round % 5));
        child.kill().expect("SIGKILL");
        let status = child.wait().unwrap();
        assert!(!status.success(), "round {round}: {status:?}");
        stdout.read_to_string(&mut read).unwrap();
        assert!(
            read.ends_with('\n'),
            "round {round}: the pipe ended mid-line: {:?}",
            read.lines().last()
        );
        assert_increasing_ids(&read, round);
    }
}

#[test]
fn next_killed_with_sigkill_writing_a_file_is_cut_only_at_a_page_boundary() {
    let (dir, registry) = common::temp_registry();
    let mut cut = Vec::new();
    for round in 0..KILLS {
        let path = dir.path().join(format!("ids-{round}.txt"));
        let mut child = endless_next(&registry, File::create(&path).unwrap().into());
        // Kill it once it has written a varying amount, at whatever point it has reached.
        let want = 4096 * (1 + round % 16) + round * 1_237;
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::metadata(&path).map_or(0, |m| m.len()) < want {
            assert!(Instant::now() < deadline, "round {round}: no output");
            std::thread::yield_now();
        }
        child.kill().expect("SIGKILL");
        let status = child.wait().unwrap();
        assert!(!status.success(), "round {round}: {status:?}");
        let text = std::fs::read_to_string(&path).unwrap();
        // Every write is whole lines, so a file that ends mid-line was cut inside a
        // write, and Linux cuts a write to a file only between pages.
        if !text.ends_with('\n') {
            assert_eq!(
                text.len() % 4096,
                0,
                "round {round}: cut mid-line at byte {}, not at a page boundary",
                text.len()
            );
            cut.push(text.len());
        }
        let whole = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
        assert_increasing_ids(whole, round);
    }
    // What the README's narrowed promise is about: how often a kill cut a line here.
    eprintln!(
        "{} of {KILLS} killed runs left a file ending mid-line, at bytes {cut:?}",
        cut.len()
    );
}
