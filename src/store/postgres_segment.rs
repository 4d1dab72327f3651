//! Segment counters on PostgreSQL, in a `leaf_alloc` table.

use super::postgres::PostgresLeaseStore;
use super::segment::{check_create, check_step, check_tag, no_range, SegmentStore, TagRecord};
use super::StoreError;
use std::time::Duration;
use tokio_postgres::Row;

const STORE: &str = "PostgreSQL";

/// The `leaf_alloc` table's DDL for PostgreSQL.
pub const POSTGRES_SEGMENT_SCHEMA: &str = include_str!("../../schema/leaf_alloc.postgres.sql");

/// Segment counters (see [`SegmentGenerator`](crate::SegmentGenerator)) in a
/// `leaf_alloc` table on PostgreSQL 10+, created if missing. Taking a range is one
/// `UPDATE ... RETURNING max_id`: the new value comes from the statement that wrote it,
/// so no two processes ever get the same range.
///
/// Every network step is bounded by [`timeout`](Self::timeout); one connection is kept;
/// TLS is not built. `Debug` and errors never show the password.
///
/// ```no_run
/// use uidgen::{PostgresSegmentStore, SegmentGenerator};
///
/// let store = PostgresSegmentStore::new("postgres://postgres@127.0.0.1:5432/test")?;
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1000).build()?;
/// println!("{}", orders.next_uid()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PostgresSegmentStore {
    /// The lease store's connection handling (URL, bounds, errors, session), pointed at
    /// the `leaf_alloc` DDL.
    server: PostgresLeaseStore,
}

impl std::fmt::Debug for PostgresSegmentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSegmentStore")
            .field("location", &self.server.location())
            .field("table", &self.server.table_name())
            .finish_non_exhaustive()
    }
}

impl PostgresSegmentStore {
    /// The store in the database at `url` (`postgres://user[:password]@host[:port]/db`).
    /// Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            server: PostgresLeaseStore::new(url)?.for_schema(POSTGRES_SEGMENT_SCHEMA, "leaf_alloc"),
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

    /// Drops the table, with every counter in it. Only for tags no one will use again.
    pub fn destroy(&self) -> Result<(), StoreError> {
        self.server.destroy()
    }

    fn record(&self, row: &Row, step: &'static str) -> Result<TagRecord, StoreError> {
        let number = |index| -> Result<u64, StoreError> {
            Ok(u64::try_from(self.server.column::<i64>(row, index, step)?).unwrap_or(0))
        };
        Ok(TagRecord {
            tag: self.server.column(row, 0, step)?,
            max_id: number(1)?,
            step: u64::try_from(self.server.column::<i32>(row, 2, step)?).unwrap_or(0),
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
                    (extract(epoch from update_time) * 1000)::bigint FROM {}",
            self.server.table_name()
        )
    }
}

impl SegmentStore for PostgresSegmentStore {
    fn describe(&self) -> String {
        format!(
            "the PostgreSQL store {} (table {})",
            self.server.location(),
            self.server.table_name()
        )
    }

    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        check_tag(STORE, tag)?;
        check_step(STORE, tag, step)?;
        let update = format!(
            "UPDATE {} SET max_id = max_id + $1, update_time = now()
             WHERE biz_tag = $2 AND max_id <= 9223372036854775807 - $1 RETURNING max_id",
            self.server.table_name()
        );
        let step_i64 = step as i64;
        let rows = self.server.run(async |client| {
            self.server
                .bounded("taking a range", client.query(&update, &[&step_i64, &tag]))
                .await
        })?;
        match rows.first() {
            Some(row) => Ok(
                u64::try_from(self.server.column::<i64>(row, 0, "taking a range")?).unwrap_or(0),
            ),
            None => Err(no_range(STORE, &self.describe(), tag, step, self.tag(tag)?)),
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
            "INSERT INTO {} (biz_tag, max_id, step, description) VALUES ($1, $2, $3, $4)
             ON CONFLICT (biz_tag) DO NOTHING",
            self.server.table_name()
        );
        let (first_id, step) = (first_id as i64, step as i32);
        let inserted = self.server.run(async |client| {
            self.server
                .bounded(
                    "creating a tag",
                    client.execute(&insert, &[&tag, &first_id, &step, &description]),
                )
                .await
        })?;
        Ok(inserted == 1)
    }

    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        check_tag(STORE, tag)?;
        if to >= from {
            return Ok(false);
        }
        let update = format!(
            "UPDATE {} SET max_id = $1, update_time = now() WHERE biz_tag = $2 AND max_id = $3",
            self.server.table_name()
        );
        let (to, from) = (to as i64, from as i64);
        let changed = self.server.run(async |client| {
            self.server
                .bounded(
                    "giving a range back",
                    client.execute(&update, &[&to, &tag, &from]),
                )
                .await
        })?;
        Ok(changed == 1)
    }

    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        check_tag(STORE, tag)?;
        let select = format!("{} WHERE biz_tag = $1", self.select());
        let step = "reading a tag";
        let rows = self.server.run(async |client| {
            self.server
                .bounded(step, client.query(&select, &[&tag]))
                .await
        })?;
        rows.first().map(|row| self.record(row, step)).transpose()
    }

    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        let select = format!("{} ORDER BY biz_tag", self.select());
        let step = "listing the tags";
        let rows = self
            .server
            .run(async |client| self.server.bounded(step, client.query(&select, &[])).await)?;
        rows.iter().map(|row| self.record(row, step)).collect()
    }
}
