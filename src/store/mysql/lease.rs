//! Worker-ID leases on MySQL or MariaDB.

use super::MySqlConn;
use crate::store::sql::lease::{drop_table, SqlLeases};
use crate::store::StoreError;
use std::time::Duration;

/// The `WORKER_LEASE` DDL for MySQL and MariaDB (`schema/worker_lease.mysql.sql`).
pub const MYSQL_LEASE_SCHEMA: &str = include_str!("../../../schema/worker_lease.mysql.sql");

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) in a
/// `WORKER_LEASE` table on MySQL 5.7+/8 or MariaDB 10+, created if missing. Lease times
/// are the database server's clock, so holders on many machines agree on expiry.
///
/// Every step is one or two autocommitted statements; taking a worker ID is an
/// `UPDATE ... WHERE` the lease is free (or an `INSERT` of a new row) whose affected-row
/// count says who won, so processes that start at once never get the same worker ID.
///
/// Every network step (resolving the host name, connecting, each statement) is bounded
/// by [`timeout`](Self::timeout), and connections go only to the URL's address (a
/// socket only when the URL names one). TLS where the URL asks for it
/// (`ssl-mode=REQUIRED|VERIFY_IDENTITY`, `ssl-ca=PATH`; the `tls` feature).
/// One connection is opened on first use and kept; clones share it. `Debug` and errors
/// never show the password.
///
/// ```no_run
/// use uidgen::{BitsAllocator, MySqlLeaseStore, WorkerLease};
///
/// let store = MySqlLeaseStore::new("mysql://root@127.0.0.1:3306/test")?;
/// let lease = WorkerLease::builder(store).acquire(&BitsAllocator::default())?;
/// println!("worker ID {}", lease.worker_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct MySqlLeaseStore {
    steps: SqlLeases<MySqlConn>,
}

impl std::fmt::Debug for MySqlLeaseStore {
    // By hand: the driver's options hold the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlLeaseStore")
            .field("location", &self.location())
            .field("table", &self.steps.table)
            .finish_non_exhaustive()
    }
}

impl MySqlLeaseStore {
    /// The store in the database at `url` (`mysql://user[:password]@host[:port]/db`, or
    /// `mariadb://`). Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            steps: SqlLeases {
                conn: MySqlConn::new(url, MYSQL_LEASE_SCHEMA, "WORKER_LEASE")?,
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
    pub fn table(mut self, name: &str) -> Result<Self, StoreError> {
        crate::store::check_table_name("MySQL", name)?;
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

crate::store::lease::lease_store_over_steps!(MySqlLeaseStore, steps);
