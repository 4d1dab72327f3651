//! One machine for the tests that run `uidgen` many times: a home and a state folder of
//! its own (where the command remembers the stores it used), the same for every run.

use std::process::{Command, Output};

pub struct Machine {
    pub home: tempfile::TempDir,
}

impl Machine {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// The variables that make a process this machine's.
    pub fn envs(&self) -> Vec<(String, String)> {
        let home = self.home.path();
        vec![
            ("HOME".into(), home.display().to_string()),
            (
                "XDG_DATA_HOME".into(),
                home.join("data").display().to_string(),
            ),
            (
                "UIDGEN_STATE_DIR".into(),
                home.join("stores").display().to_string(),
            ),
        ]
    }

    /// `uidgen ARGS` on this machine, with the tests' clean environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_uidgen"));
        super::clean(&mut cmd).args(args).envs(self.envs());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// A run that must succeed.
    pub fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "uidgen {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The IDs printed by a run that must succeed.
    pub fn ids(&self, args: &[&str]) -> Vec<u64> {
        String::from_utf8(self.ok(args).stdout)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    }
}
