//! The lease steps of every SQL engine, in one `WORKER_LEASE` table: each step is one
//! autocommitted statement (two on engines without `UPDATE ... RETURNING`), and whoever
//! takes a row wins by the statement's own row count, so processes that start at once
//! never get the same worker ID.

use super::{millis, SqlConn, SqlTable};
use crate::store::lease::{LeaseRecord, LeaseRow, LeaseSteps};
use crate::store::{StoreError, StoreKind};
use std::time::Duration;

/// The lease steps on a table: [`SqlTable`] used as [`LeaseSteps`].
pub(crate) type SqlLeases<C> = SqlTable<C>;

impl<C: SqlConn> LeaseSteps for SqlLeases<C> {
    fn describe(&self) -> String {
        SqlTable::describe(self)
    }

    fn kind(&self) -> StoreKind {
        self.conn.kind()
    }

    fn read(&self, worker_id: u64) -> Result<(Option<LeaseRow>, u64), StoreError> {
        let step = "reading the lease";
        let sql = format!(
            "SELECT HOLDER, EXPIRES_MS, {} FROM {} WHERE WORKER_ID = ?",
            self.conn.dialect().now_ms,
            self.table
        );
        let done = self.conn.exec(step, &sql, &[worker_id.into()])?;
        let Some(row) = done.rows.first() else {
            return Ok((None, 0));
        };
        let columns = self.columns(step);
        let lease = LeaseRow {
            holder: columns.text(row, 0)?,
            expires_ms: columns.u64(row, 1)?,
        };
        Ok((Some(lease), columns.u64(row, 2)?))
    }

    fn lowest(&self, min: u64, max: u64) -> Result<(Option<u64>, u64), StoreError> {
        let step = "looking for a free worker ID";
        let (table, now) = (&self.table, self.conn.dialect().now_ms);
        // The first gap at or above min: min itself, or one past a row whose next has none.
        let sql = format!(
            "SELECT
               (SELECT MIN(WORKER_ID) FROM {table}
                 WHERE (HOLDER IS NULL OR EXPIRES_MS <= {now})
                   AND WORKER_ID >= ? AND WORKER_ID <= ?),
               CASE WHEN NOT EXISTS (SELECT 1 FROM {table} WHERE WORKER_ID = ?) THEN ?
                 ELSE (SELECT MIN(a.WORKER_ID) + 1 FROM {table} AS a WHERE a.WORKER_ID >= ?
                   AND NOT EXISTS
                   (SELECT 1 FROM {table} AS b WHERE b.WORKER_ID = a.WORKER_ID + 1)) END"
        );
        let params = [min.into(), max.into(), min.into(), min.into(), min.into()];
        let done = self.conn.exec(step, &sql, &params)?;
        let columns = self.columns(step);
        let row = done.rows.first().map(Vec::as_slice).unwrap_or_default();
        let free = columns.int(row, 0)?.and_then(|n| u64::try_from(n).ok());
        Ok((free, columns.u64(row, 1)?))
    }

    fn take(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<Option<u64>, StoreError> {
        let step = "taking the lease";
        let dialect = self.conn.dialect();
        let (now, modified) = (dialect.now_ms, dialect.modified_now);
        let update = format!(
            "UPDATE {} SET HOLDER = ?, EXPIRES_MS = {now} + ?, MODIFIED = {modified}
             WHERE WORKER_ID = ? AND (HOLDER IS NULL OR EXPIRES_MS <= {now} OR HOLDER = ?){}",
            self.table,
            if dialect.update_returning {
                " RETURNING MARK_MS"
            } else {
                ""
            }
        );
        let params = [holder.into(), millis(ttl), worker_id.into(), holder.into()];
        let done = self.conn.exec(step, &update, &params)?;
        if dialect.update_returning {
            return done
                .rows
                .first()
                .map(|row| self.columns(step).u64(row, 0))
                .transpose();
        }
        if done.affected != 1 {
            return Ok(None);
        }
        // The lease is ours now: only its holder changes the mark, so this read is exact.
        let select = format!("SELECT MARK_MS FROM {} WHERE WORKER_ID = ?", self.table);
        let step = "reading the time mark";
        let done = self.conn.exec(step, &select, &[worker_id.into()])?;
        match done.rows.first() {
            Some(row) => Ok(Some(self.columns(step).u64(row, 0)?)),
            None => Ok(Some(0)),
        }
    }

    fn insert(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        let dialect = self.conn.dialect();
        let insert = format!(
            "INSERT INTO {} (WORKER_ID, HOLDER, EXPIRES_MS, MARK_MS, MODIFIED)
             VALUES (?, ?, {} + ?, 0, {})",
            self.table, dialect.now_ms, dialect.modified_now
        );
        let params = [worker_id.into(), holder.into(), millis(ttl)];
        let done = self.conn.exec("creating a lease row", &insert, &params)?;
        Ok(!done.duplicate && done.affected == 1)
    }

    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        let dialect = self.conn.dialect();
        let update = format!(
            "UPDATE {} SET EXPIRES_MS = {} + ?, MARK_MS = {}(MARK_MS, ?), MODIFIED = {}
             WHERE WORKER_ID = ? AND HOLDER = ?",
            self.table, dialect.now_ms, dialect.greatest, dialect.modified_now
        );
        let params = [millis(ttl), mark_ms.into(), worker_id.into(), holder.into()];
        Ok(self
            .conn
            .exec("renewing the lease", &update, &params)?
            .affected
            == 1)
    }

    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        let update = format!(
            "UPDATE {} SET HOLDER = NULL, EXPIRES_MS = 0, MARK_MS = ?, MODIFIED = {}
             WHERE WORKER_ID = ? AND HOLDER = ?",
            self.table,
            self.conn.dialect().modified_now
        );
        let params = [mark_ms.into(), worker_id.into(), holder.into()];
        Ok(self
            .conn
            .exec("releasing the lease", &update, &params)?
            .affected
            == 1)
    }

    fn list(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        let step = "listing the leases";
        let select = format!(
            "SELECT WORKER_ID, HOLDER, EXPIRES_MS, MARK_MS, {} FROM {} ORDER BY WORKER_ID",
            self.conn.dialect().now_ms,
            self.table
        );
        let done = self.conn.exec(step, &select, &[])?;
        let columns = self.columns(step);
        done.rows
            .iter()
            .map(|row| {
                Ok(LeaseRecord::new(
                    columns.u64(row, 0)?,
                    columns.text(row, 1)?,
                    columns.u64(row, 2)?,
                    columns.u64(row, 4)?,
                    columns.u64(row, 3)?,
                ))
            })
            .collect()
    }
}

/// Drops `table`, for the stores' `destroy`.
#[cfg(any(feature = "mysql", feature = "postgres"))]
pub(crate) fn drop_table(conn: &dyn SqlConn, table: &str) -> Result<(), StoreError> {
    let sql = format!("DROP TABLE IF EXISTS {table}");
    conn.exec("dropping the table", &sql, &[]).map(drop)
}
