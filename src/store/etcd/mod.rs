//! etcd: a consensus store, whose acknowledged writes survive the loss of any minority of
//! its members. Its v3 API through `etcd-client` (gRPC) on the session runtime the other
//! async stores use; every step bounded; TLS for `etcds://`. This folder holds the
//! connection, the lease steps (on etcd's own leases), the segment counters and the
//! store's records.

mod driver;
mod lease;
pub(crate) mod records;
mod segment;

pub(crate) use self::driver::DRIVER;
pub use self::lease::EtcdLeaseStore;
pub use self::segment::EtcdSegmentStore;

use super::net::{Hidden, TlsFiles};
pub(crate) use super::net::{number, padded};
use super::session::Session;
use super::StoreError;
use etcd_client::{Client, ConnectOptions, GetOptions, KeyValue, Txn, TxnOpResponse};
use std::time::Duration;

const STORE: &str = "etcd";
const EXPECTED: &str = "etcd://[user[:password]@]host[:port][,host[:port]…][/PREFIX], every \
     member of the cluster separated by commas (port 2379 by default), or etcds:// for TLS \
     (optionally ?cacert=PATH, the only CA trusted, and ?cert=PATH&key=PATH, a client \
     certificate and its key, as a Kubernetes cluster's etcd asks); PREFIX (default uidgen) \
     keeps the keys of one deployment apart";

/// The key prefix when the URL names none.
const DEFAULT_PREFIX: &str = "uidgen";

/// One etcd cluster and a key prefix: the client is opened on first use and kept; clones
/// share it.
#[derive(Debug, Clone)]
pub(crate) struct EtcdConn {
    /// `http://host:port` (or `https://`) of each member.
    endpoints: Vec<String>,
    /// The first member, for errors that name a host.
    host: String,
    port: u16,
    user: String,
    password: Hidden<Option<String>>,
    /// TLS, for `etcds://`.
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    tls: Option<TlsFiles>,
    /// `etcd://user@h1:2379,h2:2379/prefix`, for messages: never a password.
    location: String,
    /// The URL's prefix, without a trailing `/`.
    root: String,
    /// The prefix of this store's keys (`root/lease/`, or a name of the caller's).
    prefix: String,
    timeout: Duration,
    session: Session<Client>,
}

impl EtcdConn {
    /// Reads `url` (see [`EXPECTED`]); connects nothing.
    pub(crate) fn new(url: &str) -> Result<Self, StoreError> {
        let raw = url.trim();
        let invalid = |reason: String| StoreError::InvalidUrl {
            store: STORE,
            url: super::net::redact_url(raw),
            reason,
            expected: EXPECTED,
        };
        let (scheme, rest) = raw
            .split_once("://")
            .ok_or_else(|| invalid("it does not start with etcd:// or etcds://".into()))?;
        let secure = match scheme.to_ascii_lowercase().as_str() {
            "etcd" => false,
            "etcds" => true,
            _ => return Err(invalid("the scheme is neither etcd nor etcds".into())),
        };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => (Some(userinfo), hosts),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (String::new(), None),
            Some(userinfo) => match userinfo.split_once(':') {
                Some((user, password)) => (
                    super::net::percent_decode(user),
                    Some(super::net::percent_decode(password)),
                ),
                None => (super::net::percent_decode(userinfo), None),
            },
        };
        if password.is_some() && user.is_empty() {
            return Err(invalid(
                "a password needs a user name (user:password@)".into(),
            ));
        }
        let mut members = Vec::new();
        for member in hosts.split(',') {
            members.push(super::net::member_address(member, 2379).map_err(invalid)?);
        }
        if members.len() > 15 {
            return Err(invalid(format!(
                "{} members: at most 15 (an etcd cluster has 3, 5 or 7)",
                members.len()
            )));
        }
        let root = super::net::percent_decode(path.trim_end_matches('/'));
        let root = if root.is_empty() {
            DEFAULT_PREFIX.to_owned()
        } else {
            root
        };
        check_prefix(&root).map_err(|rule| invalid(format!("the prefix {root:?}: {rule}")))?;
        let mut tls = secure.then(TlsFiles::default);
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            if TlsFiles::take(&mut tls, &key, &value, "etcds").map_err(invalid)? {
                continue;
            }
            return Err(invalid(format!(
                "unknown parameter {:?} (cacert, cert and key are understood)",
                if super::is_credential_key(&key) {
                    "***".into()
                } else {
                    key.chars().take(40).collect::<String>()
                }
            )));
        }
        TlsFiles::check(tls.as_ref(), STORE).map_err(invalid)?;
        let shown_members: Vec<String> = members
            .iter()
            .map(|(host, port)| format!("{host}:{port}"))
            .collect();
        let location = format!(
            "{}://{}{}/{root}",
            if secure { "etcds" } else { "etcd" },
            if user.is_empty() {
                String::new()
            } else {
                format!("{user}@")
            },
            shown_members.join(",")
        );
        let web = if secure { "https" } else { "http" };
        let (host, port) = members[0].clone();
        Ok(Self {
            endpoints: shown_members
                .iter()
                .map(|member| format!("{web}://{member}"))
                .collect(),
            host,
            port,
            user,
            password: Hidden(password),
            tls,
            location,
            prefix: format!("{root}/"),
            root,
            timeout: Duration::from_secs(5),
            session: Session::new(),
        })
    }

    /// The bound on each network step (a new client is opened with it).
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.session = Session::new();
        self
    }

    /// The prefix of this store's keys: `ROOT/` + `name` (a name of the caller's keeps
    /// deployments on one cluster apart).
    pub(crate) fn with_prefix(mut self, name: &str) -> Result<Self, StoreError> {
        let prefix = format!("{}/{name}", self.root);
        check_prefix(&prefix).map_err(|rule| StoreError::InvalidName {
            store: STORE,
            what: "key prefix",
            name: name.chars().take(200).collect(),
            rule,
        })?;
        self.prefix = prefix;
        Ok(self)
    }

    pub(crate) fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL's own prefix (the records live under it).
    pub(crate) fn root(&self) -> &str {
        &self.root
    }

    /// The cluster, without a password.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// The store, for people and errors: the cluster and the key prefix.
    pub(crate) fn describe(&self) -> String {
        format!("the etcd store {} (keys {}*)", self.location, self.prefix)
    }

    /// Runs `work` on the client (connected first if it is not), within the bound.
    pub(crate) fn run<T: Send>(
        &self,
        step: &'static str,
        work: impl AsyncFnOnce(&mut Client) -> Result<T, etcd_client::Error> + Send,
    ) -> Result<T, StoreError> {
        let timeout = self.timeout;
        self.session.run(
            STORE,
            &self.location,
            async || match tokio::time::timeout(
                timeout,
                Client::connect(&self.endpoints, Some(self.options()?)),
            )
            .await
            {
                Ok(Ok(client)) => Ok(client),
                Ok(Err(e)) => Err(self.explain(e, "connecting")),
                Err(_) => Err(self.timed_out("connecting")),
            },
            async |client| match tokio::time::timeout(timeout, work(client)).await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(e)) => Err(self.explain(e, step)),
                Err(_) => Err(self.timed_out(step)),
            },
        )
    }

    /// The client's options: the bound, a user, TLS, and requests refused by a member
    /// that has no leader (so a member cut off from the others never answers from its
    /// own stale state).
    fn options(&self) -> Result<ConnectOptions, StoreError> {
        let mut options = ConnectOptions::new()
            .with_connect_timeout(self.timeout)
            .with_timeout(self.timeout)
            .with_require_leader(true);
        if !self.user.is_empty() {
            options =
                options.with_user(self.user.clone(), self.password.0.clone().unwrap_or_default());
        }
        #[cfg(feature = "tls")]
        if let Some(files) = &self.tls {
            let read = |what: &str, path: &std::path::Path| {
                std::fs::read(path).map_err(|e| StoreError::Tls {
                    store: STORE,
                    host: self.host.clone(),
                    port: self.port,
                    reason: format!("cannot read the {what} {}: {e}", path.display()),
                    source: Box::new(e),
                })
            };
            let mut tls = etcd_client::TlsOptions::new()
                .domain_name(self.host.trim_matches(['[', ']']).to_owned());
            tls = match &files.ca {
                Some(path) => {
                    tls.ca_certificate(etcd_client::Certificate::from_pem(read("CA file", path)?))
                }
                None => tls.with_native_roots(),
            };
            if let (Some(cert), Some(key)) = (&files.cert, &files.key) {
                tls = tls.identity(etcd_client::Identity::from_pem(
                    read("client certificate", cert)?,
                    read("client key", key)?,
                ));
            }
            options = options.with_tls(tls);
        }
        Ok(options)
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

    /// The error for `err`, named as the other stores name theirs.
    fn explain(&self, err: etcd_client::Error, step: &'static str) -> StoreError {
        if let Some(reason) = super::tls_failure(&err) {
            return StoreError::Tls {
                store: STORE,
                host: self.host.clone(),
                port: self.port,
                reason,
                source: Box::new(err),
            };
        }
        match &err {
            // etcd's words for a wrong user or password (gRPC's Unauthenticated is also
            // an expired token, which the client renews by itself).
            etcd_client::Error::GRpcStatus(status)
                if status.message().contains("authentication failed") =>
            {
                StoreError::AccessDenied {
                    store: STORE,
                    user: self.user.clone(),
                    host: self.host.clone(),
                    port: self.port,
                    source: Box::new(err),
                }
            }
            // gRPC's Unavailable (14): no member could be reached, or none has a leader.
            etcd_client::Error::GRpcStatus(status) if status.code() as i32 == 14 => {
                StoreError::Unreachable {
                    store: STORE,
                    host: self.host.clone(),
                    port: self.port,
                    source: Box::new(err),
                }
            }
            // gRPC's DeadlineExceeded (4): the client's own bound.
            etcd_client::Error::GRpcStatus(status) if status.code() as i32 == 4 => {
                self.timed_out(step)
            }
            etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => {
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

    pub(crate) fn unexpected(
        &self,
        step: &'static str,
        what: impl std::fmt::Display,
    ) -> StoreError {
        StoreError::Unexpected {
            store: STORE,
            location: self.location.clone(),
            step,
            what: format!(
                "{what}; do other programs write keys under the prefix {:?}?",
                self.prefix
            ),
        }
    }
}

/// A key prefix: printable, no spaces, at most 200 bytes.
fn check_prefix(prefix: &str) -> Result<(), &'static str> {
    if prefix.is_empty()
        || prefix.len() > 200
        || prefix.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("use 1 to 200 characters, without spaces or control characters");
    }
    Ok(())
}

/// The key-values of the `index`th answer of a transaction (a get).
pub(crate) fn got(answers: &[TxnOpResponse], index: usize) -> &[KeyValue] {
    match answers.get(index) {
        Some(TxnOpResponse::Get(get)) => get.kvs(),
        _ => &[],
    }
}

/// A transaction of gets only, all read at one revision.
pub(crate) fn read_together(keys: &[(&str, bool)]) -> Txn {
    Txn::new().and_then(
        keys.iter()
            .map(|(key, prefix)| {
                etcd_client::TxnOp::get(
                    key.to_string(),
                    prefix.then(|| GetOptions::new().with_prefix()),
                )
            })
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_every_member_a_prefix_and_never_show_the_password() {
        let conn =
            EtcdConn::new("etcd://root:s3cret@10.0.0.1,10.0.0.2:2380,[::1]:2381/fleet-a").unwrap();
        assert_eq!(
            conn.endpoints,
            [
                "http://10.0.0.1:2379",
                "http://10.0.0.2:2380",
                "http://[::1]:2381"
            ]
        );
        assert_eq!(conn.root(), "fleet-a");
        assert_eq!(conn.key_prefix(), "fleet-a/");
        assert_eq!(
            conn.location(),
            "etcd://root@10.0.0.1:2379,10.0.0.2:2380,[::1]:2381/fleet-a"
        );
        assert!(!format!("{conn:?}{}", conn.describe()).contains("s3cret"));
        assert_eq!(conn.password.as_deref(), Some("s3cret"));
        let plain = EtcdConn::new("etcd://127.0.0.1").unwrap();
        assert_eq!(plain.root(), DEFAULT_PREFIX);
        assert_eq!(
            plain.with_prefix("lease/").unwrap().key_prefix(),
            "uidgen/lease/"
        );

        for (bad, why) in [
            ("etcd://", "empty"),
            ("etcd://a,,b/x", "empty"),
            ("etcd://a:0/x", "port"),
            ("etcd://a:99999/x", "port"),
            ("etcd://a b/x", "host"),
            ("etcd://[::1/x", "]"),
            ("etcd://a/x?cacert=/etc/hosts", "etcds"),
            ("etcd://a/x?password=hunter2", "unknown parameter \"***\""),
            ("etcd://:pw@a/x", "user name"),
            ("etcd://a/with space", "prefix"),
            ("etcs://a/x", "scheme"),
        ] {
            let err = EtcdConn::new(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
            assert!(!err.contains("hunter2"), "{err}");
        }
    }
}
