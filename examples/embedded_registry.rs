//! Worker IDs from the embedded registry (a SQLite file): each launch gets the next one,
//! so two processes on one machine never share a worker ID.
//! Run: `cargo run -p uidgen --example embedded_registry --features sqlite`.

use uidgen::{
    BitsAllocator, CachedUidGenerator, EmbeddedWorkerIdAssigner, UidGenerator, WorkerIdAssigner,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A registry of the example's own; services use `at_default_path()` (or
    // `$UIDGEN_WORKER_DB`) so every process on the machine shares one file.
    let dir = std::env::temp_dir().join(format!("uidgen-example-{}", std::process::id()));
    let registry = EmbeddedWorkerIdAssigner::new(dir.join("workers.sqlite3"));

    let bits = BitsAllocator::default();
    let first = registry.assign_worker_id(&bits)?;
    let second = registry.assign_worker_id(&bits)?;
    println!("{first}\n{second}");
    assert_ne!(first.worker_id, second.worker_id);

    let generator = CachedUidGenerator::builder()
        .allocator(bits)
        .worker_id(first.worker_id)
        .build()?;
    let id = generator.next_uid()?;
    println!("{}", generator.parse_uid(id)?);
    assert_eq!(generator.parse_uid(id)?.worker_id, first.worker_id);

    std::fs::remove_dir_all(dir)?;
    Ok(())
}
