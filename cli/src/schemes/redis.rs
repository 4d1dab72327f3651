//! The Redis schemes: `INCR` (one ID a call), `INCRBY` (a batch a call) and a snowflake
//! made in a Lua script, each thread on a connection of its own.

use super::{set_open, Client, Entry, Error, Place, Scheme, BATCH};

pub(super) fn fill(all: &mut [Entry]) {
    set_open(all, "redis-incr", |place| open(place, Kind::Incr));
    set_open(all, "redis-incrby", |place| open(place, Kind::IncrBy));
    set_open(all, "redis-lua-snowflake", |place| open(place, Kind::Lua));
}

#[derive(Clone, Copy)]
enum Kind {
    Incr,
    IncrBy,
    Lua,
}

/// The counter key of INCR and INCRBY.
const COUNTER: &str = "uidgen:schemes:counter";
/// The prefix of the Lua snowflake's per-millisecond keys.
const LUA_PREFIX: &str = "uidgen:schemes:snowflake";

/// Reads Redis's clock, counts within its millisecond under a key that expires, and
/// answers the millisecond and the sequence: Redis's Lua numbers are doubles, exact only
/// to 2^53, so the 64-bit ID is put together by the caller. A millisecond's 4097th call
/// answers -1 (the caller asks again).
const SNOWFLAKE_LUA: &str = r"
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key = KEYS[1] .. ':' .. ms
local seq = redis.call('INCR', key)
if seq == 1 then redis.call('PEXPIRE', key, 1000) end
if seq > 4096 then return {ms, -1} end
return {ms, seq - 1}
";

struct Redis {
    client: redis::Client,
    kind: Kind,
}

fn open(place: &Place<'_>, kind: Kind) -> Result<Box<dyn Scheme>, Error> {
    let url = place
        .stores
        .first()
        .ok_or("--store redis://HOST:PORT is needed")?;
    // uidgen's own parameters (accept_data_loss) are not the client's.
    let plain = url.split_once('?').map_or(url.as_str(), |(base, _)| base);
    let client = redis::Client::open(plain)
        .map_err(|e| format!("not a Redis URL ({}): {e}", super::describe(url)))?;
    Ok(Box::new(Redis { client, kind }))
}

impl Scheme for Redis {
    fn client(&self) -> Result<Box<dyn Client>, Error> {
        let connection = self
            .client
            .get_connection_with_timeout(super::CALL_LIMIT)
            .map_err(|e| format!("cannot connect to Redis: {e}"))?;
        // A Redis that stops answering fails the call instead of hanging the run.
        connection
            .set_read_timeout(Some(super::CALL_LIMIT))
            .and_then(|()| connection.set_write_timeout(Some(super::CALL_LIMIT)))
            .map_err(|e| format!("Redis: {e}"))?;
        Ok(Box::new(Connection {
            connection,
            kind: self.kind,
            script: redis::Script::new(SNOWFLAKE_LUA),
        }))
    }
}

struct Connection {
    connection: redis::Connection,
    kind: Kind,
    script: redis::Script,
}

/// Twitter's epoch and a worker ID, as the in-process snowflake uses.
const EPOCH_MS: i64 = 1_288_834_974_657;
const WORKER: i64 = 2;

impl Client for Connection {
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), Error> {
        let failed = |e: redis::RedisError| format!("Redis: {e}");
        match self.kind {
            Kind::Incr => {
                let id: u64 = redis::cmd("INCR")
                    .arg(COUNTER)
                    .query(&mut self.connection)
                    .map_err(failed)?;
                out.push(u128::from(id));
            }
            Kind::IncrBy => {
                let last: u64 = redis::cmd("INCRBY")
                    .arg(COUNTER)
                    .arg(BATCH)
                    .query(&mut self.connection)
                    .map_err(failed)?;
                let first = last + 1 - BATCH as u64;
                out.extend((first..=last).map(u128::from));
            }
            Kind::Lua => loop {
                let (ms, seq): (i64, i64) = self
                    .script
                    .key(LUA_PREFIX)
                    .invoke(&mut self.connection)
                    .map_err(failed)?;
                if seq >= 0 {
                    let id = (ms - EPOCH_MS) << 22 | WORKER << 12 | seq;
                    out.push(id as u128);
                    return Ok(());
                }
            },
        }
        Ok(())
    }
}
