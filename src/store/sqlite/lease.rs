//! Worker-ID leases in the embedded SQLite file.

use crate::store::sql::lease::SqlLeases;

/// The `WORKER_LEASE` DDL for SQLite (`schema/worker_lease.sqlite.sql`).
const SQLITE_LEASE_SCHEMA: &str = include_str!("../../../schema/worker_lease.sqlite.sql");

crate::store::sql::file_store_face! {
/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) in a SQLite
/// file: the embedded default, for processes of one machine. Lease times are this
/// machine's clock. Every step is one statement under SQLite's write lock, and taking a
/// worker ID is won by the statement's own row count, so processes that start at once
/// never get the same worker ID.
///
/// The path must be a file (created with its folder if missing): `:memory:` and `file:`
/// URIs are refused, since each process would see a store of its own.
    SqliteLeaseStore: SqlLeases, SQLITE_LEASE_SCHEMA, "WORKER_LEASE"
}

crate::store::lease::lease_store_over_steps!(SqliteLeaseStore, steps);
