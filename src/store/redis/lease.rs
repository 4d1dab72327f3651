//! Worker-ID leases on Redis: each of the lease algorithm's steps is one Lua script, so
//! each is atomic, and the algorithm itself is the one every store follows.

use super::{RedisConn, LUA_NOW};
use crate::store::lease::{LeaseRecord, LeaseRow, LeaseSteps};
use crate::store::{StoreError, StoreKind};
use std::sync::Arc;
use std::time::Duration;

/// The default key prefix.
const DEFAULT_PREFIX: &str = "uidgen:lease:";

// Every script's KEYS: holders, expires, marks (hashes keyed by worker ID), highest (the
// highest worker ID ever created). A worker ID exists once it has a mark (0: never used).

// ARGV: worker ID. Answers now, whether the row exists, its holder ('' for none), expiry.
const READ: &str = "
local id = ARGV[1]
if redis.call('HEXISTS', KEYS[3], id) == 0 then return {num(now), '0', '', '0'} end
local holder = redis.call('HGET', KEYS[1], id) or ''
local expires = redis.call('HGET', KEYS[2], id) or '0'
return {num(now), '1', holder, expires}
";

// ARGV: min and max worker ID. Answers the lowest free existing ID from min to max (''
// for none) and the lowest ID at or above min with no row.
const LOWEST: &str = "
local min, max = tonumber(ARGV[1]), tonumber(ARGV[2])
local highest = tonumber(redis.call('GET', KEYS[4]) or '-1')
local last = math.min(highest, max)
local free, unused = '', nil
for id = min, last do
  if redis.call('HEXISTS', KEYS[3], num(id)) == 0 then
    if not unused then unused = id end
  elseif free == '' then
    local current = redis.call('HGET', KEYS[1], num(id))
    local expires = tonumber(redis.call('HGET', KEYS[2], num(id)) or '0')
    if not current or expires <= now then free = num(id) end
  end
  if unused and free ~= '' then break end
end
return {free, num(unused or math.max(last + 1, min))}
";

// ARGV: worker ID, holder, ttl ms. Takes an existing row that is free, expired or the
// holder's own; answers its mark, or '' if another holder has it.
const TAKE: &str = "
local id, holder = ARGV[1], ARGV[2]
local mark = redis.call('HGET', KEYS[3], id)
if not mark then return '' end
local current = redis.call('HGET', KEYS[1], id)
local expires = tonumber(redis.call('HGET', KEYS[2], id) or '0')
if current and current ~= holder and expires > now then return '' end
redis.call('HSET', KEYS[1], id, holder)
redis.call('HSET', KEYS[2], id, num(now + tonumber(ARGV[3])))
return mark
";

// ARGV: worker ID, holder, ttl ms. Creates the row held by the holder, mark 0; 0 if it
// exists.
const INSERT: &str = "
local id = ARGV[1]
if redis.call('HEXISTS', KEYS[3], id) == 1 then return 0 end
redis.call('HSET', KEYS[1], id, ARGV[2])
redis.call('HSET', KEYS[2], id, num(now + tonumber(ARGV[3])))
redis.call('HSET', KEYS[3], id, '0')
local highest = tonumber(redis.call('GET', KEYS[4]) or '-1')
if tonumber(id) > highest then redis.call('SET', KEYS[4], id) end
return 1
";

// ARGV: worker ID, holder, ttl ms, mark.
const RENEW: &str = "
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], num(now + tonumber(ARGV[3])))
local mark = redis.call('HGET', KEYS[3], ARGV[1])
if not mark or tonumber(mark) < tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
end
return 1
";

// ARGV: worker ID, holder, mark.
const RELEASE: &str = "
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], '0')
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
return 1
";

// Answers now, then per worker ID: id, 1 or 0 (held or not), holder, expires, mark.
const LIST: &str = "
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

struct Scripts {
    read: redis::Script,
    lowest: redis::Script,
    take: redis::Script,
    insert: redis::Script,
    renew: redis::Script,
    release: redis::Script,
    list: redis::Script,
}

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) on one
/// Redis server (not a cluster). Lease times are the server's clock (`TIME`), so holders
/// on many machines agree on expiry; each step of the lease algorithm is one Lua script,
/// so it is atomic.
///
/// The keys, under a prefix (default `uidgen:lease:`): `holders`, `expires` and `marks`,
/// hashes keyed by worker ID, and `highest`, the highest worker ID ever created. The
/// marks must persist: run Redis with AOF or RDB snapshots, or a restarted server hands
/// out worker IDs without their marks.
///
/// Every network step (resolving the host name, connecting with its handshake, each
/// script) is bounded by [`timeout`](Self::timeout). `rediss://` connects over TLS (the
/// `tls` feature), checking the certificate against the URL's host name, with
/// `?cacert=PATH` as the only CA trusted. One connection is opened on first use and
/// kept; clones share it. `Debug` and errors never show the password.
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
    steps: RedisLeases,
}

/// The lease steps: the connection and the scripts.
#[derive(Clone)]
struct RedisLeases {
    conn: RedisConn,
    scripts: Arc<Scripts>,
}

crate::store::net::key_value_store_face!(
    RedisLeaseStore,
    steps.conn,
    "Redis server",
    "uidgen:lease:"
);

impl RedisLeaseStore {
    /// The store on the server at `url` (`redis://[[user]:password@]host[:port][/db]`,
    /// or `rediss://` for TLS). Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let script = |body: &str| redis::Script::new(&format!("{LUA_NOW}{body}"));
        Ok(Self {
            steps: RedisLeases {
                conn: RedisConn::new(url)?.with_prefix(DEFAULT_PREFIX)?,
                scripts: Arc::new(Scripts {
                    read: script(READ),
                    lowest: script(LOWEST),
                    take: script(TAKE),
                    insert: script(INSERT),
                    renew: script(RENEW),
                    release: script(RELEASE),
                    list: script(LIST),
                }),
            },
        })
    }

    /// Deletes the store's keys, with every lease and time mark. Only for a store no
    /// generator will use again (tests, a retired deployment): the marks are what keep a
    /// reused worker ID's IDs above those made before.
    pub fn destroy(&self) -> Result<(), StoreError> {
        let keys = self.steps.keys();
        self.steps
            .conn
            .run("deleting the keys", |conn| {
                redis::cmd("DEL").arg(&keys).query::<i64>(conn)
            })
            .map(drop)
    }
}

impl RedisLeases {
    fn keys(&self) -> [String; 4] {
        ["holders", "expires", "marks", "highest"].map(|k| format!("{}{k}", self.conn.key_prefix()))
    }

    /// Runs `script` with the four keys and `args`.
    fn call<T: redis::FromRedisValue>(
        &self,
        step: &'static str,
        script: &redis::Script,
        args: &[String],
    ) -> Result<T, StoreError> {
        self.conn.run(step, |conn| {
            let mut invocation = script.prepare_invoke();
            for key in self.keys() {
                invocation.key(key);
            }
            for arg in args {
                invocation.arg(arg);
            }
            invocation.invoke(conn)
        })
    }
}

fn millis(ttl: Duration) -> String {
    u64::try_from(ttl.as_millis())
        .unwrap_or(u64::MAX / 4)
        .to_string()
}

fn number(text: &str) -> Option<u64> {
    text.parse().ok()
}

impl LeaseSteps for RedisLeases {
    fn describe(&self) -> String {
        self.conn.describe()
    }

    fn kind(&self) -> StoreKind {
        StoreKind::Redis
    }

    fn read(&self, worker_id: u64) -> Result<(Option<LeaseRow>, u64), StoreError> {
        let step = "reading the lease";
        let answer: Vec<String> = self.call(step, &self.scripts.read, &[worker_id.to_string()])?;
        match answer.as_slice() {
            [now, exists, holder, expires] => {
                let (now, expires_ms) = number(now)
                    .zip(number(expires))
                    .ok_or_else(|| self.conn.unexpected(step, &answer))?;
                let row = (exists == "1").then(|| LeaseRow {
                    holder: (!holder.is_empty()).then(|| holder.clone()),
                    expires_ms,
                });
                Ok((row, now))
            }
            _ => Err(self.conn.unexpected(step, &answer)),
        }
    }

    fn lowest(&self, min: u64, max: u64) -> Result<(Option<u64>, u64), StoreError> {
        let step = "looking for a free worker ID";
        let args = [min.to_string(), max.to_string()];
        let answer: Vec<String> = self.call(step, &self.scripts.lowest, &args)?;
        match answer.as_slice() {
            [free, unused] => {
                let unused = number(unused).ok_or_else(|| self.conn.unexpected(step, &answer))?;
                Ok((number(free), unused))
            }
            _ => Err(self.conn.unexpected(step, &answer)),
        }
    }

    fn take(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<Option<u64>, StoreError> {
        let step = "taking the lease";
        let args = [worker_id.to_string(), holder.to_owned(), millis(ttl)];
        let mark: String = self.call(step, &self.scripts.take, &args)?;
        if mark.is_empty() {
            return Ok(None);
        }
        number(&mark)
            .map(Some)
            .ok_or_else(|| self.conn.unexpected(step, &[mark]))
    }

    fn insert(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        let args = [worker_id.to_string(), holder.to_owned(), millis(ttl)];
        let inserted: i64 = self.call("creating a lease row", &self.scripts.insert, &args)?;
        Ok(inserted == 1)
    }

    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        let args = [
            worker_id.to_string(),
            holder.to_owned(),
            millis(ttl),
            mark_ms.to_string(),
        ];
        let renewed: i64 = self.call("renewing the lease", &self.scripts.renew, &args)?;
        Ok(renewed == 1)
    }

    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        let args = [
            worker_id.to_string(),
            holder.to_owned(),
            mark_ms.to_string(),
        ];
        let released: i64 = self.call("releasing the lease", &self.scripts.release, &args)?;
        Ok(released == 1)
    }

    fn list(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        let step = "listing the leases";
        let answer: Vec<String> = self.call(step, &self.scripts.list, &[])?;
        let Some((now, rows)) = answer.split_first() else {
            return Err(self.conn.unexpected(step, &answer));
        };
        let now = number(now).ok_or_else(|| self.conn.unexpected(step, &answer))?;
        if rows.len() % 5 != 0 {
            return Err(self.conn.unexpected(step, &answer));
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
                        _ => Err(self.conn.unexpected(step, row)),
                    }
                }
                _ => Err(self.conn.unexpected(step, row)),
            })
            .collect()
    }
}

crate::store::lease::lease_store_over_steps!(RedisLeaseStore, steps);
