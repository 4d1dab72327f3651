//! The embedded store's lease clock: every process of the machine reads the same
//! monotonic clock, so a step of the wall clock (an NTP correction, a clock set by hand,
//! a process under a faked time) never makes a live holder's lease look expired, nor an
//! expired one live.
//!
//! It is the kernel's boot clock (`/proc/uptime`, which counts suspend and never steps)
//! plus a base in Unix milliseconds that the first process of each boot writes into the
//! file (`uidgen_clock`, keyed by the kernel's boot ID), so readings stay near the wall
//! clock, leases of an earlier boot (whose holders are gone) are expired, and rows of an
//! older uidgen (plain wall-clock times) compare as they did. Where the kernel says
//! neither (not Linux), it is the wall clock.

use rusqlite::functions::FunctionFlags;
use rusqlite::Connection;

/// Registers `uidgen_lease_now_ms()` on `conn`.
pub(super) fn install(conn: &Connection) -> rusqlite::Result<()> {
    let base = match (boot_id(), uptime_ms()) {
        (Some(boot), Some(uptime)) => {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS uidgen_clock (
                     boot_id TEXT NOT NULL PRIMARY KEY,
                     base_ms INTEGER NOT NULL
                 )",
            )?;
            let base = wall_ms().saturating_sub(uptime);
            conn.execute(
                "INSERT OR IGNORE INTO uidgen_clock (boot_id, base_ms) VALUES (?1, ?2)",
                rusqlite::params![boot, base],
            )?;
            Some(conn.query_row(
                "SELECT base_ms FROM uidgen_clock WHERE boot_id = ?1",
                [boot],
                |row| row.get::<_, i64>(0),
            )?)
        }
        _ => None,
    };
    conn.create_scalar_function(
        "uidgen_lease_now_ms",
        0,
        FunctionFlags::SQLITE_UTF8,
        move |_| {
            Ok(match (base, uptime_ms()) {
                (Some(base), Some(uptime)) => base.saturating_add(uptime),
                _ => wall_ms(),
            })
        },
    )
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_owned()).filter(|id| !id.is_empty())
}

/// Milliseconds since boot, suspend included (10 ms resolution).
fn uptime_ms() -> Option<i64> {
    let text = std::fs::read_to_string("/proc/uptime").ok()?;
    let seconds: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some((seconds * 1000.0) as i64)
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_near_the_wall_clock_and_shared_by_connections_of_one_file() {
        let dir = std::env::temp_dir().join(format!("uidgen-lease-clock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("clock.sqlite3");
        let (a, b) = (
            Connection::open(&path).unwrap(),
            Connection::open(&path).unwrap(),
        );
        install(&a).unwrap();
        install(&b).unwrap();
        let read = |c: &Connection| -> i64 {
            c.query_row("SELECT uidgen_lease_now_ms()", [], |r| r.get(0))
                .unwrap()
        };
        let (x, y) = (read(&a), read(&b));
        assert!((x - y).abs() < 1_000, "{x} vs {y}");
        // Within a minute of the wall clock on a machine whose clock was not stepped.
        assert!((x - wall_ms()).abs() < 60_000, "{x} vs {}", wall_ms());
        std::fs::remove_dir_all(dir).ok();
    }
}
