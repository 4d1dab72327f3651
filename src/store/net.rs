//! What the network stores share: name resolution with a bound, their URLs read once
//! (never by a driver, whose messages may echo parts of one), TLS parameters, and URLs
//! shown to people with every password replaced.

use super::StoreError;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

/// A field kept out of `Debug`: the driver's settings, which hold the password, or a
/// live connection. Wrapped so the network stores' connections can derive `Debug` and
/// still never show a password (their tests format them with one in the URL).
#[derive(Clone)]
pub(crate) struct Hidden<T>(pub(crate) T);

impl<T> std::fmt::Debug for Hidden<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(not shown)")
    }
}

impl<T> std::ops::Deref for Hidden<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The address of `host:port`. The system resolver blocks, and may block far longer than
/// our bound (`timeout × attempts` of resolv.conf), so it runs on a thread of its own
/// that is left behind if it does not answer within `timeout`.
#[cfg_attr(
    not(any(
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        all(feature = "zookeeper", feature = "tls")
    )),
    allow(dead_code)
)]
pub(crate) fn resolve(
    store: &'static str,
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<SocketAddr, StoreError> {
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let resolve_error = |source| StoreError::Resolve {
        store,
        host: host.to_owned(),
        source,
    };
    let (send, receive) = mpsc::channel();
    let target = (host.to_owned(), port);
    std::thread::Builder::new()
        .name("uidgen-resolve".into())
        .spawn(move || {
            let _ = send.send(target.to_socket_addrs().map(|mut addrs| addrs.next()));
        })
        .map_err(resolve_error)?;
    match receive.recv_timeout(timeout) {
        Ok(Ok(Some(address))) => Ok(address),
        Ok(Ok(None)) => Err(resolve_error(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the name has no address",
        ))),
        Ok(Err(source)) => Err(resolve_error(source)),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(resolve_error(std::io::Error::other(
            "the resolver thread ended without an answer",
        ))),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(StoreError::Timeout {
            store,
            host: host.to_owned(),
            port,
            step: "resolving the host name",
            timeout,
        }),
    }
}

/// `raw` with its password (and any password-like query parameter) replaced by `***`.
///
/// The URL is parsed (`url::Url`), never split by hand, so `user:p@ss@host` and
/// percent-encoded passwords are found. A URL that does not parse as
/// `scheme://[user[:password]@]host[:port][/path][?query]` is not shown at all if it
/// could hold a password (it has an `@` or a password-like word): where the password
/// is in it cannot be known. Long input is cut short.
///
/// ```
/// use uidgen::redact_url;
///
/// assert_eq!(redact_url("mysql://u:se@cret@db:3306/ids"), r#""mysql://u:***@db:3306/ids""#);
/// assert_eq!(redact_url("mysql://db/ids?password=secret"), r#""mysql://db/ids?password=***""#);
/// assert!(!redact_url("mysql:u:secret@db/ids").contains("secret"));
/// ```
pub fn redact_url(raw: &str) -> String {
    let hidden = || {
        if raw.contains('@') || super::is_credential_key(raw) {
            "(not shown: it does not parse as scheme://user:password@host/path, so its \
             password cannot be found to hide)"
                .to_owned()
        } else {
            crate::error::Shown(raw).to_string()
        }
    };
    let Ok(mut url) = url::Url::parse(raw.trim()) else {
        return hidden();
    };
    if url.cannot_be_a_base() || !url.has_host() {
        return hidden();
    }
    // The password as written and decoded: it is scrubbed from the whole output too, in
    // case the user also pasted it elsewhere in the URL.
    let password = url.password().map(|p| {
        let decoded = percent_decode(p);
        (p.to_owned(), decoded)
    });
    if password.is_some() && url.set_password(Some("***")).is_err() {
        return hidden();
    }
    if url.query().is_some() {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(key, value)| {
                let value = if super::is_credential_key(&key) {
                    "***".to_owned()
                } else {
                    value.into_owned()
                };
                (key.into_owned(), value)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    url.set_fragment(None);
    let mut shown = url.as_str().to_owned();
    if let Some((written, decoded)) = password {
        let prefix_end = shown.find("***").map_or(0, |i| i + 3);
        let (prefix, rest) = shown.split_at(prefix_end);
        let mut rest = rest.to_owned();
        for secret in [written, decoded] {
            if !secret.is_empty() {
                rest = rest.replace(&secret, "***");
            }
        }
        shown = format!("{prefix}{rest}");
    }
    crate::error::Shown(&shown).to_string()
}

/// `%XX` sequences decoded (lossily: a password is only matched, never shown).
pub(crate) fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// A network store's URL, parsed here and never by its driver (whose messages may echo
/// parts of it): one of `schemes`, with a host. Errors are `InvalidUrl`, the URL
/// redacted; `invalid` makes the engine's own.
#[cfg_attr(
    not(any(feature = "mysql", feature = "postgres", feature = "redis")),
    allow(dead_code)
)]
pub(crate) struct NetworkUrl {
    pub url: url::Url,
    pub host: String,
    store: &'static str,
    raw: String,
    expected: &'static str,
}

#[cfg_attr(
    not(any(feature = "mysql", feature = "postgres", feature = "redis")),
    allow(dead_code)
)]
impl NetworkUrl {
    /// `raw` as a URL of `kind`'s engine: one of its schemes (as `engines!` declares
    /// them) and a host.
    pub(crate) fn parse(
        raw: &str,
        kind: super::StoreKind,
        expected: &'static str,
    ) -> Result<Self, StoreError> {
        let store = kind.name();
        let schemes: Vec<&str> = super::SCHEMES
            .iter()
            .filter(|(_, of)| *of == kind)
            .map(|(scheme, _)| *scheme)
            .collect();
        let mut parsed = Self {
            url: url::Url::parse("x://x").expect("a URL"),
            host: String::new(),
            store,
            raw: raw.to_owned(),
            expected,
        };
        parsed.url = url::Url::parse(raw.trim()).map_err(|e| parsed.invalid(e.to_string()))?;
        if !schemes.contains(&parsed.url.scheme()) {
            return Err(parsed.invalid(format!(
                "the scheme is {:?}, not {}",
                parsed.url.scheme(),
                schemes.join(" or ")
            )));
        }
        match parsed.url.host_str() {
            Some(host) if !host.is_empty() && !parsed.url.cannot_be_a_base() => {
                parsed.host = host.to_owned();
                Ok(parsed)
            }
            _ => Err(parsed.invalid(format!(
                "no host (write {}://, with two slashes)",
                parsed.url.scheme()
            ))),
        }
    }

    /// The error for this URL: `reason`, with the form expected.
    pub(crate) fn invalid(&self, reason: String) -> StoreError {
        StoreError::InvalidUrl {
            store: self.store,
            url: redact_url(&self.raw),
            reason,
            expected: self.expected,
        }
    }
}

/// How much of the server's certificate a network store checks.
#[cfg_attr(not(any(feature = "mysql", feature = "postgres")), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Verify {
    /// No TLS.
    #[default]
    Off,
    /// Encrypted, certificate not checked (`require`, `REQUIRED`).
    Encrypt,
    /// The chain up to a trusted CA, not the host name (`verify-ca`, `VERIFY_CA`).
    Chain,
    /// The chain and the URL's host name (`verify-full`, `VERIFY_IDENTITY`, `rediss://`).
    Full,
}

/// What a URL asks of TLS.
// Not read by ZooKeeper's store, which has no TLS yet.
#[cfg_attr(
    not(any(
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd"
    )),
    allow(dead_code)
)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tls {
    pub verify: Verify,
    /// The only CA trusted, when named.
    pub ca: Option<PathBuf>,
}

// Not read by ZooKeeper's store, which has no TLS yet.
#[cfg_attr(
    not(any(
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd"
    )),
    allow(dead_code)
)]
impl Tls {
    /// Takes the TLS parameters (`mode_key`, `ca_key`) out of `url`'s query; the other
    /// parameters are returned. A CA with no mode, or with the encrypt-only mode, checks
    /// the chain (as libpq and MySQL's client do).
    #[cfg(any(feature = "mysql", feature = "postgres"))]
    pub(crate) fn from_query(
        url: &url::Url,
        mode_key: &str,
        ca_key: &str,
        modes: &[(&str, Verify)],
        refused: &str,
    ) -> Result<(Self, Vec<(String, String)>), String> {
        let mut tls = Self::default();
        let mut mode = None;
        let mut rest = Vec::new();
        for (key, value) in url.query_pairs() {
            if key.eq_ignore_ascii_case(mode_key) {
                let found = modes
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(&value))
                    .map(|&(_, verify)| verify);
                mode = Some(found.ok_or_else(|| {
                    let names: Vec<&str> = modes.iter().map(|(name, _)| *name).collect();
                    // The value is not shown: a password pasted in the wrong place
                    // would be.
                    format!(
                        "the value of {mode_key} is not understood: give one of {} ({refused})",
                        names.join(", ")
                    )
                })?);
            } else if key.eq_ignore_ascii_case(ca_key) {
                tls.ca = Some(Self::ca_file(ca_key, &value)?);
            } else {
                rest.push((key.into_owned(), value.into_owned()));
            }
        }
        tls.verify = match (mode, &tls.ca) {
            (Some(Verify::Off), Some(_)) => {
                return Err(format!("{ca_key} is given but TLS is off ({mode_key})"))
            }
            (None | Some(Verify::Encrypt), Some(_)) => Verify::Chain,
            (mode, _) => mode.unwrap_or_default(),
        };
        Ok((tls, rest))
    }

    /// The CA file named by a URL: it must be a readable file.
    pub(crate) fn ca_file(key: &str, value: &str) -> Result<PathBuf, String> {
        let path = PathBuf::from(value);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(path),
            Ok(_) => Err(format!("{key}: {} is not a file", path.display())),
            Err(e) => Err(format!("{key}: cannot read {}: {e}", path.display())),
        }
    }

    /// An error if the URL asks for TLS and this build has none.
    pub(crate) fn check_built(&self, store: &str) -> Result<(), String> {
        if self.verify != Verify::Off && !cfg!(feature = "tls") {
            return Err(format!(
                "this URL asks for TLS, and this build of uidgen has no TLS for {store}: \
                 build it with the `tls` feature"
            ));
        }
        Ok(())
    }
}

/// The files a consensus store's TLS URL (`etcds://`, `zookeepers://`) names:
/// `?cacert=PATH` (the only CA trusted), `?cert=PATH&key=PATH` (a client certificate).
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
pub(crate) struct TlsFiles {
    /// The only CA trusted (else the well-known roots).
    pub(crate) ca: Option<PathBuf>,
    /// A client certificate (PEM).
    pub(crate) cert: Option<PathBuf>,
    /// Its private key (PEM).
    pub(crate) key: Option<PathBuf>,
}

#[cfg(any(feature = "etcd", feature = "zookeeper"))]
impl TlsFiles {
    /// Takes `key=value` of a URL's query when it is one of TLS's (`true`); refused when
    /// the URL's scheme asks for no TLS (`tls` is `None`), naming `secure` (the scheme
    /// that does).
    pub(crate) fn take(
        tls: &mut Option<TlsFiles>,
        key: &str,
        value: &str,
        secure: &str,
    ) -> Result<bool, String> {
        let slot = match (key, tls.as_mut()) {
            ("cacert", Some(tls)) => &mut tls.ca,
            ("cert", Some(tls)) => &mut tls.cert,
            ("key", Some(tls)) => &mut tls.key,
            ("cacert" | "cert" | "key", None) => {
                return Err(format!("{key} is for TLS: write {secure}://"))
            }
            _ => return Ok(false),
        };
        *slot = Some(Tls::ca_file(key, value)?);
        Ok(true)
    }

    /// An error when a client certificate lacks its key (or the key its certificate),
    /// or when TLS is asked of a build without it.
    pub(crate) fn check(tls: Option<&TlsFiles>, store: &str) -> Result<(), String> {
        let Some(tls) = tls else {
            return Ok(());
        };
        if tls.cert.is_some() != tls.key.is_some() {
            return Err("cert and key go together: name both files".into());
        }
        Tls {
            verify: Verify::Full,
            ca: None,
        }
        .check_built(store)
    }
}

/// The public face shared by the key-value engines' stores (Redis, etcd), over their
/// connection at `$conn` (a field path: `steps.conn`): a `Debug` that shows where and
/// under which prefix but never the password, the bound on each step, another key
/// prefix, where it is, and the driver's builder surface. One macro, so the four faces
/// cannot drift apart.
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
macro_rules! key_value_store_face {
    ($name:ident, $($conn:ident).+, $server:literal, $default_prefix:literal) => {
        impl std::fmt::Debug for $name {
            // By hand: the connection settings hold the password.
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("location", &self.$($conn).+.location())
                    .field("prefix", &self.$($conn).+.key_prefix())
                    .finish_non_exhaustive()
            }
        }

        impl $name {
            /// The bound on each network step: resolving the host name, connecting
            /// (with its handshake and authentication) and each request (default 5 s).
            #[must_use]
            pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
                self.$($conn).+ = self.$($conn).+.with_timeout(timeout);
                self
            }

            #[doc = concat!("The keys' prefix (default `", $default_prefix, "`): stores with different prefixes are independent.")]
            pub fn prefix(mut self, prefix: &str) -> Result<Self, $crate::store::StoreError> {
                self.$($conn).+ = self.$($conn).+.with_prefix(prefix)?;
                Ok(self)
            }

            #[doc = concat!("The ", $server, ", without its password.")]
            pub fn location(&self) -> &str {
                self.$($conn).+.location()
            }
        }

        impl $crate::store::driver::Builder for $name {
            fn bounded(self, timeout: std::time::Duration) -> Self {
                self.timeout(timeout)
            }
            fn named(self, name: &str) -> Result<Self, $crate::store::StoreError> {
                self.prefix(name)
            }
        }
    };
}
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
pub(crate) use key_value_store_face;

/// `host[:port]` (`[v6]:port` too) of one member of a cluster; `default_port` when it
/// names none.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) fn member_address(member: &str, default_port: u16) -> Result<(String, u16), String> {
    let member = member.trim();
    if member.is_empty() {
        return Err("a member's address is empty (hosts are separated by commas)".into());
    }
    let (host, port) = if let Some(rest) = member.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("{member:?}: an IPv6 address needs its closing ]"))?;
        let port = match after.strip_prefix(':') {
            Some(port) => Some(port),
            None if after.is_empty() => None,
            None => return Err(format!("{member:?}: expected :PORT after the ]")),
        };
        (format!("[{host}]"), port)
    } else {
        match member.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (member.to_owned(), None),
        }
    };
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':'));
    if !host_ok {
        return Err(format!(
            "{:?} is not a host name or address",
            host.chars().take(60).collect::<String>()
        ));
    }
    let port = match port {
        None => default_port,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("{member:?}: the port is not a number from 1 to 65535"))?,
    };
    Ok((host, port))
}

/// A number as etcd compares values and ZooKeeper lists names, byte by byte: 20
/// digits, zeros in front, so that the order of the text is the order of the numbers.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) fn padded(number: u64) -> String {
    format!("{number:020}")
}

/// The number of a [`padded`] value (or of any decimal).
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) fn number(value: &[u8]) -> Option<u64> {
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

#[cfg(all(test, any(feature = "etcd", feature = "zookeeper")))]
mod number_tests {
    use super::{number, padded};

    #[test]
    fn padded_numbers_sort_as_numbers() {
        let mut texts: Vec<String> = [10, 9, 0, u64::MAX, 100].map(padded).to_vec();
        texts.sort();
        let numbers: Vec<u64> = texts
            .iter()
            .map(|t| number(t.as_bytes()).unwrap())
            .collect();
        assert_eq!(numbers, [0, 9, 10, 100, u64::MAX]);
    }
}

#[cfg(test)]
mod redact_tests {
    use super::redact_url;

    #[test]
    fn every_shape_of_password_is_hidden() {
        for (raw, shown) in [
            (
                "mysql://u:SECRETPW@h:3306/db",
                Some("mysql://u:***@h:3306/db"),
            ),
            ("mysql://u:SEC@RETPW@h/db", Some("mysql://u:***@h/db")),
            ("mysql://u:SEC%40RETPW@h/db", Some("mysql://u:***@h/db")),
            (
                "mysql://u@h/db?password=SECRETPW&x=1",
                Some("mysql://u@h/db?password=***&x=1"),
            ),
            (
                "mysql://u@h/db?PWD=SECRETPW",
                Some("mysql://u@h/db?PWD=***"),
            ),
            ("mysql://u@h/db#SECRETPW", Some("mysql://u@h/db")),
            ("mysql://u:SEC@RETPW@h:99999/db", None),
            ("mysql:u:SECRETPW@127.0.0.1/db", None),
            ("mysql:/u:SECRETPW@127.0.0.1/db", None),
            ("u:SECRETPW@127.0.0.1/db", None),
        ] {
            let redacted = redact_url(raw);
            assert!(!redacted.contains("SEC"), "{raw} -> {redacted}");
            match shown {
                Some(shown) => assert_eq!(redacted, format!("{shown:?}"), "{raw}"),
                None => assert!(redacted.contains("not shown"), "{raw} -> {redacted}"),
            }
        }
    }

    #[test]
    fn urls_that_cannot_hold_a_password_are_shown_even_unparsed() {
        assert_eq!(redact_url("not a url"), "\"not a url\"");
        assert!(redact_url(&"x".repeat(10_000)).len() < 200);
    }
}
