//! How `store/` opens this engine's lease store, segment store and records: the one
//! place outside this folder that knows it exists is its line in `store/mod.rs`'s
//! `engines!` list.

use super::records::ZkRecords;
use super::{ZkConn, ZooKeeperLeaseStore, ZooKeeperSegmentStore};
use crate::store::driver::{lease_at, segment_at, Driver};
use crate::store::StoreKind;

const KIND: StoreKind = StoreKind::ZooKeeper;

pub(crate) const DRIVER: Driver = Driver {
    kind: KIND,
    check: |url| ZkConn::new(url).map(drop),
    lease: |place| lease_at(ZooKeeperLeaseStore::new(place.url(KIND)?)?, place),
    segment: |place| segment_at(ZooKeeperSegmentStore::new(place.url(KIND)?)?, place),
    records: |place| {
        let mut conn = ZkConn::new(place.url(KIND)?)?;
        if let Some(timeout) = place.timeout {
            conn = conn.with_timeout(timeout);
        }
        Ok(Box::new(ZkRecords { conn }))
    },
    column_max: None,
};
