//! The embedded default: `WORKER_NODE` in a local SQLite file, so one machine needs no
//! server.

use super::{check_fits, WorkerAssignment, WorkerIdAssigner, WorkerIdError, WorkerNode};
use crate::bits::BitsAllocator;
use rusqlite::{params, Connection, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `AUTOINCREMENT` (not a plain rowid) so an ID is never reused, even after its row is
/// deleted: SQLite then remembers the largest ID ever handed out.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS WORKER_NODE (
    ID          INTEGER PRIMARY KEY AUTOINCREMENT,
    HOST_NAME   TEXT    NOT NULL,
    PORT        TEXT    NOT NULL,
    TYPE        INTEGER NOT NULL,
    LAUNCH_DATE TEXT    NOT NULL,
    MODIFIED    TEXT    NOT NULL,
    CREATED     TEXT    NOT NULL
)";

/// Environment variable that overrides the default database path.
pub const WORKER_DB_ENV: &str = "UIDGEN_WORKER_DB";

/// `WORKER_NODE` in a SQLite file: a new worker ID per launch with no server.
///
/// Safe when several processes start at once: each assignment is one `BEGIN IMMEDIATE`
/// transaction, and a process that finds the file locked waits (up to `busy_timeout`,
/// default 10 s) rather than failing. Worker IDs are unique per file, so every process of
/// a machine must use the same file, and processes on different machines need the MySQL
/// assigner (or hand-assigned IDs).
///
/// ```
/// use uidgen::{BitsAllocator, EmbeddedWorkerIdAssigner, WorkerIdAssigner};
///
/// let dir = std::env::temp_dir().join(format!("uidgen-doc-{}", std::process::id()));
/// let assigner = EmbeddedWorkerIdAssigner::new(dir.join("workers.sqlite3"));
/// let first = assigner.assign_worker_id(&BitsAllocator::default())?;
/// let second = assigner.assign_worker_id(&BitsAllocator::default())?;
/// assert!(second.worker_id > first.worker_id);
/// # std::fs::remove_dir_all(dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct EmbeddedWorkerIdAssigner {
    path: PathBuf,
    node: WorkerNode,
    busy_timeout: Duration,
}

impl EmbeddedWorkerIdAssigner {
    /// The registry in the SQLite file at `path` (created, with its folder, if missing).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            node: WorkerNode::from_env(),
            busy_timeout: Duration::from_secs(10),
        }
    }

    /// The registry at `$UIDGEN_WORKER_DB`, or else `uidgen/workers.sqlite3` under the
    /// user's data directory (`~/.local/share` on Linux).
    pub fn at_default_path() -> Result<Self, WorkerIdError> {
        Self::default_path()
            .map(Self::new)
            .ok_or_else(|| WorkerIdError::Embedded {
                path: "(none)".into(),
                message: format!(
                    "no data directory is known for this user; set {WORKER_DB_ENV} to a file path"
                ),
            })
    }

    /// Where [`at_default_path`](Self::at_default_path) puts the file, if anywhere.
    pub fn default_path() -> Option<PathBuf> {
        match std::env::var_os(WORKER_DB_ENV) {
            Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
            _ => dirs::data_dir().map(|dir| dir.join("uidgen").join("workers.sqlite3")),
        }
    }

    /// The row this launch inserts (default: [`WorkerNode::from_env`]).
    pub fn node(mut self, node: WorkerNode) -> Self {
        self.node = node;
        self
    }

    /// How long to wait for another process holding the file (default 10 s).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn insert_row(&self) -> Result<i64, String> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create folder {}: {e}", dir.display()))?;
        }
        let mut conn = Connection::open(&self.path).map_err(|e| e.to_string())?;
        conn.busy_timeout(self.busy_timeout)
            .map_err(|e| e.to_string())?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| e.to_string())?;
        tx.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
        tx.execute(
            "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED)
             VALUES (?1, ?2, ?3, date('now'), datetime('now'), datetime('now'))",
            params![
                self.node.host_name,
                self.node.port,
                self.node.node_type as i32
            ],
        )
        .map_err(|e| e.to_string())?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|e| e.to_string())?;
        Ok(id)
    }
}

impl WorkerIdAssigner for EmbeddedWorkerIdAssigner {
    fn assign_worker_id(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        let id = self
            .insert_row()
            .map_err(|message| WorkerIdError::Embedded {
                path: self.path.display().to_string(),
                message,
            })?;
        // AUTOINCREMENT IDs start at 1 and are positive.
        let worker_id = u64::try_from(id).unwrap_or(u64::MAX);
        let source = format!(
            "the embedded registry {} (WORKER_NODE row {id})",
            self.path.display()
        );
        check_fits(worker_id, bits, &source)?;
        Ok(WorkerAssignment { worker_id, source })
    }
}
