//! Segment counters on MySQL or MariaDB, in Meituan Leaf's `leaf_alloc` table.

use super::mysql::ER_DUP_ENTRY;
use super::mysql_lease::MySqlLeaseStore;
use super::segment::{check_create, check_step, check_tag, no_range, SegmentStore, TagRecord};
use super::StoreError;
use mysql_async::prelude::Queryable;
use mysql_async::Row;
use std::time::Duration;

const STORE: &str = "MySQL";

/// The `leaf_alloc` table's DDL for MySQL/MariaDB: Leaf's own.
pub const MYSQL_SEGMENT_SCHEMA: &str = include_str!("../../schema/leaf_alloc.mysql.sql");

/// Segment counters (see [`SegmentGenerator`](crate::SegmentGenerator)) in a
/// `leaf_alloc` table on MySQL 5.7+ or MariaDB 10.3+, created if missing; a Leaf
/// deployment's table works as it is.
///
/// Taking a range is one statement, `UPDATE leaf_alloc SET max_id =
/// LAST_INSERT_ID(max_id + step) WHERE biz_tag = ?`, and the new value comes back in that
/// statement's own reply (not from a later read, which another session could have moved
/// on meanwhile), so no two processes ever get the same range.
///
/// Tags compare as the table's collation says: Leaf's DDL takes the server's default,
/// which is case-insensitive, so `Order` and `order` are one tag here (and two on the
/// other stores).
///
/// Every network step is bounded by [`timeout`](Self::timeout). One connection is opened
/// on first use and kept; clones share it. `Debug` and errors never show the password.
///
/// ```no_run
/// use uidgen::{MySqlSegmentStore, SegmentGenerator};
///
/// let store = MySqlSegmentStore::new("mysql://root@127.0.0.1:3306/test")?;
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1000).build()?;
/// println!("{}", orders.next_uid()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct MySqlSegmentStore {
    /// The lease store's connection handling (URL, bounds, errors, session), pointed at
    /// the `leaf_alloc` DDL.
    server: MySqlLeaseStore,
}

impl std::fmt::Debug for MySqlSegmentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlSegmentStore")
            .field("location", &self.server.location())
            .field("table", &self.server.table_name())
            .finish_non_exhaustive()
    }
}

impl MySqlSegmentStore {
    /// The store in the database at `url` (`mysql://user[:password]@host[:port]/db`).
    /// Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            server: MySqlLeaseStore::new(url)?.for_schema(MYSQL_SEGMENT_SCHEMA, "leaf_alloc"),
        })
    }

    /// The bound on each network step (default 5 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.server = self.server.timeout(timeout);
        self
    }

    /// Use another table of the same shape (default `leaf_alloc`); created if missing.
    pub fn table(mut self, name: &str) -> Result<Self, StoreError> {
        self.server = self.server.table(name)?;
        Ok(self)
    }

    /// The database, without its password.
    pub fn location(&self) -> &str {
        self.server.location()
    }

    /// Drops the table, with every counter in it. Only for tags no one will use again:
    /// the counters are what keep new ranges above the old.
    pub fn destroy(&self) -> Result<(), StoreError> {
        self.server.destroy()
    }

    fn record(&self, row: &Row, step: &'static str) -> Result<TagRecord, StoreError> {
        let number = |index: usize| -> Result<u64, StoreError> {
            Ok(u64::try_from(self.server.column::<i64>(row, index, step)?).unwrap_or(0))
        };
        Ok(TagRecord {
            tag: self.server.column(row, 0, step)?,
            max_id: number(1)?,
            step: number(2)?,
            description: self
                .server
                .column::<Option<String>>(row, 3, step)?
                .unwrap_or_default(),
            updated_ms: number(4)?,
        })
    }

    fn select(&self) -> String {
        format!(
            "SELECT biz_tag, max_id, step, description,
                    CAST(UNIX_TIMESTAMP(update_time) * 1000 AS SIGNED) FROM {}",
            self.server.table_name()
        )
    }
}

impl SegmentStore for MySqlSegmentStore {
    fn describe(&self) -> String {
        format!(
            "the MySQL store {} (table {})",
            self.server.location(),
            self.server.table_name()
        )
    }

    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        check_tag(STORE, tag)?;
        check_step(STORE, tag, step)?;
        let update = format!(
            "UPDATE {} SET max_id = LAST_INSERT_ID(max_id + ?) \
             WHERE biz_tag = ? AND max_id <= 9223372036854775807 - ?",
            self.server.table_name()
        );
        let taken = self.server.run(async |conn| {
            self.server
                .server()
                .bounded("taking a range", conn.exec_drop(update, (step, tag, step)))
                .await?;
            Ok((conn.affected_rows(), conn.last_insert_id()))
        })?;
        match taken {
            (1, Some(max_id)) => Ok(max_id),
            (1, None) => Err(StoreError::Unexpected {
                store: STORE,
                location: self.server.location().to_owned(),
                step: "taking a range",
                what: "the server did not return the new max_id (LAST_INSERT_ID)".into(),
            }),
            _ => Err(no_range(STORE, &self.describe(), tag, step, self.tag(tag)?)),
        }
    }

    fn create(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
        description: &str,
    ) -> Result<bool, StoreError> {
        check_create(STORE, tag, first_id, step, description)?;
        let insert = format!(
            "INSERT INTO {} (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)",
            self.server.table_name()
        );
        let step_name = "creating a tag";
        self.server.run(async |conn| {
            let server = self.server.server();
            // A plain INSERT, not INSERT IGNORE (which would turn any error, such as a
            // description too long, into a warning); a duplicate key means it exists.
            match tokio::time::timeout(
                server.timeout(),
                conn.exec_drop(insert, (tag, first_id, step, description)),
            )
            .await
            {
                Ok(Ok(())) => Ok(true),
                Ok(Err(mysql_async::Error::Server(e))) if e.code == ER_DUP_ENTRY => Ok(false),
                Ok(Err(e)) => Err(server.explain(e, step_name)),
                Err(_) => Err(server.timed_out(step_name)),
            }
        })
    }

    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        check_tag(STORE, tag)?;
        if to >= from {
            return Ok(false);
        }
        let update = format!(
            "UPDATE {} SET max_id = ? WHERE biz_tag = ? AND max_id = ?",
            self.server.table_name()
        );
        self.server.run(async |conn| {
            self.server
                .server()
                .bounded(
                    "giving a range back",
                    conn.exec_drop(update, (to, tag, from)),
                )
                .await?;
            Ok(conn.affected_rows() == 1)
        })
    }

    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        check_tag(STORE, tag)?;
        let select = format!("{} WHERE biz_tag = ?", self.select());
        let step = "reading a tag";
        let rows: Vec<Row> = self.server.run(async |conn| {
            self.server
                .server()
                .bounded(step, conn.exec(select, (tag,)))
                .await
        })?;
        rows.first().map(|row| self.record(row, step)).transpose()
    }

    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        let select = format!("{} ORDER BY biz_tag", self.select());
        let step = "listing the tags";
        let rows: Vec<Row> = self
            .server
            .run(async |conn| self.server.server().bounded(step, conn.query(select)).await)?;
        rows.iter().map(|row| self.record(row, step)).collect()
    }
}
