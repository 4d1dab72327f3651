//! Segment counters on MySQL or MariaDB, in Meituan Leaf's `leaf_alloc` table.

use super::MySqlConn;
use crate::store::sql::segment::SqlSegments;

/// The `leaf_alloc` table's DDL for MySQL/MariaDB: Leaf's own, with `biz_tag` compared
/// byte for byte.
pub const MYSQL_SEGMENT_SCHEMA: &str = include_str!("../../../schema/leaf_alloc.mysql.sql");

crate::store::sql::url_store_face! {
/// Segment counters (see [`SegmentGenerator`](crate::SegmentGenerator)) in a
/// `leaf_alloc` table on MySQL 5.7+ or MariaDB 10.3+, created if missing; a Leaf
/// deployment's table works as it is.
///
/// Taking a range is one statement, `UPDATE leaf_alloc SET max_id =
/// LAST_INSERT_ID(max_id + ?) WHERE biz_tag = ?`, and the new value comes back in that
/// statement's own reply (not from a later read, which another session could have moved
/// on meanwhile), so no two processes ever get the same range.
///
/// Tags compare byte for byte, as on every store: a table whose `biz_tag` has a
/// case-insensitive collation (Leaf's DDL takes the server's default) is moved to
/// `utf8mb4_bin` on first connect, so `Order` and `order` are two tags here too.
///
/// Every network step is bounded by [`timeout`](Self::timeout). One connection is opened
/// on first use and kept; clones share it. `Debug` and errors never show the password.
///
/// ```no_run
/// use uidgen::{MySqlSegmentStore, SegmentGenerator};
///
/// let store = MySqlSegmentStore::new("mysql://root@127.0.0.1:3306/test")?;
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1, 1000).build()?;
/// println!("{}", orders.next_uid()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
    MySqlSegmentStore: SqlSegments<MySqlConn>, MYSQL_SEGMENT_SCHEMA, "leaf_alloc", "MySQL",
    "mysql://user[:password]@host[:port]/db`, or `mariadb://", "counter"
}

crate::store::segment::segment_store_over_steps!(MySqlSegmentStore, steps);
