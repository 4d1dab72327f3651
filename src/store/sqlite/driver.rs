//! How `store/` opens the embedded store's lease store, segment store and records.

use super::{SqliteConn, SqliteLeaseStore, SqliteSegmentStore};
use crate::store::driver::{lease_at, segment_at, Driver};
use crate::store::sql::records::{records_over, RECORDS_TABLE, SQLITE_RECORDS_SCHEMA};
use crate::store::StoreKind;

const KIND: StoreKind = StoreKind::Sqlite;

pub(crate) const DRIVER: Driver = Driver {
    kind: KIND,
    // A file is checked where it is parsed (its folder must exist).
    check: |_| Ok(()),
    lease: |place| lease_at(SqliteLeaseStore::new(place.file(KIND)?), place),
    segment: |place| segment_at(SqliteSegmentStore::new(place.file(KIND)?), place),
    records: |place| {
        let path = place.file(KIND)?.to_path_buf();
        let mut conn = SqliteConn::new(path, SQLITE_RECORDS_SCHEMA, RECORDS_TABLE);
        if let Some(timeout) = place.timeout {
            conn = conn.busy_timeout(timeout);
        }
        Ok(records_over(conn))
    },
};
