//! Redis: one server (not a cluster), through its synchronous connection; every step
//! bounded (connecting, with its handshake, under one deadline), TLS for `rediss://`.
//! This folder holds the connection, the lease steps (one Lua script each, for
//! atomicity, following the one lease algorithm) and the segment counters.

mod driver;
mod lease;
pub(crate) mod records;
mod segment;

pub(crate) use self::driver::DRIVER;
pub use self::lease::RedisLeaseStore;
pub use self::segment::RedisSegmentStore;

use super::net::Hidden;
use super::StoreError;
use crate::sync::{lock, Arc, Mutex};
use std::time::Duration;

const STORE: &str = "Redis";
const EXPECTED: &str = "redis://[[user]:password@]host[:port][/db], or rediss:// for TLS \
     (optionally ?cacert=PATH, the only CA trusted; ?accept_data_loss=true for a server that \
     keeps nothing on disk; ?wait_replicas=N to wait for N replicas after each step)";

/// The server's clock in Unix milliseconds, as Lua: every script starts with it.
pub(super) const LUA_NOW: &str = "local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function num(x) return string.format('%d', x) end
";

/// One Redis server and a key prefix: the connection is opened on first use and kept;
/// clones share it.
#[derive(Debug, Clone)]
pub(crate) struct RedisConn {
    info: Hidden<redis::RedisConnectionInfo>,
    host: String,
    port: u16,
    user: String,
    tls: Option<super::net::Tls>,
    /// `redis://host:port/db`, for messages: never a password.
    location: String,
    timeout: Duration,
    prefix: String,
    /// A server that keeps nothing on disk is used anyway (the URL said so).
    accept_data_loss: bool,
    /// After each step, wait until this many replicas have every write (`WAIT`).
    wait_replicas: Option<u32>,
    conn: Hidden<Arc<Mutex<Option<redis::Connection>>>>,
}

impl RedisConn {
    pub(crate) fn new(url: &str) -> Result<Self, StoreError> {
        let checked = super::net::NetworkUrl::parse(url, super::StoreKind::Redis, EXPECTED)?;
        let invalid = |reason: String| checked.invalid(reason);
        let (parsed, host) = (&checked.url, checked.host.clone());
        let tls = (parsed.scheme() == "rediss").then_some(super::net::Tls {
            verify: super::net::Verify::Full,
            ca: None,
        });
        let port = parsed.port().unwrap_or(6379);
        let db_text = parsed.path().trim_start_matches('/');
        let db: i64 = if db_text.is_empty() {
            0
        } else {
            db_text
                .parse()
                .ok()
                .filter(|db| *db >= 0)
                .ok_or_else(|| invalid("the database after the / is not a number".into()))?
        };
        let mut tls = tls;
        let mut accept_data_loss = false;
        let mut wait_replicas = None;
        for (key, value) in parsed.query_pairs() {
            match (key.as_ref(), tls.as_mut()) {
                ("wait_replicas", _) => {
                    wait_replicas = Some(
                        value
                            .parse::<u32>()
                            .ok()
                            .filter(|n| (1..=100).contains(n))
                            .ok_or_else(|| {
                                invalid(
                                    "wait_replicas must be a number of replicas, 1 to 100".into(),
                                )
                            })?,
                    )
                }
                ("accept_data_loss", _) => {
                    accept_data_loss = match value.to_ascii_lowercase().as_str() {
                        "true" | "1" | "yes" | "on" => true,
                        "false" | "0" | "no" | "off" => false,
                        _ => return Err(invalid("accept_data_loss must be true or false".into())),
                    }
                }
                ("cacert", Some(tls)) => {
                    tls.ca = Some(super::net::Tls::ca_file("cacert", &value).map_err(invalid)?)
                }
                ("cacert", None) => {
                    return Err(invalid("cacert is for TLS: write rediss://".into()))
                }
                _ => {
                    return Err(invalid(format!(
                        "unknown parameter {:?} (cacert, accept_data_loss and wait_replicas are \
                         understood)",
                        if super::is_credential_key(&key) {
                            "***".into()
                        } else {
                            key.chars().take(40).collect::<String>()
                        }
                    )))
                }
            }
        }
        if let Some(tls) = &tls {
            tls.check_built(STORE).map_err(invalid)?;
        }
        let user = super::net::percent_decode(parsed.username());
        let mut info = redis::RedisConnectionInfo::default().set_db(db);
        if !user.is_empty() {
            info = info.set_username(&user);
        }
        if let Some(password) = parsed.password() {
            info = info.set_password(super::net::percent_decode(password));
        }
        let location = format!(
            "{}://{}{host}:{port}/{db}",
            parsed.scheme(),
            if user.is_empty() {
                String::new()
            } else {
                format!("{user}@")
            }
        );
        Ok(Self {
            info: Hidden(info),
            host,
            port,
            user,
            tls,
            location,
            timeout: Duration::from_secs(5),
            prefix: String::new(),
            accept_data_loss,
            wait_replicas,
            conn: Hidden(Arc::new(Mutex::new(None))),
        })
    }

    /// The bound on each network step (the connection is opened again with it).
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.conn = Hidden(Arc::new(Mutex::new(None)));
        self
    }

    /// The prefix of every key: stores with different prefixes are independent.
    pub(crate) fn with_prefix(mut self, prefix: &str) -> Result<Self, StoreError> {
        if prefix.is_empty()
            || prefix.len() > 200
            || prefix.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(StoreError::InvalidName {
                store: STORE,
                what: "key prefix",
                name: prefix.chars().take(200).collect(),
                rule: "use 1 to 200 characters, without spaces or control characters",
            });
        }
        self.prefix = prefix.to_owned();
        Ok(self)
    }

    pub(crate) fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The server, without its password.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// The store, for people and errors: the server and the key prefix.
    pub(crate) fn describe(&self) -> String {
        format!("the Redis store {} (keys {}*)", self.location, self.prefix)
    }

    /// Opens a connection, the handshake (AUTH, SELECT) included, within one `timeout`:
    /// the driver bounds each read by the time left, which a server that accepts and
    /// never answers turns into one whole bound per handshake command. So it runs on a
    /// thread of its own, left behind (it ends at the driver's own bound) if it does
    /// not finish in time.
    fn connect(&self) -> Result<redis::Connection, StoreError> {
        let client = self.client()?;
        let timeout = self.timeout;
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("uidgen-redis-connect".into())
            .spawn(move || {
                let _ = send.send(client.get_connection_with_timeout(timeout));
            })
            .map_err(|e| StoreError::Unreachable {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                source: Box::new(e),
            })?;
        let conn = match receive.recv_timeout(timeout) {
            Ok(connected) => connected.map_err(|e| self.explain(e, "connecting"))?,
            Err(_) => return Err(self.timed_out("connecting")),
        };
        // Each later command is bounded too.
        conn.set_read_timeout(Some(self.timeout))
            .and_then(|()| conn.set_write_timeout(Some(self.timeout)))
            .map_err(|e| self.explain(e, "connecting"))?;
        let mut conn = conn;
        if !self.accept_data_loss {
            self.check_persistence(&mut conn)?;
        }
        Ok(conn)
    }

    /// Refuses a server that keeps nothing on disk (no AOF, no RDB saves): its restart
    /// empties every counter and lease, and IDs handed out before would come again.
    fn check_persistence(&self, conn: &mut redis::Connection) -> Result<(), StoreError> {
        let step = "checking that the server keeps its data";
        let config = |name: &str, conn: &mut redis::Connection| {
            redis::cmd("CONFIG")
                .arg("GET")
                .arg(name)
                .query::<Vec<String>>(conn)
                .map(|pair| pair.get(1).cloned().unwrap_or_default())
        };
        let settings =
            config("appendonly", conn).and_then(|aof| config("save", conn).map(|save| (aof, save)));
        let keeps = match settings {
            Ok((aof, save)) => aof.eq_ignore_ascii_case("yes") || !save.trim().is_empty(),
            // CONFIG may be renamed away (managed services): INFO says whether AOF is on.
            Err(_) => {
                let info: String = redis::cmd("INFO")
                    .arg("persistence")
                    .query(conn)
                    .map_err(|e| self.explain(e, step))?;
                info.lines().any(|l| l.trim() == "aof_enabled:1")
            }
        };
        if keeps {
            return Ok(());
        }
        Err(StoreError::Unexpected {
            store: STORE,
            location: self.location.clone(),
            step,
            what: "the server keeps nothing on disk (appendonly no, no save points): a restart \
                   empties every counter and lease, and IDs handed out before would be handed \
                   out again. Turn on appendonly yes (appendfsync everysec or always), or, if \
                   losing the data is acceptable (tests, a throwaway server), add \
                   ?accept_data_loss=true to the URL"
                .into(),
        })
    }

    /// The driver's client: over TLS to the URL's host name (the certificate is checked
    /// against it), else to the address resolved here within the bound.
    fn client(&self) -> Result<redis::Client, StoreError> {
        let failed = |e| self.explain(e, "connecting");
        let Some(tls) = &self.tls else {
            let address = super::net::resolve(STORE, &self.host, self.port, self.timeout)?;
            let addr = redis::ConnectionAddr::Tcp(address.ip().to_string(), address.port());
            let info = redis::IntoConnectionInfo::into_connection_info(addr)
                .map_err(failed)?
                .set_redis_settings(self.info.0.clone());
            return redis::Client::open(info).map_err(failed);
        };
        #[cfg(feature = "tls")]
        {
            super::tls::install_provider();
            let addr = redis::ConnectionAddr::TcpTls {
                host: self.host.trim_matches(['[', ']']).to_owned(),
                port: self.port,
                insecure: false,
                tls_params: None,
            };
            let info = redis::IntoConnectionInfo::into_connection_info(addr)
                .map_err(failed)?
                .set_redis_settings(self.info.0.clone());
            let Some(ca) = &tls.ca else {
                return redis::Client::open(info).map_err(failed);
            };
            let pem = std::fs::read(ca).map_err(|e| StoreError::Tls {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                reason: format!("cannot read the CA file {}: {e}", ca.display()),
                source: Box::new(e),
            })?;
            redis::Client::build_with_tls(
                info,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem),
                },
            )
            .map_err(failed)
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = tls;
            unreachable!("a rediss:// URL is refused without the tls feature")
        }
    }

    fn timed_out(&self, step: &'static str) -> StoreError {
        StoreError::Timeout {
            store: STORE,
            host: self.host.clone(),
            port: self.port,
            step,
            timeout: self.timeout,
        }
    }

    /// Runs `work` on the connection (opened if there is none). A step that fails drops
    /// the connection: after a timeout its state is unknown.
    pub(crate) fn run<T>(
        &self,
        step: &'static str,
        work: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let mut slot = lock(&self.conn);
        let mut conn = match slot.take() {
            Some(conn) => conn,
            None => self.connect()?,
        };
        let result = work(&mut conn).map_err(|e| self.explain(e, step))?;
        let reads_only = ["reading", "listing", "looking", "checking"]
            .iter()
            .any(|verb| step.starts_with(verb));
        if let Some(wanted) = self.wait_replicas.filter(|_| !reads_only) {
            // A failover to a replica then loses nothing this step wrote. WAIT's own bound
            // is under the connection's read bound, so its answer arrives to be read.
            let timeout_ms = u64::try_from((self.timeout * 3 / 4).as_millis()).unwrap_or(u64::MAX);
            let acked: u64 = redis::cmd("WAIT")
                .arg(wanted)
                .arg(timeout_ms)
                .query(&mut conn)
                .map_err(|e| self.explain(e, step))?;
            if acked < u64::from(wanted) {
                return Err(StoreError::Unexpected {
                    store: STORE,
                    location: self.location.clone(),
                    step,
                    what: format!(
                        "{acked} of the {wanted} replicas the URL asks for (wait_replicas) had \
                         the write within {:?}; not taken as written",
                        self.timeout * 3 / 4
                    ),
                });
            }
        }
        *slot = Some(conn);
        Ok(result)
    }

    pub(crate) fn explain(&self, err: redis::RedisError, step: &'static str) -> StoreError {
        if let Some(reason) = super::tls_failure(&err) {
            return StoreError::Tls {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                reason,
                source: Box::new(err),
            };
        }
        if err.is_timeout() {
            return StoreError::Timeout {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                step,
                timeout: self.timeout,
            };
        }
        if err.kind() == redis::ErrorKind::AuthenticationFailed
            || err
                .code()
                .is_some_and(|c| c == "WRONGPASS" || c == "NOAUTH")
        {
            return StoreError::AccessDenied {
                store: STORE,
                user: if self.user.is_empty() {
                    "default".into()
                } else {
                    self.user.clone()
                },
                host: self.host.clone(),
                port: self.port,
                source: Box::new(err),
            };
        }
        if err.is_io_error() || err.is_connection_refusal() || err.is_connection_dropped() {
            return StoreError::Unreachable {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                source: Box::new(err),
            };
        }
        StoreError::Other {
            store: STORE,
            location: self.location.clone(),
            step,
            source: Box::new(err),
        }
    }

    pub(crate) fn unexpected(&self, step: &'static str, answer: &[String]) -> StoreError {
        StoreError::Unexpected {
            store: STORE,
            location: self.location.clone(),
            step,
            what: format!(
                "{answer:?}; do other programs write keys under the prefix {:?}?",
                self.prefix
            ),
        }
    }
}
