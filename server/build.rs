//! The commit this build is made from, for `uidgen --version`, the start-up log line and
//! `uidgen_build_info`: `UIDGEN_COMMIT` when set (packagers, container builds without
//! `.git`), else `git rev-parse --short=12 HEAD` of the checkout, else `unknown` (a
//! build from a crate download).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=UIDGEN_COMMIT");
    let commit = std::env::var("UIDGEN_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=UIDGEN_COMMIT={commit}");
    // Built again on a new commit: when HEAD or what it points at moves.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = Path::new(&dir);
        for watched in ["HEAD", "packed-refs"] {
            println!("cargo:rerun-if-changed={}", dir.join(watched).display());
        }
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(head).display());
        }
    }
}
