//! The embedded default: `WORKER_NODE` in a local SQLite file, so one machine needs no
//! server.

use super::{
    check_launch, check_worker_space, WorkerAssignment, WorkerIdAssigner, WorkerIdError,
    WorkerIdUsage, WorkerNode,
};
use crate::layout::BitsAllocator;
use crate::store::sqlite;
use crate::store::StoreError;
use rusqlite::{params, TransactionBehavior};
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

pub use crate::store::sqlite::WORKER_DB_ENV;

/// `WORKER_NODE` in a SQLite file: a new worker ID per launch with no server
/// (UidGenerator's mode). For worker IDs that never run out, lease them instead: a
/// generator builder's `.embedded()` keeps leases in the same file.
///
/// Every launch uses up a worker ID for good, so the layout must have enough worker
/// bits for every launch there will ever be: a layout with fewer than
/// [`MIN_ROW_PER_LAUNCH_WORKER_BITS`](crate::MIN_ROW_PER_LAUNCH_WORKER_BITS) (16) is
/// refused, naming the launches it allows, unless
/// [`allow_small_worker_space(true)`](Self::allow_small_worker_space); a warning is
/// logged once 90% of the layout's worker IDs are used.
///
/// Safe when several processes start at once: each assignment is one `BEGIN IMMEDIATE`
/// transaction, and a process that finds the file locked waits (up to `busy_timeout`,
/// default 10 s) rather than failing. Worker IDs are unique per file, so every process of
/// a machine must use the same file, and processes on different machines need the MySQL
/// assigner (or hand-assigned IDs).
///
/// ```
/// use uidgen::{BitsAllocator, EmbeddedWorkerIdAssigner, Preset, WorkerIdAssigner};
///
/// let dir = std::env::temp_dir().join(format!("uidgen-doc-{}", std::process::id()));
/// let assigner = EmbeddedWorkerIdAssigner::new(dir.join("workers.sqlite3"));
/// let bits = BitsAllocator::preset(Preset::UidGeneratorReadme)?; // 21 worker bits
/// let first = assigner.assign_worker_id(&bits)?;
/// let second = assigner.assign_worker_id(&bits)?;
/// assert!(second.worker_id > first.worker_id);
///
/// // The default layout's 10 worker bits would last 1023 launches: refused.
/// let err = assigner.assign_worker_id(&BitsAllocator::default()).unwrap_err();
/// assert!(err.to_string().contains("1023 launches"));
/// # std::fs::remove_dir_all(dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct EmbeddedWorkerIdAssigner {
    path: PathBuf,
    node: WorkerNode,
    busy_timeout: Duration,
    allow_small_worker_space: bool,
}

impl EmbeddedWorkerIdAssigner {
    /// The registry in the SQLite file at `path` (created, with its folder, if missing).
    ///
    /// The path is checked when an ID is assigned: `:memory:` and `file:` URIs are
    /// refused there, since every process would get a registry of its own.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            node: WorkerNode::from_env(),
            busy_timeout: Duration::from_secs(10),
            allow_small_worker_space: false,
        }
    }

    /// The registry at `$UIDGEN_WORKER_DB`, or else `uidgen/workers.sqlite3` under the
    /// user's data directory (`~/.local/share` on Linux).
    pub fn at_default_path() -> Result<Self, WorkerIdError> {
        Ok(Self::new(sqlite::at_default_path()?))
    }

    /// Where [`at_default_path`](Self::at_default_path) puts the file, if anywhere.
    pub fn default_path() -> Option<PathBuf> {
        sqlite::default_path()
    }

    setters! {
        /// The row this launch inserts (default: [`WorkerNode::from_env`]).
        #[must_use]
        node(node: WorkerNode) => self.node = node;

        /// How long to wait for another process holding the file (default 10 s).
        #[must_use]
        busy_timeout(timeout: Duration) => self.busy_timeout = timeout;

        /// Accept a layout with fewer than
        /// [`MIN_ROW_PER_LAUNCH_WORKER_BITS`](crate::MIN_ROW_PER_LAUNCH_WORKER_BITS) worker
        /// bits (default: refused), knowing that the registry then stops after
        /// `2^worker_bits - 1` launches in all.
        #[must_use]
        allow_small_worker_space(allow: bool) => self.allow_small_worker_space = allow;
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The registry, for messages.
    fn describe(&self) -> String {
        format!(
            "the embedded registry {} (WORKER_NODE)",
            self.path.display()
        )
    }

    /// How many of `bits`' worker IDs the registry has handed out (every ID up to the
    /// largest it ever gave, deleted rows included), and how many launches are left. A
    /// file or table that does not exist yet has used none.
    pub fn usage(&self, bits: &BitsAllocator) -> Result<WorkerIdUsage, WorkerIdError> {
        let failed = |e| sqlite::failed(&self.path, "reading WORKER_NODE's counter", e);
        if !self.path.exists() {
            sqlite::check_path(&self.path)?;
            return Ok(WorkerIdUsage::of_launches(0, bits));
        }
        let conn = sqlite::open(&self.path, self.busy_timeout)?;
        let has_counter: bool = conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM sqlite_master WHERE name = 'sqlite_sequence'",
                [],
                |row| row.get(0),
            )
            .map_err(failed)?;
        let highest: i64 = if has_counter {
            conn.query_row(
                "SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'WORKER_NODE'",
                [],
                |row| row.get(0),
            )
            .map_err(failed)?
        } else {
            0
        };
        Ok(WorkerIdUsage::of_launches(
            u64::try_from(highest).unwrap_or(0),
            bits,
        ))
    }

    fn insert_row(&self) -> Result<i64, StoreError> {
        let failed = |step, e| sqlite::failed(&self.path, step, e);
        let mut conn = sqlite::open(&self.path, self.busy_timeout)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| failed("locking the registry (BEGIN IMMEDIATE)", e))?;
        tx.execute_batch(SCHEMA)
            .map_err(|e| failed("creating WORKER_NODE", e))?;
        tx.execute(
            "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED)
             VALUES (?1, ?2, ?3, date('now'), datetime('now'), datetime('now'))",
            params![
                self.node.host_name,
                self.node.port,
                self.node.node_type as i32
            ],
        )
        .map_err(|e| failed("inserting the worker row", e))?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|e| failed("committing", e))?;
        Ok(id)
    }

    /// [`assign_worker_id`](WorkerIdAssigner::assign_worker_id) on tokio's blocking
    /// pool, so an async caller's worker thread never waits on the file lock.
    #[cfg(feature = "tokio")]
    pub async fn assign(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        let (this, bits) = (self.clone(), *bits);
        tokio::task::spawn_blocking(move || this.assign_worker_id(&bits))
            .await
            .unwrap_or_else(|join| {
                Err(StoreError::File {
                    path: self.path.clone(),
                    problem: "the blocking task assigning a worker ID failed".into(),
                    source: Some(Box::new(join)),
                }
                .into())
            })
    }
}

impl WorkerIdAssigner for EmbeddedWorkerIdAssigner {
    fn assign_worker_id(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        check_worker_space(bits, self.allow_small_worker_space, &self.describe())?;
        let id = self.insert_row()?;
        // AUTOINCREMENT IDs start at 1 and are positive.
        let worker_id = u64::try_from(id).unwrap_or(u64::MAX);
        let source = format!(
            "the embedded registry {} (WORKER_NODE row {id})",
            self.path.display()
        );
        check_launch(worker_id, bits, &source)?;
        Ok(WorkerAssignment { worker_id, source })
    }
}
