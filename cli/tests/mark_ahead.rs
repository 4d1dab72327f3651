//! A worker ID's time mark ahead of the clock, on the command line: `next` (the cached
//! generator, flat out) borrows future ticks and leaves its worker ID's mark ahead of the
//! clock; `next --generator default` on that worker ID right after must wait for the
//! clock to pass the mark, or say that a previous holder used ticks up to it — never
//! "clock moved backwards", which the clock did not do.

mod common;

use common::{output, printed_ids, stderr_of, uidgen};
use std::process::Output;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use uidgen::BitsAllocator;

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The cached generator's `next -n COUNT`, then the default generator's `next -n 5`, on
/// `worker_id` with the layout options `layout`. Returns the first run's IDs, the second
/// run's output, and how far ahead of the clock the first run's last ID was when the
/// second started (negative: behind).
fn cached_then_default(
    worker_id: &str,
    count: &str,
    layout: &[&str],
    bits: &BitsAllocator,
) -> (Vec<u64>, Output, i64) {
    let args = |extra: &[&str]| {
        let mut all = vec!["next", "--worker-id", worker_id];
        all.extend_from_slice(layout);
        all.extend_from_slice(extra);
        uidgen(&all)
    };
    let first = printed_ids(&output(&mut args(&["-n", count])));
    let last_at = bits.parse(*first.last().unwrap()).unwrap().timestamp_millis;
    let lead = last_at as i64 - now_millis() as i64;
    let second = output(&mut args(&["-n", "5", "--generator", "default"]));
    (first, second, lead)
}

/// The second run either printed five IDs above the first run's, or failed naming the
/// worker ID and its mark; it never blamed the clock. Returns whether it succeeded.
fn assert_above_or_names_the_mark(first: &[u64], second: &Output, worker_id: &str) -> bool {
    let err = stderr_of(second);
    assert!(!err.contains("backwards"), "the clock was blamed: {err}");
    assert!(!err.contains("panicked"), "{err}");
    if second.status.success() {
        let ids = printed_ids(second);
        let highest = first.iter().max().copied().unwrap_or(0);
        assert_eq!(ids.len(), 5);
        assert!(
            ids.iter().all(|&id| id > highest),
            "{ids:?} not all above the first run's {highest}"
        );
        return true;
    }
    assert_eq!(second.status.code(), Some(1), "{err}");
    for part in [
        &format!("a previous holder of worker ID {worker_id} used ticks up to ") as &str,
        "time mark",
        "retry in",
    ] {
        assert!(err.contains(part), "{part:?} not in: {err}");
    }
    false
}

/// The review's reproduction, as it gave it: ten rounds on worker ID 9 and the default
/// layout. (A debug build writes its IDs too slowly to borrow much on this layout, so the
/// next test makes sure the mark is ahead.)
#[test]
fn the_reviews_rounds_never_say_the_clock_moved_backwards() {
    let bits = BitsAllocator::default();
    let mut succeeded = 0;
    for _ in 0..10 {
        let (first, second, _) = cached_then_default("9", "100000", &[], &bits);
        succeeded += usize::from(assert_above_or_names_the_mark(&first, &second, "9"));
    }
    eprintln!("{succeeded} of 10 default runs succeeded; the others named the mark");
}

/// 32 IDs a millisecond: 12,800 IDs fill 400 ms of ticks, which the cached generator
/// borrows from the future in a fraction of that (a debug build on a loaded CI machine
/// took up to half a second to print 100,000 IDs, so the count is small enough for the
/// borrowing to outrun the clock there too): the mark it leaves is a few hundred
/// milliseconds ahead of the clock, within the default generator's 1 s wait.
#[test]
fn a_mark_a_few_hundred_ms_ahead_is_waited_for_every_round() {
    let layout = ["--layout", "48/10/5", "--unit", "ms"];
    let bits = BitsAllocator::builder()
        .bits(48, 10, 5)
        .unit(uidgen::TimeUnit::Milliseconds)
        .epoch("2026-01-01")
        .build()
        .unwrap();
    let mut ahead = Vec::new();
    for _ in 0..10 {
        let (first, second, lead) = cached_then_default("10", "12800", &layout, &bits);
        assert!(
            assert_above_or_names_the_mark(&first, &second, "10"),
            "a mark {lead} ms ahead is within the 1 s wait: {}",
            stderr_of(&second)
        );
        ahead.push(lead);
    }
    // Without a mark ahead of the clock this test would prove nothing.
    assert!(
        ahead.iter().filter(|&&lead| lead > 0).count() >= 5,
        "the marks were not ahead of the clock: {ahead:?} ms"
    );
}

/// 16 IDs a millisecond: 64,000 IDs fill 4 s of ticks, past the default generator's 1 s
/// wait: it fails at once, naming the mark, until the clock passes it. (At 64/ms, the
/// 3.1 s of ticks of 200,000 IDs left only 1.3 s of lead after a loaded CI machine's
/// debug build had printed them.)
#[test]
fn a_mark_seconds_ahead_is_an_error_naming_it_until_the_clock_passes_it() {
    let layout = ["--layout", "47/12/4", "--unit", "ms"];
    let bits = BitsAllocator::builder()
        .bits(47, 12, 4)
        .unit(uidgen::TimeUnit::Milliseconds)
        .epoch("2026-01-01")
        .build()
        .unwrap();
    let (first, second, lead) = cached_then_default("11", "64000", &layout, &bits);
    assert!(lead > 1_500, "the mark was only {lead} ms ahead");
    assert!(
        !assert_above_or_names_the_mark(&first, &second, "11"),
        "printed IDs with the mark {lead} ms ahead: it cannot have waited that long"
    );
    assert!(second.stdout.is_empty());
    // The mark named is at or after the first run's last ID (same text format, so the
    // strings sort as the instants).
    let err = stderr_of(&second);
    let mark = err
        .split("used ticks up to ")
        .nth(1)
        .and_then(|rest| rest.split(" UTC").next())
        .expect(&err);
    let last = bits.format_instant(bits.parse(*first.last().unwrap()).unwrap().timestamp_millis);
    assert!(
        mark >= last.as_str(),
        "mark {mark} before the last ID's {last}"
    );
    // Once the clock passes the mark, the default generator goes on above it.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let mut again = vec![
            "next",
            "--worker-id",
            "11",
            "-n",
            "5",
            "--generator",
            "default",
        ];
        again.extend_from_slice(&layout);
        let again = output(&mut uidgen(&again));
        if assert_above_or_names_the_mark(&first, &again, "11") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still refused: {}",
            stderr_of(&again)
        );
    }
}
