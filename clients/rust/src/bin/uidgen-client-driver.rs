//! The driver every uidgen client has (`clients/PROTOCOL.md`), for the fleet test:
//! `uidgen-client-driver SERVERS TAG THREADS IDS_PER_THREAD OUT`, the token in
//! `UIDGEN_TOKEN`. Thread `t` writes its segment IDs to `OUT.t` and its snowflake IDs to
//! `OUT.t.snowflake`, one decimal a line in the order taken; then one JSON line of totals.

use std::io::Write;
use std::time::Instant;
use uidgen_client::Client;

fn main() {
    if let Err(e) = run() {
        eprintln!("uidgen-client-driver: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [servers, tag, threads, per_thread, out] = args.as_slice() else {
        return Err("usage: uidgen-client-driver SERVERS TAG THREADS IDS_PER_THREAD OUT".into());
    };
    let number = |what: &str, text: &str| {
        text.parse::<usize>()
            .map_err(|_| format!("{what} {text:?} is not a number"))
    };
    let (threads, per_thread) = (
        number("THREADS", threads)?,
        number("IDS_PER_THREAD", per_thread)?,
    );
    let mut builder = Client::builder(servers.split(','));
    if let Ok(token) = std::env::var("UIDGEN_TOKEN") {
        builder = builder.token(token);
    }
    let client = builder.build().map_err(|e| e.to_string())?;
    let start = std::sync::Barrier::new(threads);
    let results: Vec<Result<u128, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (client, start) = (&client, &start);
                scope.spawn(move || -> Result<u128, String> {
                    let mut ids = Vec::with_capacity(per_thread);
                    let mut longest = 0u128;
                    start.wait();
                    for _ in 0..per_thread {
                        let asked = Instant::now();
                        ids.push(client.next_id(tag).map_err(|e| e.to_string())?);
                        longest = longest.max(asked.elapsed().as_micros());
                    }
                    let snowflakes = (0..1_000)
                        .map(|_| client.snowflake())
                        .collect::<Result<Vec<u64>, _>>()
                        .map_err(|e| e.to_string())?;
                    write(&format!("{out}.{t}"), &ids)?;
                    write(&format!("{out}.{t}.snowflake"), &snowflakes)?;
                    Ok(longest)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let mut longest = 0;
    for result in results {
        longest = longest.max(result?);
    }
    let failed = client.close();
    if let Some(e) = failed.first() {
        eprintln!("uidgen-client-driver: not given back: {e}");
    }
    println!(
        "{}",
        serde_json::json!({"ids": threads * per_thread, "failovers": client.failovers(), "max_call_ms": longest / 1000})
    );
    Ok(())
}

fn write(path: &str, ids: &[u64]) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = std::io::BufWriter::new(file);
    for id in ids {
        writeln!(out, "{id}").map_err(|e| format!("{path}: {e}"))?;
    }
    out.flush().map_err(|e| format!("{path}: {e}"))
}
