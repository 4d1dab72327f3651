//! Worker-ID leases on MySQL or MariaDB.

use super::lease::{Acquired, LeaseRecord, LeaseRequest, LeaseStore};
use super::mysql::{MySqlStore, ER_DUP_ENTRY};
use super::session::Session;
use super::StoreError;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};
use std::time::Duration;

const STORE: &str = "MySQL";

/// The `WORKER_LEASE` DDL for MySQL and MariaDB (`schema/worker_lease.mysql.sql`).
pub const MYSQL_LEASE_SCHEMA: &str = include_str!("../../schema/worker_lease.mysql.sql");

/// The store's clock, in Unix milliseconds.
const NOW_MS: &str = "CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)";

/// How many times `acquire` tries again after another process took its candidate first.
/// Each retry means someone else was granted a worker ID, so this only runs out when far
/// more processes than that start at the same moment.
const ACQUIRE_ATTEMPTS: usize = 100;

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) in a
/// `WORKER_LEASE` table on MySQL 5.7+/8 or MariaDB 10+, created if missing. Lease times
/// are the database server's clock, so holders on many machines agree on expiry.
///
/// Every step is one or a few autocommitted statements; taking a worker ID is an
/// `UPDATE ... WHERE` the lease is free (or an `INSERT` of a new row) whose affected-row
/// count says who won, so processes that start at once never get the same worker ID.
///
/// Every network step (resolving the host name, connecting, each statement) is bounded
/// by [`timeout`](Self::timeout). One connection is opened on first use and kept; clones
/// share it. `Debug` and errors never show the password.
///
/// ```no_run
/// use uidgen::{BitsAllocator, MySqlLeaseStore, WorkerLease};
///
/// let store = MySqlLeaseStore::new("mysql://root@127.0.0.1:3306/test")?;
/// let lease = WorkerLease::builder(store).acquire(&BitsAllocator::default())?;
/// println!("worker ID {}", lease.worker_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct MySqlLeaseStore {
    store: MySqlStore,
    table: String,
    /// The DDL run on connect, and the table name in it that `table` replaces.
    schema: (&'static str, &'static str),
    session: Session<Conn>,
}

impl std::fmt::Debug for MySqlLeaseStore {
    // By hand: the driver's options hold the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlLeaseStore")
            .field("location", &self.store.location())
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl MySqlLeaseStore {
    /// The store in the database at `url` (`mysql://user[:password]@host[:port]/db`).
    /// Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let mut store = MySqlStore::new(url, Duration::from_secs(5))?;
        store.count_matched_rows();
        Ok(Self {
            store,
            table: "WORKER_LEASE".into(),
            schema: (MYSQL_LEASE_SCHEMA, "WORKER_LEASE"),
            session: Session::new(),
        })
    }

    /// The bound on each network step: resolving the host name, connecting (with the
    /// handshake) and each statement (default 5 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.store.set_timeout(timeout);
        self
    }

    /// Use another table of the same shape (default `WORKER_LEASE`); created if missing.
    pub fn table(mut self, name: &str) -> Result<Self, StoreError> {
        super::check_table_name(STORE, name)?;
        self.table = name.to_owned();
        // A new table needs creating: start from a new connection.
        self.session = Session::new();
        Ok(self)
    }

    /// The same connection handling for another table: its DDL (run on connect) and the
    /// name in it (replaced by `table`); for the segment store.
    pub(super) fn for_schema(mut self, schema: &'static str, table: &'static str) -> Self {
        self.schema = (schema, table);
        self.table = table.into();
        self.session = Session::new();
        self
    }

    pub(super) fn table_name(&self) -> &str {
        &self.table
    }

    pub(super) fn server(&self) -> &MySqlStore {
        &self.store
    }

    /// The database, without its password.
    pub fn location(&self) -> &str {
        self.store.location()
    }

    /// Drops the table, with every lease and time mark in it. Only for a store no
    /// generator will use again (tests, a retired deployment): the marks are what keep a
    /// reused worker ID's IDs above those made before.
    pub fn destroy(&self) -> Result<(), StoreError> {
        let drop = format!("DROP TABLE IF EXISTS {}", self.table);
        self.run(async |conn| {
            self.store
                .bounded("dropping the table", conn.query_drop(drop))
                .await
        })
    }

    pub(super) fn run<T: Send>(
        &self,
        work: impl AsyncFnOnce(&mut Conn) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        self.session.run(
            STORE,
            self.store.location(),
            async || {
                let mut conn = self.store.connect().await?;
                let (schema, schema_table) = self.schema;
                let ddl = schema.replacen(
                    &format!("EXISTS {schema_table} ("),
                    &format!("EXISTS {} (", self.table),
                    1,
                );
                self.store
                    .bounded("creating the table", conn.query_drop(ddl))
                    .await?;
                Ok(conn)
            },
            work,
        )
    }

    /// Column `index` of `row`: an error, not a panic, if the table's columns have other
    /// types than the schema's.
    pub(super) fn column<T: mysql_async::prelude::FromValue>(
        &self,
        row: &Row,
        index: usize,
        step: &'static str,
    ) -> Result<T, StoreError> {
        match row.get_opt::<T, usize>(index) {
            Some(Ok(value)) => Ok(value),
            other => Err(StoreError::Unexpected {
                store: STORE,
                location: self.store.location().to_owned(),
                step,
                what: format!(
                    "column {index} of {} {}; compare the table with its DDL in schema/",
                    self.table,
                    if other.is_none() {
                        "is missing"
                    } else {
                        "has another type"
                    }
                ),
            }),
        }
    }

    /// Takes `worker_id` if it is free (or already the holder's); `None` if another
    /// process took it first.
    async fn take(
        &self,
        conn: &mut Conn,
        worker_id: u64,
        request: &LeaseRequest<'_>,
    ) -> Result<Option<u64>, StoreError> {
        let update = format!(
            "UPDATE {} SET HOLDER = ?, EXPIRES_MS = {NOW_MS} + ?, MODIFIED = NOW(3)
             WHERE WORKER_ID = ? AND (HOLDER IS NULL OR EXPIRES_MS <= {NOW_MS} OR HOLDER = ?)",
            self.table
        );
        self.store
            .bounded(
                "taking the lease",
                conn.exec_drop(
                    update,
                    (
                        request.holder,
                        millis(request.ttl),
                        worker_id,
                        request.holder,
                    ),
                ),
            )
            .await?;
        if conn.affected_rows() != 1 {
            return Ok(None);
        }
        // The lease is ours now: only its holder changes the mark, so this read is exact.
        let select = format!("SELECT MARK_MS FROM {} WHERE WORKER_ID = ?", self.table);
        let step = "reading the time mark";
        let row: Option<Row> = self
            .store
            .bounded(step, conn.exec_first(select, (worker_id,)))
            .await?;
        match row {
            Some(row) => Ok(Some(self.column(&row, 0, step)?)),
            None => Ok(Some(0)),
        }
    }

    /// Inserts `worker_id` as a new row held by the requester; `false` if it exists.
    async fn insert(
        &self,
        conn: &mut Conn,
        worker_id: u64,
        request: &LeaseRequest<'_>,
    ) -> Result<bool, StoreError> {
        let insert = format!(
            "INSERT INTO {} (WORKER_ID, HOLDER, EXPIRES_MS, MARK_MS, MODIFIED)
             VALUES (?, ?, {NOW_MS} + ?, 0, NOW(3))",
            self.table
        );
        let step = "creating a lease row";
        let inserted = conn.exec_drop(insert, (worker_id, request.holder, millis(request.ttl)));
        match tokio::time::timeout(self.store.timeout(), inserted).await {
            Ok(Ok(())) => Ok(true),
            // Another process created it first: the caller looks again.
            Ok(Err(mysql_async::Error::Server(e))) if e.code == ER_DUP_ENTRY => Ok(false),
            Ok(Err(e)) => Err(self.store.explain(e, step)),
            Err(_) => Err(self.store.timed_out(step)),
        }
    }

    async fn acquire_on(
        &self,
        conn: &mut Conn,
        request: &LeaseRequest<'_>,
    ) -> Result<Acquired, StoreError> {
        for _ in 0..ACQUIRE_ATTEMPTS {
            if let Some(wanted) = request.worker_id {
                let select = format!(
                    "SELECT HOLDER, EXPIRES_MS, {NOW_MS} FROM {} WHERE WORKER_ID = ?",
                    self.table
                );
                let step = "reading the lease";
                let row: Option<Row> = self
                    .store
                    .bounded(step, conn.exec_first(select, (wanted,)))
                    .await?;
                let held = match row {
                    Some(row) => Some((
                        self.column::<Option<String>>(&row, 0, step)?,
                        self.column::<i64>(&row, 1, step)?,
                        self.column::<i64>(&row, 2, step)?,
                    )),
                    None => None,
                };
                match held {
                    None => {
                        if self.insert(conn, wanted, request).await? {
                            return Ok(Acquired::Granted {
                                worker_id: wanted,
                                mark_ms: 0,
                            });
                        }
                    }
                    Some((Some(holder), expires, now))
                        if expires > now && holder != request.holder =>
                    {
                        return Ok(Acquired::Held {
                            holder,
                            expires_in: Duration::from_millis(to_u64(expires - now)),
                        });
                    }
                    Some(_) => {
                        if let Some(mark_ms) = self.take(conn, wanted, request).await? {
                            return Ok(Acquired::Granted {
                                worker_id: wanted,
                                mark_ms,
                            });
                        }
                    }
                }
                continue;
            }
            let free = format!(
                "SELECT MIN(WORKER_ID) FROM {} WHERE (HOLDER IS NULL OR EXPIRES_MS <= {NOW_MS})
                   AND WORKER_ID <= ?",
                self.table
            );
            let step = "looking for a free worker ID";
            let free: Option<Row> = self
                .store
                .bounded(step, conn.exec_first(free, (request.max_worker_id,)))
                .await?;
            let free: Option<u64> = match free {
                Some(row) => self.column(&row, 0, step)?,
                None => None,
            };
            if let Some(id) = free {
                if let Some(mark_ms) = self.take(conn, id, request).await? {
                    return Ok(Acquired::Granted {
                        worker_id: id,
                        mark_ms,
                    });
                }
                continue;
            }
            let table = &self.table;
            let unused = format!(
                "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM {table} WHERE WORKER_ID = 0) THEN 0
                   ELSE (SELECT MIN(a.WORKER_ID) + 1 FROM {table} AS a WHERE NOT EXISTS
                     (SELECT 1 FROM {table} AS b WHERE b.WORKER_ID = a.WORKER_ID + 1)) END"
            );
            let step = "looking for an unused worker ID";
            let unused: Option<Row> = self.store.bounded(step, conn.query_first(unused)).await?;
            let id: u64 = match unused {
                Some(row) => self.column::<Option<u64>>(&row, 0, step)?.unwrap_or(0),
                None => 0,
            };
            if id > request.max_worker_id {
                return Ok(Acquired::Exhausted);
            }
            if self.insert(conn, id, request).await? {
                return Ok(Acquired::Granted {
                    worker_id: id,
                    mark_ms: 0,
                });
            }
        }
        Err(StoreError::Unexpected {
            store: STORE,
            location: self.store.location().to_owned(),
            step: "taking a worker ID",
            what: format!(
                "another process took each candidate first, {ACQUIRE_ATTEMPTS} times in a row; \
                 try again, or start fewer processes at once"
            ),
        })
    }
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX / 4)
}

impl LeaseStore for MySqlLeaseStore {
    fn describe(&self) -> String {
        format!(
            "the MySQL store {} (table {})",
            self.store.location(),
            self.table
        )
    }

    fn acquire(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        self.run(async |conn| self.acquire_on(conn, request).await)
    }

    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        let update = format!(
            "UPDATE {} SET EXPIRES_MS = {NOW_MS} + ?, MARK_MS = GREATEST(MARK_MS, ?),
               MODIFIED = NOW(3)
             WHERE WORKER_ID = ? AND HOLDER = ?",
            self.table
        );
        self.run(async |conn| {
            self.store
                .bounded(
                    "renewing the lease",
                    conn.exec_drop(update, (millis(ttl), mark_ms, worker_id, holder)),
                )
                .await?;
            // Rows matched, not changed (`count_matched_rows`).
            Ok(conn.affected_rows() == 1)
        })
    }

    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        let update = format!(
            "UPDATE {} SET HOLDER = NULL, EXPIRES_MS = 0, MARK_MS = ?, MODIFIED = NOW(3)
             WHERE WORKER_ID = ? AND HOLDER = ?",
            self.table
        );
        self.run(async |conn| {
            self.store
                .bounded(
                    "releasing the lease",
                    conn.exec_drop(update, (mark_ms, worker_id, holder)),
                )
                .await?;
            Ok(conn.affected_rows() == 1)
        })
    }

    fn leases(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        let select = format!(
            "SELECT WORKER_ID, HOLDER, EXPIRES_MS, MARK_MS, {NOW_MS} FROM {} ORDER BY WORKER_ID",
            self.table
        );
        self.run(async |conn| {
            let step = "listing the leases";
            let rows: Vec<Row> = self.store.bounded(step, conn.query(select)).await?;
            rows.iter()
                .map(|row| {
                    Ok(LeaseRecord::new(
                        self.column(row, 0, step)?,
                        self.column(row, 1, step)?,
                        to_u64(self.column(row, 2, step)?),
                        to_u64(self.column(row, 4, step)?),
                        to_u64(self.column(row, 3, step)?),
                    ))
                })
                .collect()
        })
    }
}
