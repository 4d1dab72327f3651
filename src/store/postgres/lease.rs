//! Worker-ID leases on PostgreSQL.

use super::PgConn;
use crate::store::sql::lease::{drop_table, SqlLeases};
use crate::store::StoreError;
use std::time::Duration;

/// The `WORKER_LEASE` DDL for PostgreSQL (`schema/worker_lease.postgres.sql`).
pub const POSTGRES_LEASE_SCHEMA: &str = include_str!("../../../schema/worker_lease.postgres.sql");

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) in a
/// `WORKER_LEASE` table on PostgreSQL 10+, created if missing. Lease times are the
/// database server's clock, so holders on many machines agree on expiry.
///
/// Every step is one autocommitted statement; taking a worker ID is an `UPDATE ...
/// WHERE` the lease is free (or an `INSERT` of a new row) whose row count says who won,
/// so processes that start at once never get the same worker ID.
///
/// Every network step (resolving the host name, connecting, each statement) is bounded
/// by [`timeout`](Self::timeout). TLS where the URL asks for it
/// (`sslmode=require|verify-ca|verify-full`, `sslrootcert=PATH`; the `tls` feature). One
/// connection is opened on first use and kept; clones share it. `Debug` and errors never
/// show the password.
///
/// ```no_run
/// use uidgen::{BitsAllocator, PostgresLeaseStore, WorkerLease};
///
/// let store = PostgresLeaseStore::new("postgres://postgres@127.0.0.1:5432/test")?;
/// let lease = WorkerLease::builder(store).acquire(&BitsAllocator::default())?;
/// println!("worker ID {}", lease.worker_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct PostgresLeaseStore {
    steps: SqlLeases<PgConn>,
}

impl PostgresLeaseStore {
    /// The store in the database at `url` (`postgres://user[:password]@host[:port]/db`,
    /// or `postgresql://`). Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            steps: SqlLeases {
                conn: PgConn::new(url, POSTGRES_LEASE_SCHEMA, "WORKER_LEASE")?,
                table: "WORKER_LEASE".into(),
            },
        })
    }

    /// The bound on each network step: resolving the host name, connecting (with the
    /// handshake) and each statement (default 5 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.steps.conn = self.steps.conn.with_timeout(timeout);
        self
    }

    /// Use another table of the same shape (default `WORKER_LEASE`); created if missing.
    /// PostgreSQL folds it to lower case, as it does every unquoted name.
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

    /// Drops the table, with every lease and time mark in it. Only for a store no
    /// generator will use again (tests, a retired deployment): the marks are what keep a
    /// reused worker ID's IDs above those made before.
    pub fn destroy(&self) -> Result<(), StoreError> {
        drop_table(&self.steps.conn, &self.steps.table)
    }
}

crate::store::lease::lease_store_over_steps!(PostgresLeaseStore, steps);
