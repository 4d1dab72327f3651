//! A dependent's crate built with `RUSTFLAGS="--cfg loom"` for its own model checks.
//! uidgen's loom switch is its own `cfg(uidgen_loom)`, so the generator keeps running on
//! `std` here (it used to panic in `build()`, outside any `loom::model`).

use std::collections::HashSet;
use uidgen::{CachedUidGenerator, UidGenerator};

#[test]
fn the_cached_generator_works_in_a_crate_built_with_cfg_loom() {
    // scripts/test runs this with `--cfg loom` and says so; prove the flag was on.
    if std::env::var_os("UIDGEN_EXPECT_CFG_LOOM").is_some() {
        let built_with_cfg_loom = std::hint::black_box(cfg!(loom));
        assert!(
            built_with_cfg_loom,
            "this run was meant to be built with --cfg loom"
        );
    }
    let generator = CachedUidGenerator::builder().worker_id(5).build().unwrap();
    let ids: HashSet<u64> = (0..100_000)
        .map(|_| generator.next_uid().unwrap())
        .collect();
    assert_eq!(ids.len(), 100_000);
    // The dependent's own model check runs beside it.
    #[cfg(loom)]
    loom::model(|| {
        let counter = loom::sync::Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let other = counter.clone();
        let t = loom::thread::spawn(move || {
            other.fetch_add(1, loom::sync::atomic::Ordering::SeqCst);
        });
        counter.fetch_add(1, loom::sync::atomic::Ordering::SeqCst);
        t.join().unwrap();
        assert_eq!(counter.load(loom::sync::atomic::Ordering::SeqCst), 2);
    });
}
