//! Worker IDs from the embedded store (a SQLite file), two ways: leased (the default:
//! the lowest free worker ID, given back on drop and reused above its time mark, so
//! launches never run out), and UidGenerator's one `WORKER_NODE` row per launch (a new
//! worker ID every launch, never reused, so it needs a layout with many worker bits).
//! Run: `cargo run -p uidgen --example embedded_registry --features sqlite`.

use uidgen::{
    BitsAllocator, CachedUidGenerator, DefaultUidGenerator, EmbeddedWorkerIdAssigner, Preset,
    UidGenerator,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A file of the example's own; services call `.embedded()`, which uses
    // `$UIDGEN_WORKER_DB` or the user's data folder, so every process on the machine
    // shares one file.
    let dir = std::env::temp_dir().join(format!("uidgen-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("workers.sqlite3");
    let file = file.to_str().ok_or("a temporary path that is not UTF-8")?;

    // Leases: three launches in a row all get worker ID 0, and never repeat an ID.
    let mut last = 0;
    for launch in 1..=3 {
        let generator = CachedUidGenerator::builder().store(file)?.build()?;
        let id = generator.next_uid()?;
        let parts = generator.parse_uid(id)?;
        println!("launch {launch}, leased: {parts}");
        assert_eq!(parts.worker_id, 0);
        assert!(id > last);
        last = id;
    } // each generator gives its worker ID back here

    // One row per launch, as UidGenerator: a layout with 21 worker bits.
    let bits = BitsAllocator::preset(Preset::UidGeneratorReadme)?;
    let registry = EmbeddedWorkerIdAssigner::new(dir.join("rows.sqlite3"));
    for launch in 1..=2 {
        let generator = DefaultUidGenerator::builder()
            .allocator(bits)
            .worker_id_from(&registry)?
            .build()?;
        let parts = generator.parse_uid(generator.next_uid()?)?;
        println!("launch {launch}, one row per launch: {parts}");
        assert_eq!(parts.worker_id, launch);
    }
    println!("{}", registry.usage(&bits)?);

    // With the default layout (10 worker bits) the same registry would stop after 1023
    // launches: refused, saying so.
    let refused = DefaultUidGenerator::builder()
        .worker_id_from(&registry)
        .unwrap_err();
    println!("refused: {refused}");

    std::fs::remove_dir_all(dir)?;
    Ok(())
}
