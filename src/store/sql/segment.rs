//! The segment steps of every SQL engine, in Meituan Leaf's `leaf_alloc` table: taking
//! a range is one statement whose own reply carries the new counter (`RETURNING`, or
//! MySQL's `LAST_INSERT_ID(expr)`), never a later read that another session could have
//! moved on meanwhile, so no two processes ever get the same range.

use super::{SqlConn, SqlTable};
use crate::store::segment::{
    check_create, check_step, check_tag, no_range, SegmentStore, TagRecord,
};
use crate::store::{StoreError, StoreKind};

/// The segment counters in a table: [`SqlTable`] used as a [`SegmentStore`].
pub(crate) type SqlSegments<C> = SqlTable<C>;

impl<C: SqlConn> SqlSegments<C> {
    fn store(&self) -> &'static str {
        self.conn.kind().name()
    }

    fn select(&self) -> String {
        format!(
            "SELECT biz_tag, max_id, step, description, {} FROM {}",
            self.conn.dialect().updated_ms,
            self.table
        )
    }

    fn records(
        &self,
        step: &'static str,
        rows: &[Vec<super::Value>],
    ) -> Result<Vec<TagRecord>, StoreError> {
        let columns = self.columns(step);
        rows.iter()
            .map(|row| {
                Ok(TagRecord::new(
                    columns.text(row, 0)?.unwrap_or_default(),
                    columns.u64(row, 1)?,
                    columns.u64(row, 2)?,
                    columns.text(row, 3)?.unwrap_or_default(),
                    columns
                        .int(row, 4)?
                        .and_then(|n| u64::try_from(n).ok())
                        .unwrap_or(0),
                ))
            })
            .collect()
    }
}

impl<C: SqlConn> SqlSegments<C> {
    /// Sets `tag`'s counter from `from` to `to` if it is still `from`.
    fn set_counter(
        &self,
        step: &'static str,
        tag: &str,
        from: u64,
        to: u64,
    ) -> Result<bool, StoreError> {
        let sql = format!(
            "UPDATE {} SET max_id = ?, update_time = {} WHERE biz_tag = ? AND max_id = ?",
            self.table,
            self.conn.dialect().stamp_now
        );
        let params = [to.into(), tag.into(), from.into()];
        Ok(self.conn.exec(step, &sql, &params)?.affected == 1)
    }
}

impl<C: SqlConn> SegmentStore for SqlSegments<C> {
    fn describe(&self) -> String {
        SqlTable::describe(self)
    }

    fn kind(&self) -> StoreKind {
        self.conn.kind()
    }

    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        check_tag(self.store(), tag)?;
        check_step(self.store(), tag, step)?;
        let dialect = self.conn.dialect();
        let sql = if dialect.update_returning {
            format!(
                "UPDATE {} SET max_id = max_id + ?, update_time = {}
                 WHERE biz_tag = ? AND max_id <= 9223372036854775807 - ? RETURNING max_id",
                self.table, dialect.stamp_now
            )
        } else {
            format!(
                "UPDATE {} SET max_id = LAST_INSERT_ID(max_id + ?), update_time = {}
                 WHERE biz_tag = ? AND max_id <= 9223372036854775807 - ?",
                self.table, dialect.stamp_now
            )
        };
        let what = "taking a range";
        let done = self
            .conn
            .exec(what, &sql, &[step.into(), tag.into(), step.into()])?;
        let max_id = match done.rows.first() {
            Some(row) => Some(self.columns(what).u64(row, 0)?),
            None if done.affected == 1 => {
                Some(done.last_insert_id.ok_or_else(|| StoreError::Unexpected {
                    store: self.store(),
                    location: self.conn.location(),
                    step: what,
                    what: "the server did not return the new max_id (LAST_INSERT_ID)".into(),
                })?)
            }
            None => None,
        };
        match max_id {
            Some(max_id) => Ok(max_id),
            None => Err(no_range(
                self.store(),
                &self.describe(),
                tag,
                step,
                self.tag(tag)?,
            )),
        }
    }

    fn create(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
        description: &str,
    ) -> Result<bool, StoreError> {
        check_create(self.store(), tag, first_id, step, description)?;
        // A plain INSERT (not INSERT IGNORE, which would turn any error, such as a
        // description too long, into a warning): a duplicate key means it exists.
        let sql = format!(
            "INSERT INTO {} (biz_tag, max_id, step, description, update_time)
             VALUES (?, ?, ?, ?, {})",
            self.table,
            self.conn.dialect().stamp_now
        );
        let params = [tag.into(), first_id.into(), step.into(), description.into()];
        let done = self.conn.exec("creating a tag", &sql, &params)?;
        Ok(!done.duplicate && done.affected == 1)
    }

    crate::store::segment::give_back_and_raise!(|s: &Self| s.store());

    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        check_tag(self.store(), tag)?;
        let step = "reading a tag";
        let sql = format!("{} WHERE biz_tag = ?", self.select());
        let done = self.conn.exec(step, &sql, &[tag.into()])?;
        Ok(self.records(step, &done.rows)?.pop())
    }

    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        let step = "listing the tags";
        let done = self.conn.exec(step, &self.select(), &[])?;
        let mut records = self.records(step, &done.rows)?;
        // By bytes, the same on every engine whatever its collation.
        records.sort_by(|a, b| a.tag.cmp(&b.tag));
        Ok(records)
    }
}
