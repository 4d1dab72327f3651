//! ZooKeeper: a consensus store, whose acknowledged writes survive the loss of any
//! minority of its members. Through `zookeeper-client` on a runtime of its own (a
//! session lives on pings between the steps); every step bounded; requests only to a
//! member that serves the quorum (never read-only mode). This folder holds the
//! connection, the lease steps (a session per lease), the segment counters and the
//! store's records.

mod driver;
mod lease;
pub(crate) mod leaf;
pub(crate) mod records;
mod segment;

pub(crate) use self::driver::DRIVER;
pub use self::lease::ZooKeeperLeaseStore;
pub use self::leaf::{
    Handover, LeafFleet, LeafWorker, LEAF_EPOCH_MS, LEAF_FENCE_MS, LEAF_HEARTBEAT,
    LEAF_MAX_WORKER_ID, MIN_SILENCE, UIDGEN_LEAF_ADDRESS,
};
pub use self::segment::ZooKeeperSegmentStore;

use super::net::{Hidden, TlsFiles};
pub(crate) use super::net::{number, padded};
use super::StoreError;
use crate::sync::{lock, Arc, Mutex};
use std::future::Future;
use std::time::Duration;
use zookeeper_client::{Acls, Client, CreateMode, CreateOptions};

const STORE: &str = "ZooKeeper";
const EXPECTED: &str = "zookeeper://[user:password@]host[:port][,host[:port]…][/PATH][?leaf=NAME], \
     every member of the ensemble separated by commas (port 2181 by default), or \
     zookeepers:// for TLS (optionally ?cacert=PATH, the only CA trusted, and \
     ?cert=PATH&key=PATH, a client certificate and its key); PATH (default /uidgen) is the \
     node under which this deployment keeps its nodes, a user is a digest user whose nodes \
     only it may read and write, and leaf=NAME takes new worker IDs from the counter of the \
     Leaf fleet NAME";

/// The node of the leases under the URL's path, when no name is given.
pub(crate) const LEASE_NODE: &str = "lease";

/// The node of `worker_id`'s time mark under the leases' node `leases`.
pub(crate) fn mark_path(leases: &str, worker_id: u64) -> String {
    format!("{leases}/{}", padded(worker_id))
}

/// The node under which the nodes live when the URL names none.
const DEFAULT_ROOT: &str = "/uidgen";

/// How long the session of reads, segments and records lasts without a ping: long
/// enough for a loaded machine, short enough that a dead process's is soon gone.
const READER_SESSION: Duration = Duration::from_secs(10);

/// One ZooKeeper ensemble and a path: the session of reads, segments and records is
/// opened on first use and kept; clones share it. (Leases open sessions of their own.)
#[derive(Debug, Clone)]
pub(crate) struct ZkConn {
    /// `host:port,host:port`, as the client reads it.
    cluster: String,
    /// The first member, for errors that name a host.
    host: String,
    port: u16,
    user: String,
    password: Hidden<Option<String>>,
    /// `zookeeper://user@h1:2181,h2:2181/path`, for messages: never a password.
    location: String,
    /// The URL's path, absolute, without a trailing `/`.
    root: String,
    /// The node of this store's children (`root/lease`, or a name of the caller's).
    prefix: String,
    timeout: Duration,
    /// TLS, for `zookeepers://`.
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    tls: Option<TlsFiles>,
    /// Leaf mode (`?leaf=NAME`): new worker IDs come from that Leaf fleet's counter.
    leaf: Option<String>,
    reader: Arc<Mutex<Option<Client>>>,
}

impl ZkConn {
    /// Reads `url` (see [`EXPECTED`]); connects nothing.
    pub(crate) fn new(url: &str) -> Result<Self, StoreError> {
        let raw = url.trim();
        let invalid = |reason: String| StoreError::InvalidUrl {
            store: STORE,
            url: super::net::redact_url(raw),
            reason,
            expected: EXPECTED,
        };
        let (scheme, rest) = raw.split_once("://").ok_or_else(|| {
            invalid("it does not start with zookeeper:// or zookeepers://".into())
        })?;
        let secure = match scheme.to_ascii_lowercase().as_str() {
            "zookeeper" => false,
            "zookeepers" => true,
            _ => return Err(invalid("the scheme is neither zookeeper nor zookeepers".into())),
        };
        // An '@' past the host list is most likely a password holding '/' or '?', which
        // would otherwise be read as a path or a query and shown: refused unshown.
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        if rest[authority_end..].contains('@') {
            return Err(StoreError::InvalidUrl {
                store: STORE,
                url: format!("{scheme}://***"),
                reason: "an '@' after the hosts' first '/' or '?': a password holding '/', '?' \
                         or '@' must be percent-encoded (%2F, %3F, %40), and a path may not \
                         hold '@'"
                    .into(),
                expected: EXPECTED,
            });
        }
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut leaf = None;
        let mut tls = secure.then(TlsFiles::default);
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            if TlsFiles::take(&mut tls, &key, &value, "zookeepers").map_err(invalid)? {
                continue;
            }
            match key.as_ref() {
                "leaf" => {
                    leaf::check_leaf_name(&value)
                        .map_err(|rule| invalid(format!("leaf={value:?}: {rule}")))?;
                    leaf = Some(value.into_owned());
                }
                _ => {
                    return Err(invalid(format!(
                        "unknown parameter {:?} (leaf, and for TLS cacert, cert and key, are \
                         understood)",
                        if super::is_credential_key(&key) {
                            "***".into()
                        } else {
                            key.chars().take(40).collect::<String>()
                        }
                    )))
                }
            }
        }
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
        if !user.is_empty() && password.is_none() {
            return Err(invalid(
                "a digest user needs its password (user:password@)".into(),
            ));
        }
        if password.is_some() && user.is_empty() {
            return Err(invalid(
                "a password needs a user name (user:password@)".into(),
            ));
        }
        if user.contains(':') {
            return Err(invalid("a digest user's name cannot hold a :".into()));
        }
        let mut members = Vec::new();
        for member in hosts.split(',') {
            members.push(super::net::member_address(member, 2181).map_err(invalid)?);
        }
        if members.len() > 15 {
            return Err(invalid(format!(
                "{} members: at most 15 (an ensemble has 3, 5 or 7)",
                members.len()
            )));
        }
        TlsFiles::check(tls.as_ref(), STORE).map_err(invalid)?;
        let path = super::net::percent_decode(path.trim_end_matches('/'));
        let root = if path.is_empty() {
            DEFAULT_ROOT.to_owned()
        } else {
            format!("/{path}")
        };
        check_path(&root).map_err(|rule| invalid(format!("the path {root:?}: {rule}")))?;
        let cluster = members
            .iter()
            .map(|(host, port)| format!("{host}:{port}"))
            .collect::<Vec<_>>()
            .join(",");
        let location = format!(
            "{}://{}{cluster}{root}{}",
            if secure { "zookeepers" } else { "zookeeper" },
            if user.is_empty() {
                String::new()
            } else {
                format!("{user}@")
            },
            leaf.as_ref()
                .map_or(String::new(), |name| format!("?leaf={name}")),
        );
        let (host, port) = members[0].clone();
        Ok(Self {
            cluster,
            host,
            port,
            user,
            password: Hidden(password),
            location,
            prefix: root.clone(),
            root,
            timeout: Duration::from_secs(5),
            tls,
            leaf,
            reader: Arc::new(Mutex::new(None)),
        })
    }

    /// The bound on each network step (a new session is opened with it).
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.reader = Arc::new(Mutex::new(None));
        self
    }

    /// The node of this store's children: `ROOT/name` (a name of the caller's keeps
    /// deployments on one ensemble apart; empty: the root itself).
    pub(crate) fn with_prefix(mut self, name: &str) -> Result<Self, StoreError> {
        let name = name.trim_matches('/');
        let prefix = if name.is_empty() {
            self.root.clone()
        } else {
            format!("{}/{name}", self.root)
        };
        check_path(&prefix).map_err(|rule| StoreError::InvalidName {
            store: STORE,
            what: "node path",
            name: name.chars().take(200).collect(),
            rule,
        })?;
        self.prefix = prefix;
        Ok(self)
    }

    /// The node under which this store's nodes are.
    pub(crate) fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL's own path (the records live under it).
    pub(crate) fn root(&self) -> &str {
        &self.root
    }

    /// The Leaf fleet of Leaf mode (`?leaf=NAME`).
    pub(crate) fn leaf(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// The ensemble, without a password.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    pub(crate) fn describe(&self) -> String {
        format!("the ZooKeeper store {} (nodes under {})", self.location, self.prefix)
    }

    /// Who may read and write the nodes made: the digest user alone, when there is one.
    pub(crate) fn options(&self, mode: CreateMode) -> CreateOptions<'static> {
        if self.user.is_empty() {
            mode.with_acls(Acls::anyone_all())
        } else {
            mode.with_acls(Acls::creator_all())
        }
    }

    /// A new session, with `session_timeout` asked for, within the bound. Only members
    /// that serve the quorum accept it (the client never asks for read-only mode).
    pub(crate) async fn connect(&self, session_timeout: Duration) -> Result<Client, StoreError> {
        // With TLS built, zookeeper-client brings aws-lc-rs beside our ring, and then
        // rustls chooses no provider by itself: its client would panic, even in plain text.
        #[cfg(feature = "tls")]
        super::tls::install_provider();
        let mut connector = Client::connector();
        connector
            .session_timeout(session_timeout)
            .connection_timeout(self.timeout)
            .fail_eagerly();
        if let Some(password) = self.password.0.as_ref() {
            connector.auth(
                "digest".into(),
                format!("{}:{password}", self.user).into_bytes(),
            );
        }
        #[cfg(feature = "tls")]
        if let Some(files) = &self.tls {
            connector.tls(self.tls_options(files)?);
            return match tokio::time::timeout(self.timeout, connector.secure_connect(&self.cluster))
                .await
            {
                Ok(Ok(client)) => Ok(client),
                Ok(Err(e)) => Err(self.tls_refusal(files).await.unwrap_or(self.explain(e, "connecting"))),
                Err(_) => Err(self.timed_out("connecting")),
            };
        }
        match tokio::time::timeout(self.timeout, connector.connect(&self.cluster)).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(self.explain(e, "connecting")),
            Err(_) => Err(self.timed_out("connecting")),
        }
    }

    /// The client's TLS: the CA file alone when the URL names one, else the well-known
    /// roots; a client certificate when named. Host names are checked.
    #[cfg(feature = "tls")]
    fn tls_options(&self, files: &TlsFiles) -> Result<zookeeper_client::TlsOptions, StoreError> {
        let failed = |reason: String| StoreError::Tls {
            store: STORE,
            host: self.host.clone(),
            port: self.port,
            reason,
            source: "the TLS settings of the URL".into(),
        };
        let read = |what: &str, path: &std::path::Path| {
            std::fs::read_to_string(path)
                .map_err(|e| failed(format!("cannot read the {what} {}: {e}", path.display())))
        };
        let options = match &files.ca {
            Some(path) => zookeeper_client::TlsOptions::no_ca()
                .with_pem_ca_certs(&read("CA file", path)?)
                .map_err(|e| failed(format!("the CA file {}: {e}", path.display())))?,
            None => zookeeper_client::TlsOptions::default(),
        };
        match (&files.cert, &files.key) {
            (Some(cert), Some(key)) => options
                .with_pem_identity(&read("client certificate", cert)?, &read("client key", key)?)
                .map_err(|e| failed(format!("the client certificate or key: {e}"))),
            _ => Ok(options),
        }
    }

    /// Why the first member refuses a TLS handshake, when it does: ZooKeeper's client
    /// only logs it, so a handshake of our own, checked the same way, names it.
    #[cfg(feature = "tls")]
    async fn tls_refusal(&self, files: &TlsFiles) -> Option<StoreError> {
        let asked = super::net::Tls {
            verify: super::net::Verify::Full,
            ca: files.ca.clone(),
        };
        let (host, port, timeout) = (self.host.clone(), self.port, self.timeout);
        let reason = tokio::task::spawn_blocking(move || {
            super::tls::handshake_failure(STORE, &host, port, &asked, timeout)
        })
        .await
        .ok()??;
        Some(StoreError::Tls {
            store: STORE,
            host: self.host.clone(),
            port: self.port,
            reason,
            source: "the TLS handshake".into(),
        })
    }

    /// Runs `work` with the shared session (opened first if there is none, or if the
    /// last one ended), within the bound, blocking until it is done.
    pub(crate) fn run<T: Send>(
        &self,
        step: &'static str,
        work: impl AsyncFnOnce(&Client) -> Result<T, zookeeper_client::Error> + Send,
    ) -> Result<T, StoreError> {
        block(move || async move {
            let client = self.reader().await?;
            match tokio::time::timeout(self.timeout, work(&client)).await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(e)) => {
                    self.forget_if_ended(&client, &e);
                    Err(self.explain(e, step))
                }
                Err(_) => Err(self.timed_out(step)),
            }
        })
    }

    async fn reader(&self) -> Result<Client, StoreError> {
        let kept = lock(&self.reader).clone();
        if let Some(client) = kept.filter(|client| !ended(client)) {
            return Ok(client);
        }
        let client = self.connect(READER_SESSION).await?;
        *lock(&self.reader) = Some(client.clone());
        Ok(client)
    }

    /// Drops the shared session when `err` says it is over.
    fn forget_if_ended(&self, client: &Client, err: &zookeeper_client::Error) {
        use zookeeper_client::Error as E;
        if matches!(err, E::SessionExpired | E::ClientClosed | E::AuthFailed) || ended(client) {
            let mut kept = lock(&self.reader);
            if kept
                .as_ref()
                .is_some_and(|k| k.session_id() == client.session_id())
            {
                *kept = None;
            }
        }
    }

    /// Creates `path` and its missing parents as persistent nodes (no data).
    pub(crate) async fn make_path(
        &self,
        client: &Client,
        path: &str,
    ) -> Result<(), zookeeper_client::Error> {
        let mut at = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            at.push('/');
            at.push_str(part);
            match client
                .create(&at, b"", &self.options(CreateMode::Persistent))
                .await
            {
                Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Creates the persistent node `path` holding `data`, and its parent `parent` first if
    /// it is missing; whether it was made (`false`: it was there).
    pub(crate) async fn create_under(
        &self,
        client: &Client,
        parent: &str,
        path: &str,
        data: &[u8],
    ) -> Result<bool, zookeeper_client::Error> {
        let options = self.options(CreateMode::Persistent);
        for first in [true, false] {
            match client.create(path, data, &options).await {
                Ok(_) => return Ok(true),
                Err(zookeeper_client::Error::NodeExists) => return Ok(false),
                Err(zookeeper_client::Error::NoNode) if first => {
                    self.make_path(client, parent).await?;
                }
                Err(e) => return Err(e),
            }
        }
        Err(zookeeper_client::Error::NoNode)
    }

    /// Deletes `path` and everything under it (a missing node is no error).
    pub(crate) async fn delete_tree(
        client: &Client,
        path: &str,
    ) -> Result<(), zookeeper_client::Error> {
        let mut stack = vec![(path.to_owned(), false)];
        while let Some((node, listed)) = stack.pop() {
            if listed {
                match client.delete(&node, None).await {
                    Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            let children = match client.list_children(&node).await {
                Ok(children) => children,
                Err(zookeeper_client::Error::NoNode) => continue,
                Err(e) => return Err(e),
            };
            stack.push((node.clone(), true));
            let base = if node == "/" { String::new() } else { node };
            stack.extend(children.into_iter().map(|c| (format!("{base}/{c}"), false)));
        }
        Ok(())
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

    /// The error for `err`, named as the other stores name theirs.
    pub(crate) fn explain(&self, err: zookeeper_client::Error, step: &'static str) -> StoreError {
        use zookeeper_client::Error as E;
        match err {
            E::AuthFailed | E::NoAuth => StoreError::AccessDenied {
                store: STORE,
                user: self.user.clone(),
                host: self.host.clone(),
                port: self.port,
                source: Box::new(err),
            },
            E::NoHosts | E::ConnectionLoss | E::SessionExpired | E::ClientClosed => {
                StoreError::Unreachable {
                    store: STORE,
                    host: self.host.clone(),
                    port: self.port,
                    source: Box::new(err),
                }
            }
            E::Timeout => self.timed_out(step),
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
                "{what}; do other programs write nodes under {:?}?",
                self.prefix
            ),
        }
    }
}

/// Whether a session is over for good (expired, closed, refused): a new one is needed.
pub(crate) fn ended(client: &Client) -> bool {
    use zookeeper_client::SessionState as S;
    matches!(client.state(), S::Expired | S::Closed | S::AuthFailed)
}

/// Brings the session's member up to the leader's state, so reads see other sessions'
/// writes.
pub(crate) async fn sync(client: &Client, path: &str) -> Result<(), zookeeper_client::Error> {
    match client.sync(path).await {
        Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The children of `path` (none when it is not there).
pub(crate) async fn children(client: &Client, path: &str) -> Result<Vec<String>, zookeeper_client::Error> {
    match client.list_children(path).await {
        Ok(children) => Ok(children),
        Err(zookeeper_client::Error::NoNode) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// One node's answer in a multi-read: its data and stat, `None` when the node is not
/// there, and an error for anything else (no right to read it, say), never taken for a
/// missing node.
pub(crate) fn node_data(
    answer: Option<&zookeeper_client::MultiReadResult>,
) -> Result<Option<(&[u8], &zookeeper_client::Stat)>, zookeeper_client::Error> {
    use zookeeper_client::{Error as E, MultiReadResult as R};
    match answer {
        Some(R::Data { data, stat }) => Ok(Some((data, stat))),
        Some(R::Error { err: E::NoNode }) => Ok(None),
        Some(R::Error { err }) => Err(err.clone()),
        _ => Err(E::UnexpectedError("a multi-read answered out of shape".into())),
    }
}

/// The runtime every ZooKeeper session of this process runs on: a thread of its own, so
/// sessions are pinged between the steps, whatever the caller's threads do.
fn runtime() -> Result<&'static tokio::runtime::Runtime, StoreError> {
    static RUNTIME: std::sync::OnceLock<Option<tokio::runtime::Runtime>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("uidgen-zookeeper")
                .enable_all()
                .build()
                .ok()
        })
        .as_ref()
        .ok_or_else(|| StoreError::Other {
            store: STORE,
            location: String::new(),
            step: "starting a tokio runtime",
            source: "the runtime of ZooKeeper's sessions could not be started".into(),
        })
}

/// Runs the future `make` makes to its end on the shared sessions' runtime.
pub(crate) fn block<T: Send, F: Future<Output = Result<T, StoreError>>>(
    make: impl FnOnce() -> F + Send,
) -> Result<T, StoreError> {
    block_on(runtime()?, make)
}

/// Runs the future `make` makes to its end on `runtime`. From inside another runtime
/// (where blocking on one would panic) it is made and run on a helper thread.
pub(crate) fn block_on<T: Send, F: Future<Output = Result<T, StoreError>>>(
    runtime: &tokio::runtime::Runtime,
    make: impl FnOnce() -> F + Send,
) -> Result<T, StoreError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return runtime.block_on(make());
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| runtime.block_on(make()))
            .join()
            .unwrap_or_else(|_| {
                Err(StoreError::Other {
                    store: STORE,
                    location: String::new(),
                    step: "running a step on a helper thread",
                    source: "the helper thread panicked".into(),
                })
            })
    })
}

/// A node path: absolute, printable, no empty, `.` or `..` part, at most 200 bytes.
fn check_path(path: &str) -> Result<(), &'static str> {
    let rule = "use 1 to 200 characters, without spaces or control characters, and no \
                empty, . or .. part between slashes";
    if path.len() > 200 || path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(rule);
    }
    let mut parts = path.split('/');
    if parts.next() != Some("") {
        return Err(rule);
    }
    if parts.any(|part| part.is_empty() || part == "." || part == "..") {
        return Err(rule);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_every_member_a_path_and_never_show_the_password() {
        let conn =
            ZkConn::new("zookeeper://ids:s3cret@10.0.0.1,10.0.0.2:2182,[::1]:2183/fleet-a")
                .unwrap();
        assert_eq!(conn.cluster, "10.0.0.1:2181,10.0.0.2:2182,[::1]:2183");
        assert_eq!(conn.root(), "/fleet-a");
        assert_eq!(conn.key_prefix(), "/fleet-a");
        assert_eq!(
            conn.location(),
            "zookeeper://ids@10.0.0.1:2181,10.0.0.2:2182,[::1]:2183/fleet-a"
        );
        assert!(!format!("{conn:?}{}", conn.describe()).contains("s3cret"));
        let plain = ZkConn::new("zookeeper://127.0.0.1").unwrap();
        assert_eq!(plain.root(), DEFAULT_ROOT);
        assert_eq!(
            plain.with_prefix("lease/").unwrap().key_prefix(),
            "/uidgen/lease"
        );
        let nested = ZkConn::new("zookeeper://h/a/b/").unwrap();
        assert_eq!(nested.root(), "/a/b");
        let leaf = ZkConn::new("zookeeper://h/ids?leaf=leaf-order").unwrap();
        assert_eq!(leaf.leaf(), Some("leaf-order"));
        assert_eq!(leaf.location(), "zookeeper://h:2181/ids?leaf=leaf-order");

        for (bad, why) in [
            ("zookeeper://", "empty"),
            ("zookeeper://a,,b/x", "empty"),
            ("zookeeper://a:0/x", "port"),
            ("zookeeper://a:99999/x", "port"),
            ("zookeeper://a b/x", "host"),
            ("zookeeper://a/x?password=hunter2", "unknown parameter \"***\""),
            ("zookeeper://a/x?leaf=a/b", "leaf"),
            ("zookeeper://:hunter2@a/x", "user name"),
            ("zookeeper://ids@a/x", "password"),
            ("zookeeper://a/with space", "path"),
            ("zookeeper://a/x//y", "path"),
            ("zookeeper://a/x/../y", "path"),
            ("zk://a/x", "scheme"),
            ("zookeeper://a/x?cacert=/etc/hosts", "zookeepers"),
            ("zookeepers://a/x?cert=/etc/hosts", "cert and key go together"),
            // A password holding '/' or '?' unencoded: never read as a path or a query.
            ("zookeeper://ids:hunter2/x7@zk1/ids", "percent-encoded"),
            ("zookeeper://ids:hun?ter2@zk1/ids", "percent-encoded"),
        ] {
            let err = ZkConn::new(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
            assert!(!err.contains("hunter2") && !err.contains("ter2"), "{err}");
        }
        let err = ZkConn::new("zookeeper://h")
            .unwrap()
            .with_prefix("a/../b")
            .unwrap_err()
            .to_string();
        assert!(err.contains(".."), "{err}");
    }
}
