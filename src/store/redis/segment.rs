//! Segment counters on Redis: one hash per tag, moved by `HINCRBY` inside a Lua script.

use super::{RedisConn, LUA_NOW};
use crate::store::segment::{
    check_create, check_step, check_tag, counter_overflow, missing_tag, SegmentStore, TagRecord,
};
use crate::store::{StoreError, StoreKind};
use std::sync::Arc;

const STORE: &str = "Redis";
const DEFAULT_PREFIX: &str = "uidgen:segment:";

// KEYS[1]: the tag's hash. ARGV[1]: the step. The new max_id is read back as a string:
// a Lua number (a double) would round counters above 2^53.
const ALLOCATE: &str = "
if redis.call('HEXISTS', KEYS[1], 'max_id') == 0 then return {'missing'} end
local moved = redis.pcall('HINCRBY', KEYS[1], 'max_id', ARGV[1])
if type(moved) == 'table' and moved.err then
  if string.find(moved.err, 'overflow') then
    return {'overflow', redis.call('HGET', KEYS[1], 'max_id')}
  end
  return {'error', moved.err}
end
redis.call('HSET', KEYS[1], 'update_time', num(now))
return {'ok', redis.call('HGET', KEYS[1], 'max_id')}
";

// ARGV: first ID, step, description.
const CREATE: &str = "
if redis.call('HSETNX', KEYS[1], 'max_id', ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'step', ARGV[2], 'description', ARGV[3], 'update_time', num(now))
return 1
";

// ARGV: from, to (a give-back lowers it, a repair raises it).
const GIVE_BACK: &str = "
if redis.call('HGET', KEYS[1], 'max_id') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'max_id', ARGV[2], 'update_time', num(now))
return 1
";

/// Segment counters (see [`SegmentGenerator`](crate::SegmentGenerator)) on Redis: one
/// hash per tag (`max_id`, `step`, `description`, `update_time`) under a key prefix
/// (default `uidgen:segment:`). Taking a range is one Lua script around `HINCRBY`, so it
/// is atomic, and a tag that does not exist is an error, never a new counter at 0.
///
/// Redis keeps the counters in memory: run it with `appendonly yes` and `appendfsync
/// always`, or a restart can bring back an older counter and ranges already handed out;
/// a failover to a replica that is behind does the same. A generator refuses a range
/// below one it has seen, but a new process cannot know.
///
/// ```no_run
/// use uidgen::{RedisSegmentStore, SegmentGenerator};
///
/// let store = RedisSegmentStore::new("redis://127.0.0.1:6379")?;
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1, 1000).build()?;
/// println!("{}", orders.next_uid()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RedisSegmentStore {
    /// The lease store's connection handling (URL, bounds, errors), with its own prefix.
    conn: RedisConn,
    scripts: Arc<[redis::Script; 3]>,
}

crate::store::net::key_value_store_face!(
    RedisSegmentStore,
    conn,
    "Redis server",
    "uidgen:segment:"
);

impl RedisSegmentStore {
    /// The store on the server at `url` (`redis://[[user]:password@]host[:port][/db]`).
    /// Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let script = |body: &str| redis::Script::new(&format!("{LUA_NOW}{body}"));
        Ok(Self {
            conn: RedisConn::new(url)?.with_prefix(DEFAULT_PREFIX)?,
            scripts: Arc::new([script(ALLOCATE), script(CREATE), script(GIVE_BACK)]),
        })
    }

    /// Deletes every tag under the prefix. Only for tags no one will use again.
    pub fn destroy(&self) -> Result<(), StoreError> {
        let keys = self.keys()?;
        if keys.is_empty() {
            return Ok(());
        }
        self.conn
            .run("deleting the keys", |conn| {
                redis::cmd("DEL").arg(&keys).query::<i64>(conn)
            })
            .map(drop)
    }

    fn key(&self, tag: &str) -> String {
        format!("{}{tag}", self.conn.key_prefix())
    }

    /// Every key under the prefix (SCAN, so the server is never blocked).
    fn keys(&self) -> Result<Vec<String>, StoreError> {
        let pattern: String = self
            .conn
            .key_prefix()
            .chars()
            .flat_map(|c| {
                let escape = matches!(c, '*' | '?' | '[' | ']' | '\\');
                escape.then_some('\\').into_iter().chain([c])
            })
            .chain(['*'])
            .collect();
        let mut keys = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, batch): (u64, Vec<String>) = self.conn.run("listing the tags", |conn| {
                redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .query(conn)
            })?;
            keys.extend(batch);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    /// Sets `tag`'s counter from `from` to `to` if it is still `from`.
    fn set_counter(
        &self,
        step: &'static str,
        tag: &str,
        from: u64,
        to: u64,
    ) -> Result<bool, StoreError> {
        let key = self.key(tag);
        let changed: i64 = self.conn.run(step, |conn| {
            self.scripts[2].key(&key).arg(from).arg(to).invoke(conn)
        })?;
        Ok(changed == 1)
    }

    fn read(&self, key: &str, step: &'static str) -> Result<Option<TagRecord>, StoreError> {
        let fields: Vec<Option<String>> = self.conn.run(step, |conn| {
            redis::cmd("HMGET")
                .arg(key)
                .arg(&["max_id", "step", "description", "update_time"])
                .query(conn)
        })?;
        let tag = key[self.conn.key_prefix().len()..].to_owned();
        match fields.as_slice() {
            [None, ..] => Ok(None),
            [Some(max_id), step_field, description, updated] => {
                let number =
                    |text: &Option<String>| text.as_deref().unwrap_or("0").parse::<u64>().ok();
                match (
                    max_id.parse::<u64>().ok(),
                    number(step_field),
                    number(updated),
                ) {
                    (Some(max_id), Some(base), Some(updated_ms)) => Ok(Some(TagRecord {
                        tag,
                        max_id,
                        step: base,
                        description: description.clone().unwrap_or_default(),
                        updated_ms,
                    })),
                    _ => Err(self.conn.unexpected(step, &[format!("{fields:?}")])),
                }
            }
            _ => Err(self.conn.unexpected(step, &[format!("{fields:?}")])),
        }
    }
}

impl SegmentStore for RedisSegmentStore {
    fn describe(&self) -> String {
        self.conn.describe()
    }

    fn kind(&self) -> StoreKind {
        StoreKind::Redis
    }

    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        check_tag(STORE, tag)?;
        check_step(STORE, tag, step)?;
        let key = self.key(tag);
        let what = "taking a range";
        let answer: Vec<String> = self.conn.run(what, |conn| {
            self.scripts[0].key(&key).arg(step).invoke(conn)
        })?;
        match answer.as_slice() {
            [kind, max_id] if kind == "ok" => max_id
                .parse()
                .map_err(|_| self.conn.unexpected(what, &answer)),
            [kind] if kind == "missing" => Err(missing_tag(STORE, &self.describe(), tag)),
            [kind, max_id] if kind == "overflow" => Err(counter_overflow(STORE, tag, max_id, step)),
            _ => Err(self.conn.unexpected(what, &answer)),
        }
    }

    fn create(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
        description: &str,
    ) -> Result<bool, StoreError> {
        check_create(STORE, tag, first_id, step, description)?;
        let key = self.key(tag);
        let created: i64 = self.conn.run("creating a tag", |conn| {
            self.scripts[1]
                .key(&key)
                .arg(first_id)
                .arg(step)
                .arg(description)
                .invoke(conn)
        })?;
        Ok(created == 1)
    }

    crate::store::segment::give_back_and_raise!(|_: &Self| STORE);

    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        check_tag(STORE, tag)?;
        self.read(&self.key(tag), "reading a tag")
    }

    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        let mut records = Vec::new();
        for key in self.keys()? {
            if let Some(record) = self.read(&key, "listing the tags")? {
                records.push(record);
            }
        }
        Ok(records)
    }
}
