//! Worker-ID leases on MySQL or MariaDB.

use super::MySqlConn;
use crate::store::sql::lease::SqlLeases;

/// The `WORKER_LEASE` DDL for MySQL and MariaDB (`schema/worker_lease.mysql.sql`).
pub const MYSQL_LEASE_SCHEMA: &str = include_str!("../../../schema/worker_lease.mysql.sql");

crate::store::sql::url_store_face! {
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
    MySqlLeaseStore: SqlLeases<MySqlConn>, MYSQL_LEASE_SCHEMA, "WORKER_LEASE", "MySQL",
    "mysql://user[:password]@host[:port]/db`, or `mariadb://", "lease and time mark"
}

crate::store::lease::lease_store_over_steps!(MySqlLeaseStore, steps);
