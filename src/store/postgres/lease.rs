//! Worker-ID leases on PostgreSQL.

use super::PgConn;
use crate::store::sql::lease::SqlLeases;

/// The `WORKER_LEASE` DDL for PostgreSQL (`schema/worker_lease.postgres.sql`).
pub const POSTGRES_LEASE_SCHEMA: &str = include_str!("../../../schema/worker_lease.postgres.sql");

crate::store::sql::url_store_face! {
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
    /// (PostgreSQL folds table names to lower case, as it does every unquoted name.)
    PostgresLeaseStore: SqlLeases<PgConn>, POSTGRES_LEASE_SCHEMA, "WORKER_LEASE", "PostgreSQL",
    "postgres://user[:password]@host[:port]/db`, or `postgresql://", "lease and time mark"
}

crate::store::lease::lease_store_over_steps!(PostgresLeaseStore, steps);
