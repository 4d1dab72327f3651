//! Segment counters on MySQL or MariaDB, in Meituan Leaf's `leaf_alloc` table.

use super::MySqlConn;
use crate::store::sql::lease::drop_table;
use crate::store::sql::segment::SqlSegments;
use crate::store::StoreError;
use std::time::Duration;

/// The `leaf_alloc` table's DDL for MySQL/MariaDB: Leaf's own, with `biz_tag` compared
/// byte for byte.
pub const MYSQL_SEGMENT_SCHEMA: &str = include_str!("../../../schema/leaf_alloc.mysql.sql");

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
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1000).build()?;
/// println!("{}", orders.next_uid()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct MySqlSegmentStore {
    steps: SqlSegments<MySqlConn>,
}

impl MySqlSegmentStore {
    /// The store in the database at `url` (`mysql://user[:password]@host[:port]/db`, or
    /// `mariadb://`). Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            steps: SqlSegments {
                conn: MySqlConn::new(url, MYSQL_SEGMENT_SCHEMA, "leaf_alloc")?,
                table: "leaf_alloc".into(),
            },
        })
    }

    /// The bound on each network step (default 5 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.steps.conn = self.steps.conn.with_timeout(timeout);
        self
    }

    /// Use another table of the same shape (default `leaf_alloc`); created if missing.
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

    /// Drops the table, with every counter in it. Only for tags no one will use again:
    /// the counters are what keep new ranges above the old.
    pub fn destroy(&self) -> Result<(), StoreError> {
        drop_table(&self.steps.conn, &self.steps.table)
    }
}

crate::store::segment::segment_store_over_steps!(MySqlSegmentStore, steps);
