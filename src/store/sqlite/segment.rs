//! Segment counters in the embedded SQLite file.

use crate::store::sql::segment::SqlSegments;

/// The `leaf_alloc` table's DDL for SQLite.
pub const SQLITE_SEGMENT_SCHEMA: &str = include_str!("../../../schema/leaf_alloc.sqlite.sql");

crate::store::sql::file_store_face! {
/// Segment counters (see [`SegmentGenerator`](crate::SegmentGenerator)) in a
/// `leaf_alloc` table in a SQLite file: the embedded default, for processes of one
/// machine. Taking a range is one `UPDATE ... RETURNING` statement, which SQLite runs
/// under its write lock, so processes sharing the file never get the same range.
///
/// The path must be a file (created with its folder if missing): `:memory:` and `file:`
/// URIs are refused, since each process would count on its own.
    SqliteSegmentStore: SqlSegments, SQLITE_SEGMENT_SCHEMA, "leaf_alloc"
}

crate::store::segment::segment_store_over_steps!(SqliteSegmentStore, steps);
