//! One fixture for every store, opened only the way users open them, through
//! `uidgen::StoreUrl`: a SQLite file of the test's own, and tables or key prefixes of the
//! test's own on the MariaDB, PostgreSQL and Redis that scripts/test makes reachable. A
//! store added to uidgen is added to `ALL_KINDS` here, and every conformance test runs on it.
#![allow(dead_code)]

use super::servers::{
    etcd_url, mysql_url, postgres_url, random_suffix, redis_url, zookeeper_store_url,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uidgen::{
    Acquired, LeaseRecord, LeaseRequest, LeaseStore, SegmentStore, StoreError, StoreKind, StoreUrl,
    TagRecord,
};

/// Every engine, in the order tests run them.
const ALL_KINDS: &[StoreKind] = &[
    StoreKind::Sqlite,
    StoreKind::MySql,
    StoreKind::Postgres,
    StoreKind::Redis,
    #[cfg(feature = "etcd")]
    StoreKind::Etcd,
    #[cfg(feature = "zookeeper")]
    StoreKind::ZooKeeper,
];

/// The engines the conformance tests run on: all of them, or only those
/// `UIDGEN_TEST_STORES` names (`ZooKeeper,etcd`: a way to try one engine while working
/// on it; CI never sets it).
pub fn kinds() -> Vec<StoreKind> {
    let only = std::env::var("UIDGEN_TEST_STORES").unwrap_or_default();
    ALL_KINDS
        .iter()
        .copied()
        .filter(|kind| {
            only.is_empty()
                || only
                    .split(',')
                    .any(|name| name.trim().eq_ignore_ascii_case(kind.name()))
        })
        .collect()
}

/// A lease store behind a trait object, clonable, so one test body serves every kind.
#[derive(Debug, Clone)]
pub struct Leases(pub Arc<dyn LeaseStore>);

impl LeaseStore for Leases {
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn kind(&self) -> StoreKind {
        self.0.kind()
    }
    fn acquire(&self, request: &LeaseRequest<'_>) -> Result<Acquired, StoreError> {
        self.0.acquire(request)
    }
    fn renew(&self, id: u64, holder: &str, ttl: Duration, mark: u64) -> Result<bool, StoreError> {
        self.0.renew(id, holder, ttl, mark)
    }
    fn release(&self, id: u64, holder: &str, mark: u64) -> Result<bool, StoreError> {
        self.0.release(id, holder, mark)
    }
    fn leases(&self) -> Result<Vec<LeaseRecord>, StoreError> {
        self.0.leases()
    }
}

/// A segment store behind a trait object, clonable.
#[derive(Debug, Clone)]
pub struct Segments(pub Arc<dyn SegmentStore>);

impl SegmentStore for Segments {
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn kind(&self) -> StoreKind {
        self.0.kind()
    }
    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        self.0.allocate(tag, step)
    }
    fn create(&self, tag: &str, first: u64, step: u64, text: &str) -> Result<bool, StoreError> {
        self.0.create(tag, first, step, text)
    }
    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        self.0.give_back(tag, from, to)
    }
    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        self.0.tag(tag)
    }
    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        self.0.tags()
    }
}

/// One store of one kind: its URL, and the names (tables, key prefixes) no other test
/// uses; dropped with it.
pub struct Fixture {
    pub kind: StoreKind,
    /// The URL as a user would write it (a file path for SQLite).
    pub url: String,
    suffix: String,
    _dir: Option<Arc<tempfile::TempDir>>,
    /// Made here, not read from a spec: its tables are dropped with it.
    owner: bool,
}

impl Fixture {
    pub fn new(kind: StoreKind) -> Self {
        let (url, dir) = match kind {
            StoreKind::Sqlite => {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let path = dir.path().join("store.sqlite3").display().to_string();
                (path, Some(Arc::new(dir)))
            }
            StoreKind::MySql => (mysql_url(), None),
            StoreKind::Postgres => (postgres_url(), None),
            StoreKind::Redis => (redis_url(), None),
            // A root prefix of its own: the store's records (its identity, word of data
            // lost) are the fixture's alone.
            StoreKind::Etcd => {
                let url = etcd_url();
                let (hosts, root) = url.rsplit_once('/').expect("etcd://HOSTS/PREFIX");
                (format!("{hosts}/{root}-{}", random_suffix()), None)
            }
            // A path of its own, for the same reason.
            StoreKind::ZooKeeper => {
                let url = zookeeper_store_url();
                let (hosts, root) = url.rsplit_once('/').expect("zookeeper://HOSTS/PATH");
                (format!("{hosts}/{root}-{}", random_suffix()), None)
            }
            other => panic!("no test server for {other:?}"),
        };
        Self {
            kind,
            url,
            suffix: random_suffix(),
            _dir: dir,
            owner: true,
        }
    }

    /// How long to wait for an unrenewed lease to have expired on this store, `wait`
    /// being enough where TTLs are kept to the millisecond. etcd keeps whole seconds, at
    /// least its minimum TTL (2 s at the default election timeout), and revokes expired
    /// leases in a loop every 500 ms: there, at least 3 s (for TTLs up to 2 s).
    /// ZooKeeper's lease sessions last at least 2 s, and its leader expires sessions on
    /// its ticks (half a second on the test ensemble): there, a second more. The results
    /// expected are the same on every store.
    pub fn outlived(&self, wait: Duration) -> Duration {
        match self.kind {
            StoreKind::Etcd => wait.max(Duration::from_secs(3)),
            StoreKind::ZooKeeper => wait.max(Duration::from_secs(2)) + Duration::from_secs(1),
            _ => wait,
        }
    }

    /// What a child process needs to open the same stores: `Fixture::from_spec`.
    pub fn spec(&self) -> String {
        format!("{:?}|{}|{}", self.kind, self.url, self.suffix)
    }

    /// The fixture of `spec`, in a child process (it drops nothing: the parent does).
    pub fn from_spec(spec: &str) -> Self {
        let mut parts = spec.splitn(3, '|');
        let (kind, url, suffix) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        let kind = ALL_KINDS
            .iter()
            .copied()
            .find(|k| format!("{k:?}") == kind)
            .unwrap_or_else(|| panic!("no store kind {kind}"));
        Self {
            kind,
            url: url.to_owned(),
            suffix: suffix.to_owned(),
            _dir: None,
            owner: false,
        }
    }

    fn parsed(&self, url: &str) -> StoreUrl {
        StoreUrl::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    /// The lease table (key prefix) of this fixture.
    pub fn lease_name(&self) -> String {
        match self.kind {
            StoreKind::Redis => format!("uidgen:test:{}:lease:", self.suffix),
            StoreKind::Etcd => "lease/".to_owned(),
            StoreKind::ZooKeeper => "lease".to_owned(),
            _ => format!("wl_test_{}", self.suffix),
        }
    }

    /// The segment table (key prefix) of this fixture.
    pub fn segment_name(&self) -> String {
        match self.kind {
            StoreKind::Redis => format!("uidgen:test:{}:segment:", self.suffix),
            StoreKind::Etcd => "segment/".to_owned(),
            StoreKind::ZooKeeper => "segment".to_owned(),
            _ => format!("seg_test_{}", self.suffix),
        }
    }

    /// A new lease store object: like another process's.
    pub fn lease_store(&self) -> Leases {
        self.lease_store_at(&self.url, None)
    }

    /// A new segment store object.
    pub fn segment_store(&self) -> Segments {
        self.segment_store_at(&self.url, None)
    }

    /// The lease store reached at `url` (a relay in front of the server, say).
    pub fn lease_store_at(&self, url: &str, timeout: Option<Duration>) -> Leases {
        let mut parsed = self.parsed(url);
        if let Some(timeout) = timeout {
            parsed = parsed.timeout(timeout);
        }
        Leases(Arc::from(
            parsed
                .lease_store_in(&self.lease_name())
                .unwrap_or_else(|e| panic!("{e}")),
        ))
    }

    /// The segment store reached at `url`.
    pub fn segment_store_at(&self, url: &str, timeout: Option<Duration>) -> Segments {
        let mut parsed = self.parsed(url);
        if let Some(timeout) = timeout {
            parsed = parsed.timeout(timeout);
        }
        Segments(Arc::from(
            parsed
                .segment_store_in(&self.segment_name())
                .unwrap_or_else(|e| panic!("{e}")),
        ))
    }

    /// The URL with its host and port replaced by `addr` (a relay); `None` for SQLite.
    pub fn url_via(&self, addr: std::net::SocketAddr) -> Option<String> {
        if self.kind == StoreKind::Sqlite {
            return None;
        }
        let (scheme, rest) = self.url.split_once("://").expect("a URL");
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let user = rest[..end]
            .rsplit_once('@')
            .map_or(String::new(), |(user, _)| format!("{user}@"));
        // Every member of an etcd URL becomes the one address.
        Some(format!("{scheme}://{user}{addr}{}", &rest[end..]))
    }

    /// The server's own address, for a relay in front of it; `None` for SQLite.
    pub fn server_addr(&self) -> Option<std::net::SocketAddr> {
        use std::net::ToSocketAddrs;
        if self.kind == StoreKind::Sqlite {
            return None;
        }
        let (_, rest) = self.url.split_once("://").expect("a URL");
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        let member = authority.rsplit('@').next().unwrap_or_default();
        // The first of an etcd URL's members.
        let member = member.split(',').next().unwrap_or_default();
        let port = match self.kind {
            StoreKind::MySql => 3306,
            StoreKind::Postgres => 5432,
            StoreKind::Etcd => 2379,
            StoreKind::ZooKeeper => 2181,
            _ => 6379,
        };
        let with_port = if member
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            member.to_owned()
        } else {
            format!("{member}:{port}")
        };
        with_port
            .to_socket_addrs()
            .expect("the server's address")
            .next()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if !self.owner {
            return;
        }
        // The tables and keys of this fixture, dropped through each store's own
        // `destroy` (not part of the traits: only for stores no one will use again).
        let url = self.url.clone();
        let (lease, segment) = (self.lease_name(), self.segment_name());
        let dropped = match self.kind {
            StoreKind::MySql => uidgen::MySqlLeaseStore::new(&url)
                .and_then(|s| s.table(&lease))
                .and_then(|s| s.destroy())
                .and_then(|()| uidgen::MySqlSegmentStore::new(&url))
                .and_then(|s| s.table(&segment))
                .and_then(|s| s.destroy()),
            StoreKind::Postgres => uidgen::PostgresLeaseStore::new(&url)
                .and_then(|s| s.table(&lease))
                .and_then(|s| s.destroy())
                .and_then(|()| uidgen::PostgresSegmentStore::new(&url))
                .and_then(|s| s.table(&segment))
                .and_then(|s| s.destroy()),
            StoreKind::Redis => uidgen::RedisLeaseStore::new(&url)
                .and_then(|s| s.prefix(&lease))
                .and_then(|s| s.destroy())
                .and_then(|()| uidgen::RedisSegmentStore::new(&url))
                .and_then(|s| s.prefix(&segment))
                .and_then(|s| s.destroy()),
            // Every key under the fixture's root, the records too.
            #[cfg(feature = "etcd")]
            StoreKind::Etcd => uidgen::EtcdLeaseStore::new(&url)
                .and_then(|s| s.prefix(""))
                .and_then(|s| s.destroy()),
            #[cfg(feature = "zookeeper")]
            StoreKind::ZooKeeper => uidgen::ZooKeeperLeaseStore::new(&url)
                .and_then(|s| s.prefix(""))
                .and_then(|s| s.destroy()),
            _ => Ok(()),
        };
        if let Err(e) = dropped {
            eprintln!("could not drop the test's tables on {url}: {e}");
        }
    }
}

/// Runs `body` once per kind of store, each on a fixture of its own; a failure names
/// the store.
/// [`for_each_store`], the stores side by side (a thread each): for tests whose time is
/// the stores' latency. A failure names its store.
pub fn for_each_store_side_by_side(body: impl Fn(&Fixture) + Sync) {
    let body = &body;
    std::thread::scope(|scope| {
        let runs: Vec<_> = kinds()
            .into_iter()
            .map(|kind| {
                let run = scope.spawn(move || {
                    let fixture = Fixture::new(kind);
                    let started = Instant::now();
                    body(&fixture);
                    eprintln!("{kind:?}: ok in {:?}", started.elapsed());
                });
                (kind, run)
            })
            .collect();
        for (kind, run) in runs {
            if let Err(panic) = run.join() {
                eprintln!("failed on the {kind:?} store");
                std::panic::resume_unwind(panic);
            }
        }
    });
}

pub fn for_each_store(body: impl Fn(&Fixture)) {
    for kind in kinds() {
        let fixture = Fixture::new(kind);
        let started = Instant::now();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&fixture)));
        if let Err(panic) = result {
            eprintln!("failed on the {kind:?} store");
            std::panic::resume_unwind(panic);
        }
        eprintln!("{kind:?}: ok in {:?}", started.elapsed());
    }
}
