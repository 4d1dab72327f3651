//! A fleet of `uidgen serve` processes on one store, under load, losing a member.
//!
//! For each store (a SQLite file, MariaDB, PostgreSQL, Redis): eight `uidgen serve`
//! processes on the one store, 64 clients (threads, each with a small keep-alive
//! HTTP/1.1 client over `TcpStream`) drawing a mix of `/v1/snowflake`,
//! `/v1/segment/{tag}`, `/api/snowflake/get/x` and `/api/segment/get/{tag}` with batches
//! of 1 to 100 for `UIDGEN_FLEET_SECS` seconds (default 15; 30 on etcd, whose run holds
//! a leader's death, its return and a member cut off); at a third of the run one
//! server is SIGKILLed and a new one started on a new port, which the clients then use.
//! Every ID answered is kept, per ID space (snowflake; the tag's segment IDs):
//!
//! - no ID is answered twice in a space (the first repeats are shown with the servers and
//!   routes that answered them);
//! - every answer is a 200 with the IDs asked for, in increasing order; connection errors
//!   are allowed only to the killed server, after it was killed (and are counted);
//! - plenty of IDs were served, every server (the new one too) answered, and the eight
//!   running at once had eight different worker IDs;
//! - on SIGTERM at the end every server exits 0 within 15 s.
//!
//! Then the tail check on the same store: server A, the only one to touch a fresh tag,
//! hands out 10 of its IDs and is stopped with SIGTERM (exit 0 within 15 s); server B's
//! first ID of the tag is A's last + 1.
//!
//! On etcd (the `etcd` feature), the fleet stands on the private 3-member cluster that
//! scripts/etcd.sh starts for the tests that kill members (UIDGEN_ETCD_CLUSTER; not
//! UIDGEN_ETCD_URL's, whose other users would see their connections broken), each member
//! reached through a relay, and no server is killed:
//! at a third of the run the cluster's leader is SIGKILLed (and started again 2 s later
//! on its data), at two thirds a member is cut off behind its relay (silent). On top of
//! the checks above: every ID a server answered before the leader's kill is below every
//! one it answered to a request sent after it, per worker ID and per tag; and a prober
//! per server measures the longest time it answered nothing on each ID space, which must
//! stay under the cluster's election plus one lease renewal.
//!
//! Two regions on two stores (MariaDB and PostgreSQL), eight services each with its
//! region's share of the worker IDs: no ID twice across regions.
//!
//! The stores run one after another (one fleet at a time on the machine). Stores: the
//! test servers scripts/test makes reachable, or UIDGEN_MYSQL_URL, UIDGEN_POSTGRES_URL,
//! UIDGEN_REDIS_URL, UIDGEN_ETCD_URL with UIDGEN_ETCD_CLUSTER.

mod common;

#[cfg(any(feature = "etcd", feature = "zookeeper"))]
#[path = "../../tests/support/relay.rs"]
mod relay;
#[path = "../../tests/support/servers.rs"]
mod servers;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Servers on the one store.
const SERVERS: usize = 8;
/// Client threads.
const CLIENTS: usize = 64;
/// The largest batch a client asks for.
const MAX_BATCH: u64 = 100;
/// How long a server may take to say where it listens.
const START_LIMIT: Duration = Duration::from_secs(60);
/// How long a server may take to exit after SIGTERM.
const EXIT_LIMIT: Duration = Duration::from_secs(15);
/// A client's wait for an answer before it calls the server hung.
const ANSWER_LIMIT: Duration = Duration::from_secs(20);
/// A kept-alive connection idle longer than this is closed by the client rather than
/// reused (the server drops connections that send no request for 5 s).
const IDLE_LIMIT: Duration = Duration::from_secs(2);
/// Problems of one kind shown in full; the rest are counted.
const SHOWN: usize = 12;

/// The run's length: UIDGEN_FLEET_SECS, else `default` seconds.
fn run_length(default: f64) -> Duration {
    let secs = std::env::var("UIDGEN_FLEET_SECS")
        .ok()
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|s| *s >= 1.0 && *s <= 3600.0)
                .unwrap_or_else(|| panic!("UIDGEN_FLEET_SECS = {v:?}: seconds, 1 to 3600"))
        })
        .unwrap_or(default);
    Duration::from_secs_f64(secs)
}

// ---------------------------------------------------------------------------------------
// Routes and where an ID came from.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    V1Snowflake = 0,
    V1Segment = 1,
    LeafSnowflake = 2,
    LeafSegment = 3,
}

const ROUTES: [Route; 4] = [
    Route::V1Snowflake,
    Route::V1Segment,
    Route::LeafSnowflake,
    Route::LeafSegment,
];

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::V1Snowflake => "/v1/snowflake",
            Route::V1Segment => "/v1/segment/{tag}",
            Route::LeafSnowflake => "/api/snowflake/get/x",
            Route::LeafSegment => "/api/segment/get/{tag}",
        }
    }

    fn is_snowflake(self) -> bool {
        matches!(self, Route::V1Snowflake | Route::LeafSnowflake)
    }
}

/// A server instance: its slot (0..SERVERS) and generation (0 the first process in the
/// slot, 1 the one started after the kill).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Instance {
    slot: u8,
    generation: u8,
}

impl std::fmt::Display for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.generation == 0 {
            write!(f, "server {}", self.slot)
        } else {
            write!(f, "server {} (restarted)", self.slot)
        }
    }
}

/// Where an ID came from, in a byte: when (bit 7: asked after the disruption; bit 6:
/// answered before it), slot, generation, route.
fn origin(instance: Instance, route: Route) -> u8 {
    (instance.slot << 3) | (instance.generation << 2) | route as u8
}

/// An origin's bit for an answer to a request sent after the disruption.
const ASKED_AFTER: u8 = 0x80;
/// An origin's bit for an answer received before the disruption.
const ANSWERED_BEFORE: u8 = 0x40;

fn from_origin(code: u8) -> (Instance, Route) {
    (
        Instance {
            slot: (code >> 3) & 7,
            generation: (code >> 2) & 1,
        },
        ROUTES[usize::from(code & 3)],
    )
}

// ---------------------------------------------------------------------------------------
// `uidgen serve` processes.

/// A running `uidgen serve`; SIGKILLed and reaped on drop if still running (so a failing
/// test leaves no process behind).
struct Server {
    name: String,
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
}

impl Server {
    /// Starts `uidgen serve --listen 127.0.0.1:0 --store STORE --tag TAG` and waits for
    /// its `listening on http://ADDR` line. Its stderr goes to a file in `logs`.
    /// `uidgen serve` on `store` with `tag`, and `extra` arguments.
    fn start(
        name: &str,
        store: &str,
        tag: &str,
        logs: &Path,
        extra: &[&str],
    ) -> Result<Server, String> {
        let log = logs.join(format!(
            "{}-{}.log",
            name.replace([' ', '(', ')'], "_"),
            servers::random_suffix()
        ));
        let stderr = std::fs::File::create(&log).map_err(|e| format!("{name}: log file: {e}"))?;
        let mut command = Command::new(env!("CARGO_BIN_EXE_uidgen"));
        command.args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            store,
            "--tag",
            tag,
            "--tag-start",
            "1",
        ]);
        command.args(extra);
        common::clean(&mut command);
        for var in uidgen_server::env_variables() {
            command.env_remove(var);
        }
        command.stdout(Stdio::piped()).stderr(Stdio::from(stderr));
        let mut child = command
            .spawn()
            .map_err(|e| format!("{name}: cannot run uidgen serve: {e}"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut server = Server {
            name: name.to_owned(),
            child,
            addr: "127.0.0.1:1".parse().unwrap(),
            log,
        };
        let line = match rx.recv_timeout(START_LIMIT) {
            Ok(line) => line,
            Err(e) => {
                let what = match e {
                    mpsc::RecvTimeoutError::Timeout => {
                        format!("did not say where it listens within {START_LIMIT:?}")
                    }
                    mpsc::RecvTimeoutError::Disconnected => {
                        std::thread::sleep(Duration::from_millis(100));
                        format!(
                            "exited ({:?}) without saying where it listens",
                            server.child.try_wait().ok().flatten()
                        )
                    }
                };
                server.kill();
                return Err(format!(
                    "{name} (store {store}, tag {tag}) {what}; its stderr ends:\n{}",
                    server.log_tail(3000)
                ));
            }
        };
        server.addr = line
            .strip_prefix("listening on http://")
            .and_then(|a| a.trim().parse().ok())
            .ok_or_else(|| format!("{name}: unexpected first line {line:?}"))?;
        Ok(server)
    }

    fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// Sends `signal` unless the process has been reaped (so the pid is still its).
    fn signal(&mut self, signal: libc::c_int) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: kill(2) on the pid of our own child, not yet reaped (so the pid
            // is still its); no memory is involved.
            unsafe {
                libc::kill(self.pid(), signal);
            }
        }
    }

    /// SIGKILL, then reap.
    fn kill(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.signal(libc::SIGKILL);
            let _ = self.child.wait();
        }
    }

    /// Waits for the exit until `deadline`.
    fn wait_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The end of its stderr.
    fn log_tail(&self, chars: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let skip = text.chars().count().saturating_sub(chars);
        let tail: String = text.chars().skip(skip).collect();
        if tail.trim().is_empty() {
            "(nothing)".into()
        } else {
            tail
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `names.len()` servers at once; all or none (the started ones are killed when
/// one fails).
fn start_all(names: &[String], store: &str, tag: &str, logs: &Path) -> Vec<Server> {
    start_all_with(names, store, tag, logs, &[])
}

/// [`start_all`], each server with the `extra` arguments.
fn start_all_with(
    names: &[String],
    store: &str,
    tag: &str,
    logs: &Path,
    extra: &[&str],
) -> Vec<Server> {
    let results: Vec<Result<Server, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = names
            .iter()
            .map(|name| scope.spawn(move || Server::start(name, store, tag, logs, extra)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("starting it panicked".into()))
            })
            .collect()
    });
    let mut started = Vec::new();
    let mut failed = Vec::new();
    for result in results {
        match result {
            Ok(server) => started.push(server),
            Err(e) => failed.push(e),
        }
    }
    if !failed.is_empty() {
        drop(started);
        panic!(
            "{} of {} servers on {store} did not start:\n{}",
            failed.len(),
            names.len(),
            failed.join("\n---\n")
        );
    }
    started
}

/// SIGTERM to every server at once; each must exit 0 within EXIT_LIMIT. Returns the
/// problems and the longest exit time.
fn terminate_all(servers: &mut [Server]) -> (Vec<String>, Duration) {
    let signalled = Instant::now();
    for server in servers.iter_mut() {
        server.signal(libc::SIGTERM);
    }
    let deadline = signalled + EXIT_LIMIT;
    let mut problems = Vec::new();
    let mut slowest = Duration::ZERO;
    for server in servers.iter_mut() {
        match server.wait_until(deadline) {
            Some(status) if status.success() => slowest = slowest.max(signalled.elapsed()),
            Some(status) => problems.push(format!(
                "{} ({}) exited with {status} after SIGTERM, not 0; its stderr ends:\n{}",
                server.name,
                server.addr,
                server.log_tail(2000)
            )),
            None => problems.push(format!(
                "{} ({}) still running {EXIT_LIMIT:?} after SIGTERM (a hang at shutdown); \
                 its stderr ends:\n{}",
                server.name,
                server.addr,
                server.log_tail(2000)
            )),
        }
    }
    (problems, slowest)
}

// ---------------------------------------------------------------------------------------
// A minimal HTTP/1.1 client: keep-alive, Content-Length or chunked bodies.

struct Conn {
    reader: BufReader<TcpStream>,
    used: u64,
    last_used: Instant,
}

struct Reply {
    status: u16,
    body: Vec<u8>,
}

/// How a request failed: at the connection (nothing usable came back).
struct ConnError {
    reused: bool,
    error: std::io::Error,
}

impl Conn {
    fn open(addr: SocketAddr) -> std::io::Result<Conn> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(ANSWER_LIMIT))?;
        stream.set_write_timeout(Some(ANSWER_LIMIT))?;
        Ok(Conn {
            reader: BufReader::with_capacity(16 * 1024, stream),
            used: 0,
            last_used: Instant::now(),
        })
    }

    /// `GET path`; the reply, and whether the connection may be used again.
    fn get(&mut self, path: &str, accept: &str) -> Result<(Reply, bool), ConnError> {
        let reused = self.used > 0;
        self.used += 1;
        self.last_used = Instant::now();
        let fail = |error: std::io::Error| ConnError { reused, error };
        let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\n\r\n");
        self.reader
            .get_mut()
            .write_all(request.as_bytes())
            .map_err(fail)?;
        let reply = self.read_reply().map_err(fail)?;
        self.last_used = Instant::now();
        Ok(reply)
    }

    fn line(&mut self, what: &str) -> std::io::Result<String> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("connection closed before {what}"),
            ));
        }
        Ok(line)
    }

    fn read_reply(&mut self) -> std::io::Result<(Reply, bool)> {
        let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        let status_line = self.line("the status line")?;
        let mut parts = status_line.split_whitespace();
        let version = parts.next().unwrap_or("");
        let status: u16 = parts
            .next()
            .and_then(|s| s.parse().ok())
            .filter(|_| version.starts_with("HTTP/1."))
            .ok_or_else(|| bad(format!("not a status line: {status_line:?}")))?;
        let mut length = None;
        let mut chunked = false;
        let mut keep = version == "HTTP/1.1";
        loop {
            let line = self.line("the end of the headers")?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| bad(format!("not a header: {line:?}")))?;
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => {
                    length = Some(
                        value
                            .parse::<usize>()
                            .map_err(|_| bad(format!("Content-Length {value:?}")))?,
                    )
                }
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" if value.eq_ignore_ascii_case("close") => keep = false,
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let size_line = self.line("a chunk size")?;
                let size = usize::from_str_radix(
                    size_line.trim().split(';').next().unwrap_or("").trim(),
                    16,
                )
                .map_err(|_| bad(format!("chunk size {size_line:?}")))?;
                if size == 0 {
                    while !self.line("the trailers")?.trim_end().is_empty() {}
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.reader.read_exact(&mut body[start..])?;
                self.line("a chunk's end")?;
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            self.reader.read_exact(&mut body)?;
        } else {
            // Delimited by the close.
            self.reader.read_to_end(&mut body)?;
            keep = false;
        }
        Ok((Reply { status, body }, keep))
    }
}

// ---------------------------------------------------------------------------------------
// Reading the answers.

/// The IDs of a 200 answer to `route`, checked: as many as asked, in increasing order,
/// the JSON's `count`, `ids` and `ids_str` agreeing.
fn ids_of(
    route: Route,
    text_wanted: bool,
    count: u64,
    tag: &str,
    body: &[u8],
) -> Result<Vec<u64>, String> {
    let body = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_string())?;
    let ids: Vec<u64> = match route {
        Route::LeafSnowflake | Route::LeafSegment => {
            vec![body
                .trim()
                .parse()
                .map_err(|_| format!("not a decimal ID: {body:?}"))?]
        }
        Route::V1Snowflake | Route::V1Segment if text_wanted => body
            .lines()
            .map(|l| l.parse().map_err(|_| format!("not an ID a line: {l:?}")))
            .collect::<Result<_, _>>()?,
        Route::V1Snowflake | Route::V1Segment => {
            let ids = json_array(body, "ids")?
                .iter()
                .map(|v| v.parse().map_err(|_| format!("`ids` holds {v:?}")))
                .collect::<Result<Vec<u64>, _>>()?;
            let strs = json_array(body, "ids_str")?;
            let same = strs.len() == ids.len()
                && strs
                    .iter()
                    .zip(&ids)
                    .all(|(s, id)| s.trim_matches('"') == id.to_string() && s.starts_with('"'));
            if !same {
                return Err(format!("`ids` and `ids_str` differ: {body}"));
            }
            let field = json_number(body, "count")?;
            if field != count {
                return Err(format!("`count` is {field}, {count} asked: {body}"));
            }
            if route == Route::V1Segment && !body.contains(&format!("\"tag\":\"{tag}\"")) {
                return Err(format!("no \"tag\":\"{tag}\": {body}"));
            }
            ids
        }
    };
    if ids.len() as u64 != count {
        return Err(format!("{} IDs for {count} asked: {body:.300}", ids.len()));
    }
    if let Some(w) = ids.windows(2).find(|w| w[0] >= w[1]) {
        return Err(format!(
            "not increasing: {} then {}: {body:.300}",
            w[0], w[1]
        ));
    }
    Ok(ids)
}

/// The elements of the flat JSON array `"name":[...]`, as written.
fn json_array<'a>(body: &'a str, name: &str) -> Result<Vec<&'a str>, String> {
    let key = format!("\"{name}\":[");
    let start = body
        .find(&key)
        .ok_or_else(|| format!("no `{name}` array: {body:.300}"))?
        + key.len();
    let len = body[start..]
        .find(']')
        .ok_or_else(|| format!("`{name}` does not end: {body:.300}"))?;
    let inner = &body[start..start + len];
    Ok(if inner.trim().is_empty() {
        Vec::new()
    } else {
        inner.split(',').map(str::trim).collect()
    })
}

fn json_number(body: &str, name: &str) -> Result<u64, String> {
    let key = format!("\"{name}\":");
    let start = body
        .find(&key)
        .ok_or_else(|| format!("no `{name}`: {body:.300}"))?
        + key.len();
    let digits: String = body[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .map_err(|_| format!("`{name}` is not a number: {body:.300}"))
}

// ---------------------------------------------------------------------------------------
// The clients.

/// xorshift64*: a client's own dice.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// What the clients share: the live servers (slot → address and generation), the
/// victim, whether it has been killed, and when to stop.
struct Shared {
    live: RwLock<Vec<Option<(SocketAddr, u8)>>>,
    victim: usize,
    killed: AtomicBool,
    /// The disruption (a kill) has happened: answers are marked before and after it.
    disrupted: AtomicBool,
    /// A refusal naming why there is no ID now (a 503, or Leaf's 500) is counted, not a
    /// problem: while the store elects a leader, a server that cannot raise its mark
    /// refuses rather than risk an ID (the stall limit bounds how long).
    refusals_allowed: bool,
    stop: AtomicBool,
    tag: String,
}

/// One kind of problem: the first few in full, and how many.
#[derive(Default)]
struct Problems {
    shown: Vec<String>,
    count: u64,
}

impl Problems {
    fn add(&mut self, what: impl FnOnce() -> String) {
        self.count += 1;
        if self.shown.len() < SHOWN {
            self.shown.push(what());
        }
    }

    fn merge(&mut self, other: Problems) {
        self.count += other.count;
        for p in other.shown {
            if self.shown.len() < SHOWN {
                self.shown.push(p);
            }
        }
    }
}

/// What one client saw.
#[derive(Default)]
struct ClientLog {
    snowflake: Vec<u64>,
    snowflake_from: Vec<u8>,
    segment: Vec<u64>,
    segment_from: Vec<u8>,
    /// 200s by route.
    ok_by_route: [u64; 4],
    /// 200s by server instance.
    ok_by_instance: HashMap<Instance, u64>,
    /// Connection errors to the killed server after its kill.
    killed_errors: u64,
    /// Refusals that name why there is no ID now, where they are allowed.
    refused: u64,
    /// Answers other than 200.
    not_ok: Problems,
    /// 200s whose body is not what was asked.
    bad_body: Problems,
    /// Connection errors to a server that was not killed.
    conn_errors: Problems,
}

fn client(shared: &Shared, seed: u64) -> ClientLog {
    let mut rng = Rng(seed | 1);
    let mut log = ClientLog::default();
    let mut conns: Vec<Option<(u8, Conn)>> = (0..SERVERS).map(|_| None).collect();
    let tag = shared.tag.as_str();
    while !shared.stop.load(Ordering::Relaxed) {
        let route = ROUTES[rng.below(4) as usize];
        let (count, text) = match route {
            Route::V1Snowflake | Route::V1Segment => (1 + rng.below(MAX_BATCH), rng.below(2) == 0),
            _ => (1, false),
        };
        let path = match route {
            Route::V1Snowflake => format!("/v1/snowflake?count={count}"),
            Route::V1Segment => format!("/v1/segment/{tag}?count={count}"),
            Route::LeafSnowflake => "/api/snowflake/get/x".to_owned(),
            Route::LeafSegment => format!("/api/segment/get/{tag}"),
        };
        let accept = if text {
            "text/plain"
        } else {
            "application/json"
        };
        // A live server, at random.
        let picked = {
            let live = shared.live.read().unwrap_or_else(|p| p.into_inner());
            let start = rng.below(SERVERS as u64) as usize;
            (0..SERVERS)
                .map(|i| (start + i) % SERVERS)
                .find_map(|slot| live[slot].map(|(addr, generation)| (slot, addr, generation)))
        };
        let Some((slot, addr, generation)) = picked else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let instance = Instance {
            slot: slot as u8,
            generation,
        };
        let reusable = match &conns[slot] {
            Some((g, conn)) => *g == generation && conn.last_used.elapsed() < IDLE_LIMIT,
            None => false,
        };
        if !reusable {
            conns[slot] = None;
            match Conn::open(addr) {
                Ok(conn) => conns[slot] = Some((generation, conn)),
                Err(error) => {
                    connection_error(shared, &mut log, instance, route, &path, addr, false, error);
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
            }
        }
        let (_, conn) = conns[slot].as_mut().expect("a connection");
        let asked_after = shared.disrupted.load(Ordering::SeqCst);
        match conn.get(&path, accept) {
            Ok((reply, keep)) => {
                if !keep {
                    conns[slot] = None;
                }
                let refusal = matches!(reply.status, 503 | 500)
                    && reply.body.windows(9).any(|w| w == b"no ID now");
                if reply.status != 200 && refusal && shared.refusals_allowed {
                    log.refused += 1;
                    continue;
                }
                if reply.status != 200 {
                    log.not_ok.add(|| {
                        format!(
                            "{instance} ({addr}) GET {path}: {} {}",
                            reply.status,
                            String::from_utf8_lossy(&reply.body)
                                .chars()
                                .take(400)
                                .collect::<String>()
                        )
                    });
                    continue;
                }
                match ids_of(route, text, count, tag, &reply.body) {
                    Ok(ids) => {
                        let mut from = origin(instance, route);
                        if asked_after {
                            from |= ASKED_AFTER;
                        } else if !shared.disrupted.load(Ordering::SeqCst) {
                            from |= ANSWERED_BEFORE;
                        }
                        let (space, space_from) = if route.is_snowflake() {
                            (&mut log.snowflake, &mut log.snowflake_from)
                        } else {
                            (&mut log.segment, &mut log.segment_from)
                        };
                        space_from.extend(std::iter::repeat_n(from, ids.len()));
                        space.extend(ids);
                        log.ok_by_route[route as usize] += 1;
                        *log.ok_by_instance.entry(instance).or_default() += 1;
                    }
                    Err(e) => log
                        .bad_body
                        .add(|| format!("{instance} ({addr}) GET {path} (Accept: {accept}): {e}")),
                }
            }
            Err(ConnError { reused, error }) => {
                conns[slot] = None;
                connection_error(
                    shared, &mut log, instance, route, &path, addr, reused, error,
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    log
}

#[allow(clippy::too_many_arguments)]
fn connection_error(
    shared: &Shared,
    log: &mut ClientLog,
    instance: Instance,
    route: Route,
    path: &str,
    addr: SocketAddr,
    reused: bool,
    error: std::io::Error,
) {
    let _ = route;
    if usize::from(instance.slot) == shared.victim
        && instance.generation == 0
        && shared.killed.load(Ordering::SeqCst)
    {
        log.killed_errors += 1;
    } else {
        log.conn_errors.add(|| {
            format!(
                "{instance} ({addr}) GET {path}: {} ({:?}) on a {} connection",
                error,
                error.kind(),
                if reused { "kept-alive" } else { "new" }
            )
        });
    }
}

// ---------------------------------------------------------------------------------------
// Checking an ID space.

/// The first repeated IDs of a space, each with every server and route that answered it.
fn repeats(space: &str, ids: &[u64], from: &[u8], snowflake: bool) -> Option<String> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let mut repeated = Vec::new();
    let mut total = 0u64;
    for w in sorted.windows(2) {
        if w[0] == w[1] {
            total += 1;
            if repeated.last() != Some(&w[0]) && repeated.len() < SHOWN {
                repeated.push(w[0]);
            }
        }
    }
    if total == 0 {
        return None;
    }
    let wanted: HashSet<u64> = repeated.iter().copied().collect();
    let mut sources: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (id, code) in ids.iter().zip(from) {
        if wanted.contains(id) {
            let (instance, route) = from_origin(*code);
            sources
                .entry(*id)
                .or_default()
                .push(format!("{instance} via {}", route.name()));
        }
    }
    let bits = uidgen::BitsAllocator::default();
    let lines: Vec<String> = sources
        .iter()
        .map(|(id, who)| {
            let parts = if snowflake {
                bits.parse(*id)
                    .map(|p| {
                        format!(
                            " [worker {} sequence {} at {} ms]",
                            p.worker_id, p.sequence, p.timestamp_millis
                        )
                    })
                    .unwrap_or_default()
            } else {
                String::new()
            };
            format!("  {id}{parts}: {}", who.join("; "))
        })
        .collect();
    Some(format!(
        "{total} repeated {space} IDs among {}; the first:\n{}",
        ids.len(),
        lines.join("\n")
    ))
}

// ---------------------------------------------------------------------------------------
// The test of one store.

static ONE_FLEET_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What befalls the fleet at a third of its run.
enum Disruption {
    /// One server is SIGKILLed and another started in its place.
    KillServer,
    /// The etcd cluster's leader is SIGKILLed (and brought back), then a member is cut
    /// off behind its relay.
    #[cfg(feature = "etcd")]
    EtcdLeader(etcd::Cluster),
    /// The ZooKeeper ensemble's leader is SIGKILLed (and brought back), then a member is
    /// cut off behind its relay.
    #[cfg(feature = "zookeeper")]
    ZooKeeperLeader(zookeeper::Ensemble),
}

fn fleet(kind: &str, store: &str, disruption: Disruption) {
    let _one = ONE_FLEET_AT_A_TIME
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let logs = tempfile::tempdir().expect("a folder for the servers' logs");
    let length = run_length(match disruption {
        Disruption::KillServer => 15.0,
        #[cfg(feature = "etcd")]
        Disruption::EtcdLeader(_) => 30.0,
        #[cfg(feature = "zookeeper")]
        Disruption::ZooKeeperLeader(_) => 30.0,
    });
    let suffix = servers::random_suffix();
    let tag = format!("fleet-{suffix}");
    let mut problems: Vec<String> = Vec::new();
    let began = Instant::now();

    // Eight servers on the store.
    let names: Vec<String> = (0..SERVERS).map(|i| format!("server {i}")).collect();
    let mut fleet: Vec<Server> = start_all(&names, store, &tag, logs.path());
    let started_in = began.elapsed();
    let kills_a_server = matches!(disruption, Disruption::KillServer);
    // No server is killed on etcd: the victim is none of them.
    let victim = if kills_a_server {
        (u64::from_str_radix(&suffix, 16).unwrap_or(0) % SERVERS as u64) as usize
    } else {
        SERVERS
    };
    let shared = Arc::new(Shared {
        live: RwLock::new(fleet.iter().map(|s| Some((s.addr, 0))).collect()),
        victim,
        killed: AtomicBool::new(false),
        disrupted: AtomicBool::new(false),
        refusals_allowed: !kills_a_server,
        stop: AtomicBool::new(false),
        tag: tag.clone(),
    });
    // A prober per server: the longest time each ID space answered nothing.
    let probers: Vec<_> = fleet
        .iter()
        .map(|server| {
            let (addr, shared) = (server.addr, Arc::clone(&shared));
            std::thread::spawn(move || probe(addr, &shared))
        })
        .collect();

    // The clients.
    let seed = u64::from_str_radix(&servers::random_suffix(), 16).unwrap_or(1);
    let clients: Vec<_> = (0..CLIENTS as u64)
        .map(|i| {
            let shared = Arc::clone(&shared);
            let seed = seed ^ (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            std::thread::Builder::new()
                .name(format!("client {i}"))
                .spawn(move || client(&shared, seed))
                .expect("a client thread")
        })
        .collect();
    let run_began = Instant::now();

    // At a third of the run: SIGKILL one, start another in its place (a new port); or
    // on etcd, the leader's kill and a member's cut.
    std::thread::sleep(length / 3);
    let mut dead = None;
    let event = match &disruption {
        Disruption::KillServer => {
            let killed_at = run_began.elapsed();
            shared.killed.store(true, Ordering::SeqCst);
            shared.disrupted.store(true, Ordering::SeqCst);
            fleet[victim].kill();
            shared.live.write().unwrap_or_else(|p| p.into_inner())[victim] = None;
            let restart = Instant::now();
            let replacement = match Server::start(
                &format!("server {victim} (restarted)"),
                store,
                &tag,
                logs.path(),
                &[],
            ) {
                Ok(server) => server,
                Err(e) => {
                    shared.stop.store(true, Ordering::SeqCst);
                    for c in clients {
                        let _ = c.join();
                    }
                    panic!("[{kind}] the server started after the kill: {e}");
                }
            };
            let restarted_in = restart.elapsed();
            let killed_addr = fleet[victim].addr;
            let new_addr = replacement.addr;
            shared.live.write().unwrap_or_else(|p| p.into_inner())[victim] = Some((new_addr, 1));
            let said = format!(
                "server {victim} ({killed_addr}) SIGKILLed at {killed_at:.1?}, its replacement \
                 on {new_addr} serving {restarted_in:.1?} later"
            );
            dead = Some(std::mem::replace(&mut fleet[victim], replacement));
            said
        }
        #[cfg(feature = "etcd")]
        Disruption::EtcdLeader(cluster) => {
            let killed_at = run_began.elapsed();
            shared.disrupted.store(true, Ordering::SeqCst);
            let leader = cluster.kill_leader();
            std::thread::sleep(Duration::from_secs(2));
            cluster.start(leader);
            std::thread::sleep((length * 2 / 3).saturating_sub(run_began.elapsed()));
            let cut = (leader + 1) % cluster.members();
            let cut_at = run_began.elapsed();
            cluster.cut(cut);
            format!(
                "etcd member m{} (the leader) SIGKILLed at {killed_at:.1?} and started again 2 s \
                 later; member m{} cut off behind its relay at {cut_at:.1?}",
                leader + 1,
                cut + 1
            )
        }
        #[cfg(feature = "zookeeper")]
        Disruption::ZooKeeperLeader(ensemble) => {
            let killed_at = run_began.elapsed();
            shared.disrupted.store(true, Ordering::SeqCst);
            let leader = ensemble.kill_leader();
            std::thread::sleep(Duration::from_secs(2));
            ensemble.start(leader);
            std::thread::sleep((length * 2 / 3).saturating_sub(run_began.elapsed()));
            let cut = leader % 3 + 1;
            let cut_at = run_began.elapsed();
            ensemble.cut(cut);
            format!(
                "ZooKeeper member {leader} (the leader) SIGKILLed at {killed_at:.1?} and started \
                 again 2 s later; member {cut} cut off behind its relay at {cut_at:.1?}"
            )
        }
    };

    // The rest of the run.
    std::thread::sleep(length.saturating_sub(run_began.elapsed()));
    shared.stop.store(true, Ordering::SeqCst);
    let mut logs_of_clients = Vec::new();
    for (i, c) in clients.into_iter().enumerate() {
        match c.join() {
            Ok(log) => logs_of_clients.push(log),
            Err(_) => problems.push(format!("[{kind}] client {i} panicked (see above)")),
        }
    }
    let ran = run_began.elapsed();
    let gaps: Vec<[Duration; 2]> = probers
        .into_iter()
        .map(|p| p.join().unwrap_or([Duration::MAX; 2]))
        .collect();

    // Every server stops on SIGTERM, exit 0.
    let (stop_problems, slowest_exit) = terminate_all(&mut fleet);
    problems.extend(stop_problems.into_iter().map(|p| format!("[{kind}] {p}")));

    // Everything answered, per ID space.
    let mut all = ClientLog::default();
    for log in logs_of_clients {
        all.snowflake.extend(log.snowflake);
        all.snowflake_from.extend(log.snowflake_from);
        all.segment.extend(log.segment);
        all.segment_from.extend(log.segment_from);
        for r in 0..4 {
            all.ok_by_route[r] += log.ok_by_route[r];
        }
        for (instance, n) in log.ok_by_instance {
            *all.ok_by_instance.entry(instance).or_default() += n;
        }
        all.killed_errors += log.killed_errors;
        all.refused += log.refused;
        all.not_ok.merge(log.not_ok);
        all.bad_body.merge(log.bad_body);
        all.conn_errors.merge(log.conn_errors);
    }
    let responses: u64 = all.ok_by_route.iter().sum();
    for (what, p) in [
        ("answers other than 200", &all.not_ok),
        ("200s without the IDs asked for", &all.bad_body),
        (
            "connection errors to servers that were not killed",
            &all.conn_errors,
        ),
    ] {
        if p.count > 0 {
            problems.push(format!(
                "[{kind}] {} {what}; the first:\n  {}",
                p.count,
                p.shown.join("\n  ")
            ));
        }
    }
    if let Some(r) = repeats("snowflake", &all.snowflake, &all.snowflake_from, true) {
        problems.push(format!("[{kind}] {r}"));
    }
    if let Some(r) = repeats(
        &format!("segment (tag {tag})"),
        &all.segment,
        &all.segment_from,
        false,
    ) {
        problems.push(format!("[{kind}] {r}"));
    }
    // Not vacuous: every route, every server (the restarted one too), plenty of IDs.
    let secs = ran.as_secs_f64().max(1.0);
    let floor = (500.0 * secs) as usize;
    for (space, n) in [
        ("snowflake", all.snowflake.len()),
        ("segment", all.segment.len()),
    ] {
        if n < floor {
            problems.push(format!(
                "[{kind}] only {n} {space} IDs served in {ran:.1?} (expected at least {floor})"
            ));
        }
    }
    for route in ROUTES {
        if all.ok_by_route[route as usize] < 50 {
            problems.push(format!(
                "[{kind}] only {} good answers from {}",
                all.ok_by_route[route as usize],
                route.name()
            ));
        }
    }
    let mut instances: Vec<Instance> = (0..SERVERS as u8)
        .map(|slot| Instance {
            slot,
            generation: 0,
        })
        .collect();
    if kills_a_server {
        instances.push(Instance {
            slot: victim as u8,
            generation: 1,
        });
    }
    for instance in &instances {
        if all.ok_by_instance.get(instance).copied().unwrap_or(0) == 0 {
            problems.push(format!("[{kind}] {instance} answered nothing"));
        }
    }
    // Worker IDs: the eight running at any one time differ.
    let bits = uidgen::BitsAllocator::default();
    let mut workers: BTreeMap<Instance, BTreeSet<u64>> = BTreeMap::new();
    for (id, code) in all.snowflake.iter().zip(&all.snowflake_from) {
        if let Ok(parts) = bits.parse(*id) {
            workers
                .entry(from_origin(*code).0)
                .or_default()
                .insert(parts.worker_id);
        }
    }
    let mut holders: BTreeMap<u64, Vec<Instance>> = BTreeMap::new();
    for (instance, ids) in &workers {
        for w in ids {
            holders.entry(*w).or_default().push(*instance);
        }
    }
    for (worker, who) in &holders {
        let together: Vec<&Instance> = who
            .iter()
            .filter(|i| !(usize::from(i.slot) == victim && i.generation == 0))
            .collect();
        let restarted_and_killed = who.len() == 2 && together.len() == 1;
        if who.len() > 1 && !restarted_and_killed {
            problems.push(format!(
                "[{kind}] worker ID {worker} used by {} running at the same time",
                who.iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let worker_list: Vec<String> = workers
        .iter()
        .map(|(i, w)| {
            format!(
                "{}:{:?}",
                i.slot + if i.generation == 1 { 100 } else { 0 },
                w
            )
        })
        .collect();

    let by_route: Vec<String> = ROUTES
        .iter()
        .map(|r| format!("{} {}", r.name(), all.ok_by_route[*r as usize]))
        .collect();
    // Before and after the disruption, per server: per worker ID, and per tag.
    for (space, ids, from) in [
        ("snowflake", &all.snowflake, &all.snowflake_from),
        ("segment", &all.segment, &all.segment_from),
    ] {
        let mut sides: BTreeMap<(Instance, u64), (u64, u64)> = BTreeMap::new();
        for (id, code) in ids.iter().zip(from.iter()) {
            let key = if space == "snowflake" {
                bits.parse(*id).map_or(u64::MAX, |p| p.worker_id)
            } else {
                0
            };
            let side = sides
                .entry((from_origin(*code).0, key))
                .or_insert((0, u64::MAX));
            if code & ANSWERED_BEFORE != 0 {
                side.0 = side.0.max(*id);
            }
            if code & ASKED_AFTER != 0 {
                side.1 = side.1.min(*id);
            }
        }
        for ((instance, key), (before, after)) in sides {
            if after != u64::MAX && before >= after {
                problems.push(format!(
                    "[{kind}] {instance} ({space}{}) answered {before} before the \
                     disruption and {after} to a request sent after it",
                    if space == "snowflake" {
                        format!(", worker ID {key}")
                    } else {
                        String::new()
                    }
                ));
            }
        }
    }
    // The longest time a server answered nothing, per space.
    let longest = gaps.iter().fold([Duration::ZERO; 2], |most, gap| {
        [most[0].max(gap[0]), most[1].max(gap[1])]
    });
    if let Some(limit) = stall_limit(&disruption) {
        for (server, gap) in gaps.iter().enumerate() {
            for (space, gap) in ["snowflake", "segment"].iter().zip(gap) {
                if *gap > limit {
                    problems.push(format!(
                        "[{kind}] server {server} answered no {space} ID for {gap:.1?} (limit \
                         {limit:?}: the cluster's election plus one lease renewal)"
                    ));
                }
            }
        }
    }
    eprintln!(
        "[{kind}] {SERVERS} servers (started in {started_in:.1?}), {CLIENTS} clients, {ran:.1?}: \
         {responses} good answers ({}), {} snowflake IDs, {} segment IDs of {tag}; \
         {event}; the longest time a server answered nothing: {:.1?} (snowflake), {:.1?} \
         (segment); {} refusals naming why there was no ID; the restarted server answered {} \
         times; {} connection \
         errors to the killed server; {} answers not 200, {} bad bodies, {} other connection \
         errors; SIGTERM: all out in {slowest_exit:.1?}; worker IDs by server (100+ = \
         restarted): {}",
        by_route.join(", "),
        all.snowflake.len(),
        all.segment.len(),
        longest[0],
        longest[1],
        all.refused,
        all.ok_by_instance
            .get(&Instance {
                slot: victim as u8,
                generation: 1
            })
            .copied()
            .unwrap_or(0),
        all.killed_errors,
        all.not_ok.count,
        all.bad_body.count,
        all.conn_errors.count,
        worker_list.join(" "),
    );
    drop(all);
    if !problems.is_empty() {
        // Whatever the servers said about it.
        let mut said = String::new();
        for server in fleet.iter().chain(dead.iter()) {
            said.push_str(&format!(
                "\n--- {} ({}) stderr ends:\n{}",
                server.name,
                server.addr,
                server.log_tail(1500)
            ));
        }
        problems.push(format!("[{kind}] the servers' stderr:{said}"));
    }
    drop(fleet);
    drop(dead);
    #[cfg(feature = "etcd")]
    if let Disruption::EtcdLeader(cluster) = &disruption {
        cluster.heal();
    }
    #[cfg(feature = "zookeeper")]
    if let Disruption::ZooKeeperLeader(ensemble) = &disruption {
        ensemble.heal();
    }

    // The tail check, on a tag no other server touches.
    if let Err(e) = tail_check(
        store,
        &format!("fleet-tail-{}", servers::random_suffix()),
        logs.path(),
    ) {
        problems.push(format!("[{kind}] tail check: {e}"));
    } else {
        eprintln!("[{kind}] tail check: the next server went on at the stopped one's last ID + 1");
    }
    eprintln!("[{kind}] {:.1?} in all", began.elapsed());
    assert!(
        problems.is_empty(),
        "{} problem(s) with a fleet of uidgen serve on {store}:\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// How often a prober asks each server.
const PROBE_EVERY: Duration = Duration::from_millis(50);

/// Asks the server at `addr` for one snowflake ID and one segment ID every
/// [`PROBE_EVERY`] until the run stops; the longest time each went unanswered (200).
fn probe(addr: SocketAddr, shared: &Shared) -> [Duration; 2] {
    let paths = [
        "/api/snowflake/get/x".to_owned(),
        format!("/api/segment/get/{}", shared.tag),
    ];
    let mut last_ok = [Instant::now(); 2];
    let mut longest = [Duration::ZERO; 2];
    while !shared.stop.load(Ordering::Relaxed) {
        for (i, path) in paths.iter().enumerate() {
            let ok = Conn::open(addr)
                .ok()
                .and_then(|mut conn| conn.get(path, "text/plain").ok())
                .is_some_and(|(reply, _)| reply.status == 200);
            let now = Instant::now();
            if ok {
                longest[i] = longest[i].max(now - last_ok[i]);
                last_ok[i] = now;
            }
        }
        std::thread::sleep(PROBE_EVERY);
    }
    // A space still unanswered at the end counts to the end.
    let now = Instant::now();
    [0, 1].map(|i| longest[i].max(now - last_ok[i]))
}

/// The longest a server may answer nothing: on etcd, the cluster's election (etcd's
/// default election timeout, 1 s, and a round of votes) plus one lease renewal (a third
/// of the service's 30 s lease TTL), with the prober's own step; none for a killed server
/// (its clients move to the others; the fleet's checks cover it).
fn stall_limit(disruption: &Disruption) -> Option<Duration> {
    match disruption {
        Disruption::KillServer => None,
        #[cfg(feature = "etcd")]
        Disruption::EtcdLeader(_) => {
            Some(Duration::from_secs(2) + uidgen::DEFAULT_LEASE_TTL / 3 + PROBE_EVERY * 4)
        }
        // The same: an election (a few ticks of half a second on the test ensemble), a
        // session moving to another member, and one lease renewal.
        #[cfg(feature = "zookeeper")]
        Disruption::ZooKeeperLeader(_) => {
            Some(Duration::from_secs(2) + uidgen::DEFAULT_LEASE_TTL / 3 + PROBE_EVERY * 4)
        }
    }
}

/// A private ZooKeeper ensemble of this test's own (`scripts/zookeeper.sh start`), each
/// member behind a relay of the test's, stopped with it.
#[cfg(feature = "zookeeper")]
mod zookeeper {
    use super::relay::Relay;
    use std::net::SocketAddr;
    use std::path::PathBuf;
    use std::process::Command;

    pub(super) struct Ensemble {
        dir: String,
        relays: Vec<Relay>,
        path: String,
    }

    fn script() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/zookeeper.sh")
    }

    impl Ensemble {
        /// Starts one; the store URL's path is `path`.
        pub(super) fn start_private(path: &str) -> Self {
            let out = Command::new("bash")
                .arg(script())
                .arg("start")
                .env_remove("UIDGEN_ZOOKEEPER_ENSEMBLE_DIR")
                .output()
                .expect("scripts/zookeeper.sh runs");
            let said = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "scripts/zookeeper.sh start: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let value = |name: &str| -> String {
                said.split(&format!("{name}='"))
                    .nth(1)
                    .and_then(|rest| rest.split('\'').next())
                    .unwrap_or_else(|| panic!("{name} in {said}"))
                    .to_owned()
            };
            let dir = value("UIDGEN_ZOOKEEPER_ENSEMBLE_DIR");
            let url = value("UIDGEN_ZOOKEEPER_STORE_URL");
            let members = url
                .trim_start_matches("zookeeper://")
                .split('/')
                .next()
                .unwrap()
                .split(',')
                .map(|m| m.parse::<SocketAddr>().expect("a member's address"))
                .collect::<Vec<_>>();
            Self {
                dir,
                relays: members.into_iter().map(Relay::to).collect(),
                path: path.to_owned(),
            }
        }

        fn run(&self, args: &[&str]) -> String {
            let out = Command::new("bash")
                .arg(script())
                .args(args)
                .env("UIDGEN_ZOOKEEPER_ENSEMBLE_DIR", &self.dir)
                .output()
                .expect("scripts/zookeeper.sh runs");
            assert!(
                out.status.success(),
                "scripts/zookeeper.sh {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        }

        /// The store URL, through the relays.
        pub(super) fn url(&self) -> String {
            let members: Vec<String> = self.relays.iter().map(|r| r.addr.to_string()).collect();
            format!("zookeeper://{}/{}", members.join(","), self.path)
        }

        /// SIGKILLs the leader; its number (1 to 3).
        pub(super) fn kill_leader(&self) -> usize {
            let leader: usize = self.run(&["leader"]).parse().expect("the leader's number");
            self.run(&["member-kill", &leader.to_string()]);
            leader
        }

        /// Starts member `n` again on its data, and waits until it serves.
        pub(super) fn start(&self, n: usize) {
            self.run(&["member-restart", &n.to_string()]);
        }

        /// Cuts member `n` off behind its relay: connections held, nothing answered.
        pub(super) fn cut(&self, n: usize) {
            self.relays[n - 1].silence();
        }

        /// Every relay passes again.
        pub(super) fn heal(&self) {
            for relay in &self.relays {
                relay.restore();
            }
        }
    }

    impl Drop for Ensemble {
        fn drop(&mut self) {
            let _ = Command::new("bash")
                .arg(script())
                .arg("stop")
                .env("UIDGEN_ZOOKEEPER_ENSEMBLE_DIR", &self.dir)
                .output();
        }
    }
}

/// The private etcd cluster of scripts/etcd.sh, each member behind a relay of the test's.
#[cfg(feature = "etcd")]
mod etcd {
    use super::relay::Relay;
    use std::net::SocketAddr;
    use std::path::PathBuf;
    use std::process::{Command, Stdio};

    pub(super) struct Cluster {
        dir: PathBuf,
        /// Each member's client address, m1 first.
        addrs: Vec<SocketAddr>,
        relays: Vec<Relay>,
        prefix: String,
    }

    impl Cluster {
        /// The cluster in UIDGEN_ETCD_CLUSTER (scripts/etcd.sh exports it): one that no
        /// test but those of this binary, which run one at a time, uses.
        pub(super) fn from_env(prefix: &str) -> Self {
            let dir = PathBuf::from(std::env::var("UIDGEN_ETCD_CLUSTER").unwrap_or_else(|_| {
                panic!(
                    "UIDGEN_ETCD_CLUSTER is not set: this test stops and starts members of \
                     the private cluster scripts/etcd.sh starts for it (scripts/test does; \
                     or eval \"$(scripts/etcd.sh start)\")"
                )
            }));
            let addrs: Vec<SocketAddr> = (1..=3)
                .map(|n| {
                    let args = std::fs::read_to_string(dir.join(format!("m{n}.args")))
                        .expect("the member's command line");
                    let url = args
                        .lines()
                        .skip_while(|l| *l != "--listen-client-urls")
                        .nth(1)
                        .expect("--listen-client-urls");
                    url.trim_start_matches("http://")
                        .parse()
                        .expect("an address")
                })
                .collect();
            let relays = addrs.iter().map(|a| Relay::to(*a)).collect();
            Self {
                dir,
                addrs,
                relays,
                prefix: prefix.to_owned(),
            }
        }

        pub(super) fn members(&self) -> usize {
            self.addrs.len()
        }

        /// The store URL, through the relays.
        pub(super) fn url(&self) -> String {
            let members: Vec<String> = self.relays.iter().map(|r| r.addr.to_string()).collect();
            format!("etcd://{}/{}", members.join(","), self.prefix)
        }

        fn etcdctl(&self, args: &[&str]) -> String {
            let endpoints: Vec<String> = self.addrs.iter().map(|a| format!("http://{a}")).collect();
            let out = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .arg(format!("--endpoints={}", endpoints.join(",")))
                .args(args)
                .output()
                .expect("etcdctl runs");
            String::from_utf8_lossy(&out.stdout).into_owned()
        }

        /// SIGKILLs member `index`.
        pub(super) fn kill(&self, index: usize) {
            let pid = std::fs::read_to_string(self.dir.join(format!("m{}.pid", index + 1)))
                .expect("the member's pid");
            let killed = Command::new("kill")
                .args(["-9", pid.trim()])
                .status()
                .is_ok_and(|s| s.success());
            assert!(killed, "could not SIGKILL etcd member m{}", index + 1);
        }

        /// SIGKILLs the leader; its index.
        pub(super) fn kill_leader(&self) -> usize {
            let status: serde_json::Value =
                serde_json::from_str(&self.etcdctl(&["endpoint", "status", "-w", "json"]))
                    .expect("etcdctl's status as JSON");
            let statuses = status.as_array().expect("a status per member");
            let leader = statuses
                .iter()
                .position(|s| {
                    s["Status"]["header"]["member_id"] == s["Status"]["leader"]
                        && !s["Status"]["leader"].is_null()
                })
                .expect("a member that is the leader");
            let endpoint = statuses[leader]["Endpoint"].as_str().unwrap_or_default();
            let index = self
                .addrs
                .iter()
                .position(|a| endpoint.ends_with(&a.to_string()))
                .expect("the leader's member");
            self.kill(index);
            index
        }

        /// Starts member `index` again on its data, as scripts/etcd.sh started it.
        pub(super) fn start(&self, index: usize) {
            let n = index + 1;
            let args = std::fs::read_to_string(self.dir.join(format!("m{n}.args")))
                .expect("the member's command line");
            let args: Vec<&str> = args.lines().collect();
            let log = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(self.dir.join(format!("m{n}.log")))
                .expect("the member's log");
            let child = Command::new(args[0])
                .args(&args[1..])
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("etcd starts again");
            std::fs::write(self.dir.join(format!("m{n}.pid")), child.id().to_string())
                .expect("the member's pid file");
            // The process outlives this handle: scripts/etcd.sh stops it by its pid.
            std::mem::forget(child);
        }

        /// Cuts member `index` off behind its relay: connections held, nothing answered.
        pub(super) fn cut(&self, index: usize) {
            self.relays[index].silence();
        }

        /// Every relay passes again.
        pub(super) fn heal(&self) {
            for relay in &self.relays {
                relay.restore();
            }
        }
    }
}

/// One GET through a new connection: the reply or why not.
fn fetch(server: &Server, path: &str) -> Result<Reply, String> {
    let mut conn = Conn::open(server.addr).map_err(|e| format!("{}: connect: {e}", server.name))?;
    conn.get(path, "application/json")
        .map(|(reply, _)| reply)
        .map_err(|e| format!("{} GET {path}: {}", server.name, e.error))
}

/// Server A alone on `tag` hands out 10 IDs and stops on SIGTERM; server B's first ID
/// of the tag is A's last + 1.
fn tail_check(store: &str, tag: &str, logs: &Path) -> Result<(), String> {
    let mut a = Server::start("tail server A", store, tag, logs, &[])?;
    let reply = fetch(&a, &format!("/v1/segment/{tag}?count=10"))?;
    if reply.status != 200 {
        return Err(format!(
            "A's /v1/segment/{tag}?count=10 answered {}: {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        ));
    }
    let ids =
        ids_of(Route::V1Segment, false, 10, tag, &reply.body).map_err(|e| format!("A: {e}"))?;
    if ids.windows(2).any(|w| w[1] != w[0] + 1) {
        return Err(format!(
            "A's 10 IDs of a fresh tag are not consecutive: {ids:?}"
        ));
    }
    let last = *ids.last().expect("10 IDs");
    let signalled = Instant::now();
    a.signal(libc::SIGTERM);
    match a.wait_until(signalled + EXIT_LIMIT) {
        Some(status) if status.success() => {}
        Some(status) => {
            return Err(format!(
                "A exited with {status} after SIGTERM, not 0; its stderr ends:\n{}",
                a.log_tail(2000)
            ))
        }
        None => {
            return Err(format!(
                "A still running {EXIT_LIMIT:?} after SIGTERM; its stderr ends:\n{}",
                a.log_tail(2000)
            ))
        }
    }
    let a_exit = signalled.elapsed();
    let mut b = Server::start("tail server B", store, tag, logs, &[])?;
    let reply = fetch(&b, &format!("/v1/segment/{tag}?count=1"))?;
    if reply.status != 200 {
        return Err(format!(
            "B's /v1/segment/{tag}?count=1 answered {}: {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        ));
    }
    let first =
        ids_of(Route::V1Segment, false, 1, tag, &reply.body).map_err(|e| format!("B: {e}"))?[0];
    let signalled = Instant::now();
    b.signal(libc::SIGTERM);
    let b_status = b.wait_until(signalled + EXIT_LIMIT);
    if first != last + 1 {
        return Err(format!(
            "A handed out {ids:?} and exited 0 in {a_exit:.1?} after SIGTERM, but B's first ID \
             of {tag} is {first}, not {} (A's tail was not given back); A's stderr ends:\n{}",
            last + 1,
            a.log_tail(2000)
        ));
    }
    match b_status {
        Some(status) if status.success() => {}
        other => {
            return Err(format!(
            "B did not exit 0 within {EXIT_LIMIT:?} of SIGTERM ({other:?}); its stderr ends:\n{}",
            b.log_tail(2000)
        ))
        }
    }
    eprintln!("tail check on {tag}: A {ids:?}, exit 0 in {a_exit:.1?}; B's first {first}");
    Ok(())
}

// ---------------------------------------------------------------------------------------

#[test]
fn a_fleet_on_one_sqlite_file() {
    let dir = tempfile::tempdir().expect("a folder for the store");
    let store = dir.path().join("fleet.sqlite3");
    fleet(
        "sqlite",
        &store.display().to_string(),
        Disruption::KillServer,
    );
}

#[cfg(feature = "mysql")]
#[test]
fn a_fleet_on_mariadb() {
    fleet("mysql", &servers::mysql_url(), Disruption::KillServer);
}

#[cfg(feature = "postgres")]
#[test]
fn a_fleet_on_postgres() {
    fleet("postgres", &servers::postgres_url(), Disruption::KillServer);
}

#[cfg(feature = "redis")]
#[test]
fn a_fleet_on_redis() {
    fleet("redis", &servers::redis_url(), Disruption::KillServer);
}

/// The whole etcd cluster SIGKILLed and started again on its data: two servers heal by
/// themselves (no restart), and no ID of either space is answered twice across it.
#[cfg(feature = "etcd")]
#[test]
fn a_whole_etcd_cluster_restarted_from_its_data_repeats_nothing() {
    let _one = ONE_FLEET_AT_A_TIME
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let cluster = etcd::Cluster::from_env(&format!("uidgen-restart-{}", servers::random_suffix()));
    let url = cluster.url();
    let logs = tempfile::tempdir().expect("a folder for the servers' logs");
    let tag = format!("restart-{}", servers::random_suffix());
    let names = ["restart server 0".to_owned(), "restart server 1".to_owned()];
    let mut fleet = start_all(&names, &url, &tag, logs.path());
    // The IDs answered, per space (snowflake, segment).
    let mut seen: [HashSet<u64>; 2] = Default::default();
    // Every answer's IDs, each new in its space; true if both routes answered 200.
    let draw = |server: &Server, seen: &mut [HashSet<u64>; 2]| -> bool {
        let mut answered = true;
        let [snowflake, segment] = seen;
        for (route, path, space) in [
            (
                Route::V1Snowflake,
                "/v1/snowflake?count=100".to_owned(),
                snowflake,
            ),
            (
                Route::V1Segment,
                format!("/v1/segment/{tag}?count=100"),
                segment,
            ),
        ] {
            match fetch(server, &path) {
                Ok(reply) if reply.status == 200 => {
                    let ids = ids_of(route, false, 100, &tag, &reply.body)
                        .unwrap_or_else(|e| panic!("{}: {e}", server.name));
                    for id in ids {
                        assert!(space.insert(id), "{}: {id} answered twice", server.name);
                    }
                }
                _ => answered = false,
            }
        }
        answered
    };
    for _ in 0..50 {
        for server in &fleet {
            assert!(
                draw(server, &mut seen),
                "{} did not answer before the stop",
                server.name
            );
        }
    }
    let before = (seen[0].len(), seen[1].len());
    // The tag's counter in the store: it must move after the restart (ranges fetched
    // from the restarted cluster, not only from what the servers held).
    // The last error reading it, for the failure message.
    let read_error = std::cell::RefCell::new(String::from("none"));
    let counter = || match uidgen::StoreUrl::parse(&url)
        .and_then(|u| u.segment_store())
        .and_then(|s| s.tag(&tag))
    {
        Ok(record) => record.map_or(0, |t| t.max_id),
        Err(e) => {
            *read_error.borrow_mut() = e.to_string();
            0
        }
    };
    let counter_before = counter();
    for member in 0..cluster.members() {
        cluster.kill(member);
    }
    std::thread::sleep(Duration::from_secs(1));
    for member in 0..cluster.members() {
        cluster.start(member);
    }
    let restarted = Instant::now();
    // Each server answers both spaces again, by itself.
    for server in &fleet {
        while !draw(server, &mut seen) {
            assert!(
                restarted.elapsed() < Duration::from_secs(60),
                "{} did not answer within 60 s of the cluster's restart; its stderr ends:\n{}",
                server.name,
                server.log_tail(2000)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let answered_in = restarted.elapsed();
    while counter() <= counter_before {
        for server in &fleet {
            assert!(
                draw(server, &mut seen),
                "{} stopped answering after the restart",
                server.name
            );
        }
        // The servers first serve the ranges they held, up to their prefetch distance of
        // the largest step: on a loaded machine a minute of draws may not use them up.
        assert!(
            restarted.elapsed() < Duration::from_secs(150),
            "no range was taken from the restarted cluster within 150 s (the counter stayed \
             at {counter_before}; the last error reading it: {})",
            read_error.borrow()
        );
    }
    let healed_in = restarted.elapsed();
    let (problems, _) = terminate_all(&mut fleet);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    eprintln!(
        "[etcd] whole cluster SIGKILLed and restarted: both servers answered again {answered_in:.1?} \
         after the start (from what they held), and took a range from it {healed_in:.1?} after; \
         {} snowflake and {} segment IDs before, {} and {} in all, none twice",
        before.0,
        before.1,
        seen[0].len(),
        seen[1].len()
    );
}

/// Eight services on a 3-member ZooKeeper ensemble of the test's own, 64 clients: the
/// leader SIGKILLed and started again, then a member cut off. No ID answered twice;
/// every server answers again within an election and a lease renewal.
#[cfg(feature = "zookeeper")]
#[test]
fn a_fleet_on_zookeeper_losing_its_leader_and_a_member() {
    let ensemble =
        zookeeper::Ensemble::start_private(&format!("uidgen-fleet-{}", servers::random_suffix()));
    let url = ensemble.url();
    fleet("zookeeper", &url, Disruption::ZooKeeperLeader(ensemble));
}

#[cfg(feature = "etcd")]
#[test]
fn a_fleet_on_etcd_losing_its_leader_and_a_member() {
    let cluster = etcd::Cluster::from_env(&format!("uidgen-fleet-{}", servers::random_suffix()));
    let url = cluster.url();
    fleet("etcd", &url, Disruption::EtcdLeader(cluster));
}

/// Two regions, each on a store of its own (MariaDB and PostgreSQL), eight services
/// each, kept apart first by a share of the worker IDs each (`--worker-ids`), then by
/// region bits in the layout (`--layout 39/1/10/13 --unit ms --region N`): every ID holds its
/// region's worker range or region, and no ID is answered twice across both regions.
/// A service asked for a worker ID outside its region's range is refused at start,
/// naming both.
#[cfg(all(feature = "mysql", feature = "postgres"))]
#[test]
fn two_regions_on_stores_of_their_own_eight_services_each_repeat_nothing() {
    let _one = ONE_FLEET_AT_A_TIME
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let logs = tempfile::tempdir().expect("a folder for the servers' logs");
    let stores = [
        ("europe", servers::mysql_url()),
        ("america", servers::postgres_url()),
    ];
    // Per region: its arguments, and what each of its IDs must hold (by the layout).
    type Holds = fn(&uidgen::UidParts) -> bool;
    let by_range: [(&[&str], Holds); 2] = [
        (&["--worker-ids", "0-511"], |p| p.worker_id <= 511),
        (&["--worker-ids", "512-1023"], |p| p.worker_id >= 512),
    ];
    let region = |n| -> (&[&str], Holds) {
        let holds: Holds = if n == 0 {
            |p| p.region == Some(0)
        } else {
            |p| p.region == Some(1)
        };
        let args: &[&str] = if n == 0 {
            &["--layout", "39/1/10/13", "--unit", "ms", "--region", "0"]
        } else {
            &["--layout", "39/1/10/13", "--unit", "ms", "--region", "1"]
        };
        (args, holds)
    };
    let by_bits = [region(0), region(1)];
    let default = uidgen::BitsAllocator::preset(uidgen::Preset::Default).unwrap();
    let split = uidgen::LayoutBuilder::parse("39/1/10/13")
        .and_then(uidgen::LayoutBuilder::build_unchecked_time)
        .unwrap();
    for (way, layout, plan) in [
        ("worker ranges", default, by_range),
        ("region bits", split, by_bits),
    ] {
        let mut seen = HashSet::new();
        let mut fleets = Vec::new();
        for ((region, store), (args, holds)) in stores.iter().zip(plan) {
            let names: Vec<String> = (0..SERVERS).map(|n| format!("{region} {n}")).collect();
            let tag = format!("{region}-{}", servers::random_suffix());
            let fleet = start_all_with(&names, store, &tag, logs.path(), args);
            let mut workers = HashSet::new();
            for server in &fleet {
                for _ in 0..10 {
                    let reply = fetch(server, "/v1/snowflake?count=100")
                        .unwrap_or_else(|e| panic!("{way}, {}: {e}", server.name));
                    assert_eq!(
                        reply.status,
                        200,
                        "{way}, {}: {}",
                        server.name,
                        String::from_utf8_lossy(&reply.body)
                    );
                    let answered = ids_of(Route::V1Snowflake, false, 100, &tag, &reply.body)
                        .unwrap_or_else(|e| panic!("{way}, {}: {e}", server.name));
                    for id in answered {
                        let parts = layout.parse(id).unwrap();
                        assert!(
                            holds(&parts),
                            "{way}: {} answered {id} ({parts}), not its region's ({args:?})",
                            server.name
                        );
                        workers.insert(parts.worker_id);
                        assert!(
                            seen.insert(id),
                            "{way}: {}: {id} answered twice",
                            server.name
                        );
                    }
                }
            }
            assert_eq!(workers.len(), SERVERS, "{way}, {region}: {workers:?}");
            fleets.push(fleet);
        }
        assert_eq!(seen.len(), 2 * SERVERS * 1000, "{way}");
        for mut fleet in fleets {
            let (problems, _) = terminate_all(&mut fleet);
            assert!(problems.is_empty(), "{way}: {}", problems.join("\n"));
        }
    }
    // One more in europe, asked for america's worker ID 600: refused before it listens.
    let refused = Server::start(
        "europe (worker ID 600)",
        &stores[0].1,
        "refused",
        logs.path(),
        &["--worker-ids", "0-511", "--worker-id", "600"],
    )
    .err()
    .expect("a service asked for a worker ID outside its range is refused");
    assert!(
        refused.contains("worker_id") && refused.contains("0-511"),
        "{refused}"
    );
}
