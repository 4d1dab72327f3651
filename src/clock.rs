//! Where generators read the time ([`SystemClock`] in production, [`ManualClock`] in
//! tests that move time forwards and backwards), and how instants print (UTC).

use crate::sync::{Arc, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in milliseconds since the Unix epoch.
///
/// Generators read it on the caller's thread as well as their own: the default
/// generator on every call, the cached generator's padding thread, and a taker of the
/// cached generator that fills the ring while that thread is late. So it should answer
/// at once: a reading that blocks blocks the call that made it.
pub trait Clock: Send + Sync + 'static {
    /// The current time, in milliseconds since 1970-01-01 UTC.
    fn now_millis(&self) -> u64;

    /// Which clocks share time marks: generators on clocks of one domain (with the same
    /// worker ID and layout) never repeat each other's IDs in a process. Every clock but
    /// [`ManualClock`] is the system's domain, 0; each manual clock (with its clones) has
    /// its own, so a test's made-up time never pushes real generators ahead.
    #[doc(hidden)]
    fn mark_domain(&self) -> usize {
        0
    }
}

/// The operating system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> u64 {
        // A clock set before 1970 reads as 1970: the layout check then reports it as
        // before the epoch instead of this panicking.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock that moves only when told to. Clones share one reading, so a test keeps a
/// clone and steers the generator that holds another.
///
/// ```
/// use uidgen::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new(1_000_000);
/// let handle = clock.clone();
/// handle.advance(Duration::from_secs(2));
/// assert_eq!(clock.now_millis(), 1_002_000);
/// handle.rewind(Duration::from_secs(1));
/// assert_eq!(clock.now_millis(), 1_001_000);
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    millis: Arc<AtomicU64>,
    /// Its own mark domain, shared by clones.
    domain: usize,
}

impl ManualClock {
    /// A clock reading `unix_millis`.
    pub fn new(unix_millis: u64) -> Self {
        Self {
            millis: Arc::new(AtomicU64::new(unix_millis)),
            // Never 0 (the system clock's), never another clock's.
            domain: crate::sync::unique_instance_id() as usize,
        }
    }

    /// A clock reading the system's time now.
    pub fn starting_now() -> Self {
        Self::new(SystemClock.now_millis())
    }

    /// Sets the reading.
    pub fn set(&self, unix_millis: u64) {
        self.millis.store(unix_millis, Ordering::SeqCst);
    }

    /// Moves the reading forwards.
    pub fn advance(&self, by: Duration) {
        self.millis.fetch_add(duration_millis(by), Ordering::SeqCst);
    }

    /// Moves the reading backwards (saturating at 1970).
    pub fn rewind(&self, by: Duration) {
        let by = duration_millis(by);
        // fetch_update cannot fail when the closure always returns Some.
        let _ = self
            .millis
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |m| {
                Some(m.saturating_sub(by))
            });
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> u64 {
        self.millis.load(Ordering::SeqCst)
    }

    fn mark_domain(&self) -> usize {
        self.domain
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now_millis(&self) -> u64 {
        (**self).now_millis()
    }

    fn mark_domain(&self) -> usize {
        (**self).mark_domain()
    }
}

fn duration_millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Formats Unix milliseconds as `yyyy-MM-dd HH:mm:ss` in UTC, with `.SSS` when `with_millis`.
pub(crate) fn format_utc(unix_millis: u64, with_millis: bool) -> String {
    use chrono::{DateTime, Utc};
    let Some(dt) = i64::try_from(unix_millis)
        .ok()
        .and_then(DateTime::<Utc>::from_timestamp_millis)
    else {
        // Past chrono's calendar (year 262143): say so rather than print a wrong date.
        return "after the year 262143".to_owned();
    };
    if with_millis {
        dt.format("%Y-%m-%d %H:%M:%S%.3f").to_string()
    } else {
        dt.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

/// [`format_utc`], with milliseconds only when the instant has some.
pub(crate) fn format_instant(unix_millis: u64) -> String {
    format_utc(unix_millis, !unix_millis.is_multiple_of(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_in_utc() {
        assert_eq!(format_utc(1_463_702_400_000, false), "2016-05-20 00:00:00");
        assert_eq!(
            format_utc(1_463_702_400_123, true),
            "2016-05-20 00:00:00.123"
        );
        assert_eq!(format_instant(1_463_702_400_999), "2016-05-20 00:00:00.999");
        assert_eq!(format_utc(u64::MAX, false), "after the year 262143");
    }
}
