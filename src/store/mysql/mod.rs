//! MySQL and MariaDB through `mysql_async`: URL checks, connections with every step
//! bounded (name resolution included) that go only to the URL's address, TLS where the
//! URL asks for it, and server errors in our words. The lease and segment steps are the
//! SQL engines' own (`store::sql`); this folder holds the connection.

mod driver;
mod lease;
mod segment;

pub(crate) use self::driver::DRIVER;
pub use self::lease::{MySqlLeaseStore, MYSQL_LEASE_SCHEMA};
pub use self::segment::{MySqlSegmentStore, MYSQL_SEGMENT_SCHEMA};

use super::net::Hidden;
use super::session::Session;
use super::sql::{Dialect, Done, SqlConn, Value};
use super::{StoreError, StoreKind};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

const STORE: &str = "MySQL";
const EXPECTED: &str = "mysql://user[:password]@host[:port]/database (or mariadb://), \
     optionally ?ssl-mode=DISABLED|REQUIRED|VERIFY_IDENTITY&ssl-ca=PATH";

/// Server error codes we explain in our own words.
const ER_DBACCESS_DENIED: u16 = 1044;
const ER_ACCESS_DENIED: u16 = 1045;
/// MariaDB's answer to a user that may not log in without a password (unix_socket).
const ER_ACCESS_DENIED_NO_PASSWORD: u16 = 1698;
const ER_NO_SUCH_TABLE: u16 = 1146;
/// A row with this key exists already.
pub(crate) const ER_DUP_ENTRY: u16 = 1062;

/// A MySQL database: where it is, and the bound on each network step.
#[derive(Debug, Clone)]
pub(crate) struct MySqlStore {
    opts: Hidden<Opts>,
    host: String,
    port: u16,
    /// `mysql://user@host:port/db`, for messages: never a password.
    location: String,
    timeout: Duration,
    /// What the URL asked of TLS.
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    tls: super::net::Tls,
}

impl MySqlStore {
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Self, StoreError> {
        let checked = super::net::NetworkUrl::parse(url, StoreKind::MySql, EXPECTED)?;
        let invalid = |reason: String| checked.invalid(reason);
        let mut parsed = checked.url.clone();
        // TLS is ours to set up (the parameter names MySQL's own client uses); the
        // driver gets the rest.
        let (tls, rest) = super::net::Tls::from_query(
            &parsed,
            "ssl-mode",
            "ssl-ca",
            &[
                ("DISABLED", super::net::Verify::Off),
                ("REQUIRED", super::net::Verify::Encrypt),
                ("VERIFY_CA", super::net::Verify::Chain),
                ("VERIFY_IDENTITY", super::net::Verify::Full),
            ],
            "PREFERRED falls back to plain text without a word; give REQUIRED, \
             VERIFY_IDENTITY or DISABLED",
        )
        .map_err(invalid)?;
        if tls.verify == super::net::Verify::Chain {
            // mysql_async's "check the chain, not the name" matches on the text of an
            // error that current rustls words differently, so it would refuse a good
            // certificate: say so rather than check more or less than asked.
            return Err(invalid(
                "checking the CA chain without the host name (VERIFY_CA, or ssl-ca with \
                 REQUIRED or no ssl-mode) is not available with this MySQL driver: give \
                 ssl-mode=VERIFY_IDENTITY with ssl-ca, or REQUIRED without ssl-ca"
                    .into(),
            ));
        }
        parsed.query_pairs_mut().clear().extend_pairs(rest);
        if parsed.query() == Some("") {
            parsed.set_query(None);
        }
        // The driver only reads mysql://; MariaDB speaks the same protocol.
        let driver_url = format!("mysql{}", &parsed.as_str()[parsed.scheme().len()..]);
        let opts = Opts::from_url(&driver_url).map_err(|e| invalid(describe_url_error(&e)))?;
        // Only the URL's address: by default the driver asks the server for its socket
        // path and reconnects there, which through a tunnel or proxy reaches whatever
        // server listens at that path on this machine. A socket named in the URL stays.
        let opts: Opts = OptsBuilder::from_opts(opts).prefer_socket(false).into();
        let host = opts.ip_or_hostname().to_owned();
        let port = opts.tcp_port();
        let location = format!(
            "mysql://{}@{host}:{port}/{}",
            opts.user().unwrap_or(""),
            opts.db_name().unwrap_or("")
        );
        tls.check_built(STORE).map_err(invalid)?;
        Ok(Self {
            opts: Hidden(opts),
            host,
            port,
            location,
            timeout,
            tls,
        })
    }

    /// The database, without its password.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// Affected-row counts of UPDATEs count the rows matched, not only those changed: a
    /// lease renewed twice within one millisecond changes nothing the second time, and
    /// must still count as renewed.
    pub(crate) fn count_matched_rows(&mut self) {
        self.opts.0 = OptsBuilder::from_opts(self.opts.0.clone())
            .client_found_rows(true)
            .into();
    }

    /// The bound on each network step.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    pub(crate) fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Connects: resolves the host (bounded), then opens the connection (bounded),
    /// with TLS if the URL asked for it (the certificate checked against the URL's host
    /// name, not the address it resolved to).
    pub(crate) async fn connect(&self) -> Result<Conn, StoreError> {
        let address = self.resolve().await?;
        let opts = OptsBuilder::from_opts(self.opts.0.clone())
            .ip_or_hostname(address.ip().to_string())
            .tcp_port(address.port());
        #[cfg(feature = "tls")]
        let opts = {
            super::tls::install_provider();
            opts.ssl_opts(self.ssl_opts())
        };
        self.bounded("connecting", Conn::new(opts)).await
    }

    #[cfg(feature = "tls")]
    fn ssl_opts(&self) -> Option<mysql_async::SslOpts> {
        use super::net::Verify;
        let verify = self.tls.verify;
        if verify == Verify::Off {
            return None;
        }
        let mut ssl = mysql_async::SslOpts::default()
            .with_danger_tls_hostname_override(Some(self.host.trim_matches(['[', ']']).to_owned()))
            .with_danger_accept_invalid_certs(verify == Verify::Encrypt)
            .with_danger_skip_domain_validation(verify == Verify::Encrypt);
        if let Some(ca) = &self.tls.ca {
            // The CA named is the only one trusted, as with MySQL's own client.
            ssl = ssl
                .with_root_certs(vec![ca.clone().into()])
                .with_disable_built_in_roots(true);
        }
        Some(ssl)
    }

    /// The server's address, within the bound (the one resolver all stores use).
    async fn resolve(&self) -> Result<SocketAddr, StoreError> {
        super::net::resolve(STORE, &self.host, self.port, self.timeout)
    }

    pub(crate) fn timed_out(&self, step: &'static str) -> StoreError {
        StoreError::Timeout {
            store: STORE,
            host: self.host.clone(),
            port: self.port,
            step,
            timeout: self.timeout,
        }
    }

    /// Runs one network step within the bound, turning failures into our errors.
    /// `table` names the table a missing-table error is about.
    pub(crate) async fn bounded<T>(
        &self,
        step: &'static str,
        future: impl Future<Output = mysql_async::Result<T>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, future).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(self.explain(err, step)),
            Err(_) => Err(self.timed_out(step)),
        }
    }

    /// Closes a connection politely, within the bound; a failure changes nothing done.
    pub(crate) async fn disconnect(&self, conn: Conn) {
        let _ = tokio::time::timeout(self.timeout, conn.disconnect()).await;
    }

    pub(crate) fn explain(&self, err: mysql_async::Error, step: &'static str) -> StoreError {
        if let Some(reason) = super::tls_failure(&err) {
            return StoreError::Tls {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                reason,
                source: Box::new(err),
            };
        }
        let user = self.opts.user().unwrap_or("").to_owned();
        match err {
            mysql_async::Error::Server(e)
                if e.code == ER_ACCESS_DENIED || e.code == ER_ACCESS_DENIED_NO_PASSWORD =>
            {
                StoreError::AccessDenied {
                    store: STORE,
                    user,
                    host: self.host.clone(),
                    port: self.port,
                    source: Box::new(mysql_async::Error::Server(e)),
                }
            }
            mysql_async::Error::Server(e) if e.code == ER_DBACCESS_DENIED => {
                StoreError::NoDatabaseAccess {
                    store: STORE,
                    user,
                    database: self.opts.db_name().unwrap_or("").to_owned(),
                    host: self.host.clone(),
                    port: self.port,
                    source: Box::new(mysql_async::Error::Server(e)),
                }
            }
            mysql_async::Error::Server(e) if e.code == ER_NO_SUCH_TABLE => {
                StoreError::MissingTable {
                    // The server's message names the table as db.table.
                    table: table_in_message(&e.message).unwrap_or_default(),
                    location: self.location.clone(),
                    fix: "run schema.sql from the uidgen repository against it, or ask for it \
                          to be created (create_table(true), `--create-table`)",
                }
            }
            mysql_async::Error::Io(e) => StoreError::Unreachable {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                source: Box::new(e),
            },
            other => StoreError::Other {
                store: STORE,
                location: self.location.clone(),
                step,
                source: Box::new(other),
            },
        }
    }
}

/// `db.table` from "Table 'db.table' doesn't exist".
fn table_in_message(message: &str) -> Option<String> {
    let start = message.find('\'')? + 1;
    let end = start + message[start..].find('\'')?;
    Some(message[start..end].to_owned())
}

/// The driver's URL error in words that never repeat a value from the URL.
fn describe_url_error(err: &mysql_async::UrlError) -> String {
    use mysql_async::UrlError;
    match err {
        UrlError::Parse(e) => e.to_string(),
        UrlError::UnsupportedScheme { .. } => "the scheme is not \"mysql\"".into(),
        UrlError::UnknownParameter { param } => format!("unknown parameter {param:?}"),
        UrlError::InvalidParamValue { param, .. } => {
            format!("the value of parameter {param:?} is invalid")
        }
        UrlError::FeatureRequired { param, .. } => {
            format!("parameter {param:?} needs a driver feature uidgen does not build")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_table_names_come_from_the_server_message() {
        assert_eq!(
            table_in_message("Table 'test.WORKER_NODE' doesn't exist").as_deref(),
            Some("test.WORKER_NODE")
        );
        assert_eq!(table_in_message("no quotes"), None);
    }

    #[test]
    fn bad_urls_never_echo_the_password() {
        for url in [
            "mysql:u:SECRETPW@127.0.0.1/db",
            "mysql:/u:SECRETPW@127.0.0.1/db",
            "u:SECRETPW@127.0.0.1/db",
            "mysql://u:SEC@RETPW@h:99999/db",
            "postgres://u:SECRETPW@h/db",
            "mysql://u:SECRETPW@h/db?ssl-mode=SECRETPW",
            "mysql://u:SECRETPW@h/db?password=SECRETPW",
        ] {
            match MySqlStore::new(url, Duration::from_secs(1)) {
                Err(err) => {
                    let shown = format!("{err} {err:?}");
                    assert!(!shown.contains("SEC"), "{url}: {shown}");
                }
                Ok(store) => {
                    let shown = format!("{store:?} {}", store.location());
                    assert!(!shown.contains("SEC"), "{url}: {shown}");
                }
            }
        }
    }
}

/// The store's clock, in Unix milliseconds.
const NOW_MS: &str = "CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)";

static DIALECT: Dialect = Dialect {
    now_ms: NOW_MS,
    greatest: "GREATEST",
    modified_now: "NOW(3)",
    stamp_now: "CURRENT_TIMESTAMP",
    updated_ms: "CAST(UNIX_TIMESTAMP(update_time) * 1000 AS SIGNED)",
    update_returning: false,
};

/// One MySQL connection for one table, opened on first use (creating the table) and
/// kept; clones share it. Affected-row counts are rows matched, not only changed.
#[derive(Clone)]
pub(crate) struct MySqlConn {
    server: MySqlStore,
    /// The table's DDL, with its name in place.
    ddl: String,
    table: String,
    /// The table is `leaf_alloc`-like: its `biz_tag` must compare byte for byte.
    binary_tags: bool,
    session: Session<Conn>,
}

impl MySqlConn {
    pub(crate) fn new(url: &str, schema: &str, table: &str) -> Result<Self, StoreError> {
        let mut server = MySqlStore::new(url, Duration::from_secs(5))?;
        server.count_matched_rows();
        Ok(Self {
            server,
            ddl: schema.to_owned(),
            table: table.to_owned(),
            binary_tags: table == "leaf_alloc",
            session: Session::new(),
        }
        .with_table(table))
    }

    /// The same connection settings for another table of the same DDL.
    pub(crate) fn with_table(mut self, table: &str) -> Self {
        self.ddl = super::sql::ddl_for(&self.ddl, &self.table, table);
        self.table = table.to_owned();
        self.session = Session::new();
        self
    }

    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.server.set_timeout(timeout);
        self.session = Session::new();
        self
    }

    pub(crate) fn location_str(&self) -> &str {
        self.server.location()
    }

    async fn open(&self) -> Result<Conn, StoreError> {
        let mut conn = self.server.connect().await?;
        self.server
            .bounded("creating the table", conn.query_drop(self.ddl.as_str()))
            .await?;
        if self.binary_tags {
            self.compare_tags_by_bytes(&mut conn).await?;
        }
        Ok(conn)
    }

    /// Tags are compared byte for byte on every store. Leaf's DDL (and this crate's
    /// before) took the server's default collation, which is case-insensitive: such a
    /// table's `biz_tag` is moved to `utf8mb4_bin` once. Nothing can collide in the move,
    /// since every tag the old collation kept apart stays apart.
    async fn compare_tags_by_bytes(&self, conn: &mut Conn) -> Result<(), StoreError> {
        let step = "checking the tag column's collation";
        let collation: Option<Option<String>> = self
            .server
            .bounded(
                step,
                conn.exec_first(
                    "SELECT COLLATION_NAME FROM information_schema.COLUMNS
                     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'biz_tag'",
                    (self.table.as_str(),),
                ),
            )
            .await?;
        if collation.flatten().is_some_and(|c| !c.ends_with("_bin")) {
            let alter = format!(
                "ALTER TABLE {} MODIFY biz_tag VARCHAR(128) CHARACTER SET utf8mb4 \
                 COLLATE utf8mb4_bin NOT NULL DEFAULT ''",
                self.table
            );
            tracing::info!(table = %self.table, "uidgen moves biz_tag to a binary collation");
            self.server
                .bounded(
                    "moving biz_tag to a binary collation",
                    conn.query_drop(alter),
                )
                .await?;
        }
        Ok(())
    }
}

fn to_driver(value: &Value) -> mysql_async::Value {
    match value {
        Value::Null => mysql_async::Value::NULL,
        Value::Int(n) => mysql_async::Value::Int(*n),
        Value::Text(t) => mysql_async::Value::Bytes(t.clone().into_bytes()),
    }
}

fn from_driver(value: mysql_async::Value) -> Value {
    match value {
        mysql_async::Value::Int(n) => Value::Int(n),
        mysql_async::Value::UInt(n) => {
            i64::try_from(n).map_or_else(|_| Value::Text(n.to_string()), Value::Int)
        }
        mysql_async::Value::Bytes(bytes) => {
            Value::Text(String::from_utf8_lossy(&bytes).into_owned())
        }
        // Our columns hold whole numbers and text only.
        _ => Value::Null,
    }
}

impl SqlConn for MySqlConn {
    fn dialect(&self) -> &'static Dialect {
        &DIALECT
    }

    fn kind(&self) -> StoreKind {
        StoreKind::MySql
    }

    fn location(&self) -> String {
        self.server.location().to_owned()
    }

    fn exec(&self, step: &'static str, sql: &str, params: &[Value]) -> Result<Done, StoreError> {
        let params: Vec<mysql_async::Value> = params.iter().map(to_driver).collect();
        self.session.run(
            STORE,
            self.server.location(),
            async || self.open().await,
            async |conn| {
                let ran = tokio::time::timeout(
                    self.server.timeout(),
                    conn.exec::<mysql_async::Row, _, _>(sql, params),
                )
                .await;
                match ran {
                    Ok(Ok(rows)) => Ok(Done {
                        rows: rows
                            .into_iter()
                            .map(|row| row.unwrap().into_iter().map(from_driver).collect())
                            .collect(),
                        affected: conn.affected_rows(),
                        duplicate: false,
                        last_insert_id: conn.last_insert_id(),
                    }),
                    Ok(Err(mysql_async::Error::Server(e))) if e.code == ER_DUP_ENTRY => Ok(Done {
                        duplicate: true,
                        ..Done::default()
                    }),
                    Ok(Err(e)) => Err(self.server.explain(e, step)),
                    Err(_) => Err(self.server.timed_out(step)),
                }
            },
        )
    }
}
