//! PostgreSQL through `tokio-postgres`: URL checks, connections with every step bounded
//! (name resolution included), TLS (rustls) where the URL asks for it, and server errors
//! in our words. The lease and segment steps are the SQL engines' own (`store::sql`);
//! this folder holds the connection.

mod driver;
mod lease;
mod segment;

pub(crate) use self::driver::DRIVER;
pub use self::lease::{PostgresLeaseStore, POSTGRES_LEASE_SCHEMA};
pub use self::segment::{PostgresSegmentStore, POSTGRES_SEGMENT_SCHEMA};

use super::net::Hidden;
use super::session::Session;
use super::sql::{Dialect, Done, SqlConn, Value};
use super::{StoreError, StoreKind};
use std::future::Future;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::Client;

const STORE: &str = "PostgreSQL";
const EXPECTED: &str = "postgres://user[:password]@host[:port]/database (or postgresql://), \
     optionally ?sslmode=disable|require|verify-ca|verify-full&sslrootcert=PATH";

/// The store's clock, in Unix milliseconds (`clock_timestamp`, not the transaction's
/// start as `now()` would be).
const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

static DIALECT: Dialect = Dialect {
    now_ms: NOW_MS,
    greatest: "GREATEST",
    modified_now: "now()",
    stamp_now: "now()",
    updated_ms: "(extract(epoch from update_time) * 1000)::bigint",
    update_returning: true,
};

/// One PostgreSQL connection for one table, opened on first use (creating the table)
/// and kept; clones share it. Every network step is bounded by `timeout`.
#[derive(Debug, Clone)]
pub(crate) struct PgConn {
    config: Hidden<tokio_postgres::Config>,
    host: String,
    port: u16,
    user: String,
    database: String,
    /// `postgres://user@host:port/db`, for messages: never a password.
    location: String,
    timeout: Duration,
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    tls: super::net::Tls,
    /// The table's DDL, with its name in place.
    ddl: String,
    table: String,
    session: Session<Client>,
}

impl PgConn {
    pub(crate) fn new(url: &str, schema: &str, table: &str) -> Result<Self, StoreError> {
        let checked =
            super::net::NetworkUrl::parse(url, StoreKind::Postgres, EXPECTED)?;
        let invalid = |reason: String| checked.invalid(reason);
        let (parsed, host) = (&checked.url, checked.host.clone());
        let port = parsed.port().unwrap_or(5432);
        let user = super::net::percent_decode(parsed.username());
        if user.is_empty() {
            return Err(invalid("no user name (postgres://user@host/db)".into()));
        }
        let database = super::net::percent_decode(parsed.path().trim_start_matches('/'));
        if database.is_empty() || database.contains('/') {
            return Err(invalid("no database name (postgres://user@host/db)".into()));
        }
        // The parameter names libpq uses.
        let (tls, rest) = super::net::Tls::from_query(
            parsed,
            "sslmode",
            "sslrootcert",
            &[
                ("disable", super::net::Verify::Off),
                ("require", super::net::Verify::Encrypt),
                ("verify-ca", super::net::Verify::Chain),
                ("verify-full", super::net::Verify::Full),
            ],
            "allow and prefer fall back to plain text without a word; give require, \
             verify-ca, verify-full or disable",
        )
        .map_err(invalid)?;
        if let Some((key, _)) = rest.first() {
            return Err(invalid(format!(
                "unknown parameter {:?} (sslmode and sslrootcert are understood)",
                if super::is_credential_key(key) {
                    "***"
                } else {
                    key.as_str()
                }
            )));
        }
        tls.check_built(STORE).map_err(invalid)?;
        let mut config = tokio_postgres::Config::new();
        config
            .user(&user)
            .dbname(&database)
            .application_name("uidgen");
        if let Some(password) = parsed.password() {
            config.password(super::net::percent_decode(password));
        }
        let location = format!("postgres://{user}@{host}:{port}/{database}");
        Ok(Self {
            config: Hidden(config),
            host,
            port,
            user,
            database,
            location,
            timeout: Duration::from_secs(5),
            tls,
            ddl: schema.to_owned(),
            table: table.to_owned(),
            session: Session::new(),
        })
    }

    /// The same connection settings for another table of the same DDL.
    pub(crate) fn with_table(mut self, table: &str) -> Self {
        self.ddl = super::sql::ddl_for(&self.ddl, &self.table, table);
        self.table = table.to_owned();
        self.session = Session::new();
        self
    }

    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.session = Session::new();
        self
    }

    pub(crate) fn location_str(&self) -> &str {
        &self.location
    }

    fn timed_out(&self, step: &'static str) -> StoreError {
        StoreError::Timeout {
            store: STORE,
            host: self.host.clone(),
            port: self.port,
            step,
            timeout: self.timeout,
        }
    }

    /// Runs one network step within the bound, turning failures into our errors.
    async fn bounded<T>(
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
        if let Some(reason) = super::tls_failure(&err) {
            return StoreError::Tls {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                reason,
                source: Box::new(err),
            };
        }
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
        let client = self.handshake(stream).await?;
        // Two sessions running CREATE TABLE IF NOT EXISTS at once can both find no table,
        // and one then fails on the catalog ("type ... already exists"). One simple query
        // is one transaction, so this lock queues the creators until the first commits.
        let ddl = format!(
            "SELECT pg_advisory_xact_lock(hashtext('uidgen lease table {}'));\n{}",
            self.table.to_ascii_lowercase(),
            self.ddl
        );
        self.bounded("creating the table", client.batch_execute(&ddl))
            .await?;
        Ok(client)
    }

    /// The session on `stream`: in TLS if the URL asked for it (the certificate checked
    /// against the URL's host name), else plain.
    async fn handshake(&self, stream: tokio::net::TcpStream) -> Result<Client, StoreError> {
        let mut config = self.config.0.clone();
        #[cfg(feature = "tls")]
        if self.tls.verify != super::net::Verify::Off {
            use tokio_postgres::tls::MakeTlsConnect;
            config.ssl_mode(tokio_postgres::config::SslMode::Require);
            let client_config =
                super::tls::client_config(&self.tls).map_err(|source| StoreError::Tls {
                    store: STORE,
                    host: self.host.clone(),
                    port: self.port,
                    reason: source.to_string(),
                    source,
                })?;
            let tls = MakeTlsConnect::<tokio::net::TcpStream>::make_tls_connect(
                &mut tokio_postgres_rustls::MakeRustlsConnect::new(client_config),
                self.host.trim_matches(['[', ']']),
            )
            .map_err(|e| StoreError::Tls {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                reason: e.to_string(),
                source: Box::new(e),
            })?;
            let (client, connection) = self
                .bounded("connecting", config.connect_raw(stream, tls))
                .await?;
            // Driven by the session's runtime while a step runs; ends when the client drops.
            tokio::spawn(connection);
            return Ok(client);
        }
        config.ssl_mode(tokio_postgres::config::SslMode::Disable);
        let (client, connection) = self
            .bounded(
                "connecting",
                config.connect_raw(stream, tokio_postgres::NoTls),
            )
            .await?;
        tokio::spawn(connection);
        Ok(client)
    }
}

/// `?` placeholders as PostgreSQL's `$1`, `$2`, ... (our SQL has no `?` elsewhere).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// A column as a [`Value`], by the column's type.
fn column(row: &tokio_postgres::Row, index: usize) -> Result<Value, tokio_postgres::Error> {
    let kind = row.columns()[index].type_().clone();
    Ok(if kind == Type::INT8 {
        row.try_get::<_, Option<i64>>(index)?
            .map_or(Value::Null, Value::Int)
    } else if kind == Type::INT4 {
        row.try_get::<_, Option<i32>>(index)?
            .map_or(Value::Null, |n| Value::Int(n.into()))
    } else if kind == Type::INT2 {
        row.try_get::<_, Option<i16>>(index)?
            .map_or(Value::Null, |n| Value::Int(n.into()))
    } else {
        match row.try_get::<_, Option<String>>(index) {
            Ok(text) => text.map_or(Value::Null, Value::Text),
            // A type without a text form here (a float, a numeric) is in no column the
            // steps read; the highest-ID reader takes it as no integer (its COUNT says).
            Err(_) => Value::Null,
        }
    })
}

impl SqlConn for PgConn {
    fn dialect(&self) -> &'static Dialect {
        &DIALECT
    }

    fn kind(&self) -> StoreKind {
        StoreKind::Postgres
    }

    fn location(&self) -> String {
        self.location.clone()
    }

    fn exec(&self, step: &'static str, sql: &str, params: &[Value]) -> Result<Done, StoreError> {
        // `query_typed`: one round trip, where a plain `query` first asks the server to
        // prepare the statement.
        let sql = numbered(sql);
        let ints: Vec<Option<i64>> = params
            .iter()
            .map(|p| match p {
                Value::Int(n) => Some(*n),
                _ => None,
            })
            .collect();
        let typed: Vec<(&(dyn tokio_postgres::types::ToSql + Sync), Type)> = params
            .iter()
            .zip(&ints)
            .map(|(param, int)| match param {
                Value::Text(text) => (
                    text as &(dyn tokio_postgres::types::ToSql + Sync),
                    Type::TEXT,
                ),
                _ => (
                    int as &(dyn tokio_postgres::types::ToSql + Sync),
                    Type::INT8,
                ),
            })
            .collect();
        self.session.run(
            STORE,
            &self.location,
            async || self.connect().await,
            async |client| {
                let ran = tokio::time::timeout(self.timeout, async {
                    use futures_util::TryStreamExt;
                    let stream = client.query_typed_raw(&sql, typed.iter().cloned()).await?;
                    futures_util::pin_mut!(stream);
                    let mut rows = Vec::new();
                    while let Some(row) = stream.try_next().await? {
                        rows.push(
                            (0..row.len())
                                .map(|i| column(&row, i))
                                .collect::<Result<Vec<_>, _>>()?,
                        );
                    }
                    Ok::<_, tokio_postgres::Error>((rows, stream.rows_affected().unwrap_or(0)))
                })
                .await;
                match ran {
                    Ok(Ok((rows, affected))) => Ok(Done {
                        rows,
                        affected,
                        duplicate: false,
                        last_insert_id: None,
                    }),
                    Ok(Err(e)) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Ok(Done {
                        duplicate: true,
                        ..Done::default()
                    }),
                    Ok(Err(e)) => Err(self.explain(e, step)),
                    Err(_) => Err(self.timed_out(step)),
                }
            },
        )
    }
}
