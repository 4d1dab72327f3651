//! Worker-ID leases on Redis: one Lua script per step, so each step is atomic.

use super::lease::{Acquired, LeaseRecord, LeaseRequest, LeaseStore};
use super::{redact_url, StoreError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

const STORE: &str = "Redis";
const EXPECTED: &str = "redis://[[user]:password@]host[:port][/db]";

/// The default key prefix.
const DEFAULT_PREFIX: &str = "uidgen:lease:";

/// The server's clock in Unix milliseconds, as Lua: every script starts with it.
pub(super) const LUA_NOW: &str = "local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function num(x) return string.format('%d', x) end
";

// KEYS: holders, expires, marks (hashes keyed by worker ID), highest (the highest worker
// ID ever created). ARGV: holder, ttl ms, max worker ID, wanted worker ID or "".
// A worker ID exists once it has a mark (0: never used).
const ACQUIRE: &str = "
local holder, ttl, max, wanted = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local function take(id)
  redis.call('HSET', KEYS[1], num(id), holder)
  redis.call('HSET', KEYS[2], num(id), num(now + ttl))
  local mark = redis.call('HGET', KEYS[3], num(id))
  if not mark then
    mark = '0'
    redis.call('HSET', KEYS[3], num(id), mark)
  end
  local highest = tonumber(redis.call('GET', KEYS[4]) or '-1')
  if id > highest then redis.call('SET', KEYS[4], num(id)) end
  return {'granted', num(id), mark}
end
if wanted ~= '' then
  local id = tonumber(wanted)
  local current = redis.call('HGET', KEYS[1], num(id))
  if current and current ~= holder then
    local expires = tonumber(redis.call('HGET', KEYS[2], num(id)) or '0')
    if expires > now then return {'held', current, num(expires - now)} end
  end
  return take(id)
end
local highest = tonumber(redis.call('GET', KEYS[4]) or '-1')
local unused = nil
for id = 0, math.min(highest, max) do
  if redis.call('HEXISTS', KEYS[3], num(id)) == 0 then
    if not unused then unused = id end
  else
    local current = redis.call('HGET', KEYS[1], num(id))
    if not current then return take(id) end
    local expires = tonumber(redis.call('HGET', KEYS[2], num(id)) or '0')
    if expires <= now then return take(id) end
  end
end
if unused then return take(unused) end
if highest + 1 <= max then return take(highest + 1) end
return {'exhausted'}
";

// KEYS: holders, expires, marks. ARGV: worker ID, holder, ttl ms, mark.
const RENEW: &str = "
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], num(now + tonumber(ARGV[3])))
local mark = redis.call('HGET', KEYS[3], ARGV[1])
if not mark or tonumber(mark) < tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
end
return 1
";

// KEYS: holders, expires, marks. ARGV: worker ID, holder, mark.
const RELEASE: &str = "
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], '0')
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
return 1
";

// KEYS: holders, expires, marks, highest. Answers now, then per worker ID: id, 1 or 0
// (held or not), holder, expires, mark.
const LEASES: &str = "
local out = {num(now)}
local highest = tonumber(redis.call('GET', KEYS[4]) or '-1')
for id = 0, highest do
  local mark = redis.call('HGET', KEYS[3], num(id))
  if mark then
    local holder = redis.call('HGET', KEYS[1], num(id))
    local expires = redis.call('HGET', KEYS[2], num(id)) or '0'
    table.insert(out, num(id))
    table.insert(out, holder and '1' or '0')
    table.insert(out, holder or '')
    table.insert(out, expires)
    table.insert(out, mark)
  end
end
return out
";

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) on one
/// Redis server (not a cluster). Lease times are the server's clock (`TIME`), so holders
/// on many machines agree on expiry; each step is one Lua script, so it is atomic.
///
/// The keys, under a prefix (default `uidgen:lease:`): `holders`, `expires` and `marks`,
/// hashes keyed by worker ID, and `highest`, the highest worker ID ever created. The
/// marks must persist: run Redis with AOF or RDB snapshots, or a restarted server hands
/// out worker IDs without their marks.
///
/// Every network step (resolving the host name, connecting with its handshake, each
/// script) is bounded by [`timeout`](Self::timeout). One connection is opened on first
/// use and kept; clones share it. TLS is not built: use it on a trusted network.
/// `Debug` and errors never show the password.
///
/// ```no_run
/// use uidgen::{BitsAllocator, RedisLeaseStore, WorkerLease};
///
/// let store = RedisLeaseStore::new("redis://127.0.0.1:6379")?;
/// let lease = WorkerLease::builder(store).acquire(&BitsAllocator::default())?;
/// println!("worker ID {}", lease.worker_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RedisLeaseStore {
    info: redis::RedisConnectionInfo,
    host: String,
    port: u16,
    user: String,
    /// `redis://host:port/db`, for messages: never a password.
    location: String,
    timeout: Duration,
    prefix: String,
    conn: Arc<Mutex<Option<redis::Connection>>>,
    scripts: Arc<Scripts>,
}

struct Scripts {
    acquire: redis::Script,
    renew: redis::Script,
    release: redis::Script,
    leases: redis::Script,
}

impl std::fmt::Debug for RedisLeaseStore {
    // By hand: the connection settings hold the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLeaseStore")
            .field("location", &self.location)
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisLeaseStore {
    /// The store on the server at `url` (`redis://[[user]:password@]host[:port][/db]`).
    /// Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let invalid = |reason: String| StoreError::InvalidUrl {
            store: STORE,
            url: redact_url(url),
            reason,
            expected: EXPECTED,
        };
        // Parsed here, not by the driver: its messages may echo parts of the URL.
        let parsed = url::Url::parse(url.trim()).map_err(|e| invalid(e.to_string()))?;
        match parsed.scheme() {
            "redis" => {}
            "rediss" => {
                return Err(invalid(
                    "rediss:// needs TLS, which uidgen does not build; use redis:// on a \
                     trusted network"
                        .into(),
                ))
            }
            other => return Err(invalid(format!("the scheme is {other:?}, not \"redis\""))),
        }
        let host = match parsed.host_str() {
            Some(host) if !host.is_empty() && !parsed.cannot_be_a_base() => host.to_owned(),
            _ => return Err(invalid("no host (write redis://, with two slashes)".into())),
        };
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
        if parsed.query().is_some() {
            return Err(invalid("query parameters are not understood".into()));
        }
        let user = super::url::percent_decode(parsed.username());
        let mut info = redis::RedisConnectionInfo::default().set_db(db);
        if !user.is_empty() {
            info = info.set_username(&user);
        }
        if let Some(password) = parsed.password() {
            info = info.set_password(super::url::percent_decode(password));
        }
        let location = format!(
            "redis://{}{host}:{port}/{db}",
            if user.is_empty() {
                String::new()
            } else {
                format!("{user}@")
            }
        );
        let script = |body: &str| redis::Script::new(&format!("{LUA_NOW}{body}"));
        Ok(Self {
            info,
            host,
            port,
            user,
            location,
            timeout: Duration::from_secs(5),
            prefix: DEFAULT_PREFIX.into(),
            conn: Arc::new(Mutex::new(None)),
            scripts: Arc::new(Scripts {
                acquire: script(ACQUIRE),
                renew: script(RENEW),
                release: script(RELEASE),
                leases: script(LEASES),
            }),
        })
    }

    /// The bound on each network step: resolving the host name, connecting (with the
    /// handshake) and each script (default 5 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        // The bound is set on the connection when it is opened.
        self.conn = Arc::new(Mutex::new(None));
        self
    }

    /// The prefix of every key (default `uidgen:lease:`): stores with different prefixes
    /// are independent.
    pub fn prefix(mut self, prefix: &str) -> Result<Self, StoreError> {
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

    /// The prefix of every key.
    pub(super) fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The server, without its password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Deletes the store's keys, with every lease and time mark. Only for a store no
    /// generator will use again (tests, a retired deployment): the marks are what keep a
    /// reused worker ID's IDs above those made before.
    pub fn destroy(&self) -> Result<(), StoreError> {
        self.run("deleting the keys", |conn| {
            redis::cmd("DEL").arg(&self.keys()).query::<i64>(conn)
        })
        .map(drop)
    }

    fn keys(&self) -> [String; 4] {
        ["holders", "expires", "marks", "highest"].map(|k| format!("{}{k}", self.prefix))
    }

    fn connect(&self) -> Result<redis::Connection, StoreError> {
        let address = super::net::resolve(STORE, &self.host, self.port, self.timeout)?;
        // The resolved address, so the driver does not resolve again without a bound.
        let info = redis::ConnectionAddr::Tcp(address.ip().to_string(), address.port());
        let info = redis::IntoConnectionInfo::into_connection_info(info)
            .map_err(|e| self.explain(e, "connecting"))?
            .set_redis_settings(self.info.clone());
        let client = redis::Client::open(info).map_err(|e| self.explain(e, "connecting"))?;
        let conn = client
            .get_connection_with_timeout(self.timeout)
            .map_err(|e| self.explain(e, "connecting"))?;
        // Each later command is bounded too.
        conn.set_read_timeout(Some(self.timeout))
            .and_then(|()| conn.set_write_timeout(Some(self.timeout)))
            .map_err(|e| self.explain(e, "connecting"))?;
        Ok(conn)
    }

    /// Runs `work` on the connection (opened if there is none). A step that fails drops
    /// the connection: after a timeout its state is unknown.
    pub(super) fn run<T>(
        &self,
        step: &'static str,
        work: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let mut slot = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let mut conn = match slot.take() {
            Some(conn) => conn,
            None => self.connect()?,
        };
        let result = work(&mut conn).map_err(|e| self.explain(e, step))?;
        *slot = Some(conn);
        Ok(result)
    }

    fn explain(&self, err: redis::RedisError, step: &'static str) -> StoreError {
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

    pub(super) fn unexpected(&self, step: &'static str, answer: &[String]) -> StoreError {
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

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX / 4)
}

impl LeaseStore for RedisLeaseStore {
    fn describe(&self) -> String {
        format!("the Redis store {} (keys {}*)", self.location, self.prefix)
    }

    fn acquire(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        let [holders, expires, marks, highest] = self.keys();
        let step = "taking a worker ID";
        let answer: Vec<String> = self.run(step, |conn| {
            self.scripts
                .acquire
                .key(holders)
                .key(expires)
                .key(marks)
                .key(highest)
                .arg(request.holder)
                .arg(millis(request.ttl))
                .arg(request.max_worker_id)
                .arg(
                    request
                        .worker_id
                        .map(|id| id.to_string())
                        .unwrap_or_default(),
                )
                .invoke(conn)
        })?;
        let number = |text: &String| text.parse::<u64>().ok();
        match answer.as_slice() {
            [kind, id, mark] if kind == "granted" => match (number(id), number(mark)) {
                (Some(worker_id), Some(mark_ms)) => Ok(Acquired::Granted { worker_id, mark_ms }),
                _ => Err(self.unexpected(step, &answer)),
            },
            [kind, holder, left] if kind == "held" => match number(left) {
                Some(left) => Ok(Acquired::Held {
                    holder: holder.clone(),
                    expires_in: Duration::from_millis(left),
                }),
                None => Err(self.unexpected(step, &answer)),
            },
            [kind] if kind == "exhausted" => Ok(Acquired::Exhausted),
            _ => Err(self.unexpected(step, &answer)),
        }
    }

    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        let [holders, expires, marks, _] = self.keys();
        let renewed: i64 = self.run("renewing the lease", |conn| {
            self.scripts
                .renew
                .key(holders)
                .key(expires)
                .key(marks)
                .arg(worker_id)
                .arg(holder)
                .arg(millis(ttl))
                .arg(mark_ms)
                .invoke(conn)
        })?;
        Ok(renewed == 1)
    }

    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        let [holders, expires, marks, _] = self.keys();
        let released: i64 = self.run("releasing the lease", |conn| {
            self.scripts
                .release
                .key(holders)
                .key(expires)
                .key(marks)
                .arg(worker_id)
                .arg(holder)
                .arg(mark_ms)
                .invoke(conn)
        })?;
        Ok(released == 1)
    }

    fn leases(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        let [holders, expires, marks, highest] = self.keys();
        let step = "listing the leases";
        let answer: Vec<String> = self.run(step, |conn| {
            self.scripts
                .leases
                .key(holders)
                .key(expires)
                .key(marks)
                .key(highest)
                .invoke(conn)
        })?;
        let number = |text: &String| text.parse::<u64>().ok();
        let Some((now, rows)) = answer.split_first() else {
            return Err(self.unexpected(step, &answer));
        };
        let now = number(now).ok_or_else(|| self.unexpected(step, &answer))?;
        if rows.len() % 5 != 0 {
            return Err(self.unexpected(step, &answer));
        }
        rows.chunks(5)
            .map(|row| match row {
                [id, held, holder, expires, mark] => {
                    match (number(id), number(expires), number(mark)) {
                        (Some(id), Some(expires), Some(mark)) => Ok(LeaseRecord::new(
                            id,
                            (held == "1").then(|| holder.clone()),
                            expires,
                            now,
                            mark,
                        )),
                        _ => Err(self.unexpected(step, row)),
                    }
                }
                _ => Err(self.unexpected(step, row)),
            })
            .collect()
    }
}
