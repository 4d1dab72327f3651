//! A service in this test process, on a runtime of its own, reached with curl (a client
//! no one here wrote).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use uidgen_server::{Config, Ids};

pub struct TestServer {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A config on a fresh SQLite store in `dir`, listening on a free loopback port.
pub fn config_in(dir: &std::path::Path, vars: &[(&str, &str)]) -> Config {
    let mut env: Vec<(String, String)> = vec![
        (
            "UIDGEN_STORE".into(),
            dir.join("ids.sqlite3").display().to_string(),
        ),
        ("UIDGEN_LISTEN".into(), "127.0.0.1:0".into()),
        // The store is new: its tags start at 1 (tests of a missing start unset it).
        ("UIDGEN_TAG_START".into(), "1".into()),
    ];
    env.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Config::load(None, env).expect("test config")
}

impl TestServer {
    /// Starts a service with `vars` as its `UIDGEN_*` environment.
    pub fn start(vars: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = config_in(dir.path(), vars);
        Self::start_with(config, dir)
    }

    pub fn start_with(config: Config, dir: tempfile::TempDir) -> Self {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listen = config.listen;
                let ids = tokio::task::spawn_blocking(move || Ids::start(config))
                    .await
                    .unwrap()
                    .expect("the service starts");
                let ids = Arc::new(ids);
                let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                uidgen_server::serve(listener, Arc::clone(&ids), async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
                tokio::task::spawn_blocking(move || {
                    ids.give_back();
                    drop(ids);
                })
                .await
                .unwrap();
            });
        });
        let addr = addr_rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the service listens within 30 s");
        Self {
            addr,
            dir,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// A service on a fresh SQLite store already holding tag `tag` (from 1), which it
    /// does not serve itself: a service that serves a tag prefetches ranges of its own,
    /// between those a test or a client takes.
    pub fn start_holding(tag: &str, vars: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        uidgen::StoreUrl::parse(dir.path().join("ids.sqlite3").to_str().unwrap())
            .unwrap()
            .segment_store()
            .unwrap()
            .create(tag, 1, 1_000, "")
            .unwrap();
        let config = config_in(dir.path(), vars);
        Self::start_with(config, dir)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn store_path(&self) -> PathBuf {
        self.dir.path().join("ids.sqlite3")
    }

    /// Stops it as SIGTERM would (stop accepting, finish, give back) and hands over
    /// its folder.
    pub fn stop(mut self) -> tempfile::TempDir {
        self.shut();
        std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap())
    }

    fn shut(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shut();
    }
}

/// One curl call: (HTTP status, content type, body).
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

pub fn curl(args: &[&str]) -> Answer {
    try_curl(args).unwrap_or_else(|e| panic!("{e}"))
}

/// [`curl`], with a failure to connect or read as an error rather than a panic (for
/// polling a server that is still starting).
pub fn try_curl(args: &[&str]) -> Result<Answer, String> {
    let out = Command::new("curl")
        .args([
            "-s",
            "-S",
            "--max-time",
            "20",
            "-o",
            "-",
            "-w",
            "\n%{http_code}\n%{content_type}",
        ])
        .args(args)
        .output()
        .expect("curl runs (apt-get install curl)");
    if !out.status.success() {
        return Err(format!(
            "curl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text =
        String::from_utf8(out.stdout).map_err(|e| format!("curl {args:?}: not UTF-8: {e}"))?;
    let mut parts = text.rsplitn(3, '\n');
    let content_type = parts.next().unwrap_or_default().to_owned();
    let status = parts.next().unwrap_or_default().parse().unwrap_or(0);
    let body = parts.next().unwrap_or_default().to_owned();
    Ok(Answer {
        status,
        content_type,
        body,
    })
}

pub fn get(server: &TestServer, path: &str) -> Answer {
    curl(&[&server.url(path)])
}

/// An answer's body as JSON, or a panic showing it.
/// GETs `path` and checks that the answer is a 400 whose body says each of `words`.
pub fn assert_refused(server: &TestServer, path: &str, words: &[&str]) {
    let answer = get(server, path);
    assert_eq!(answer.status, 400, "{path}: {}", answer.body);
    for word in words {
        assert!(
            answer.body.contains(word),
            "{path}: {word:?} in {}",
            answer.body
        );
    }
}

pub fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"))
}

/// A JSON array of numbers (`"ids"`, `"data"`) as IDs.
pub fn numbers(array: &serde_json::Value) -> Vec<u64> {
    let items = array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"));
    items
        .iter()
        .map(|v| v.as_u64().unwrap_or_else(|| panic!("not an ID: {v}")))
        .collect()
}
