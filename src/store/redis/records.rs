//! The store's own records ([`RecordSteps`]) on Redis: one hash, `uidgen:store`, outside
//! the lease and segment prefixes.

use super::RedisConn;
use crate::store::guard::RecordSteps;
use crate::store::{StoreError, StoreKind};

/// The hash's key.
const KEY: &str = "uidgen:store";

/// The records on a Redis server.
#[derive(Clone, Debug)]
pub(crate) struct RedisRecords {
    pub(crate) conn: RedisConn,
}

impl RecordSteps for RedisRecords {
    fn describe(&self) -> String {
        format!("the Redis store {} (key {KEY})", self.conn.location())
    }

    fn kind(&self) -> StoreKind {
        StoreKind::Redis
    }

    fn get(&self, names: &[&str]) -> Result<Vec<Option<String>>, StoreError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        self.conn.run("reading the store's records", |conn| {
            redis::cmd("HMGET").arg(KEY).arg(names).query(conn)
        })
    }

    fn all(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.conn.run("listing the store's records", |conn| {
            redis::cmd("HGETALL").arg(KEY).query(conn)
        })
    }

    fn insert(&self, name: &str, value: &str) -> Result<bool, StoreError> {
        let written: i64 = self.conn.run("writing a store record", |conn| {
            redis::cmd("HSETNX")
                .arg(KEY)
                .arg(name)
                .arg(value)
                .query(conn)
        })?;
        Ok(written == 1)
    }

    fn put(&self, name: &str, value: &str) -> Result<(), StoreError> {
        self.conn.run("writing a store record", |conn| {
            redis::cmd("HSET")
                .arg(KEY)
                .arg(name)
                .arg(value)
                .query::<i64>(conn)
        })?;
        Ok(())
    }
}
