//! How `store/` opens the embedded store's lease store, segment store and records.

use super::{SqliteConn, SqliteLeaseStore, SqliteSegmentStore};
use crate::store::driver::{lease_at, segment_at, Driver};
use crate::store::sql::records::{records_over, RECORDS_TABLE, SQLITE_RECORDS_SCHEMA};
use crate::store::sql::{checked_max, MaxValue};
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
    column_max: Some(|place, column| {
        column_max(
            place.file(KIND)?,
            place.name.unwrap_or_default(),
            column,
        )
    }),
};

/// `MAX(column)` of `table` in the file, opened read-only: an old scheme's database is
/// never written, nor created at a mistyped path.
fn column_max(
    path: &std::path::Path,
    table: &str,
    column: &str,
) -> Result<Option<u64>, crate::store::StoreError> {
    use rusqlite::types::ValueRef;
    use rusqlite::OpenFlags;
    let step = "reading the highest ID";
    let failed = |e| super::failed(path, step, e);
    let conn = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(failed)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(failed)?;
    let sql = format!("SELECT MAX({column}), COUNT({column}) FROM {table}");
    conn.query_row(&sql, [], |row| {
        let max = match row.get_ref(0)? {
            ValueRef::Null => MaxValue::Null,
            ValueRef::Integer(max) => MaxValue::Int(max),
            ValueRef::Real(_) => MaxValue::Other("floating-point"),
            ValueRef::Text(_) => MaxValue::Other("text"),
            ValueRef::Blob(_) => MaxValue::Other("bytes"),
        };
        Ok((max, row.get::<_, i64>(1)?))
    })
    .map_err(failed)
    .and_then(|(max, count)| {
        checked_max(max, count, column, table).map_err(|what| crate::store::StoreError::Unexpected {
            store: KIND.name(),
            location: path.display().to_string(),
            step,
            what,
        })
    })
}

