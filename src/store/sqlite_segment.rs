//! Segment counters in the embedded SQLite file.

use super::segment::{check_create, check_step, check_tag, no_range, SegmentStore, TagRecord};
use super::sqlite::{failed, open};
use super::StoreError;
use rusqlite::{Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The `leaf_alloc` table's DDL for SQLite.
pub const SQLITE_SEGMENT_SCHEMA: &str = include_str!("../../schema/leaf_alloc.sqlite.sql");

const STORE: &str = "SQLite";
const NOW_MS: &str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

/// Segment counters (see [`SegmentGenerator`](crate::SegmentGenerator)) in a
/// `leaf_alloc` table in a SQLite file: the embedded default, for processes of one
/// machine. Taking a range is one `UPDATE ... RETURNING` statement, which SQLite runs
/// under its write lock, so processes sharing the file never get the same range.
///
/// The path must be a file (created with its folder if missing): `:memory:` and `file:`
/// URIs are refused, since each process would count on its own.
#[derive(Debug, Clone)]
pub struct SqliteSegmentStore {
    path: PathBuf,
    busy_timeout: Duration,
    /// Opened on first use and kept; clones share it.
    conn: Arc<Mutex<Option<Connection>>>,
}

impl SqliteSegmentStore {
    /// The store in the SQLite file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            busy_timeout: Duration::from_secs(10),
            conn: Arc::new(Mutex::new(None)),
        }
    }

    /// How long to wait for another process holding the file (default 10 s).
    #[must_use]
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self.conn = Arc::new(Mutex::new(None));
        self
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` on the connection, opening it (and creating the table) if needed. A
    /// failed step drops the connection, so the next one starts afresh.
    fn run<T>(
        &self,
        step: &'static str,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut slot = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let conn = match slot.take() {
            Some(conn) => conn,
            None => {
                let conn = open(&self.path, self.busy_timeout)?;
                conn.execute_batch(SQLITE_SEGMENT_SCHEMA)
                    .map_err(|e| failed(&self.path, "creating leaf_alloc", e))?;
                conn
            }
        };
        let result = work(&conn).map_err(|e| failed(&self.path, step, e))?;
        *slot = Some(conn);
        Ok(result)
    }
}

fn record(row: &rusqlite::Row<'_>) -> rusqlite::Result<TagRecord> {
    Ok(TagRecord {
        tag: row.get(0)?,
        max_id: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
        step: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
        description: row.get::<_, Option<String>>(3)?.unwrap_or_default(),
        updated_ms: u64::try_from(row.get::<_, i64>(4)?).unwrap_or(0),
    })
}

const SELECT: &str = "SELECT biz_tag, max_id, step, description, update_time FROM leaf_alloc";

impl SegmentStore for SqliteSegmentStore {
    fn describe(&self) -> String {
        format!("the embedded SQLite store {}", self.path.display())
    }

    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        check_tag(STORE, tag)?;
        check_step(STORE, tag, step)?;
        let sql = format!(
            "UPDATE leaf_alloc SET max_id = max_id + ?1, update_time = {NOW_MS}
             WHERE biz_tag = ?2 AND max_id <= 9223372036854775807 - ?1 RETURNING max_id"
        );
        let max_id = self.run("taking a range", |conn| {
            conn.query_row(&sql, rusqlite::params![step as i64, tag], |row| {
                row.get::<_, i64>(0)
            })
            .optional()
        })?;
        match max_id {
            Some(max_id) => Ok(u64::try_from(max_id).unwrap_or(0)),
            None => Err(no_range(STORE, &self.describe(), tag, step, self.tag(tag)?)),
        }
    }

    fn create(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
        description: &str,
    ) -> Result<bool, StoreError> {
        check_create(STORE, tag, first_id, step, description)?;
        let sql = format!(
            "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time)
             VALUES (?1, ?2, ?3, ?4, {NOW_MS}) ON CONFLICT (biz_tag) DO NOTHING"
        );
        let inserted = self.run("creating a tag", |conn| {
            conn.execute(
                &sql,
                rusqlite::params![tag, first_id as i64, step as i64, description],
            )
        })?;
        Ok(inserted == 1)
    }

    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        check_tag(STORE, tag)?;
        let sql = format!(
            "UPDATE leaf_alloc SET max_id = ?1, update_time = {NOW_MS}
             WHERE biz_tag = ?2 AND max_id = ?3 AND ?1 < ?3"
        );
        let changed = self.run("giving a range back", |conn| {
            conn.execute(&sql, rusqlite::params![to as i64, tag, from as i64])
        })?;
        Ok(changed == 1)
    }

    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        check_tag(STORE, tag)?;
        self.run("reading a tag", |conn| {
            conn.query_row(&format!("{SELECT} WHERE biz_tag = ?1"), [tag], record)
                .optional()
        })
    }

    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        self.run("listing the tags", |conn| {
            let mut statement = conn.prepare(&format!("{SELECT} ORDER BY biz_tag"))?;
            let rows = statement.query_map([], record)?;
            rows.collect()
        })
    }
}
