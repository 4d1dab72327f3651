//! What an opaque public ID costs beside the plain ID it hides, in one run: `plain`
//! (`next_uid` on a cached generator), `permute` and `encode` (that ID through
//! [`OpaqueIds::permute`] or [`OpaqueIds::encode`], so the ratio to `plain` is the cost
//! of hiding it), `base62` (the plain string form, for scale) and `decode` (a public ID
//! back to its ID). Its own binary: a contender added to `ids.rs` moves that binary's
//! code and its other figures. With `--features opaque`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use uidgen::{CachedUidGenerator, IdFormat, OpaqueIds, TakeRejectPolicy, UidGenerator};

fn opaque(c: &mut Criterion) {
    let generator = CachedUidGenerator::builder()
        .worker_id(21)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(60)))
        .build()
        .unwrap();
    let ids = OpaqueIds::new(1, b"uidgen opaque bench key 32 bytes").unwrap();
    let public = ids.encode(generator.next_uid().unwrap()).unwrap();
    let mut group = c.benchmark_group("opaque");
    group.throughput(Throughput::Elements(1));
    group.bench_function("plain", |b| {
        b.iter(|| black_box(generator.next_uid().unwrap()))
    });
    group.bench_function("base62", |b| {
        b.iter(|| black_box(IdFormat::Base62.encode(generator.next_uid().unwrap())))
    });
    group.bench_function("permute", |b| {
        b.iter(|| black_box(ids.permute(generator.next_uid().unwrap()).unwrap()))
    });
    group.bench_function("encode", |b| {
        b.iter(|| black_box(ids.encode(generator.next_uid().unwrap()).unwrap()))
    });
    group.bench_function("decode", |b| {
        b.iter(|| black_box(ids.decode(&public).unwrap()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = opaque
}
criterion_main!(benches);
