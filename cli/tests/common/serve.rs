//! A running `uidgen serve` for the tests, and curl to talk to it.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A running `uidgen serve`, killed on drop.
pub struct Serve {
    pub child: Child,
    base: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Serve {
    pub fn start(args: &[&str], envs: &[(&str, &str)]) -> Self {
        Self::start_at("127.0.0.1:0", args, envs)
    }

    /// The same, listening on `listen` (a service started again where it was).
    pub fn start_at(listen: &str, args: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_uidgen"));
        // No UIDGEN_* of the caller's (scripts/test exports UIDGEN_MYSQL_URL).
        super::clean(&mut command)
            .arg("serve")
            .args(["--listen", listen])
            .args(args);
        for var in uidgen_server::env_variables() {
            command.env_remove(var);
        }
        for (k, v) in envs {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("uidgen serve starts");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut err_pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err_pipe.read_to_string(&mut text);
            sink.lock().unwrap().push_str(&text);
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(200));
                panic!(
                    "uidgen serve {args:?} did not say where it listens within 60 s; stderr: {}",
                    stderr.lock().unwrap()
                )
            });
        let base = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Serve {
            child,
            base,
            stderr,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn port(&self) -> &str {
        self.base.rsplit(':').next().unwrap()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then the exit status (within 15 s).
    pub fn terminate(self) -> (std::process::ExitStatus, String) {
        // SAFETY: kill(2) on our own child's pid; no memory is shared.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        self.wait()
    }

    /// The exit status (within 15 s) and stderr, once a signal sent elsewhere stops it.
    pub fn wait(mut self) -> (std::process::ExitStatus, String) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(100));
                let stderr = self.stderr.lock().unwrap().clone();
                return (status, stderr);
            }
            assert!(
                Instant::now() < deadline,
                "uidgen serve did not exit within 15 s of the signal"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// curl: (status, body).
pub fn curl(args: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-S", "--max-time", "20", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (status.parse().unwrap_or(0), body.to_owned())
}

pub fn ids_of(body: &str) -> Vec<u64> {
    let value: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    value["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids in {body}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}
