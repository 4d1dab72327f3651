//! Segment counters in the embedded SQLite file.

use super::SqliteConn;
use crate::store::sql::segment::SqlSegments;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `leaf_alloc` table's DDL for SQLite.
pub const SQLITE_SEGMENT_SCHEMA: &str = include_str!("../../../schema/leaf_alloc.sqlite.sql");

/// Segment counters (see [`SegmentGenerator`](crate::SegmentGenerator)) in a
/// `leaf_alloc` table in a SQLite file: the embedded default, for processes of one
/// machine. Taking a range is one `UPDATE ... RETURNING` statement, which SQLite runs
/// under its write lock, so processes sharing the file never get the same range.
///
/// The path must be a file (created with its folder if missing): `:memory:` and `file:`
/// URIs are refused, since each process would count on its own.
#[derive(Debug, Clone)]
pub struct SqliteSegmentStore {
    steps: SqlSegments<SqliteConn>,
}

impl SqliteSegmentStore {
    /// The store in the SQLite file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            steps: SqlSegments {
                conn: SqliteConn::new(path.into(), SQLITE_SEGMENT_SCHEMA, "leaf_alloc"),
                table: "leaf_alloc".into(),
            },
        }
    }

    /// How long to wait for another process holding the file (default 10 s).
    #[must_use]
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.steps.conn = self.steps.conn.busy_timeout(timeout);
        self
    }

    /// Use another table of the same shape in the file (default `leaf_alloc`); created
    /// if missing.
    pub fn table(mut self, name: &str) -> Result<Self, crate::StoreError> {
        crate::store::check_table_name("SQLite", name)?;
        self.steps.conn = self.steps.conn.with_table(name);
        self.steps.table = name.to_owned();
        Ok(self)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.steps.conn.path()
    }
}

crate::store::segment::segment_store_over_steps!(SqliteSegmentStore, steps);
