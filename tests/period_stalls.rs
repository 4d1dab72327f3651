//! A period tag whose store is slow or failing at the change of period: `try_next_uid`
//! never waits for the switch, and takes try a failing store once between them. Its own
//! test binary: the slow store holds the process's shared prefetch thread, which would
//! hold up other tests' tags.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use uidgen::{
    ManualClock, PeriodSegmentGenerator, SegmentStore, SqliteSegmentStore, StoreError, StoreKind,
    TagRecord, UidError,
};

/// 2026-12-01 00:00:00 in UTC+8, in Unix milliseconds.
const MIDNIGHT: u64 = 1_796_054_400_000;

/// A SQLite store whose `tag` and `create` calls hang for `stall` once `hang` is set
/// (a store that went silent), then either answer (`fail` false) or time out.
#[derive(Debug, Clone)]
struct Hanging {
    inner: SqliteSegmentStore,
    hang: Arc<AtomicBool>,
    fail: bool,
    stall: Duration,
}

impl Hanging {
    fn wait(&self) -> Result<(), StoreError> {
        if self.hang.load(Ordering::SeqCst) {
            thread::sleep(self.stall);
            if self.fail {
                return Err(StoreError::Timeout {
                    store: "test",
                    host: "hanging".into(),
                    port: 1,
                    step: "querying",
                    timeout: self.stall,
                });
            }
        }
        Ok(())
    }
}

impl SegmentStore for Hanging {
    fn describe(&self) -> String {
        format!("hanging {}", self.inner.describe())
    }
    fn kind(&self) -> StoreKind {
        self.inner.kind()
    }
    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        self.wait()?;
        self.inner.allocate(tag, step)
    }
    fn create(&self, tag: &str, first: u64, step: u64, text: &str) -> Result<bool, StoreError> {
        self.wait()?;
        self.inner.create(tag, first, step, text)
    }
    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        self.inner.give_back(tag, from, to)
    }
    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        self.wait()?;
        self.inner.tag(tag)
    }
    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        self.inner.tags()
    }
}

fn hanging(fail: bool, stall: Duration) -> (tempfile::TempDir, Hanging, Arc<AtomicBool>) {
    let dir = tempfile::tempdir().unwrap();
    let hang = Arc::new(AtomicBool::new(false));
    let store = Hanging {
        inner: SqliteSegmentStore::new(dir.path().join("s.db")),
        hang: hang.clone(),
        fail,
        stall,
    };
    (dir, store, hang)
}

/// A generator that took an ID before midnight, its store now taking 2 s a call (then
/// failing if `fail`), its clock just past midnight: the next take begins the new day.
fn past_midnight_on_a_slow_store(fail: bool) -> (tempfile::TempDir, PeriodSegmentGenerator) {
    let (dir, store, hang) = hanging(fail, Duration::from_secs(2));
    let clock = ManualClock::new(MIDNIGHT - 1_000);
    let generator = PeriodSegmentGenerator::builder(store, "order")
        .utc_offset_minutes(480)
        .clock(clock.clone())
        .build()
        .unwrap();
    generator.next_uid().unwrap();
    hang.store(true, Ordering::SeqCst);
    clock.set(MIDNIGHT + 10);
    (dir, generator)
}

/// `try_next_uid` never blocks, even while another take sets a new period up on a store
/// that takes 2 s to answer (the service calls it on its async runtime's threads).
#[test]
fn try_next_uid_does_not_wait_for_a_period_switch_on_a_slow_store() {
    let (_dir, generator) = past_midnight_on_a_slow_store(false);
    thread::scope(|s| {
        s.spawn(|| generator.next_uid()); // begins the new day: tag() + create() hang
        thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        let answer = generator.try_next_uid();
        assert!(
            matches!(answer, Err(UidError::WouldBlock { .. })),
            "{answer:?}"
        );
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(1_000),
            "try_next_uid blocked {took:?} (answer {answer:?})"
        );
    });
}

/// A store that fails after 2 s at a period change: one take tries it, the others wait
/// for that one and then fail with its error, rather than each trying the store in turn
/// (4 takers would wait 8 s).
#[test]
fn takes_at_a_period_change_on_a_failing_store_try_it_once() {
    let (_dir, generator) = past_midnight_on_a_slow_store(true);
    let slowest = AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let started = Instant::now();
                assert!(generator.next_uid().is_err());
                slowest.fetch_max(started.elapsed().as_millis() as u64, Ordering::SeqCst);
            });
        }
    });
    let slowest = slowest.into_inner();
    assert!(
        slowest < 3_500,
        "a take waited {slowest} ms for a store that times out in 2 s (policy: 1 s)"
    );
}
