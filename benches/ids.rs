//! uidgen against its peers and baselines, on 1, 2 and 4 threads.
//!
//! Every benchmark measures IDs per second (`Throughput::Elements`); multi-thread runs use
//! `iter_custom` with a barrier, so thread start-up is not timed. `scripts/bench` turns
//! criterion's estimates into `results/README.md` and `results/throughput.svg`.
//!
//! Group `threads`: one ID per call, `function/threads` (`uidgen-segment`: segment mode on
//! an embedded SQLite store, with `--features sqlite`; `uidgen-cached-thread_batch`: the
//! cached generator with per-thread batches of up to 64 IDs, the opt-in that gives up order
//! across threads, beside the ordered `uidgen-cached`). Group `batch`: `next_uids` and
//! the baseline claiming a batch with one `fetch_add`. Group `patterns`: ways of using
//! cached generators other than one generator flat out (`uidgen bench --pattern` runs the
//! same ones at scale): `alternate/N` (N generators called in turn from one thread) beside
//! `single/1`, `churn/1` (a thread started for one ID) beside `spawn_only/1`, and
//! `light/µs` (one call after each pause of that many microseconds, only the calls timed).
//!
//! Two baselines are floors, not generators: the least an ID source that keeps order
//! across threads without locks must do per ID beside its one shared `fetch_add`, so a
//! ratio against `fetch_add` can be read against what any such design could reach in the
//! same run. `baseline-floor-range` adds a check against a range's bounds (a line no one
//! writes), as a range chain does; `baseline-floor-slot` adds the read of a pre-built ID
//! from a ring that is never refilled, as a ring of pre-built IDs does.

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use uidgen::{
    BitsAllocator, CachedUidGenerator, DefaultUidGenerator, Preset, TakeRejectPolicy, UidGenerator,
};

/// Runs `iters` calls of `f` split over `threads` threads; times from the moment all
/// threads are ready until the last finishes.
fn timed_on_threads(threads: usize, iters: u64, f: &(dyn Fn() + Sync)) -> Duration {
    let per_thread = iters.div_ceil(threads as u64);
    let ready = Barrier::new(threads + 1);
    thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    ready.wait();
                    for _ in 0..per_thread {
                        f();
                    }
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        for w in workers {
            w.join().unwrap();
        }
        // Scale to the calls asked for: rounding up gave each thread a few extra.
        start
            .elapsed()
            .mul_f64(iters as f64 / (per_thread * threads as u64) as f64)
    })
}

/// A generator to benchmark: its name, the thread counts to run it on, and one call.
struct Contender {
    name: &'static str,
    threads: &'static [usize],
    call: Box<dyn Fn() + Sync>,
}

const ONE_TWO_FOUR: &[usize] = &[1, 2, 4];

/// A cached generator that waits as long as it takes: a benchmark must measure waiting,
/// not fail on it. `thread_batch` as the builder's: 1 is the ordered default, more gives
/// each thread batches of up to that many IDs (unique, not ordered across threads).
fn patient_cached(worker_id: u64, thread_batch: usize) -> CachedUidGenerator {
    CachedUidGenerator::builder()
        .worker_id(worker_id)
        .thread_batch(thread_batch)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(3600)))
        .build()
        .unwrap()
}

/// The per-thread batch of `uidgen-cached-thread_batch`: the most the library allows.
const THREAD_BATCH: usize = 64;

/// A segment generator on a SQLite file of its own: the hot path is the chain's
/// `fetch_add`, and a step of up to 2^24 keeps the file's round trips (a few ms each) far
/// apart at a hundred million IDs a second.
#[cfg(feature = "sqlite")]
fn segment_generator() -> (uidgen::SegmentGenerator, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = uidgen::SqliteSegmentStore::new(dir.path().join("segments.db"));
    let generator = uidgen::SegmentGenerator::builder(store, "bench")
        .create_missing(1, 1000)
        .max_step(1 << 24)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(3600)))
        .build()
        .unwrap();
    (generator, dir)
}

/// One range that never runs out: a take is the chain's take without its range switch.
struct RangeFloor {
    bounds: crossbeam_utils::CachePadded<(AtomicU64, AtomicU64)>,
    cursor: crossbeam_utils::CachePadded<AtomicU64>,
}

impl Default for RangeFloor {
    fn default() -> Self {
        Self {
            bounds: crossbeam_utils::CachePadded::new((
                AtomicU64::new(1 << 40),
                AtomicU64::new(u64::MAX),
            )),
            cursor: Default::default(),
        }
    }
}

impl RangeFloor {
    #[inline]
    fn take(&self) -> Option<u64> {
        let start = self.bounds.0.load(Ordering::Relaxed);
        let end = self.bounds.1.load(Ordering::Acquire);
        let offset = self.cursor.fetch_add(1, Ordering::Relaxed);
        (offset < end - start).then_some(start + offset)
    }
}

/// A ring of pre-built IDs the size of the cached generator's default one, filled once.
struct SlotFloor {
    slots: Box<[AtomicU64]>,
    cursor: crossbeam_utils::CachePadded<AtomicU64>,
}

impl Default for SlotFloor {
    fn default() -> Self {
        Self {
            slots: (0..1u64 << 16).map(AtomicU64::new).collect(),
            cursor: Default::default(),
        }
    }
}

impl SlotFloor {
    #[inline]
    fn take(&self) -> u64 {
        let position = self.cursor.fetch_add(1, Ordering::Relaxed);
        self.slots[(position & ((1 << 16) - 1)) as usize].load(Ordering::Relaxed)
    }
}

fn contenders() -> Vec<Contender> {
    let cached = patient_cached(1, 1);
    let cached_thread_batch = patient_cached(9, THREAD_BATCH);
    let default_s = DefaultUidGenerator::new(BitsAllocator::default(), 2).unwrap();
    let default_ms =
        DefaultUidGenerator::new(Preset::Snowflake.builder().build().unwrap(), 3).unwrap();
    // On a line of its own, as a well-placed shared counter would be: a small allocation
    // can share a line with data another thread writes, which slows the add.
    let fetch_add = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
    let range_floor = RangeFloor::default();
    let slot_floor = SlotFloor::default();
    let snowflaked = snowflaked::sync::Generator::new(4);
    let ferroid: ferroid::generator::AtomicSnowflakeGenerator<ferroid::id::SnowflakeTwitterId, _> =
        ferroid::generator::AtomicSnowflakeGenerator::new(
            5,
            ferroid::time::MonotonicClock::default(),
        );
    let rs_snowflake = Mutex::new(snowflake::SnowflakeIdGenerator::new(1, 6));
    let rs_snowflake_bucket = Mutex::new(snowflake::SnowflakeIdBucket::new(1, 7));
    #[cfg_attr(not(feature = "sqlite"), allow(unused_mut))]
    let mut all = vec![
        Contender {
            name: "uidgen-cached",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                black_box(cached.next_uid().unwrap());
            }),
        },
        Contender {
            // Each thread takes from a batch of its own, claimed with one CAS; a thread
            // new to it (each `iter_custom` call on 2 and 4 threads starts new ones)
            // begins with a batch of 1 and doubles it up to 64.
            name: "uidgen-cached-thread_batch",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                black_box(cached_thread_batch.next_uid().unwrap());
            }),
        },
        Contender {
            name: "uidgen-default-s",
            threads: &[1, 2],
            call: Box::new(move || {
                black_box(default_s.next_uid().unwrap());
            }),
        },
        Contender {
            name: "uidgen-default-ms",
            threads: &[1, 2],
            call: Box::new(move || {
                black_box(default_ms.next_uid().unwrap());
            }),
        },
        Contender {
            name: "baseline-fetch_add",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                black_box(fetch_add.fetch_add(1, Ordering::Relaxed));
            }),
        },
        Contender {
            name: "baseline-floor-range",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                black_box(range_floor.take());
            }),
        },
        Contender {
            name: "baseline-floor-slot",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                black_box(slot_floor.take());
            }),
        },
        Contender {
            name: "uuid-v4",
            threads: ONE_TWO_FOUR,
            call: Box::new(|| {
                black_box(uuid::Uuid::new_v4());
            }),
        },
        Contender {
            name: "uuid-v7",
            threads: ONE_TWO_FOUR,
            call: Box::new(|| {
                black_box(uuid::Uuid::now_v7());
            }),
        },
        Contender {
            name: "ulid",
            threads: ONE_TWO_FOUR,
            call: Box::new(|| {
                black_box(ulid::Ulid::generate());
            }),
        },
        Contender {
            name: "snowflaked-sync",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                black_box(snowflaked.generate::<u64>());
            }),
        },
        Contender {
            name: "ferroid-atomic",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                black_box(ferroid.next_id(|_| std::thread::yield_now()));
            }),
        },
        Contender {
            name: "rs-snowflake",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                black_box(rs_snowflake.lock().unwrap().generate());
            }),
        },
        Contender {
            name: "rs-snowflake-bucket",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                black_box(rs_snowflake_bucket.lock().unwrap().get_id());
            }),
        },
    ];
    #[cfg(feature = "sqlite")]
    {
        let (segment, dir) = segment_generator();
        all.push(Contender {
            name: "uidgen-segment",
            threads: ONE_TWO_FOUR,
            call: Box::new(move || {
                let _keep = &dir;
                black_box(segment.next_uid().unwrap());
            }),
        });
    }
    all
}

fn threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("threads");
    group.throughput(Throughput::Elements(1));
    for contender in contenders() {
        for &n in contender.threads {
            let call = &*contender.call;
            group.bench_function(BenchmarkId::new(contender.name, n), |b| {
                if n == 1 {
                    b.iter(call);
                } else {
                    b.iter_custom(|iters| timed_on_threads(n, iters, call));
                }
            });
        }
    }
    // A plain counter: the cost of the loop itself.
    let mut counter = 0u64;
    group.bench_function(BenchmarkId::new("baseline-plain-counter", 1), |b| {
        b.iter(|| {
            counter += 1;
            black_box(counter)
        })
    });
    group.finish();
}

fn batch(c: &mut Criterion) {
    let cached = patient_cached(8, 1);
    let fetch_add = AtomicU64::new(0);
    let mut group = c.benchmark_group("batch");
    for size in [64usize, 1024] {
        group.throughput(Throughput::Elements(size as u64));
        let mut out = vec![0u64; size];
        group.bench_function(BenchmarkId::new("uidgen-next_uids", size), |b| {
            b.iter(|| {
                // One call may return fewer than asked (a ring wrap); fill the batch.
                let mut filled = 0;
                while filled < size {
                    filled += cached.next_uids(&mut out[filled..]).unwrap();
                }
                black_box(&out);
            })
        });
        group.bench_function(BenchmarkId::new("baseline-fetch_add", size), |b| {
            b.iter(|| black_box(fetch_add.fetch_add(size as u64, Ordering::Relaxed)))
        });
    }
    group.finish();
}

fn patterns(c: &mut Criterion) {
    let mut group = c.benchmark_group("patterns");
    // Short: the group's seven benchmarks add about 15 s to the suite.
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(10)
        .throughput(Throughput::Elements(1));

    // One ID per iteration from the next generator in turn; `single/1` is the same loop
    // over one generator.
    let generators: Vec<CachedUidGenerator> = (0..4).map(|i| patient_cached(10 + i, 1)).collect();
    for (name, n) in [("single", 1), ("alternate", 2), ("alternate", 4)] {
        let in_turn = &generators[..n];
        group.bench_function(BenchmarkId::new(name, n), |b| {
            let mut next = 0;
            b.iter(|| {
                let uid = in_turn[next].next_uid().unwrap();
                next = if next + 1 == n { 0 } else { next + 1 };
                black_box(uid)
            })
        });
    }

    // A thread started, and joined, for one ID: unlike everywhere else here, starting the
    // thread is what is measured, so `spawn_only/1` (the same thread doing nothing) shows
    // how much of it is the ID.
    let shared = &generators[0];
    group.bench_function(BenchmarkId::new("churn", 1), |b| {
        b.iter(|| {
            thread::scope(|s| {
                s.spawn(|| black_box(shared.next_uid().unwrap()));
            })
        })
    });
    group.bench_function(BenchmarkId::new("spawn_only", 1), |b| {
        b.iter(|| {
            thread::scope(|s| {
                s.spawn(|| black_box(0u64));
            })
        })
    });

    // A light load: one thread, one call after each pause; only the calls are timed.
    for pause_us in [100u64, 1000] {
        let pause = Duration::from_micros(pause_us);
        group.bench_function(BenchmarkId::new("light", pause_us), |b| {
            b.iter_custom(|iters| {
                let mut calls = Duration::ZERO;
                for _ in 0..iters {
                    thread::sleep(pause);
                    let start = Instant::now();
                    black_box(shared.next_uid().unwrap());
                    calls += start.elapsed();
                }
                calls
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = threads, batch, patterns
}
criterion_main!(benches);
