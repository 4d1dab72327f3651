//! Worker-ID leases in the embedded SQLite file.

use super::SqliteConn;
use crate::store::sql::lease::SqlLeases;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `WORKER_LEASE` DDL for SQLite (`schema/worker_lease.sqlite.sql`).
const SQLITE_LEASE_SCHEMA: &str = include_str!("../../../schema/worker_lease.sqlite.sql");

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) in a SQLite
/// file: the embedded default, for processes of one machine. Lease times are this
/// machine's clock. Every step is one statement under SQLite's write lock, and taking a
/// worker ID is won by the statement's own row count, so processes that start at once
/// never get the same worker ID.
///
/// The path must be a file (created with its folder if missing): `:memory:` and `file:`
/// URIs are refused, since each process would see a store of its own.
#[derive(Clone)]
pub struct SqliteLeaseStore {
    steps: SqlLeases<SqliteConn>,
}

impl std::fmt::Debug for SqliteLeaseStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteLeaseStore")
            .field("path", &self.path())
            .finish_non_exhaustive()
    }
}

impl SqliteLeaseStore {
    /// The store in the SQLite file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            steps: SqlLeases {
                conn: SqliteConn::new(path.into(), SQLITE_LEASE_SCHEMA, "WORKER_LEASE"),
                table: "WORKER_LEASE".into(),
            },
        }
    }

    /// How long to wait for another process holding the file (default 10 s).
    #[must_use]
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.steps.conn = self.steps.conn.busy_timeout(timeout);
        self
    }

    /// Use another table of the same shape in the file (default `WORKER_LEASE`); created
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

crate::store::lease::lease_store_over_steps!(SqliteLeaseStore, steps);
