//! Store URLs: one parser for every form a store is named by ([`StoreUrl`]), and URLs
//! shown to people, parsed, with every password replaced. Opening the stores of the
//! place a URL names is `open.rs`'s.

use super::{StoreError, StoreKind, SCHEMES};
use std::path::{Path, PathBuf};

/// Every form [`StoreUrl::parse`] accepts, for messages.
pub const ACCEPTED_STORE_URLS: &str = "a SQLite file path (a file in an existing folder, \
     without ':' or '@'), sqlite:PATH, sqlite://PATH, mysql:// or mariadb://, postgres:// or \
     postgresql://, redis:// or rediss://, etcd:// or etcds://, zookeeper:// or zookeepers://";

/// Where a store is: parsed once from any accepted form, and opened as the lease store
/// or the segment store of that place. The CLI, the server and the tests open stores
/// only this way (the idea of sqlx's `AnyDriver`: the scheme picks the engine, inside the
/// library).
///
/// | form | store |
/// |---|---|
/// | `PATH` (a file in an existing folder; no `:` or `@`), `sqlite:PATH`, `sqlite://PATH` | the embedded SQLite file |
/// | `mysql://user[:password]@host[:port]/db`, `mariadb://…`; `?ssl-mode=REQUIRED\|VERIFY_IDENTITY&ssl-ca=PATH` | MySQL / MariaDB |
/// | `postgres://user[:password]@host[:port]/db`, `postgresql://…`; `?sslmode=require\|verify-ca\|verify-full&sslrootcert=PATH` | PostgreSQL |
/// | `redis://[[user]:password@]host[:port][/db]`, `rediss://…` (TLS); `?cacert=PATH` | Redis |
/// | `etcd://[user[:password]@]host[:port][,host[:port]…][/PREFIX]`, `etcds://…` (TLS); `?cacert=PATH` | etcd (every member, comma-separated) |
/// | `zookeeper://[user:password@]host[:port][,host[:port]…][/PATH]` (a digest user), `zookeepers://…` (TLS); `?cacert=PATH`, `?leaf=NAME` | ZooKeeper (every member, comma-separated) |
///
/// Anything else is refused, never taken for a file name: a scheme it does not know, a
/// known scheme without its `//`, or a path with `:` or `@` (a URL with a typo, which
/// as a file would give every machine with the same typo the same worker IDs). The
/// error names the accepted forms and never shows the password; no file is created by a
/// refused URL. `Debug` and `Display` show it redacted.
///
/// ```
/// # #[cfg(all(feature = "sqlite", feature = "mysql"))] {
/// use uidgen::{StoreKind, StoreUrl};
///
/// let url: StoreUrl = "mysql://app:s3cret@db.internal:3306/ids".parse()?;
/// assert_eq!(url.kind(), StoreKind::MySql);
/// assert!(!url.to_string().contains("s3cret"));
///
/// // One colon short: refused, not a file called "mysql:app:s3cret@db.internal".
/// let typo = "mysql:app:s3cret@db.internal/ids".parse::<StoreUrl>().unwrap_err();
/// assert!(typo.to_string().contains("mysql://"));
/// assert!(!typo.to_string().contains("s3cret"));
/// # }
/// # Ok::<(), uidgen::StoreError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl {
    kind: StoreKind,
    /// The file of the embedded store, or the URL as given (trimmed).
    pub(super) target: Target,
    /// The bound on each network step (the wait for the file's lock, for SQLite), if not
    /// the store's default.
    pub(super) timeout: Option<std::time::Duration>,
    /// Creating a tag below what it handed out before is allowed.
    pub(super) force_create: bool,
}

#[derive(Clone, PartialEq, Eq)]
pub(super) enum Target {
    File(PathBuf),
    Url(String),
}

impl StoreUrl {
    /// Parses `raw`; see the table above. A network URL is checked the way its engine
    /// will read it (host, user, database, parameters), without connecting.
    pub fn parse(raw: &str) -> Result<Self, StoreError> {
        let text = raw.trim();
        let refuse = |reason: String| StoreError::InvalidUrl {
            store: "store",
            url: shown(text),
            reason,
            expected: ACCEPTED_STORE_URLS,
        };
        if text.is_empty() {
            return Err(refuse("it is empty".into()));
        }
        // SQLite's own non-file names: refused for what they are, before the colon rule.
        if text == ":memory:" || text.to_ascii_lowercase().starts_with("file:") {
            return Self::file(Path::new(text)).map_err(refuse);
        }
        let scheme_end = text.find(':').filter(|&end| {
            end > 1
                && text[..end]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
                && text.as_bytes()[0].is_ascii_alphabetic()
        });
        let Some(end) = scheme_end else {
            return Self::plain_path(text).map_err(refuse);
        };
        let scheme = text[..end].to_ascii_lowercase();
        let rest = &text[end + 1..];
        let Some(&(_, kind)) = SCHEMES.iter().find(|(name, _)| *name == scheme) else {
            return Err(refuse(format!(
                "unknown scheme {:?}",
                scheme.chars().take(40).collect::<String>()
            )));
        };
        if kind == StoreKind::Sqlite {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            return Self::file(Path::new(path)).map_err(refuse);
        }
        if !rest.starts_with("//") {
            return Err(refuse(format!(
                "{scheme}: needs two slashes: {scheme}://user@host/..."
            )));
        }
        let url = Self {
            kind,
            target: Target::Url(text.to_owned()),
            timeout: None,
            force_create: false,
        };
        url.check_network()?;
        Ok(url)
    }

    /// The embedded store in the SQLite file at `path`, created with its folder when
    /// first used (the user's data folder, say); `:memory:` and `file:` URIs are
    /// refused, as each process would have a store of its own.
    #[cfg(feature = "sqlite")]
    pub fn sqlite(path: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let path = path.into();
        super::sqlite::check_path(&path)?;
        Ok(Self {
            kind: StoreKind::Sqlite,
            target: Target::File(path),
            timeout: None,
            force_create: false,
        })
    }

    /// The embedded store at its default place: the SQLite file named by
    /// `$UIDGEN_WORKER_DB`, or else `uidgen/workers.sqlite3` under the user's data
    /// directory (`~/.local/share` on Linux), created with its folder when first used.
    /// The `uidgen` command line keeps its leases there too, so the library and the CLI
    /// of one machine share its worker IDs. An error says to set `UIDGEN_WORKER_DB` when
    /// no data directory is known.
    #[cfg(feature = "sqlite")]
    pub fn embedded() -> Result<Self, StoreError> {
        Self::sqlite(super::sqlite::at_default_path()?)
    }

    /// A plain path: a file in an existing folder, and no character a URL has.
    fn plain_path(text: &str) -> Result<Self, String> {
        if let Some(c) = text.chars().find(|c| matches!(c, ':' | '@')) {
            return Err(format!(
                "it is not a URL a store knows, and a file path has no {c:?} (a URL with a \
                 typo would become a local file)"
            ));
        }
        Self::file(Path::new(text))
    }

    fn file(path: &Path) -> Result<Self, String> {
        let text = path.to_string_lossy();
        if text.trim().is_empty() {
            return Err("the path is empty".into());
        }
        if text == ":memory:" || text.starts_with("file:") {
            return Err(
                "in-memory databases and file: URIs are refused: each process would \
                        have its own store and hand out the same worker IDs"
                    .into(),
            );
        }
        if path.is_dir() || text.ends_with('/') {
            return Err("it is a folder; name a file in it".into());
        }
        let folder = match path.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder,
            _ => Path::new("."),
        };
        if !folder.is_dir() {
            return Err(format!(
                "the folder {} does not exist (create it first)",
                folder.display()
            ));
        }
        Ok(Self {
            kind: StoreKind::Sqlite,
            target: Target::File(path.to_owned()),
            timeout: None,
            force_create: false,
        })
    }

    /// Checks a network URL the way its engine reads it, and that this build has it.
    fn check_network(&self) -> Result<(), StoreError> {
        let Target::Url(url) = &self.target else {
            return Ok(());
        };
        match super::DRIVERS
            .iter()
            .find(|driver| driver.kind == self.kind)
        {
            Some(driver) => (driver.check)(url),
            None => Err(not_built(self.kind, url)),
        }
    }

    setters! {
        /// The bound on each network step of the stores opened from now on (resolving the
        /// host name, connecting with its handshake, each statement; default 5 s), or for
        /// SQLite the wait for another process holding the file (default 10 s).
        #[must_use]
        timeout(timeout: std::time::Duration) => self.timeout = Some(timeout);

        /// Lets the segment stores opened from now on create a tag again below what it
        /// handed out before (refused by default, naming the evidence): only when you
        /// know those IDs are gone (`uidgen segment create --force`).
        #[must_use]
        force_create(force: bool) => self.force_create = force;
    }

    /// Which engine it names.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// The SQLite file, for the embedded store.
    pub fn path(&self) -> Option<&Path> {
        match &self.target {
            Target::File(path) => Some(path),
            Target::Url(_) => None,
        }
    }
}

impl Target {
    pub(super) fn shown(&self) -> String {
        match self {
            Target::File(path) => path.display().to_string(),
            Target::Url(url) => url.clone(),
        }
    }
}

/// The error for an engine this build does not have.
pub(super) fn not_built(kind: StoreKind, url: &str) -> StoreError {
    StoreError::InvalidUrl {
        store: kind.name(),
        url: shown(url),
        reason: format!(
            "this build of uidgen has no {} store: build it with the `{}` feature",
            kind.name(),
            kind.feature().unwrap_or("?")
        ),
        expected: ACCEPTED_STORE_URLS,
    }
}

/// `text` as an error may show it: redacted where it could hold a password.
fn shown(text: &str) -> String {
    #[cfg(any(
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd",
        feature = "zookeeper"
    ))]
    return super::net::redact_url(text);
    #[cfg(not(any(
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd",
        feature = "zookeeper"
    )))]
    if text.contains('@') || super::is_credential_key(text) || text.contains(':') {
        "(not shown: it could hold a password)".to_owned()
    } else {
        crate::error::Shown(text).to_string()
    }
}

impl std::str::FromStr for StoreUrl {
    type Err = StoreError;
    fn from_str(raw: &str) -> Result<Self, StoreError> {
        Self::parse(raw)
    }
}

impl std::fmt::Display for StoreUrl {
    /// The URL with its password hidden; a file as its path.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.target {
            Target::File(path) => write!(f, "{}", path.display()),
            Target::Url(url) => {
                let shown = shown(url);
                f.write_str(shown.trim_matches('"'))
            }
        }
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreUrl")
            .field("kind", &self.kind)
            .field("url", &self.to_string())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(raw: &str) -> String {
        let err = StoreUrl::parse(raw).expect_err(raw);
        let text = format!("{err} {err:?}");
        assert!(!text.contains("SECRETPW"), "{raw}: {text}");
        assert!(
            text.contains("mysql://"),
            "{raw}: names the accepted forms: {text}"
        );
        text
    }

    #[test]
    fn typos_are_refused_never_taken_for_files() {
        let dir = std::env::temp_dir();
        let cwd = std::env::current_dir().unwrap();
        for raw in [
            "mysql:u:SECRETPW@127.0.0.1/db",
            "mysql:/u:SECRETPW@127.0.0.1/db",
            "u:SECRETPW@127.0.0.1/db",
            "mysq://u:SECRETPW@127.0.0.1/db",
            "postgres:u:SECRETPW@h/db",
            "redis:SECRETPW@h",
            "http://u:SECRETPW@h/db",
            "",
            "   ",
        ] {
            refused(raw);
        }
        assert!(refused("mysq://u:SECRETPW@h/db").contains("unknown scheme \"mysq\""));
        assert!(refused("mysql:/u:SECRETPW@h/db").contains("two slashes"));
        assert!(refused("u:SECRETPW@h/db").contains("no ':'"));
        // Folders, and files in folders that do not exist.
        refused(&dir.display().to_string());
        refused("/no/such/folder/uidgen.sqlite3");
        refused("sqlite:/no/such/folder/uidgen.sqlite3");
        assert!(refused(":memory:").contains("in-memory"));
        assert!(refused("sqlite::memory:").contains("in-memory"));
        assert!(refused("file:ids.db?mode=memory").contains("in-memory"));
        // Nothing was created by any of them.
        assert!(!cwd.join("mysql:u:SECRETPW@127.0.0.1").exists());
        assert!(!cwd.join("u:SECRETPW@127.0.0.1").exists());
    }

    #[test]
    fn every_accepted_form_opens_its_engine() {
        let dir = std::env::temp_dir();
        let file = dir.join("uidgen-url-test.sqlite3");
        let text = file.display().to_string();
        for raw in [
            text.clone(),
            format!("sqlite:{text}"),
            format!("sqlite://{text}"),
        ] {
            let url = StoreUrl::parse(&raw).unwrap();
            assert_eq!(url.kind(), StoreKind::Sqlite, "{raw}");
            assert_eq!(url.path(), Some(file.as_path()), "{raw}");
        }
        let relative = StoreUrl::parse("ids.sqlite3").unwrap();
        assert_eq!(relative.path(), Some(Path::new("ids.sqlite3")));
        #[cfg(feature = "mysql")]
        for raw in ["mysql://u:SECRETPW@h/db", "MariaDB://u:SECRETPW@h:3307/db"] {
            let url = StoreUrl::parse(raw).unwrap();
            assert_eq!(url.kind(), StoreKind::MySql);
            assert!(!format!("{url} {url:?}").contains("SECRETPW"));
        }
        #[cfg(feature = "postgres")]
        for raw in ["postgres://u:SECRETPW@h/db", "postgresql://u@h:5433/db"] {
            assert_eq!(StoreUrl::parse(raw).unwrap().kind(), StoreKind::Postgres);
        }
        #[cfg(feature = "redis")]
        for raw in ["redis://:SECRETPW@h", "redis://h:6380/2"] {
            assert_eq!(StoreUrl::parse(raw).unwrap().kind(), StoreKind::Redis);
        }
    }

    /// The engine list is the only place schemes are declared: each one must be in the
    /// forms an error names, and a URL with it must be read as that engine's (or, in a
    /// build without the engine, refused naming its feature).
    #[test]
    fn every_declared_scheme_is_documented_and_names_its_engine() {
        for &(scheme, kind) in SCHEMES {
            assert!(
                ACCEPTED_STORE_URLS.contains(&format!("{scheme}:")),
                "{scheme} is missing from ACCEPTED_STORE_URLS"
            );
            let raw = if kind == StoreKind::Sqlite {
                let file = std::env::temp_dir().join("uidgen-scheme.db");
                format!("{scheme}:{}", file.display())
            } else {
                format!("{scheme}://u@h/x")
            };
            let built = super::super::DRIVERS
                .iter()
                .any(|driver| driver.kind == kind);
            match StoreUrl::parse(&raw) {
                Ok(url) => assert_eq!(url.kind(), kind, "{raw}"),
                // Read by the engine's own checks (Redis wants a database number).
                Err(err) if built => assert!(err.to_string().contains(kind.name()), "{raw}: {err}"),
                Err(err) => {
                    let feature = kind.feature().unwrap();
                    assert!(
                        err.to_string().contains(&format!("`{feature}` feature")),
                        "{raw}: {err}"
                    );
                }
            }
        }
    }

    #[cfg(all(feature = "mysql", feature = "postgres", feature = "redis"))]
    #[test]
    fn tls_parameters_are_read_and_checked() {
        let ca = std::env::temp_dir().join("uidgen-url-test-ca.pem");
        std::fs::write(&ca, "not a certificate, only a file").unwrap();
        let ca = ca.display().to_string();
        for raw in [
            format!("mysql://u@h/db?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
            format!("mysql://u@h/db?ssl-mode=verify_identity&ssl-ca={ca}"),
            "mysql://u@h/db?ssl-mode=required".to_owned(),
            format!("postgres://u@h/db?sslmode=verify-full&sslrootcert={ca}"),
            "postgres://u@h/db?sslmode=disable".to_owned(),
            format!("rediss://h:6380/?cacert={ca}"),
        ] {
            let parsed = StoreUrl::parse(&raw);
            if cfg!(feature = "tls") || raw.contains("disable") {
                parsed.unwrap_or_else(|e| panic!("{raw}: {e}"));
            } else {
                assert!(
                    parsed.unwrap_err().to_string().contains("`tls` feature"),
                    "{raw}"
                );
            }
        }
        for (raw, says) in [
            ("mysql://u@h/db?ssl-mode=PREFERRED", "PREFERRED falls back"),
            ("postgres://u@h/db?sslmode=prefer", "prefer fall back"),
            (
                "mysql://u@h/db?ssl-ca=/no/such/ca.pem",
                "cannot read /no/such/ca.pem",
            ),
            (
                "postgres://u@h/db?sslrootcert=/no/such/ca.pem",
                "cannot read",
            ),
            ("rediss://h/?cacert=/no/such/ca.pem", "cannot read"),
        ] {
            let err = StoreUrl::parse(raw).unwrap_err().to_string();
            assert!(err.contains(says), "{raw}: {err}");
        }
    }
}
