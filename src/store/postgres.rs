//! Worker-ID leases on PostgreSQL, through `tokio-postgres` (no TLS).

use super::lease::{Acquired, LeaseRecord, LeaseRequest, LeaseStore};
use super::session::Session;
use super::{redact_url, StoreError};
use std::future::Future;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, Row};

const STORE: &str = "PostgreSQL";
const EXPECTED: &str = "postgres://user[:password]@host[:port]/database";

/// The `WORKER_LEASE` DDL for PostgreSQL (`schema/worker_lease.postgres.sql`).
pub const POSTGRES_LEASE_SCHEMA: &str = include_str!("../../schema/worker_lease.postgres.sql");

/// The store's clock, in Unix milliseconds (`clock_timestamp`, not the transaction's
/// start as `now()` would be).
const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

// Statements go through `query_typed`: one round trip each, where a plain `query` first
// asks the server to prepare the statement (a second round trip).

/// How many times `acquire` tries again after another process took its candidate first.
const ACQUIRE_ATTEMPTS: usize = 100;

/// Worker-ID leases and time marks (see [`WorkerLease`](crate::WorkerLease)) in a
/// `WORKER_LEASE` table on PostgreSQL 10+, created if missing. Lease times are the
/// database server's clock, so holders on many machines agree on expiry.
///
/// Every step is one or a few autocommitted statements; taking a worker ID is an
/// `UPDATE ... WHERE` the lease is free (or an `INSERT ... ON CONFLICT DO NOTHING`) whose
/// row count says who won, so processes that start at once never get the same worker ID.
///
/// Every network step (resolving the host name, connecting, each statement) is bounded
/// by [`timeout`](Self::timeout). One connection is opened on first use and kept; clones
/// share it. TLS is not built: use it on a trusted network. `Debug` and errors never
/// show the password.
///
/// ```no_run
/// use uidgen::{BitsAllocator, PostgresLeaseStore, WorkerLease};
///
/// let store = PostgresLeaseStore::new("postgres://postgres@127.0.0.1:5432/test")?;
/// let lease = WorkerLease::builder(store).acquire(&BitsAllocator::default())?;
/// println!("worker ID {}", lease.worker_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PostgresLeaseStore {
    config: tokio_postgres::Config,
    host: String,
    port: u16,
    user: String,
    database: String,
    /// `postgres://user@host:port/db`, for messages: never a password.
    location: String,
    timeout: Duration,
    table: String,
    /// The DDL run on connect, and the table name in it that `table` replaces.
    schema: (&'static str, &'static str),
    session: Session<Client>,
}

impl std::fmt::Debug for PostgresLeaseStore {
    // By hand: the driver's configuration holds the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresLeaseStore")
            .field("location", &self.location)
            .field("table", &self.table)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl PostgresLeaseStore {
    /// The store in the database at `url` (`postgres://user[:password]@host[:port]/db`;
    /// `postgresql://` too; the only query parameter understood is `sslmode=disable`).
    /// Nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let invalid = |reason: String| StoreError::InvalidUrl {
            store: STORE,
            url: redact_url(url),
            reason,
            expected: EXPECTED,
        };
        // Parsed here, not by the driver: its messages may echo parts of the URL.
        let parsed = url::Url::parse(url.trim()).map_err(|e| invalid(e.to_string()))?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql") {
            return Err(invalid(format!(
                "the scheme is {:?}, not \"postgres\"",
                parsed.scheme()
            )));
        }
        let host = match parsed.host_str() {
            Some(host) if !host.is_empty() && !parsed.cannot_be_a_base() => host.to_owned(),
            _ => {
                return Err(invalid(
                    "no host (write postgres://, with two slashes)".into(),
                ))
            }
        };
        let port = parsed.port().unwrap_or(5432);
        let user = super::url::percent_decode(parsed.username());
        if user.is_empty() {
            return Err(invalid("no user name (postgres://user@host/db)".into()));
        }
        let database = super::url::percent_decode(parsed.path().trim_start_matches('/'));
        if database.is_empty() || database.contains('/') {
            return Err(invalid("no database name (postgres://user@host/db)".into()));
        }
        for (key, value) in parsed.query_pairs() {
            match (key.as_ref(), value.as_ref()) {
                ("sslmode", "disable" | "prefer" | "allow") => {}
                ("sslmode", _) => {
                    return Err(invalid(
                        "this sslmode needs TLS, which uidgen does not build; use \
                         sslmode=disable on a trusted network"
                            .into(),
                    ))
                }
                _ => {
                    return Err(invalid(format!(
                        "unknown parameter {:?} (only sslmode=disable is understood)",
                        if super::is_credential_key(&key) {
                            "***".into()
                        } else {
                            key.into_owned()
                        }
                    )))
                }
            }
        }
        let mut config = tokio_postgres::Config::new();
        config
            .user(&user)
            .dbname(&database)
            .application_name("uidgen")
            .ssl_mode(tokio_postgres::config::SslMode::Disable);
        if let Some(password) = parsed.password() {
            config.password(super::url::percent_decode(password));
        }
        let location = format!("postgres://{user}@{host}:{port}/{database}");
        Ok(Self {
            config,
            host,
            port,
            user,
            database,
            location,
            timeout: Duration::from_secs(5),
            table: "WORKER_LEASE".into(),
            schema: (POSTGRES_LEASE_SCHEMA, "WORKER_LEASE"),
            session: Session::new(),
        })
    }

    /// The bound on each network step: resolving the host name, connecting (with the
    /// handshake) and each statement (default 5 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Use another table of the same shape (default `WORKER_LEASE`); created if missing.
    /// PostgreSQL folds it to lower case, as it does every unquoted name.
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

    /// The database, without its password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Drops the table, with every lease and time mark in it. Only for a store no
    /// generator will use again (tests, a retired deployment): the marks are what keep a
    /// reused worker ID's IDs above those made before.
    pub fn destroy(&self) -> Result<(), StoreError> {
        let drop = format!("DROP TABLE IF EXISTS {}", self.table);
        self.run(async |client| {
            self.bounded("dropping the table", client.batch_execute(&drop))
                .await
        })
    }

    /// Column `index` of `row`: an error, not a panic, if the table's columns have other
    /// types than the schema's.
    pub(super) fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
        &self,
        row: &'a Row,
        index: usize,
        step: &'static str,
    ) -> Result<T, StoreError> {
        row.try_get(index).map_err(|e| StoreError::Other {
            store: STORE,
            location: self.location.clone(),
            step,
            source: format!(
                "column {index} of {}: {e}; compare the table with its DDL in schema/",
                self.table
            )
            .into(),
        })
    }

    pub(super) fn timed_out(&self, step: &'static str) -> StoreError {
        StoreError::Timeout {
            store: STORE,
            host: self.host.clone(),
            port: self.port,
            step,
            timeout: self.timeout,
        }
    }

    /// Runs one network step within the bound, turning failures into our errors.
    pub(super) async fn bounded<T>(
        &self,
        step: &'static str,
        future: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, future).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(self.explain(err, step)),
            Err(_) => Err(self.timed_out(step)),
        }
    }

    fn explain(&self, err: tokio_postgres::Error, step: &'static str) -> StoreError {
        let code = err.code().cloned();
        match code {
            Some(c)
                if c == SqlState::INVALID_PASSWORD
                    || c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
            {
                StoreError::AccessDenied {
                    store: STORE,
                    user: self.user.clone(),
                    host: self.host.clone(),
                    port: self.port,
                    source: Box::new(err),
                }
            }
            Some(c)
                if c == SqlState::INVALID_CATALOG_NAME || c == SqlState::INSUFFICIENT_PRIVILEGE =>
            {
                StoreError::NoDatabaseAccess {
                    store: STORE,
                    user: self.user.clone(),
                    database: self.database.clone(),
                    host: self.host.clone(),
                    port: self.port,
                    source: Box::new(err),
                }
            }
            None if err.is_closed()
                || std::error::Error::source(&err).is_some_and(|s| s.is::<std::io::Error>()) =>
            {
                StoreError::Unreachable {
                    store: STORE,
                    host: self.host.clone(),
                    port: self.port,
                    source: Box::new(err),
                }
            }
            _ => StoreError::Other {
                store: STORE,
                location: self.location.clone(),
                step,
                source: Box::new(err),
            },
        }
    }

    /// Connects: resolves the host and opens the socket and session, each bounded; then
    /// creates the table if missing.
    async fn connect(&self) -> Result<Client, StoreError> {
        let address = super::net::resolve(STORE, &self.host, self.port, self.timeout)?;
        let stream =
            match tokio::time::timeout(self.timeout, tokio::net::TcpStream::connect(address)).await
            {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => {
                    return Err(StoreError::Unreachable {
                        store: STORE,
                        host: self.host.clone(),
                        port: self.port,
                        source: Box::new(e),
                    })
                }
                Err(_) => return Err(self.timed_out("connecting")),
            };
        let _ = stream.set_nodelay(true);
        let (client, connection) = self
            .bounded("connecting", self.config.connect_raw(stream, NoTls))
            .await?;
        // Driven by the session's runtime while a step runs; ends when the client drops.
        tokio::spawn(connection);
        let (schema, schema_table) = self.schema;
        let create = schema.replacen(
            &format!("EXISTS {schema_table} ("),
            &format!("EXISTS {} (", self.table),
            1,
        );
        // Two sessions running CREATE TABLE IF NOT EXISTS at once can both find no table,
        // and one then fails on the catalog ("type ... already exists"). One simple query
        // is one transaction, so this lock queues the creators until the first commits.
        let ddl = format!(
            "SELECT pg_advisory_xact_lock(hashtext('uidgen lease table {}'));\n{create}",
            self.table.to_ascii_lowercase()
        );
        self.bounded("creating the table", client.batch_execute(&ddl))
            .await?;
        Ok(client)
    }

    pub(super) fn run<T: Send>(
        &self,
        work: impl AsyncFnOnce(&mut Client) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        self.session
            .run(STORE, &self.location, async || self.connect().await, work)
    }

    /// Takes `worker_id` if it is free (or already the holder's), returning its mark;
    /// `None` if another process took it first.
    async fn take(
        &self,
        client: &Client,
        worker_id: i64,
        request: &LeaseRequest<'_>,
    ) -> Result<Option<u64>, StoreError> {
        let update = format!(
            "UPDATE {} SET HOLDER = $1, EXPIRES_MS = {NOW_MS} + $2, MODIFIED = now()
             WHERE WORKER_ID = $3 AND (HOLDER IS NULL OR EXPIRES_MS <= {NOW_MS} OR HOLDER = $1)
             RETURNING MARK_MS",
            self.table
        );
        let rows = self
            .bounded(
                "taking the lease",
                client.query_typed(
                    &update,
                    &[
                        (&request.holder, Type::TEXT),
                        (&millis(request.ttl), Type::INT8),
                        (&worker_id, Type::INT8),
                    ],
                ),
            )
            .await?;
        rows.first()
            .map(|row| Ok(to_u64(self.column(row, 0, "taking the lease")?)))
            .transpose()
    }

    /// Inserts `worker_id` as a new row held by the requester; `false` if it exists.
    async fn insert(
        &self,
        client: &Client,
        worker_id: i64,
        request: &LeaseRequest<'_>,
    ) -> Result<bool, StoreError> {
        let insert = format!(
            "INSERT INTO {} (WORKER_ID, HOLDER, EXPIRES_MS, MARK_MS, MODIFIED)
             VALUES ($1, $2, {NOW_MS} + $3, 0, now()) ON CONFLICT (WORKER_ID) DO NOTHING
             RETURNING 1",
            self.table
        );
        let inserted = self
            .bounded(
                "creating a lease row",
                client.query_typed(
                    &insert,
                    &[
                        (&worker_id, Type::INT8),
                        (&request.holder, Type::TEXT),
                        (&millis(request.ttl), Type::INT8),
                    ],
                ),
            )
            .await?;
        Ok(inserted.len() == 1)
    }

    async fn acquire_on(
        &self,
        client: &Client,
        request: &LeaseRequest<'_>,
    ) -> Result<Acquired, StoreError> {
        let max = to_i64(request.max_worker_id);
        for _ in 0..ACQUIRE_ATTEMPTS {
            if let Some(wanted) = request.worker_id {
                let wanted_id = to_i64(wanted);
                let select = format!(
                    "SELECT HOLDER, EXPIRES_MS, {NOW_MS} FROM {} WHERE WORKER_ID = $1",
                    self.table
                );
                let step = "reading the lease";
                let rows = self
                    .bounded(
                        step,
                        client.query_typed(&select, &[(&wanted_id, Type::INT8)]),
                    )
                    .await?;
                let held = match rows.first() {
                    Some(row) => Some((
                        self.column::<Option<String>>(row, 0, step)?,
                        self.column::<i64>(row, 1, step)?,
                        self.column::<i64>(row, 2, step)?,
                    )),
                    None => None,
                };
                match held {
                    None => {
                        if self.insert(client, wanted_id, request).await? {
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
                        if let Some(mark_ms) = self.take(client, wanted_id, request).await? {
                            return Ok(Acquired::Granted {
                                worker_id: wanted,
                                mark_ms,
                            });
                        }
                    }
                }
                continue;
            }
            let table = &self.table;
            // The lowest free worker ID that exists, else the lowest never used.
            let candidates = format!(
                "SELECT
                   (SELECT MIN(WORKER_ID) FROM {table}
                     WHERE (HOLDER IS NULL OR EXPIRES_MS <= {NOW_MS}) AND WORKER_ID <= $1),
                   CASE WHEN NOT EXISTS (SELECT 1 FROM {table} WHERE WORKER_ID = 0) THEN 0::bigint
                     ELSE (SELECT MIN(a.WORKER_ID) + 1 FROM {table} AS a WHERE NOT EXISTS
                       (SELECT 1 FROM {table} AS b WHERE b.WORKER_ID = a.WORKER_ID + 1)) END"
            );
            let step = "looking for a free worker ID";
            let rows = self
                .bounded(step, client.query_typed(&candidates, &[(&max, Type::INT8)]))
                .await?;
            let Some(row) = rows.first() else {
                return Err(StoreError::Unexpected {
                    store: STORE,
                    location: self.location.clone(),
                    step,
                    what: "no row from a SELECT without FROM".into(),
                });
            };
            let free: Option<i64> = self.column(row, 0, step)?;
            let unused: Option<i64> = self.column(row, 1, step)?;
            if let Some(id) = free {
                if let Some(mark_ms) = self.take(client, id, request).await? {
                    return Ok(Acquired::Granted {
                        worker_id: to_u64(id),
                        mark_ms,
                    });
                }
                continue;
            }
            let id = unused.unwrap_or(0);
            if id > max {
                return Ok(Acquired::Exhausted);
            }
            if self.insert(client, id, request).await? {
                return Ok(Acquired::Granted {
                    worker_id: to_u64(id),
                    mark_ms: 0,
                });
            }
        }
        Err(StoreError::Unexpected {
            store: STORE,
            location: self.location.clone(),
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

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 4)
}

impl LeaseStore for PostgresLeaseStore {
    fn describe(&self) -> String {
        format!(
            "the PostgreSQL store {} (table {})",
            self.location, self.table
        )
    }

    fn acquire(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        self.run(async |client| self.acquire_on(client, request).await)
    }

    fn renew(
        &self,
        worker_id: u64,
        holder: &str,
        ttl: Duration,
        mark_ms: u64,
    ) -> Result<bool, StoreError> {
        let update = format!(
            "UPDATE {} SET EXPIRES_MS = {NOW_MS} + $1, MARK_MS = GREATEST(MARK_MS, $2),
               MODIFIED = now()
             WHERE WORKER_ID = $3 AND HOLDER = $4
             RETURNING 1",
            self.table
        );
        self.run(async |client| {
            let changed = self
                .bounded(
                    "renewing the lease",
                    client.query_typed(
                        &update,
                        &[
                            (&millis(ttl), Type::INT8),
                            (&to_i64(mark_ms), Type::INT8),
                            (&to_i64(worker_id), Type::INT8),
                            (&holder, Type::TEXT),
                        ],
                    ),
                )
                .await?;
            Ok(changed.len() == 1)
        })
    }

    fn release(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<bool, StoreError> {
        let update = format!(
            "UPDATE {} SET HOLDER = NULL, EXPIRES_MS = 0, MARK_MS = $1, MODIFIED = now()
             WHERE WORKER_ID = $2 AND HOLDER = $3
             RETURNING 1",
            self.table
        );
        self.run(async |client| {
            let changed = self
                .bounded(
                    "releasing the lease",
                    client.query_typed(
                        &update,
                        &[
                            (&to_i64(mark_ms), Type::INT8),
                            (&to_i64(worker_id), Type::INT8),
                            (&holder, Type::TEXT),
                        ],
                    ),
                )
                .await?;
            Ok(changed.len() == 1)
        })
    }

    fn leases(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        let select = format!(
            "SELECT WORKER_ID, HOLDER, EXPIRES_MS, MARK_MS, {NOW_MS} FROM {} ORDER BY WORKER_ID",
            self.table
        );
        self.run(async |client| {
            let rows = self
                .bounded("listing the leases", client.query_typed(&select, &[]))
                .await?;
            let step = "listing the leases";
            rows.iter()
                .map(|row| {
                    Ok(LeaseRecord::new(
                        to_u64(self.column(row, 0, step)?),
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
