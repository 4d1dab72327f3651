//! Segment counters on PostgreSQL, in a `leaf_alloc` table.

use super::PgConn;
use crate::store::sql::lease::drop_table;
use crate::store::sql::segment::SqlSegments;
use crate::store::StoreError;
use std::time::Duration;

/// The `leaf_alloc` table's DDL for PostgreSQL.
pub const POSTGRES_SEGMENT_SCHEMA: &str = include_str!("../../../schema/leaf_alloc.postgres.sql");

/// Segment counters (see [`SegmentGenerator`](crate::SegmentGenerator)) in a
/// `leaf_alloc` table on PostgreSQL 10+, created if missing. Taking a range is one
/// `UPDATE ... RETURNING max_id`: the new value comes from the statement that wrote it,
/// so no two processes ever get the same range.
///
/// Every network step is bounded by [`timeout`](Self::timeout); one connection is kept;
/// TLS where the URL asks for it. `Debug` and errors never show the password.
///
/// ```no_run
/// use uidgen::{PostgresSegmentStore, SegmentGenerator};
///
/// let store = PostgresSegmentStore::new("postgres://postgres@127.0.0.1:5432/test")?;
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1000).build()?;
/// println!("{}", orders.next_uid()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct PostgresSegmentStore {
    steps: SqlSegments<PgConn>,
}

impl PostgresSegmentStore {
    /// The store in the database at `url` (`postgres://user[:password]@host[:port]/db`,
    /// or `postgresql://`). Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            steps: SqlSegments {
                conn: PgConn::new(url, POSTGRES_SEGMENT_SCHEMA, "leaf_alloc")?,
                table: "leaf_alloc".into(),
            },
        })
    }

    /// The bound on each network step (default 5 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.steps.conn = self.steps.conn.with_timeout(timeout);
        self
    }

    /// Use another table of the same shape (default `leaf_alloc`); created if missing.
    pub fn table(mut self, name: &str) -> Result<Self, StoreError> {
        crate::store::check_table_name("PostgreSQL", name)?;
        self.steps.conn = self.steps.conn.with_table(name);
        self.steps.table = name.to_owned();
        Ok(self)
    }

    /// The database, without its password.
    pub fn location(&self) -> &str {
        self.steps.conn.location_str()
    }

    /// Drops the table, with every counter in it. Only for tags no one will use again:
    /// the counters are what keep new ranges above the old.
    pub fn destroy(&self) -> Result<(), StoreError> {
        drop_table(&self.steps.conn, &self.steps.table)
    }
}

crate::store::segment::segment_store_over_steps!(PostgresSegmentStore, steps);
