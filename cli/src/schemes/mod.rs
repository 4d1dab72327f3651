//! `uidgen bench --scheme NAME`: every ID scheme the distributed-ID literature compares,
//! each as the articles describe it and on a real server where it needs one, driven by
//! one harness from N threads (each with a connection of its own), every ID checked
//! unique, and a restart of its store (or, in-process, of the generator) measured.
//!
//! One idea a file: [`result`] is what a run measured, `harness` drives any scheme,
//! [`chart`] draws results, and each other file holds the schemes of one kind of store.

pub mod chart;
mod harness;
mod http;
mod local;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
pub mod report;
pub mod result;
#[cfg(feature = "zookeeper")]
mod zookeeper;

pub(crate) use harness::{measure, Plan};

/// An error of a scheme or its store, in words.
pub(crate) type Error = String;

/// A scheme opened on its stores: hands each thread a client of its own.
pub(crate) trait Scheme: Send + Sync {
    /// A client for one thread: a connection of its own where the scheme has a server,
    /// or a handle on the shared in-process generator.
    fn client(&self) -> Result<Box<dyn Client>, Error>;
}

/// One thread's client.
pub(crate) trait Client: Send {
    /// Takes the next call's IDs (one, or a batch), each pushed onto `out` as a key that
    /// sorts as the ID does (a number as itself, a text ID by a decode that keeps its
    /// order).
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), Error>;
}

/// What a scheme needs running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    Nothing,
    /// uidgen's own store: the embedded one unless --store names another.
    UidgenStore,
    Mysql,
    Postgres,
    Redis,
    ZooKeeper,
    /// A running `uidgen serve`.
    Service,
}

impl Needs {
    pub(crate) fn words(self) -> &'static str {
        match self {
            Needs::Nothing => "nothing (in-process)",
            Needs::UidgenStore => "uidgen's store (embedded SQLite here)",
            Needs::Mysql => "MySQL/MariaDB",
            Needs::Postgres => "PostgreSQL",
            Needs::Redis => "Redis",
            Needs::ZooKeeper => "ZooKeeper",
            Needs::Service => "uidgen serve (and its store)",
        }
    }

    /// The feature of this build a scheme of this kind needs, where it is missing.
    fn missing_feature(self) -> Option<&'static str> {
        match self {
            Needs::Mysql if !cfg!(feature = "mysql") => Some("mysql"),
            Needs::Postgres if !cfg!(feature = "postgres") => Some("postgres"),
            Needs::Redis if !cfg!(feature = "redis") => Some("redis"),
            Needs::ZooKeeper if !cfg!(feature = "zookeeper") => Some("zookeeper"),
            _ => None,
        }
    }
}

/// Where a scheme runs: its stores' URLs (none for in-process schemes), and the tag of
/// the service's routes.
pub(crate) struct Place<'a> {
    pub(crate) stores: &'a [String],
    pub(crate) tag: &'a str,
}

/// Opens a scheme on its stores.
pub(crate) type Opener = fn(&Place<'_>) -> Result<Box<dyn Scheme>, Error>;

/// One scheme the harness knows.
pub(crate) struct Entry {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) needs: Needs,
    /// Stores it takes: 1, or 2 for the two-server schemes (0 for in-process).
    pub(crate) stores: usize,
    pub(crate) bytes_per_id: usize,
    pub(crate) ids_per_call: usize,
    /// Opens it; `None` for uidgen's own schemes, which the bench command opens on its
    /// worker options.
    pub(crate) open: Option<Opener>,
}

/// The IDs a batch call of the batching schemes takes.
pub(crate) const BATCH: usize = 1000;

/// Every scheme, in the order the report lists them.
pub(crate) fn all() -> Vec<Entry> {
    let mut all = local::entries();
    all.extend(uidgen_entries());
    all.extend(store_entries());
    all.extend(http::entries());
    all
}

fn uidgen_entries() -> Vec<Entry> {
    let entry = |name, title| Entry {
        name,
        title,
        needs: Needs::UidgenStore,
        stores: 0,
        bytes_per_id: 8,
        ids_per_call: 1,
        open: None,
    };
    vec![
        entry(
            "uidgen-ring",
            "uidgen's cached ring (Baidu UidGenerator's), a leased worker ID",
        ),
        entry(
            "uidgen-segment",
            "uidgen's segments (Meituan Leaf's), two buffers, on --store",
        ),
    ]
}

/// The schemes on a database, Redis or ZooKeeper, whether or not this build can run them
/// (one that cannot says which feature it needs).
fn store_entries() -> Vec<Entry> {
    let entry = |name, title, needs, stores, ids_per_call| Entry {
        name,
        title,
        needs,
        stores,
        bytes_per_id: 8,
        ids_per_call,
        open: None,
    };
    #[allow(unused_mut)] // filled only by the store features of this build
    let mut all = vec![
        entry(
            "mysql-auto-increment",
            "MySQL auto-increment: an INSERT per ID, LAST_INSERT_ID()",
            Needs::Mysql,
            1,
            1,
        ),
        entry(
            "mysql-auto-increment-2",
            "auto-increment on 2 servers (auto_increment_increment 2, offsets 1 and 2)",
            Needs::Mysql,
            2,
            1,
        ),
        entry(
            "flickr-ticket",
            "Flickr's ticket server: REPLACE INTO Tickets64 (MyISAM), LAST_INSERT_ID()",
            Needs::Mysql,
            1,
            1,
        ),
        entry(
            "flickr-ticket-2",
            "Flickr's two ticket servers (odd and even), used in turn",
            Needs::Mysql,
            2,
            1,
        ),
        entry(
            "redis-incr",
            "Redis INCR, one ID a call",
            Needs::Redis,
            1,
            1,
        ),
        entry(
            "redis-incrby",
            "Redis INCRBY 1000: a batch of 1000 IDs a call",
            Needs::Redis,
            1,
            BATCH,
        ),
        entry(
            "redis-lua-snowflake",
            "a snowflake made in a Redis Lua script (TIME, a per-millisecond INCR)",
            Needs::Redis,
            1,
            1,
        ),
        entry(
            "instagram",
            "Instagram's PL/pgSQL function: time, shard and a sequence",
            Needs::Postgres,
            1,
            1,
        ),
        entry(
            "zookeeper-sequential",
            "a ZooKeeper sequential node per ID",
            Needs::ZooKeeper,
            1,
            1,
        ),
    ];
    #[cfg(feature = "mysql")]
    mysql::fill(&mut all);
    #[cfg(feature = "postgres")]
    postgres::fill(&mut all);
    #[cfg(feature = "redis")]
    redis::fill(&mut all);
    #[cfg(feature = "zookeeper")]
    zookeeper::fill(&mut all);
    all
}

/// Every scheme's name, in the order the report lists them.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|e| e.name).collect()
}

/// The scheme named `name`, or an error listing them.
pub(crate) fn find(name: &str) -> Result<Entry, Error> {
    let all = all();
    let names: Vec<&str> = all.iter().map(|e| e.name).collect();
    let list = names.join(", ");
    let Some(entry) = all.into_iter().find(|e| e.name == name) else {
        return Err(format!("no scheme {name:?}: the schemes are {list}"));
    };
    if entry.open.is_none() && !matches!(entry.needs, Needs::UidgenStore) {
        let feature = entry.needs.missing_feature().unwrap_or("?");
        return Err(format!(
            "--scheme {name} needs {}, and this uidgen was built without the {feature} \
             feature (cargo build --features {feature})",
            entry.needs.words()
        ));
    }
    Ok(entry)
}

/// A store URL without its password, token or other credential, for the report; a text
/// that is not a URL but may hold one (PostgreSQL's `password=…` form) is not shown.
pub(crate) fn describe(url: &str) -> String {
    let secret = uidgen::is_credential_key;
    let Ok(mut parsed) = url::Url::parse(url) else {
        return if url.contains('=') || url.contains('@') {
            "(not shown: not a URL, and it may hold a password)".to_owned()
        } else {
            url.to_owned()
        };
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    if parsed.query_pairs().any(|(k, _)| secret(&k)) {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if secret(&k) { "***".into() } else { v };
                (k.into_owned(), v.into_owned())
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// Sets the `open` of the entry named `name`.
#[cfg(any(
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "zookeeper"
))]
fn set_open(all: &mut [Entry], name: &str, open: Opener) {
    if let Some(entry) = all.iter_mut().find(|e| e.name == name) {
        entry.open = Some(open);
    }
}

/// The longest one call to a store may take: a store that stops answering fails the call
/// instead of hanging the run.
#[cfg(any(
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "zookeeper"
))]
pub(crate) const CALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `call` on `rt`, failing it past [`CALL_LIMIT`].
#[cfg(any(feature = "mysql", feature = "postgres", feature = "zookeeper"))]
fn within_limit<T>(
    rt: &tokio::runtime::Runtime,
    call: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    rt.block_on(async { tokio::time::timeout(CALL_LIMIT, call).await })
        .unwrap_or_else(|_| Err(format!("no answer within {} s", CALL_LIMIT.as_secs())))
}

/// A current-thread tokio runtime for a thread that drives an async client call by call.
#[cfg(any(feature = "mysql", feature = "postgres", feature = "zookeeper"))]
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_description_hides_passwords_and_tokens() {
        let d = super::describe("mysql://root:SECRETPW@db:3306/test");
        assert_eq!(d, "mysql://root:***@db:3306/test");
        let d = super::describe("http://127.0.0.1:8080/?token=SECRETPW&x=1");
        assert_eq!(d, "http://127.0.0.1:8080/?token=***&x=1");
        assert_eq!(super::describe("/a/file.sqlite3"), "/a/file.sqlite3");
        let d = super::describe("postgres://u@h/db?password=SECRETPW&sslmode=require");
        assert_eq!(d, "postgres://u@h/db?password=***&sslmode=require");
        let d = super::describe("host=h user=u password=SECRETPW");
        assert!(!d.contains("SECRETPW"), "{d}");
    }
}
