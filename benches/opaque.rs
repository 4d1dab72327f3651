//! What an opaque public ID costs beside the plain ID it hides, in one run: `plain`
//! (`next_uid` on a cached generator), `permute` and `encode` (that ID through
//! [`OpaqueIds::permute`] or [`OpaqueIds::encode`], so the ratio to `plain` is the cost
//! of hiding it), `base62` (the plain string form, for scale) and `decode` (a public ID
//! back to its ID). `fpe_encode` and `fpe_decode` are the same through the `fpe` crate's
//! FF1, as the releases before `src/opaque/ff1.rs` made them: the baseline the specialised
//! FF1 is measured against, in the same run. `encode_many`/`decode_many` take 64 IDs a
//! call (figures per ID). Its own binary: a contender added to `ids.rs` moves that
//! binary's code and its other figures. With `--features opaque`.

mod common;

use aes::Aes256;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fpe::ff1::{FlexibleNumeralString, FF1};
use std::hint::black_box;
use std::time::Duration;
use uidgen::{CachedUidGenerator, IdFormat, OpaqueIds, TakeRejectPolicy, UidGenerator};

const KEY: &[u8; 32] = b"uidgen opaque bench key 32 bytes";

/// An ID's 7 numerals of 9 bits, as the `fpe`-based releases passed them.
fn numerals(value: u64) -> FlexibleNumeralString {
    let digits: Vec<u16> = (0..7)
        .rev()
        .map(|i| ((value >> (i * 9)) & 511) as u16)
        .collect();
    digits.into()
}

fn value(out: FlexibleNumeralString) -> u64 {
    Vec::<u16>::from(out)
        .into_iter()
        .fold(0, |acc, n| (acc << 9) | u64::from(n))
}

fn opaque(c: &mut Criterion) {
    let generator = CachedUidGenerator::builder()
        .worker_id(21)
        .take_reject_policy(TakeRejectPolicy::wait(Duration::from_secs(60)))
        .build()
        .unwrap();
    let ids = OpaqueIds::new(1, KEY).unwrap();
    let reference = FF1::<Aes256>::new(KEY, 512).unwrap();
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
    group.bench_function("fpe_encode", |b| {
        b.iter(|| {
            let id = generator.next_uid().unwrap();
            let permuted = value(reference.encrypt(&[], &numerals(id)).unwrap());
            black_box(format!("1{}", IdFormat::Base62.encode(permuted)))
        })
    });
    group.bench_function("fpe_decode", |b| {
        b.iter(|| {
            let body = IdFormat::Base62.decode(&public[1..]).unwrap();
            black_box(value(reference.decrypt(&[], &numerals(body)).unwrap()))
        })
    });
    group.finish();

    const BATCH: usize = 64;
    let mut group = c.benchmark_group("opaque");
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut batch = [0u64; BATCH];
    generator.next_uids(&mut batch).unwrap();
    let publics = ids.encode_many(&batch).unwrap();
    group.bench_function("encode_many", |b| {
        b.iter(|| {
            generator.next_uids(&mut batch).unwrap();
            black_box(ids.encode_many(&batch).unwrap())
        })
    });
    group.bench_function("decode_many", |b| {
        b.iter(|| black_box(ids.decode_many(&publics).unwrap()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = opaque
}
criterion_main!(benches);
