//! The guard's check against itself: a store whose replies can be held back, so that
//! one thread's read is answered before another thread of the same process writes (or
//! learns) something, and is looked at only after. Run on every engine, on a store of
//! the test's own that no process has used.

use super::guard::{RecordSteps, Shared, LOST, STORE_ID};
use super::segment::{SegmentStore, TagRecord};
use crate::store::{StoreError, StoreKind};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

/// How long a step of the interleaving may take before the test gives up on it.
const STEP: Duration = Duration::from_secs(30);

/// The one reply held back: on `thread`, after the store answered, says so on
/// `answered` and waits on `release` before the guard sees the reply.
struct Hold {
    thread: ThreadId,
    answered: Sender<()>,
    release: Receiver<()>,
}

/// Records whose next reply on one thread can be held back.
struct HeldBack {
    inner: Box<dyn RecordSteps>,
    hold: Arc<Mutex<Option<Hold>>>,
}

/// Holds the current thread's reply if `hold` is armed for it: says it arrived, then
/// waits to be let go.
fn hold_if_armed(hold: &Mutex<Option<Hold>>) {
    let held = {
        let mut hold = hold.lock().unwrap();
        match hold.as_ref() {
            Some(h) if h.thread == std::thread::current().id() => hold.take(),
            _ => None,
        }
    };
    if let Some(held) = held {
        held.answered.send(()).unwrap();
        held.release.recv_timeout(STEP).expect("released in time");
    }
}

/// Arms `hold` for a new thread running `body`; returns once that thread's held reply
/// has arrived, with the sender that lets it go and the thread.
fn run_held<T: Send + 'static>(
    hold: &Arc<Mutex<Option<Hold>>>,
    body: impl FnOnce() -> T + Send + 'static,
) -> (Sender<()>, std::thread::JoinHandle<T>) {
    let (answered_tx, answered_rx) = channel();
    let (release_tx, release_rx) = channel();
    let (ready_tx, ready_rx) = channel();
    let hold = Arc::clone(hold);
    let thread = std::thread::spawn(move || {
        *hold.lock().unwrap() = Some(Hold {
            thread: std::thread::current().id(),
            answered: answered_tx,
            release: release_rx,
        });
        ready_tx.send(()).unwrap();
        body()
    });
    ready_rx
        .recv_timeout(STEP)
        .expect("the held thread started");
    answered_rx
        .recv_timeout(STEP)
        .expect("the held thread's read was answered");
    (release_tx, thread)
}

/// A segment store whose next `tag` reply on one thread can be held back.
struct HeldSegments {
    inner: Box<dyn SegmentStore>,
    hold: Arc<Mutex<Option<Hold>>>,
}

impl std::fmt::Debug for HeldSegments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl SegmentStore for HeldSegments {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn kind(&self) -> StoreKind {
        self.inner.kind()
    }
    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        self.inner.allocate(tag, step)
    }
    fn create(&self, tag: &str, first: u64, step: u64, text: &str) -> Result<bool, StoreError> {
        self.inner.create(tag, first, step, text)
    }
    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        self.inner.give_back(tag, from, to)
    }
    fn raise(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        self.inner.raise(tag, from, to)
    }
    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        let reply = self.inner.tag(tag);
        hold_if_armed(&self.hold);
        reply
    }
    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        self.inner.tags()
    }
}

impl RecordSteps for HeldBack {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn kind(&self) -> StoreKind {
        self.inner.kind()
    }
    fn get(&self, names: &[&str]) -> Result<Vec<Option<String>>, StoreError> {
        let reply = self.inner.get(names);
        hold_if_armed(&self.hold);
        reply
    }
    fn all(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.inner.all()
    }
    fn insert(&self, name: &str, value: &str) -> Result<bool, StoreError> {
        self.inner.insert(name, value)
    }
    fn put(&self, name: &str, value: &str) -> Result<(), StoreError> {
        self.inner.put(name, value)
    }
}

/// A guarded store over `records`, whose replies `hold_next` can hold back.
struct Rig {
    shared: Arc<Shared>,
    hold: Arc<Mutex<Option<Hold>>>,
}

impl Rig {
    fn new(records: Box<dyn RecordSteps>) -> Self {
        let hold = Arc::new(Mutex::new(None));
        let shared = Shared::of(Box::new(HeldBack {
            inner: records,
            hold: Arc::clone(&hold),
        }));
        Self { shared, hold }
    }

    /// Runs `shared.check` on a thread whose first reply is held back until the
    /// returned sender says so; returns once that reply has arrived.
    #[allow(clippy::type_complexity)]
    fn check_held(
        &self,
    ) -> (
        Sender<()>,
        std::thread::JoinHandle<Result<Vec<Option<String>>, StoreError>>,
    ) {
        let shared = Arc::clone(&self.shared);
        run_held(&self.hold, move || shared.check(&[]))
    }

    /// `check` on a thread of its own, run to the end.
    fn check_now(&self) -> Result<Vec<Option<String>>, StoreError> {
        let shared = Arc::clone(&self.shared);
        std::thread::spawn(move || shared.check(&[]))
            .join()
            .unwrap()
    }

    fn word(&self) -> Option<String> {
        self.shared.records().get(&[LOST]).unwrap()[0]
            .clone()
            .filter(|w| !w.is_empty())
    }
}

/// Thread A reads a new store ("no identity yet"); before A looks at the reply, thread
/// B of the same process makes the identity and adopts it. A must not take its reply
/// for an identity that vanished (the race a fleet starting at once met on etcd).
fn a_reply_older_than_the_identity_is_not_a_loss(records: Box<dyn RecordSteps>) {
    let rig = Rig::new(records);
    let (release, a) = rig.check_held();
    rig.check_now()
        .expect("B makes and adopts the new store's identity");
    let identity = rig.shared.records().get(&[STORE_ID]).unwrap()[0].clone();
    assert!(identity.is_some(), "B wrote an identity");
    release.send(()).unwrap();
    let a = a.join().unwrap();
    assert!(
        a.is_ok(),
        "A's reply left before B wrote the identity, so it shows none: {a:?}"
    );
    assert_eq!(rig.word(), None, "no word of a loss was left in the store");
    rig.check_now().expect("the store is still taken from");
    assert_eq!(
        rig.shared.records().get(&[STORE_ID]).unwrap()[0],
        identity,
        "one identity"
    );
}

/// Thread A's reply (no word of a loss) is held while word is left in the store and
/// thread B reads it: A's older reply must not clear what B learned.
fn a_reply_older_than_word_of_a_loss_does_not_clear_it(records: Box<dyn RecordSteps>) {
    let rig = Rig::new(records);
    rig.check_now().expect("the identity is adopted");
    let (release, a) = rig.check_held();
    rig.shared
        .records()
        .put(LOST, "1 another process saw this store lose data")
        .unwrap();
    assert!(
        matches!(rig.check_now(), Err(StoreError::DataLost { .. })),
        "B reads the word"
    );
    release.send(()).unwrap();
    let _ = a.join().unwrap();
    let told = Arc::new(Mutex::new(None));
    let hook_told = Arc::clone(&told);
    rig.shared.on_loss(Box::new(move |why| {
        *hook_told.lock().unwrap() = Some(why.to_owned());
    }));
    assert!(
        told.lock().unwrap().is_some(),
        "the process still knows the store lost data after A's older reply"
    );
}

/// A store that really lost its identity is still declared lost: the second read
/// shows the same.
fn an_identity_that_vanished_is_still_a_loss(records: Box<dyn RecordSteps>, vanish: impl Fn()) {
    let rig = Rig::new(records);
    rig.check_now().expect("the identity is adopted");
    vanish();
    let err = rig.check_now().expect_err("the identity vanished");
    assert!(
        err.to_string().contains("vanished"),
        "the error says what was seen: {err}"
    );
    assert!(rig.word().is_some(), "word is left in the store");
}

/// Thread A creates a tag no one has: its read of the tag's row ("none") is held while
/// thread B of the same process creates the tag and takes a range of it. A must not take
/// B's range (which raised this process's floor) for IDs handed out before a tag that is
/// gone: A's create finds the tag made (64 threads creating their tag at once met this).
fn a_create_older_than_another_threads_range_is_not_a_loss(
    records: Box<dyn RecordSteps>,
    segments: Box<dyn SegmentStore>,
) {
    let hold = Arc::new(Mutex::new(None));
    let guarded = Arc::new(super::guard::GuardedSegments::new(
        Box::new(HeldSegments {
            inner: segments,
            hold: Arc::clone(&hold),
        }),
        Shared::of(records),
        "default",
        false,
    ));
    let tag = format!("race-{}", random());
    let (release, a) = {
        let (guarded, tag) = (Arc::clone(&guarded), tag.clone());
        run_held(&hold, move || guarded.create(&tag, 1, 1000, "A"))
    };
    let (b_guarded, b_tag) = (Arc::clone(&guarded), tag.clone());
    let taken = std::thread::spawn(move || {
        assert!(
            b_guarded.create(&b_tag, 1, 1000, "B").unwrap(),
            "B creates it"
        );
        b_guarded.allocate(&b_tag, 1000).unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(taken, 1001, "B took the first range");
    release.send(()).unwrap();
    let a = a.join().unwrap();
    assert!(
        matches!(a, Ok(false)),
        "A's read of the row came before B made it: the tag exists, nothing was lost: {a:?}"
    );
    assert!(
        guarded.allocate(&tag, 1000).unwrap() > 1001,
        "the tag goes on"
    );
}

fn random() -> String {
    format!("{:012x}", crate::process::random_u64() & 0xffff_ffff_ffff)
}

fn env_url(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use crate::store::sql::records::{SqlRecords, RECORDS_TABLE, SQLITE_RECORDS_SCHEMA};

    fn fresh(dir: &tempfile::TempDir) -> Box<dyn RecordSteps> {
        let conn = crate::store::sqlite::SqliteConn::new(
            dir.path().join("store.sqlite3"),
            SQLITE_RECORDS_SCHEMA,
            RECORDS_TABLE,
        );
        Box::new(SqlRecords {
            conn,
            table: RECORDS_TABLE.into(),
        })
    }

    #[test]
    fn held_reply_identity() {
        let dir = tempfile::tempdir().unwrap();
        a_reply_older_than_the_identity_is_not_a_loss(fresh(&dir));
    }

    #[test]
    fn held_reply_word() {
        let dir = tempfile::tempdir().unwrap();
        a_reply_older_than_word_of_a_loss_does_not_clear_it(fresh(&dir));
    }

    #[test]
    fn vanished_identity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        an_identity_that_vanished_is_still_a_loss(fresh(&dir), || {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute("DELETE FROM uidgen_store WHERE name = 'store_id'", [])
                .unwrap();
        });
    }

    #[test]
    fn held_create() {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::StoreUrl::parse(&dir.path().join("store.sqlite3").display().to_string())
            .unwrap();
        a_create_older_than_another_threads_range_is_not_a_loss(
            fresh(&dir),
            url.raw_segment(None).unwrap(),
        );
    }
}

/// A records table of the test's own on a SQL server, dropped at the end.
#[cfg(any(feature = "mysql", feature = "postgres"))]
macro_rules! sql_engine {
    ($module:ident, $feature:literal, $conn:path, $schema:path, $var:literal, $default:literal) => {
        #[cfg(feature = $feature)]
        mod $module {
            use super::*;
            use crate::store::sql::records::{SqlRecords, RECORDS_TABLE};
            use crate::store::sql::SqlConn;

            struct Table {
                conn: $conn,
                table: String,
            }

            impl Table {
                fn new() -> Self {
                    let table = format!("uidgen_store_race_{}", random());
                    let url = env_url($var, $default);
                    let conn = <$conn>::new(&url, $schema, RECORDS_TABLE)
                        .unwrap()
                        .with_table(&table);
                    Self { conn, table }
                }

                fn records(&self) -> Box<dyn RecordSteps> {
                    Box::new(SqlRecords {
                        conn: self.conn.clone(),
                        table: self.table.clone(),
                    })
                }
            }

            impl Drop for Table {
                fn drop(&mut self) {
                    let _ = crate::store::sql::lease::drop_table(&self.conn, &self.table);
                }
            }

            #[test]
            fn held_reply_identity() {
                let table = Table::new();
                a_reply_older_than_the_identity_is_not_a_loss(table.records());
            }

            #[test]
            fn held_reply_word() {
                let table = Table::new();
                a_reply_older_than_word_of_a_loss_does_not_clear_it(table.records());
            }

            #[test]
            fn vanished_identity() {
                let table = Table::new();
                an_identity_that_vanished_is_still_a_loss(table.records(), || {
                    let sql = format!("DELETE FROM {} WHERE name = 'store_id'", table.table);
                    table.conn.exec("a test's delete", &sql, &[]).unwrap();
                });
            }

            #[test]
            fn held_create() {
                let table = Table::new();
                let url = crate::StoreUrl::parse(&env_url($var, $default)).unwrap();
                a_create_older_than_another_threads_range_is_not_a_loss(
                    table.records(),
                    url.raw_segment(None).unwrap(),
                );
            }
        }
    };
}

#[cfg(feature = "mysql")]
sql_engine!(
    mysql,
    "mysql",
    crate::store::mysql::MySqlConn,
    crate::store::sql::records::MYSQL_RECORDS_SCHEMA,
    "UIDGEN_MYSQL_URL",
    "mysql://root@127.0.0.1:3306/test"
);

#[cfg(feature = "postgres")]
sql_engine!(
    postgres,
    "postgres",
    crate::store::postgres::PgConn,
    crate::store::sql::records::POSTGRES_RECORDS_SCHEMA,
    "UIDGEN_POSTGRES_URL",
    "postgres://postgres@127.0.0.1:5432/test"
);

/// Redis keeps the records in one hash per database: each test takes a database of its
/// own (no other test uses 11 to 14), emptied of the hash first.
#[cfg(feature = "redis")]
mod redis_engine {
    use super::*;
    use crate::store::redis::{records::RedisRecords, RedisConn};

    /// The suite's Redis URL on database `db`.
    fn db_url(db: u8) -> String {
        let mut url = url::Url::parse(&env_url(
            "UIDGEN_REDIS_URL",
            "redis://127.0.0.1:6379/?accept_data_loss=true",
        ))
        .unwrap();
        url.set_path(&format!("/{db}"));
        url.into()
    }

    fn fresh(db: u8) -> (Box<dyn RecordSteps>, RedisConn) {
        let conn = RedisConn::new(&db_url(db)).unwrap();
        conn.run("a test's cleanup", |c| {
            redis::cmd("DEL").arg("uidgen:store").query::<()>(c)
        })
        .unwrap();
        (Box::new(RedisRecords { conn: conn.clone() }), conn)
    }

    #[test]
    fn held_create() {
        a_create_older_than_another_threads_range_is_not_a_loss(
            fresh(14).0,
            crate::StoreUrl::parse(&db_url(14))
                .unwrap()
                .raw_segment(None)
                .unwrap(),
        );
    }

    #[test]
    fn held_reply_identity() {
        a_reply_older_than_the_identity_is_not_a_loss(fresh(11).0);
    }

    #[test]
    fn held_reply_word() {
        a_reply_older_than_word_of_a_loss_does_not_clear_it(fresh(12).0);
    }

    #[test]
    fn vanished_identity() {
        let (records, conn) = fresh(13);
        an_identity_that_vanished_is_still_a_loss(records, || {
            conn.run("a test's delete", |c| {
                redis::cmd("HDEL")
                    .arg("uidgen:store")
                    .arg("store_id")
                    .query::<()>(c)
            })
            .unwrap();
        });
    }
}

/// etcd: a root prefix of the test's own.
#[cfg(feature = "etcd")]
mod etcd_engine {
    use super::*;
    use crate::store::etcd::{records::EtcdRecords, EtcdConn};

    fn fresh() -> (Box<dyn RecordSteps>, String) {
        let url = env_url("UIDGEN_ETCD_URL", "etcd://127.0.0.1:2379/uidgen-test");
        let (hosts, root) = url.rsplit_once('/').unwrap();
        let url = format!("{hosts}/{root}-race-{}", random());
        let conn = EtcdConn::new(&url).unwrap();
        (Box::new(EtcdRecords { conn }), url)
    }

    fn destroy(url: &str) {
        let _ = crate::EtcdLeaseStore::new(url)
            .and_then(|s| s.prefix(""))
            .and_then(|s| s.destroy());
    }

    #[test]
    fn held_reply_identity() {
        let (records, url) = fresh();
        a_reply_older_than_the_identity_is_not_a_loss(records);
        destroy(&url);
    }

    #[test]
    fn held_reply_word() {
        let (records, url) = fresh();
        a_reply_older_than_word_of_a_loss_does_not_clear_it(records);
        destroy(&url);
    }

    #[test]
    fn held_create() {
        let (records, url) = fresh();
        let segments = crate::StoreUrl::parse(&url)
            .unwrap()
            .raw_segment(None)
            .unwrap();
        a_create_older_than_another_threads_range_is_not_a_loss(records, segments);
        destroy(&url);
    }

    #[test]
    fn vanished_identity() {
        let (records, url) = fresh();
        let vanish_url = url.clone();
        an_identity_that_vanished_is_still_a_loss(records, move || {
            let conn = EtcdConn::new(&vanish_url).unwrap();
            let key = format!("{}/store/store_id", conn.root());
            conn.run("a test's delete", async move |c| {
                c.delete(key, None).await.map(drop)
            })
            .unwrap();
        });
        destroy(&url);
    }
}
