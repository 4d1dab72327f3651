//! Segment counters on PostgreSQL, in a `leaf_alloc` table.

use super::PgConn;
use crate::store::sql::segment::SqlSegments;

/// The `leaf_alloc` table's DDL for PostgreSQL.
pub const POSTGRES_SEGMENT_SCHEMA: &str = include_str!("../../../schema/leaf_alloc.postgres.sql");

crate::store::sql::url_store_face! {
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
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1, 1000).build()?;
/// println!("{}", orders.next_uid()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
    PostgresSegmentStore: SqlSegments<PgConn>, POSTGRES_SEGMENT_SCHEMA, "leaf_alloc", "PostgreSQL",
    "postgres://user[:password]@host[:port]/db`, or `postgresql://", "counter"
}

crate::store::segment::segment_store_over_steps!(PostgresSegmentStore, steps);
