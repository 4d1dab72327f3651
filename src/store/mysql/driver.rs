//! How `store/` opens this engine's lease store, segment store and records.

use super::{MySqlConn, MySqlLeaseStore, MySqlSegmentStore};
use crate::store::driver::{lease_at, segment_at, Driver};
use crate::store::sql::records::{records_over, MYSQL_RECORDS_SCHEMA, RECORDS_TABLE};
use crate::store::sql::{column_max, NO_DDL};
use crate::store::StoreKind;

const KIND: StoreKind = StoreKind::MySql;

pub(crate) const DRIVER: Driver = Driver {
    kind: KIND,
    check: |url| super::MySqlStore::new(url, std::time::Duration::ZERO).map(drop),
    lease: |place| lease_at(MySqlLeaseStore::new(place.url(KIND)?)?, place),
    segment: |place| segment_at(MySqlSegmentStore::new(place.url(KIND)?)?, place),
    records: |place| {
        let mut conn = MySqlConn::new(place.url(KIND)?, MYSQL_RECORDS_SCHEMA, RECORDS_TABLE)?;
        if let Some(timeout) = place.timeout {
            conn = conn.with_timeout(timeout);
        }
        Ok(records_over(conn))
    },
    column_max: Some(|place, column| {
        let mut conn = MySqlConn::new(place.url(KIND)?, NO_DDL, "migrate")?;
        if let Some(timeout) = place.timeout {
            conn = conn.with_timeout(timeout);
        }
        column_max(&conn, place.name.unwrap_or_default(), column)
    }),
};
