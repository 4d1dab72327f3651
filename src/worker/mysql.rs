//! `WORKER_NODE` on MySQL or MariaDB, through `mysql_async` on tokio.

use super::{
    check_launch, check_worker_space, WorkerAssignment, WorkerIdAssigner, WorkerIdError,
    WorkerIdUsage, WorkerNode,
};
use crate::layout::BitsAllocator;
use crate::store::mysql::MySqlStore;
use crate::store::StoreError;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::time::Duration;

/// The `WORKER_NODE` DDL of `schema.sql`, for MySQL and MariaDB.
pub const MYSQL_SCHEMA: &str = include_str!("../../schema.sql");

/// The default table name.
pub const DEFAULT_TABLE: &str = "WORKER_NODE";

/// How long one network step of an assigner may take by default (resolving the host
/// name, connecting, each statement).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Assigns worker IDs from a `WORKER_NODE` table on MySQL 5.7+/8 or MariaDB 10+: each
/// launch inserts a row and takes its AUTO_INCREMENT id, so IDs are never reused
/// (UidGenerator's mode). For worker IDs that never run out, lease them instead: a
/// generator builder's `.store("mysql://…")` keeps leases in `WORKER_LEASE`.
///
/// Every launch of the whole fleet uses up a worker ID for good, so the layout must have
/// enough worker bits for every launch there will ever be: a layout with fewer than
/// [`MIN_ROW_PER_LAUNCH_WORKER_BITS`](crate::MIN_ROW_PER_LAUNCH_WORKER_BITS) (16) is
/// refused before any row is inserted, naming the launches it allows, unless
/// [`allow_small_worker_space(true)`](Self::allow_small_worker_space); a warning is
/// logged once 90% of the layout's worker IDs are used.
///
/// [`assign`](Self::assign) is async; [`WorkerIdAssigner::assign_worker_id`] wraps it for
/// code without a runtime (it runs its own, on a helper thread, so it also works when
/// called from inside a tokio runtime). Every network step is bounded by `timeout`
/// (default 5 s), resolving the host name included: an unreachable server is an error
/// naming its host and port within that time, never a hang. `Debug` and every error
/// show the URL without its password.
///
/// ```no_run
/// use uidgen::{BitsAllocator, MySqlWorkerIdAssigner, Preset, WorkerIdAssigner};
///
/// let assigner = MySqlWorkerIdAssigner::new("mysql://root@127.0.0.1:3306/test")?
///     .create_table(true);
/// let bits = BitsAllocator::preset(Preset::UidGeneratorReadme)?; // 21 worker bits
/// let assigned = assigner.assign_worker_id(&bits)?;
/// println!("{assigned}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct MySqlWorkerIdAssigner {
    store: MySqlStore,
    table: String,
    create_table: bool,
    node: WorkerNode,
    allow_small_worker_space: bool,
}

impl MySqlWorkerIdAssigner {
    /// An assigner for the database at `url` (`mysql://user[:password]@host[:port]/db`).
    /// Nothing is connected until an ID is assigned.
    pub fn new(url: &str) -> Result<Self, WorkerIdError> {
        Ok(Self {
            store: MySqlStore::new(url, DEFAULT_TIMEOUT)?,
            table: DEFAULT_TABLE.into(),
            create_table: false,
            node: WorkerNode::from_env(),
            allow_small_worker_space: false,
        })
    }

    setters! {
        /// Create the table (`schema.sql`) if it does not exist (default: no; a missing table
        /// is an error saying so).
        #[must_use]
        create_table(create: bool) => self.create_table = create;
    }

    /// Use another table of the same shape (default `WORKER_NODE`).
    pub fn table(mut self, name: &str) -> Result<Self, WorkerIdError> {
        check_table_name(name)?;
        self.table = name.to_owned();
        Ok(self)
    }

    /// The bound on each network step: resolving the host name, connecting (with the
    /// handshake) and each statement (default 5 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.store.set_timeout(timeout);
        self
    }

    setters! {
        /// The row this launch inserts (default: [`WorkerNode::from_env`]).
        #[must_use]
        node(node: WorkerNode) => self.node = node;

        /// Accept a layout with fewer than
        /// [`MIN_ROW_PER_LAUNCH_WORKER_BITS`](crate::MIN_ROW_PER_LAUNCH_WORKER_BITS) worker
        /// bits (default: refused), knowing that the fleet then stops after
        /// `2^worker_bits - 1` launches in all.
        #[must_use]
        allow_small_worker_space(allow: bool) => self.allow_small_worker_space = allow;
    }

    /// The database, without its password.
    pub fn location(&self) -> &str {
        self.store.location()
    }

    /// The registry, for messages.
    fn describe(&self) -> String {
        format!("the registry {} ({})", self.store.location(), self.table)
    }

    /// The guard alone, without connecting: whether [`assign`](Self::assign) would
    /// accept `bits` (see [`allow_small_worker_space`](Self::allow_small_worker_space)).
    pub fn check_layout(&self, bits: &BitsAllocator) -> Result<(), WorkerIdError> {
        check_worker_space(bits, self.allow_small_worker_space, &self.describe())
    }

    /// How many of `bits`' worker IDs the table has handed out (up to its largest row's
    /// ID), and how many launches are left.
    pub async fn usage(&self, bits: &BitsAllocator) -> Result<WorkerIdUsage, WorkerIdError> {
        let mut conn = self.store.connect().await?;
        let query = format!(
            "SELECT CAST(COALESCE(MAX(ID), 0) AS UNSIGNED) FROM {}",
            self.table
        );
        let result = self
            .store
            .bounded(
                "reading the largest worker row",
                conn.query_first::<u64, _>(query),
            )
            .await;
        self.store.disconnect(conn).await;
        Ok(WorkerIdUsage::of_launches(result?.unwrap_or(0), bits))
    }

    /// [`usage`](Self::usage) for code without a runtime (it runs its own, on a helper
    /// thread, as [`assign_worker_id`](WorkerIdAssigner::assign_worker_id) does).
    pub fn usage_blocking(&self, bits: &BitsAllocator) -> Result<WorkerIdUsage, WorkerIdError> {
        self.block_on(self.usage(bits))
    }

    /// Inserts this launch's row and returns its ID, checked against `bits`. A layout
    /// with too few worker bits is refused first (see
    /// [`allow_small_worker_space`](Self::allow_small_worker_space)).
    pub async fn assign(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        self.check_layout(bits)?;
        let mut conn = self.store.connect().await?;
        let result = self.insert_row(&mut conn).await;
        // The row is committed (autocommit) whether or not the goodbye succeeds.
        self.store.disconnect(conn).await;
        let id = result?;
        let source = format!("{} ({} row {id})", self.store.location(), self.table);
        check_launch(id, bits, &source)?;
        Ok(WorkerAssignment {
            worker_id: id,
            source,
        })
    }

    async fn insert_row(&self, conn: &mut Conn) -> Result<u64, StoreError> {
        if self.create_table {
            let ddl = MYSQL_SCHEMA.replacen(
                &format!("EXISTS {DEFAULT_TABLE} ("),
                &format!("EXISTS {} (", self.table),
                1,
            );
            self.store
                .bounded("creating the table", conn.query_drop(ddl))
                .await?;
        }
        let insert = format!(
            "INSERT INTO {} (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) \
             VALUES (?, ?, ?, CURDATE(), NOW(), NOW())",
            self.table
        );
        let params = (
            self.node.host_name.as_str(),
            self.node.port.as_str(),
            self.node.node_type as i32,
        );
        self.store
            .bounded("inserting the worker row", conn.exec_drop(insert, params))
            .await?;
        // AUTO_INCREMENT always gives an id to an insert that succeeded.
        Ok(conn.last_insert_id().unwrap_or_default())
    }
}

impl MySqlWorkerIdAssigner {
    /// Runs `work` to its end on a runtime of our own on a helper thread: `block_on` on a
    /// thread that is already inside a tokio runtime would panic, and this must work from
    /// any caller. (Database code is never built under loom, so std's scoped threads are
    /// fine here.)
    fn block_on<T: Send>(
        &self,
        work: impl std::future::Future<Output = Result<T, WorkerIdError>> + Send,
    ) -> Result<T, WorkerIdError> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| StoreError::Other {
                            store: "MySQL",
                            location: self.store.location().to_owned(),
                            step: "starting a tokio runtime",
                            source: Box::new(e),
                        })?;
                    runtime.block_on(work)
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(StoreError::Other {
                        store: "MySQL",
                        location: self.store.location().to_owned(),
                        step: "waiting for the registry on a helper thread",
                        source: "the helper thread panicked".into(),
                    }
                    .into())
                })
        })
    }
}

impl WorkerIdAssigner for MySqlWorkerIdAssigner {
    fn assign_worker_id(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        self.block_on(self.assign(bits))
    }
}

/// Refuses a table name that could not be pasted into SQL as it is.
fn check_table_name(name: &str) -> Result<(), WorkerIdError> {
    if crate::store::is_plain_identifier(name) {
        Ok(())
    } else {
        Err(WorkerIdError::InvalidTableName(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_must_be_plain_identifiers() {
        for good in ["WORKER_NODE", "worker_node_2", "_x"] {
            assert!(check_table_name(good).is_ok(), "{good}");
        }
        for bad in ["", "1abc", "a;DROP TABLE x", "a b", "a`b", &"x".repeat(65)] {
            assert!(check_table_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn debug_never_shows_the_password() {
        let assigner = MySqlWorkerIdAssigner::new("mysql://u:SECRETPW@h:1/d").unwrap();
        let shown = format!("{assigner:?}");
        assert!(!shown.contains("SECRETPW"), "{shown}");
        assert!(shown.contains("mysql://u@h:1/d"), "{shown}");
    }
}
