//! The servers a client calls: a random start, failover on a refusal, a timeout, a 5xx or
//! a 408, with a bounded pause between tries, and a failed server skipped for a while.

use crate::error::ClientError;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The first pause between two servers, doubled each time up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const MAX_PAUSE: Duration = Duration::from_secs(1);

pub(crate) struct Servers {
    bases: Vec<String>,
    /// Until when each server is skipped, in ms since `started` (0: not skipped).
    skipped_until: Vec<AtomicU64>,
    /// Where the next call starts.
    start: AtomicUsize,
    agent: ureq::Agent,
    authorization: Option<String>,
    retry_after: Duration,
    started: Instant,
    pub(crate) failovers: AtomicU64,
}

/// A successful answer: the body and the index of the server that gave it.
pub(crate) struct Answer {
    pub(crate) body: String,
    pub(crate) server: usize,
}

enum Outcome {
    Done(String),
    /// Try another server.
    Failed(String),
    /// The caller's mistake: no other server would answer otherwise.
    Refused(ClientError),
}

/// A refusal's JSON body.
#[derive(serde::Deserialize)]
struct Refusal {
    error: String,
    limit: Option<String>,
}

impl Servers {
    pub(crate) fn new(
        start: Option<usize>,
        servers: &[impl AsRef<str>],
        token: Option<&str>,
        timeout: Duration,
        retry_after: Duration,
    ) -> Result<Self, ClientError> {
        let bases: Vec<String> = servers
            .iter()
            .map(|s| {
                let s = s.as_ref().trim().trim_end_matches('/');
                if s.starts_with("http://") || s.starts_with("https://") {
                    s.to_owned()
                } else {
                    format!("http://{s}")
                }
            })
            .collect();
        if bases.is_empty() || bases.iter().any(|b| b.len() <= "http://".len()) {
            return Err(ClientError::Config {
                what: "servers",
                problem: "at least one, each host:port or an http:// base URL".into(),
            });
        }
        if timeout.is_zero() {
            return Err(ClientError::Config {
                what: "timeout",
                problem: "more than zero".into(),
            });
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        // A start that differs between clients spreads them over the servers.
        let start = start.unwrap_or_else(|| {
            use std::hash::{BuildHasher, Hasher};
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u32(std::process::id());
            hasher.finish() as usize
        }) % bases.len();
        Ok(Self {
            skipped_until: bases.iter().map(|_| AtomicU64::new(0)).collect(),
            bases,
            start: AtomicUsize::new(start),
            agent,
            authorization: token.map(|t| format!("Bearer {t}")),
            retry_after,
            started: Instant::now(),
            failovers: AtomicU64::new(0),
        })
    }

    pub(crate) fn name(&self, server: usize) -> &str {
        &self.bases[server]
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64 + 1
    }

    /// `method path` on one server after another, until one answers 2xx or refuses.
    pub(crate) fn call(&self, method: &str, path: &str) -> Result<Answer, ClientError> {
        let count = self.bases.len();
        let first = self.start.load(Ordering::Relaxed) % count;
        let now = self.now_ms();
        // Servers not skipped first, in turn from the start; then the skipped ones.
        let mut order: Vec<usize> = (0..count).map(|i| (first + i) % count).collect();
        order.sort_by_key(|&s| self.skipped_until[s].load(Ordering::Relaxed) > now);
        let mut failures = Vec::new();
        let mut pause = FIRST_PAUSE;
        for (tried, &server) in order.iter().enumerate() {
            if tried > 0 {
                self.failovers.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
            match self.once(server, method, path) {
                Outcome::Done(body) => {
                    self.skipped_until[server].store(0, Ordering::Relaxed);
                    // The next call starts here: a server that answers keeps the load.
                    self.start.store(server, Ordering::Relaxed);
                    return Ok(Answer { body, server });
                }
                Outcome::Refused(e) => return Err(e),
                Outcome::Failed(why) => {
                    let until = self.now_ms() + self.retry_after.as_millis() as u64;
                    self.skipped_until[server].store(until, Ordering::Relaxed);
                    failures.push((self.bases[server].clone(), why));
                }
            }
        }
        Err(ClientError::Unavailable(failures))
    }

    /// One request to `server`, which must be that server's (a give-back).
    pub(crate) fn call_at(
        &self,
        server: usize,
        method: &str,
        path: &str,
    ) -> Result<String, ClientError> {
        match self.once(server, method, path) {
            Outcome::Done(body) => Ok(body),
            Outcome::Refused(e) => Err(e),
            Outcome::Failed(why) => Err(ClientError::Unavailable(vec![(
                self.bases[server].clone(),
                why,
            )])),
        }
    }

    fn once(&self, server: usize, method: &str, path: &str) -> Outcome {
        let url = format!("{}{path}", self.bases[server]);
        let sent = if method == "POST" {
            let mut request = self.agent.post(&url);
            if let Some(authorization) = &self.authorization {
                request = request.header("Authorization", authorization);
            }
            request.send_empty()
        } else {
            let mut request = self.agent.get(&url);
            if let Some(authorization) = &self.authorization {
                request = request.header("Authorization", authorization);
            }
            request.call()
        };
        let mut response = match sent {
            Ok(response) => response,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        let status = response.status().as_u16();
        let body = match response.body_mut().read_to_string() {
            Ok(body) => body,
            Err(e) => return Outcome::Failed(format!("answered {status}, then: {e}")),
        };
        match status {
            200..=299 => Outcome::Done(body),
            400..=499 if status != 408 => {
                let (error, limit) = match serde_json::from_str::<Refusal>(&body) {
                    Ok(r) => (r.error, r.limit),
                    Err(_) => (body.trim().chars().take(200).collect(), None),
                };
                Outcome::Refused(ClientError::Refused {
                    server: self.bases[server].clone(),
                    status,
                    error,
                    limit,
                })
            }
            _ => Outcome::Failed(format!(
                "answered {status}: {}",
                body.trim().chars().take(200).collect::<String>()
            )),
        }
    }
}
