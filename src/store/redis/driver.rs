//! How `store/` opens this engine's lease store, segment store and records: the one
//! place outside this folder that knows it exists is its line in `store/mod.rs`'s
//! `engines!` list.

use super::records::RedisRecords;
use super::{RedisConn, RedisLeaseStore, RedisSegmentStore};
use crate::store::driver::{lease_at, segment_at, Driver};
use crate::store::StoreKind;

const KIND: StoreKind = StoreKind::Redis;

pub(crate) const DRIVER: Driver = Driver {
    kind: KIND,
    check: |url| RedisConn::new(url).map(drop),
    lease: |place| lease_at(RedisLeaseStore::new(place.url(KIND)?)?, place),
    segment: |place| segment_at(RedisSegmentStore::new(place.url(KIND)?)?, place),
    records: |place| {
        let mut conn = RedisConn::new(place.url(KIND)?)?;
        if let Some(timeout) = place.timeout {
            conn = conn.with_timeout(timeout);
        }
        Ok(Box::new(RedisRecords { conn }))
    },
    column_max: None,
};
