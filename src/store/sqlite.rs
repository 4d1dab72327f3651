//! The embedded store: a SQLite file, compiled in.

use super::StoreError;
use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

/// Refuses a path that is not a file another process can open too: an in-memory
/// database would give every process the same worker IDs, and so the same IDs.
pub(crate) fn check_path(path: &Path) -> Result<(), StoreError> {
    let text = path.to_string_lossy();
    let problem = if text.trim().is_empty() {
        "the path is empty; give a file path"
    } else if text == ":memory:" || text.starts_with("file:") {
        "in-memory databases and file: URIs are refused: each process would get its own \
         registry and hand out the same worker IDs; give a file path"
    } else {
        return Ok(());
    };
    Err(StoreError::File {
        path: path.to_owned(),
        problem: problem.into(),
        source: None,
    })
}

/// Opens (creating it and its folder if needed) the database file at `path`; another
/// process holding it is waited for up to `busy_timeout`.
pub(crate) fn open(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    check_path(path)?;
    let failed = |problem: String, source: super::Cause| StoreError::File {
        path: path.to_owned(),
        problem,
        source: Some(source),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| failed(format!("cannot create folder {}", dir.display()), e.into()))?;
    }
    let conn =
        Connection::open(path).map_err(|e| failed("cannot open the file".into(), e.into()))?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| failed("cannot set the busy timeout".into(), e.into()))?;
    Ok(conn)
}

/// A failed statement on the embedded store at `path`.
pub(crate) fn failed(path: &Path, step: &str, source: rusqlite::Error) -> StoreError {
    StoreError::File {
        path: path.to_owned(),
        problem: format!("{step} failed"),
        source: Some(Box::new(source)),
    }
}

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) in a SQLite
/// file: the embedded default, for processes of one machine. Lease times are this
/// machine's clock. Every step is one statement or one `BEGIN IMMEDIATE` transaction, so
/// processes that start at once never get the same worker ID.
///
/// The path must be a file (created with its folder if missing): `:memory:` and `file:`
/// URIs are refused, since each process would see a store of its own.
#[derive(Debug, Clone)]
pub struct SqliteLeaseStore {
    path: std::path::PathBuf,
    busy_timeout: Duration,
}

const LEASE_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS WORKER_LEASE (
    WORKER_ID  INTEGER PRIMARY KEY,
    HOLDER     TEXT,
    EXPIRES_MS INTEGER NOT NULL DEFAULT 0,
    MARK_MS    INTEGER NOT NULL DEFAULT 0,
    MODIFIED   TEXT    NOT NULL
)";

/// The store's clock, in Unix milliseconds.
const NOW_MS: &str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

impl SqliteLeaseStore {
    /// The store in the SQLite file at `path`.
    pub fn new(path: impl Into<std::path::PathBuf>) -> Self {
        Self {
            path: path.into(),
            busy_timeout: Duration::from_secs(10),
        }
    }

    /// How long to wait for another process holding the file (default 10 s).
    #[must_use]
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connect(&self) -> Result<Connection, StoreError> {
        let conn = open(&self.path, self.busy_timeout)?;
        conn.execute_batch(LEASE_SCHEMA)
            .map_err(|e| failed(&self.path, "creating WORKER_LEASE", e))?;
        Ok(conn)
    }
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

impl super::lease::LeaseStore for SqliteLeaseStore {
    fn describe(&self) -> String {
        format!("the embedded store {}", self.path.display())
    }

    fn acquire(
        &self,
        request: &super::lease::LeaseRequest<'_>,
    ) -> Result<super::lease::Acquired, StoreError> {
        use super::lease::Acquired;
        use rusqlite::OptionalExtension;
        let failed = |step, e| failed(&self.path, step, e);
        let mut conn = self.connect()?;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| failed("locking the store (BEGIN IMMEDIATE)", e))?;
        let now: i64 = tx
            .query_row(&format!("SELECT {NOW_MS}"), [], |row| row.get(0))
            .map_err(|e| failed("reading the clock", e))?;
        let max = to_i64(request.max_worker_id);
        let worker_id: i64 = match request.worker_id {
            Some(wanted) => {
                let wanted = to_i64(wanted);
                let held: Option<(Option<String>, i64)> = tx
                    .query_row(
                        "SELECT HOLDER, EXPIRES_MS FROM WORKER_LEASE WHERE WORKER_ID = ?1",
                        [wanted],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()
                    .map_err(|e| failed("reading the lease", e))?;
                if let Some((Some(holder), expires)) = held {
                    if expires > now && holder != request.holder {
                        return Ok(Acquired::Held {
                            holder,
                            expires_in: Duration::from_millis(to_u64(expires - now)),
                        });
                    }
                }
                wanted
            }
            None => {
                let free: Option<i64> = tx
                    .query_row(
                        "SELECT MIN(WORKER_ID) FROM WORKER_LEASE
                         WHERE (HOLDER IS NULL OR EXPIRES_MS <= ?1) AND WORKER_ID <= ?2",
                        [now, max],
                        |row| row.get(0),
                    )
                    .map_err(|e| failed("looking for a free worker ID", e))?;
                let unused = || -> Result<i64, StoreError> {
                    tx.query_row(
                        "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM WORKER_LEASE WHERE WORKER_ID = 0)
                                THEN 0 ELSE
                                (SELECT MIN(WORKER_ID) + 1 FROM WORKER_LEASE AS a WHERE NOT EXISTS
                                  (SELECT 1 FROM WORKER_LEASE AS b WHERE b.WORKER_ID = a.WORKER_ID + 1))
                                END",
                        [],
                        |row| row.get(0),
                    )
                    .map_err(|e| failed("looking for an unused worker ID", e))
                };
                // Lowest first, whether the lowest is a freed row or a gap never used
                // (specific worker IDs can be leased, leaving gaps below them).
                let unused = unused()?;
                match free {
                    Some(id) if id < unused => id,
                    _ if unused > max => return Ok(Acquired::Exhausted),
                    _ => unused,
                }
            }
        };
        tx.execute(
            &format!(
                "INSERT INTO WORKER_LEASE (WORKER_ID, HOLDER, EXPIRES_MS, MARK_MS, MODIFIED)
                 VALUES (?1, ?2, {NOW_MS} + ?3, 0, datetime('now'))
                 ON CONFLICT (WORKER_ID) DO UPDATE SET HOLDER = excluded.HOLDER,
                   EXPIRES_MS = excluded.EXPIRES_MS, MODIFIED = excluded.MODIFIED"
            ),
            rusqlite::params![worker_id, request.holder, millis(request.ttl)],
        )
        .map_err(|e| failed("taking the lease", e))?;
        let mark: i64 = tx
            .query_row(
                "SELECT MARK_MS FROM WORKER_LEASE WHERE WORKER_ID = ?1",
                [worker_id],
                |row| row.get(0),
            )
            .map_err(|e| failed("reading the time mark", e))?;
        tx.commit().map_err(|e| failed("committing", e))?;
        Ok(Acquired::Granted {
            worker_id: to_u64(worker_id),
            mark_ms: to_u64(mark),
        })
    }

    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        let changed = self
            .connect()?
            .execute(
                &format!(
                    "UPDATE WORKER_LEASE SET EXPIRES_MS = {NOW_MS} + ?1,
                       MARK_MS = MAX(MARK_MS, ?2), MODIFIED = datetime('now')
                     WHERE WORKER_ID = ?3 AND HOLDER = ?4"
                ),
                rusqlite::params![millis(ttl), to_i64(mark_ms), to_i64(worker_id), holder],
            )
            .map_err(|e| failed(&self.path, "renewing the lease", e))?;
        Ok(changed == 1)
    }

    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        let changed = self
            .connect()?
            .execute(
                "UPDATE WORKER_LEASE SET HOLDER = NULL, EXPIRES_MS = 0, MARK_MS = ?1,
                   MODIFIED = datetime('now')
                 WHERE WORKER_ID = ?2 AND HOLDER = ?3",
                rusqlite::params![to_i64(mark_ms), to_i64(worker_id), holder],
            )
            .map_err(|e| failed(&self.path, "releasing the lease", e))?;
        Ok(changed == 1)
    }

    fn leases(&self) -> Result<Vec<super::lease::LeaseRecord>, StoreError> {
        let conn = self.connect()?;
        let failed = |e| failed(&self.path, "listing the leases", e);
        let now: i64 = conn
            .query_row(&format!("SELECT {NOW_MS}"), [], |row| row.get(0))
            .map_err(failed)?;
        let mut statement = conn
            .prepare("SELECT WORKER_ID, HOLDER, EXPIRES_MS, MARK_MS FROM WORKER_LEASE ORDER BY WORKER_ID")
            .map_err(failed)?;
        let rows = statement
            .query_map([], |row| {
                Ok(super::lease::LeaseRecord::new(
                    to_u64(row.get(0)?),
                    row.get(1)?,
                    to_u64(row.get(2)?),
                    to_u64(now),
                    to_u64(row.get(3)?),
                ))
            })
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)
    }
}
