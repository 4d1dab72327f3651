//! The embedded store: a SQLite file, compiled in. This folder holds its connection;
//! the lease and segment steps are the SQL engines' own (`store::sql`).

mod driver;
mod lease;
mod lease_clock;
mod segment;

pub(crate) use self::driver::DRIVER;
pub use self::lease::SqliteLeaseStore;
pub use self::segment::{SqliteSegmentStore, SQLITE_SEGMENT_SCHEMA};

use super::sql::{Dialect, Done, SqlConn, Value};
use super::{StoreError, StoreKind};
use crate::sync::{lock, Arc, Mutex};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Environment variable that overrides the embedded store's default file.
pub const WORKER_DB_ENV: &str = "UIDGEN_WORKER_DB";

/// The embedded store's default file: `$UIDGEN_WORKER_DB`, or else
/// `uidgen/workers.sqlite3` under the user's data directory (`~/.local/share` on Linux);
/// `None` when neither is known. The leases and the `WORKER_NODE` registry of one machine
/// (the library's and the CLI's) share it.
pub(crate) fn default_path() -> Option<PathBuf> {
    match std::env::var_os(WORKER_DB_ENV) {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => dirs::data_dir().map(|dir| dir.join("uidgen").join("workers.sqlite3")),
    }
}

/// The default folder of [`remember_stores_in`](crate::remember_stores_in):
/// `$UIDGEN_STATE_DIR`, else `stores/` beside the embedded store's file (so
/// `UIDGEN_WORKER_DB` moves both).
pub fn default_store_memory_dir() -> Option<PathBuf> {
    match std::env::var_os("UIDGEN_STATE_DIR") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => default_path().and_then(|file| file.parent().map(|dir| dir.join("stores"))),
    }
}

/// [`default_path`], or the error saying to set `UIDGEN_WORKER_DB`.
pub(crate) fn at_default_path() -> Result<PathBuf, StoreError> {
    default_path().ok_or_else(|| StoreError::File {
        path: "(none)".into(),
        problem: format!(
            "no data directory is known for this user; set {WORKER_DB_ENV} to a file path"
        ),
        source: None,
    })
}

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
    let conn = Connection::open(path).map_err(|e| match what_to_do(path, &e) {
        Some(advice) => failed(format!("cannot open the file: {advice}"), e.into()),
        None => failed("cannot open the file".into(), e.into()),
    })?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| failed("cannot set the busy timeout".into(), e.into()))?;
    Ok(conn)
}

/// A failed statement on the embedded store at `path`: what failed, and for a damaged
/// file, a full disk or a read-only one, what to do (never a bare driver code).
pub(crate) fn failed(path: &Path, step: &str, source: rusqlite::Error) -> StoreError {
    let problem = match what_to_do(path, &source) {
        Some(advice) => format!("{step} failed: {advice}"),
        None => format!("{step} failed"),
    };
    StoreError::File {
        path: path.to_owned(),
        problem,
        source: Some(Box::new(source)),
    }
}

/// The cause in words, with what to do, for the failures an operator can act on.
fn what_to_do(path: &Path, error: &rusqlite::Error) -> Option<String> {
    use rusqlite::ErrorCode;
    let rusqlite::Error::SqliteFailure(failure, _) = error else {
        return None;
    };
    let shown = path.display();
    Some(match failure.code {
        ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => format!(
            "the file is damaged (not a SQLite database, or malformed). Restore it from a \
             backup; or move it aside and run `uidgen store repair --store {shown}`, which \
             starts a new store above everything this machine remembers handing out (its \
             memory, stores/ beside the file, must be kept)"
        ),
        ErrorCode::DiskFull => "the disk is full: nothing was handed out past what was \
             recorded; free space on it and run again"
            .to_owned(),
        ErrorCode::ReadOnly => "the file, its folder or its file system is read-only: \
             uidgen must write a time mark before it hands out IDs; make it writable (or \
             point UIDGEN_WORKER_DB at a writable place) and run again"
            .to_owned(),
        ErrorCode::CannotOpen => "the file cannot be opened (a missing or read-only folder, \
             or no permission): make its folder writable, or point UIDGEN_WORKER_DB \
             elsewhere, and run again"
            .to_owned(),
        ErrorCode::SystemIoFailure => "the disk failed a read or a write (full, read-only \
             or failing): check it and run again"
            .to_owned(),
        _ => return None,
    })
}

/// The machine's wall clock, in Unix milliseconds (for when a tag last changed).
const NOW_MS: &str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

static DIALECT: Dialect = Dialect {
    // Leases expire by the lease clock: a step of the wall clock never makes a live
    // holder's lease look expired to another process of the machine.
    now_ms: "uidgen_lease_now_ms()",
    greatest: "MAX",
    modified_now: "datetime('now')",
    stamp_now: NOW_MS,
    updated_ms: "update_time",
    update_returning: true,
};

/// One SQLite file, opened on first use (with its table created) and kept; clones share
/// the connection. Each statement runs under SQLite's own write lock.
#[derive(Clone)]
pub(crate) struct SqliteConn {
    path: PathBuf,
    busy_timeout: Duration,
    /// The table's DDL, with its name in place.
    ddl: String,
    table: String,
    conn: Arc<Mutex<Option<Connection>>>,
}

impl SqliteConn {
    pub(crate) fn new(path: PathBuf, ddl: &str, table: &str) -> Self {
        Self {
            path,
            busy_timeout: Duration::from_secs(10),
            ddl: ddl.to_owned(),
            table: table.to_owned(),
            conn: Arc::default(),
        }
    }

    /// The same file, another table of the same DDL.
    pub(crate) fn with_table(self, table: &str) -> Self {
        Self {
            ddl: super::sql::ddl_for(&self.ddl, &self.table, table),
            table: table.to_owned(),
            conn: Arc::default(),
            ..self
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A new connection with another busy timeout.
    pub(crate) fn busy_timeout(self, busy_timeout: Duration) -> Self {
        Self {
            busy_timeout,
            conn: Arc::default(),
            ..self
        }
    }

    /// Runs one statement: its rows, and the rows it changed; a primary key that exists
    /// already is `duplicate`, not an error.
    fn run(conn: &Connection, sql: &str, params: &[Value]) -> rusqlite::Result<Done> {
        match Self::statement(conn, sql, params) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                    || e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE =>
            {
                Ok(Done {
                    duplicate: true,
                    ..Done::default()
                })
            }
            other => other,
        }
    }

    fn statement(conn: &Connection, sql: &str, params: &[Value]) -> rusqlite::Result<Done> {
        let mut statement = conn.prepare_cached(sql)?;
        let params = params.iter().map(|value| match value {
            Value::Null => rusqlite::types::Value::Null,
            Value::Int(n) => rusqlite::types::Value::Integer(*n),
            Value::Text(t) => rusqlite::types::Value::Text(t.clone()),
        });
        let width = statement.column_count();
        let mut rows = statement.query(rusqlite::params_from_iter(params))?;
        let mut done = Done::default();
        while let Some(row) = rows.next()? {
            let values = (0..width)
                .map(|index| {
                    Ok(match row.get::<_, rusqlite::types::Value>(index)? {
                        rusqlite::types::Value::Integer(n) => Value::Int(n),
                        rusqlite::types::Value::Text(t) => Value::Text(t),
                        // Our columns hold whole numbers and text only.
                        _ => Value::Null,
                    })
                })
                .collect::<rusqlite::Result<_>>()?;
            done.rows.push(values);
        }
        drop(rows);
        done.affected = conn.changes();
        Ok(done)
    }
}

impl SqlConn for SqliteConn {
    fn dialect(&self) -> &'static Dialect {
        &DIALECT
    }

    fn kind(&self) -> StoreKind {
        StoreKind::Sqlite
    }

    fn name(&self) -> &'static str {
        "embedded SQLite"
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn exec(&self, step: &'static str, sql: &str, params: &[Value]) -> Result<Done, StoreError> {
        let mut slot = lock(&self.conn);
        let conn = match slot.take() {
            Some(conn) => conn,
            None => {
                let conn = open(&self.path, self.busy_timeout)?;
                conn.execute_batch(&self.ddl)
                    .map_err(|e| failed(&self.path, "creating the table", e))?;
                lease_clock::install(&conn)
                    .map_err(|e| failed(&self.path, "setting up the lease clock", e))?;
                conn
            }
        };
        // A failed step drops the connection, so the next one starts afresh.
        let done = Self::run(&conn, sql, params).map_err(|e| failed(&self.path, step, e))?;
        *slot = Some(conn);
        Ok(done)
    }

    fn local_file(&self) -> Option<&Path> {
        Some(&self.path)
    }
}
