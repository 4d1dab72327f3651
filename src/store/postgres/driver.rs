//! How `store/` opens this engine's lease store, segment store and records.

use super::{PgConn, PostgresLeaseStore, PostgresSegmentStore};
use crate::store::driver::{lease_at, segment_at, Driver};
use crate::store::sql::records::{records_over, POSTGRES_RECORDS_SCHEMA, RECORDS_TABLE};
use crate::store::sql::{column_max, NO_DDL};
use crate::store::StoreKind;

const KIND: StoreKind = StoreKind::Postgres;

pub(crate) const DRIVER: Driver = Driver {
    kind: KIND,
    check: |url| PgConn::new(url, "", "t").map(drop),
    lease: |place| lease_at(PostgresLeaseStore::new(place.url(KIND)?)?, place),
    segment: |place| segment_at(PostgresSegmentStore::new(place.url(KIND)?)?, place),
    records: |place| {
        let mut conn = PgConn::new(place.url(KIND)?, POSTGRES_RECORDS_SCHEMA, RECORDS_TABLE)?;
        if let Some(timeout) = place.timeout {
            conn = conn.with_timeout(timeout);
        }
        Ok(records_over(conn))
    },
    column_max: Some(|place, column| {
        let mut conn = PgConn::new(place.url(KIND)?, NO_DDL, "migrate")?;
        if let Some(timeout) = place.timeout {
            conn = conn.with_timeout(timeout);
        }
        column_max(&conn, place.name.unwrap_or_default(), column)
    }),
};
