//! MySQL and MariaDB through `mysql_async`: URL checks, connections with every step
//! bounded (name resolution included), and server errors in our words.

use super::{redact_url, StoreError};
use mysql_async::{Conn, Opts, OptsBuilder};
use std::future::Future;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

const STORE: &str = "MySQL";
const EXPECTED: &str = "mysql://user[:password]@host[:port]/database";

/// Server error codes we explain in our own words.
const ER_DBACCESS_DENIED: u16 = 1044;
const ER_ACCESS_DENIED: u16 = 1045;
/// MariaDB's answer to a user that may not log in without a password (unix_socket).
const ER_ACCESS_DENIED_NO_PASSWORD: u16 = 1698;
const ER_NO_SUCH_TABLE: u16 = 1146;
/// A row with this key exists already.
pub(crate) const ER_DUP_ENTRY: u16 = 1062;

/// A MySQL database: where it is, and the bound on each network step.
#[derive(Clone)]
pub(crate) struct MySqlStore {
    opts: Opts,
    host: String,
    port: u16,
    /// `mysql://user@host:port/db`, for messages: never a password.
    location: String,
    timeout: Duration,
}

impl std::fmt::Debug for MySqlStore {
    // By hand: the driver's options hold the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlStore")
            .field("location", &self.location)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl MySqlStore {
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Self, StoreError> {
        let invalid = |reason: String| StoreError::InvalidUrl {
            store: STORE,
            url: redact_url(url),
            reason,
            expected: EXPECTED,
        };
        // Parse it ourselves first: the driver's own messages may echo parts of the URL.
        let parsed = url::Url::parse(url.trim()).map_err(|e| invalid(e.to_string()))?;
        if parsed.scheme() != "mysql" {
            return Err(invalid(format!(
                "the scheme is {:?}, not \"mysql\"",
                parsed.scheme()
            )));
        }
        if parsed.cannot_be_a_base() || parsed.host_str().is_none_or(str::is_empty) {
            return Err(invalid("no host (write mysql://, with two slashes)".into()));
        }
        let opts = Opts::from_url(url.trim()).map_err(|e| invalid(describe_url_error(&e)))?;
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
            timeout,
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
        self.opts = OptsBuilder::from_opts(self.opts.clone())
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

    /// Connects: resolves the host (bounded), then opens the connection (bounded).
    pub(crate) async fn connect(&self) -> Result<Conn, StoreError> {
        let address = self.resolve().await?;
        let opts = OptsBuilder::from_opts(self.opts.clone())
            .ip_or_hostname(address.ip().to_string())
            .tcp_port(address.port());
        self.bounded("connecting", Conn::new(opts)).await
    }

    /// The server's address. The system resolver blocks, and may block far longer than
    /// our bound (`timeout × attempts` of resolv.conf), so it runs on a thread of its
    /// own that is left behind if it does not answer in time.
    async fn resolve(&self) -> Result<SocketAddr, StoreError> {
        if let Ok(ip) = self.host.trim_matches(['[', ']']).parse::<IpAddr>() {
            return Ok(SocketAddr::new(ip, self.port));
        }
        let (send, receive) = tokio::sync::oneshot::channel();
        let target = (self.host.clone(), self.port);
        std::thread::Builder::new()
            .name("uidgen-resolve".into())
            .spawn(move || {
                let _ = send.send(target.to_socket_addrs().map(|mut addrs| addrs.next()));
            })
            .map_err(|source| StoreError::Resolve {
                store: STORE,
                host: self.host.clone(),
                source,
            })?;
        let resolve_error = |source| StoreError::Resolve {
            store: STORE,
            host: self.host.clone(),
            source,
        };
        match tokio::time::timeout(self.timeout, receive).await {
            Ok(Ok(Ok(Some(address)))) => Ok(address),
            Ok(Ok(Ok(None))) => Err(resolve_error(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the name has no address",
            ))),
            Ok(Ok(Err(source))) => Err(resolve_error(source)),
            Ok(Err(_)) => Err(resolve_error(std::io::Error::other(
                "the resolver thread ended without an answer",
            ))),
            Err(_) => Err(self.timed_out("resolving the host name")),
        }
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
