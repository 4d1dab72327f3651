//! `WORKER_NODE` on MySQL or MariaDB, through `mysql_async` on tokio.

use super::{
    check_fits, WorkerAssignment, WorkerIdAssigner, WorkerIdError, WorkerNode, DEFAULT_TABLE,
    DEFAULT_TIMEOUT, MYSQL_SCHEMA,
};
use crate::bits::BitsAllocator;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};
use std::future::Future;
use std::time::Duration;

/// Server error codes we explain in our own words: wrong password (1045), a user that
/// may not log in without one (1698, MariaDB), a user without access to the database
/// (1044), and a missing table (1146).
const ER_ACCESS_DENIED: [u16; 3] = [1045, 1698, 1044];
const ER_NO_SUCH_TABLE: u16 = 1146;

/// Assigns worker IDs from a `WORKER_NODE` table on MySQL 5.7+/8 or MariaDB 10+: each
/// launch inserts a row and takes its AUTO_INCREMENT id, so IDs are never reused.
///
/// [`assign`](Self::assign) is async; [`WorkerIdAssigner::assign_worker_id`] wraps it for
/// code without a runtime (it runs its own, on a helper thread, so it also works when
/// called from inside a tokio runtime). Every network step is bounded by `timeout`
/// (default 5 s): an unreachable server is an error naming its host and port within that
/// time, never a hang.
///
/// ```no_run
/// use uidgen::{BitsAllocator, MySqlWorkerIdAssigner, WorkerIdAssigner};
///
/// let assigner = MySqlWorkerIdAssigner::new("mysql://root@127.0.0.1:3306/test")?
///     .create_table(true);
/// let assigned = assigner.assign_worker_id(&BitsAllocator::default())?;
/// println!("{assigned}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct MySqlWorkerIdAssigner {
    opts: Opts,
    host: String,
    port: u16,
    /// The URL without its password, for messages.
    location: String,
    table: String,
    create_table: bool,
    timeout: Duration,
    node: WorkerNode,
}

impl MySqlWorkerIdAssigner {
    /// An assigner for the database at `url` (`mysql://user[:password]@host[:port]/db`).
    /// Nothing is connected until an ID is assigned.
    pub fn new(url: &str) -> Result<Self, WorkerIdError> {
        let opts = Opts::from_url(url).map_err(|e| WorkerIdError::InvalidUrl {
            url: redact(url),
            reason: e.to_string(),
        })?;
        let host = opts.ip_or_hostname().to_owned();
        let port = opts.tcp_port();
        let location = format!(
            "mysql://{}@{host}:{port}/{}",
            opts.user().unwrap_or(""),
            opts.db_name().unwrap_or("")
        );
        Ok(Self {
            opts,
            host,
            port,
            location,
            table: DEFAULT_TABLE.into(),
            create_table: false,
            timeout: DEFAULT_TIMEOUT,
            node: WorkerNode::from_env(),
        })
    }

    /// Create the table (`schema.sql`) if it does not exist (default: no; a missing table
    /// is an error saying so).
    pub fn create_table(mut self, create: bool) -> Self {
        self.create_table = create;
        self
    }

    /// Use another table of the same shape (default `WORKER_NODE`).
    pub fn table(mut self, name: &str) -> Result<Self, WorkerIdError> {
        check_table_name(name)?;
        self.table = name.to_owned();
        Ok(self)
    }

    /// The bound on each network step: connecting (with the handshake) and each
    /// statement (default 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The row this launch inserts (default: [`WorkerNode::from_env`]).
    pub fn node(mut self, node: WorkerNode) -> Self {
        self.node = node;
        self
    }

    /// The database, without its password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Inserts this launch's row and returns its ID, checked against `bits`.
    pub async fn assign(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        let mut conn = self
            .bounded("connecting", Conn::new(self.opts.clone()))
            .await?;
        let result = self.insert_row(&mut conn).await;
        // The row is committed (autocommit) whether or not the goodbye succeeds.
        let _ = tokio::time::timeout(self.timeout, conn.disconnect()).await;
        let id = result?;
        let source = format!("{} ({} row {id})", self.location, self.table);
        check_fits(id, bits, &source)?;
        Ok(WorkerAssignment {
            worker_id: id,
            source,
        })
    }

    async fn insert_row(&self, conn: &mut Conn) -> Result<u64, WorkerIdError> {
        if self.create_table {
            let ddl = MYSQL_SCHEMA.replacen(
                &format!("EXISTS {DEFAULT_TABLE} ("),
                &format!("EXISTS {} (", self.table),
                1,
            );
            self.bounded("creating the table", conn.query_drop(ddl))
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
        self.bounded("inserting the worker row", conn.exec_drop(insert, params))
            .await?;
        conn.last_insert_id()
            .ok_or_else(|| WorkerIdError::Database {
                location: self.location.clone(),
                message: format!(
                    "the insert into {} returned no AUTO_INCREMENT id",
                    self.table
                ),
            })
    }

    /// Runs one network step within `timeout`, turning failures into our errors.
    async fn bounded<T>(
        &self,
        step: &str,
        future: impl Future<Output = mysql_async::Result<T>>,
    ) -> Result<T, WorkerIdError> {
        match tokio::time::timeout(self.timeout, future).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(self.explain(err)),
            Err(_) => Err(WorkerIdError::Unreachable {
                host: self.host.clone(),
                port: self.port,
                reason: format!("no answer within {:?} while {step}", self.timeout),
            }),
        }
    }

    fn explain(&self, err: mysql_async::Error) -> WorkerIdError {
        match err {
            mysql_async::Error::Server(e) if ER_ACCESS_DENIED.contains(&e.code) => {
                WorkerIdError::AccessDenied {
                    user: self.opts.user().unwrap_or("").to_owned(),
                    host: self.host.clone(),
                    port: self.port,
                    message: e.message,
                }
            }
            mysql_async::Error::Server(e) if e.code == ER_NO_SUCH_TABLE => {
                WorkerIdError::MissingTable {
                    table: self.table.clone(),
                    location: self.location.clone(),
                }
            }
            mysql_async::Error::Io(e) => WorkerIdError::Unreachable {
                host: self.host.clone(),
                port: self.port,
                reason: e.to_string(),
            },
            other => WorkerIdError::Database {
                location: self.location.clone(),
                message: other.to_string(),
            },
        }
    }
}

impl WorkerIdAssigner for MySqlWorkerIdAssigner {
    fn assign_worker_id(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        // A runtime of our own on a helper thread: `block_on` on a thread that is already
        // inside a tokio runtime would panic, and this must work from any caller.
        // (Database code is never built under loom, so std's scoped threads are fine here.)
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| WorkerIdError::Database {
                            location: self.location.clone(),
                            message: format!("cannot start a tokio runtime: {e}"),
                        })?;
                    runtime.block_on(self.assign(bits))
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(WorkerIdError::Database {
                        location: self.location.clone(),
                        message: "the assigner's helper thread panicked".into(),
                    })
                })
        })
    }
}

/// Refuses a table name that could not be pasted into SQL as it is.
fn check_table_name(name: &str) -> Result<(), WorkerIdError> {
    let plain = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    if plain {
        Ok(())
    } else {
        Err(WorkerIdError::InvalidTableName(name.to_owned()))
    }
}

/// `url` with the password (between `user:` and `@`) replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((credentials, host)) if credentials.contains(':') => {
            let user = credentials.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}")
        }
        _ => url.to_owned(),
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
    fn passwords_never_reach_messages() {
        assert_eq!(redact("mysql://u:secret@h:1/d"), "mysql://u:***@h:1/d");
        assert_eq!(redact("mysql://u@h/d"), "mysql://u@h/d");
        let err = MySqlWorkerIdAssigner::new("postgres://u:secret@h/d").unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(err.to_string().contains("postgres://u:***@h/d"), "{err}");
    }
}
