//! What `/status` and `/status.json` show: the service, its store, its worker lease, each
//! tag's ranges and what `/readyz` says of each source, read at one moment.

use super::{read, Ids};
use serde::Serialize;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use utoipa::ToSchema;

/// The service at one moment.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Status {
    /// The version of `uidgen serve`.
    pub(crate) version: &'static str,
    /// The commit it was built from (`unknown` outside a git checkout).
    pub(crate) commit: &'static str,
    /// When this was read (Unix ms).
    pub(crate) now_ms: u64,
    pub(crate) uptime_seconds: f64,
    /// What `/readyz` answers: some ID source can serve.
    pub(crate) ready: bool,
    pub(crate) store: StoreStatus,
    pub(crate) snowflake: SnowflakeStatus,
    /// The worker ID's lease; absent for a fixed worker ID.
    pub(crate) lease: Option<LeaseStatus>,
    /// Every segment tag served, by name.
    pub(crate) tags: Vec<TagStatus>,
    /// Each line of `/readyz`.
    pub(crate) sources: Vec<SourceStatus>,
    /// The last data loss this process found in a store.
    pub(crate) data_loss: Option<String>,
}

/// The store the service leases its worker ID from and takes ranges of.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StoreStatus {
    /// `sqlite`, `mysql`, `postgres`, `redis`, `etcd` (`custom`: a store from elsewhere).
    pub(crate) kind: String,
    /// Where it is, never with a password.
    pub(crate) location: String,
    /// Its identity as this process adopted it: a random number, then when it was made
    /// (Unix ms).
    pub(crate) identity: Option<String>,
    /// The last probe (once a second) answered within the last 3 s.
    pub(crate) answering: bool,
    /// How long ago it last answered a probe; absent if it never has.
    pub(crate) last_answer_seconds_ago: Option<f64>,
    /// How long the last probe took, answered or not; while one is in flight (a silent
    /// store), how long it has taken so far, if that is longer.
    pub(crate) last_latency_ms: f64,
    /// How long ago the probes began failing, while they fail.
    pub(crate) failing_for_seconds: Option<f64>,
    /// When they began failing (Unix ms), while they fail: when the first failing probe
    /// was sent (a probe still waiting on a silent store counts from when it was sent).
    pub(crate) failing_since_ms: Option<u64>,
    /// Why it counts as not answering: its last error, or how long it has been silent.
    pub(crate) error: Option<String>,
}

/// The snowflake ring.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SnowflakeStatus {
    pub(crate) worker_id: u64,
    /// IDs ready in the ring, and its slots.
    pub(crate) ring_ids: u64,
    pub(crate) ring_capacity: u64,
    /// How far the newest tick in use is ahead of the clock (borrowed seconds).
    pub(crate) time_ahead_seconds: f64,
    /// Why padding waits for the clock, while it does.
    pub(crate) waiting_for_clock: Option<String>,
}

/// The worker ID's lease.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LeaseStatus {
    pub(crate) worker_id: u64,
    /// Who holds it: this process (host and process ID).
    pub(crate) holder: String,
    /// How long it lasts if no renewal comes (0 once lapsed).
    pub(crate) expires_in_seconds: f64,
    /// The time mark recorded in the store (Unix ms): no tick past it is used before a
    /// higher one is recorded. Absent once the lease was lost.
    pub(crate) time_mark_ms: Option<u64>,
    /// Renewals recorded, and those that failed while the lease still lasted.
    pub(crate) renewals: u64,
    pub(crate) renewal_failures: u64,
    /// Why no new tick may be started now, if so (the lease lost, or its store failing).
    pub(crate) trouble: Option<String>,
}

/// One segment tag.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TagStatus {
    pub(crate) tag: String,
    /// The range IDs are handed out from now, and the next one fetched (if any).
    pub(crate) current: Option<RangeStatus>,
    pub(crate) next: Option<RangeStatus>,
    /// Every range held: the current one, then those fetched ahead.
    pub(crate) ranges_held: u64,
    /// IDs left in the ranges held.
    pub(crate) ids_left: u64,
    /// The step of the last range fetched.
    pub(crate) step: u64,
    pub(crate) ranges_fetched: u64,
    /// When the last range was fetched (Unix ms).
    pub(crate) last_fetched_ms: Option<u64>,
    /// IDs handed out a second, recently.
    pub(crate) rate_per_second: f64,
    /// How long the IDs left last at that rate.
    pub(crate) runway_seconds: Option<f64>,
    /// The store's last error, while it fails.
    pub(crate) store_error: Option<String>,
}

/// A range of IDs a tag holds: `start` to `end` - 1.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RangeStatus {
    pub(crate) start: u64,
    /// One past its last ID.
    pub(crate) end: u64,
    /// IDs of it handed out.
    pub(crate) used: u64,
    pub(crate) size: u64,
}

/// One line of `/readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SourceStatus {
    /// `snowflake`, `tag "order"`, `store …` or `data loss found`.
    pub(crate) source: String,
    /// Whether it can serve IDs now; absent for what is not an ID source.
    pub(crate) serving: Option<bool>,
    pub(crate) says: String,
}

impl Ids {
    /// The service as `/status` shows it. Takes no store call (the probe's last answer
    /// is shown): safe on the async runtime.
    pub(crate) fn status(&self) -> Status {
        let now_ms = unix_ms(SystemTime::now());
        let since_start = self.started.elapsed();
        let ms_ago = |at_ms: u64| {
            Duration::from_millis((since_start.as_millis() as u64).saturating_sub(at_ms))
        };
        let ok_at = self.store_ok_at.load(Ordering::Relaxed);
        let error = self.store_trouble();
        let in_flight = self.probe_started_ms.load(Ordering::Relaxed);
        let failing_since = match self.store_failing_since_ms.load(Ordering::Relaxed) {
            0 if error.is_some() && in_flight != 0 => Some(in_flight),
            0 => None,
            since => Some(since),
        };
        let mut latency_ms = self.store_latency_us.load(Ordering::Relaxed) as f64 / 1000.0;
        if in_flight != 0 {
            latency_ms = latency_ms.max(now_ms.saturating_sub(in_flight) as f64);
        }
        let store = StoreStatus {
            kind: self.store.kind().feature().unwrap_or("custom").to_owned(),
            location: self.store.describe(),
            identity: self.store.identity(),
            answering: error.is_none(),
            last_answer_seconds_ago: (ok_at != 0).then(|| ms_ago(ok_at).as_secs_f64()),
            last_latency_ms: latency_ms,
            failing_for_seconds: failing_since
                .map(|since| now_ms.saturating_sub(since) as f64 / 1000.0),
            failing_since_ms: failing_since,
            error,
        };
        let generator = self.snowflake();
        let stats = generator.stats();
        let snowflake = SnowflakeStatus {
            worker_id: uidgen::UidGenerator::worker_id(&*generator),
            ring_ids: stats.len as u64,
            ring_capacity: stats.capacity as u64,
            time_ahead_seconds: generator.time_ahead().as_secs_f64(),
            waiting_for_clock: generator.waiting_for_clock(),
        };
        let lease = generator.lease().map(|lease| LeaseStatus {
            worker_id: lease.worker_id(),
            holder: lease.holder().to_owned(),
            expires_in_seconds: lease.expires_in().as_secs_f64(),
            time_mark_ms: lease.time_mark_ms(),
            renewals: stats.lease_renewals,
            renewal_failures: stats.lease_renewal_failures,
            trouble: generator.worker_id_trouble(),
        });
        let mut tags: Vec<TagStatus> = read(&self.segments)
            .iter()
            .map(|(tag, generator)| tag_status(tag, generator.stats()))
            .collect();
        tags.sort_by(|a, b| a.tag.cmp(&b.tag));
        let (ready, sources) = self.sources();
        Status {
            version: crate::VERSION,
            commit: crate::COMMIT,
            now_ms,
            uptime_seconds: since_start.as_secs_f64(),
            ready,
            store,
            snowflake,
            lease,
            tags,
            sources: sources
                .into_iter()
                .map(|s| SourceStatus {
                    source: s.source,
                    serving: s.serving,
                    says: s.says,
                })
                .collect(),
            data_loss: uidgen::last_data_loss(),
        }
    }
}

fn tag_status(tag: &str, stats: uidgen::SegmentStats) -> TagStatus {
    let range = |r: &uidgen::HeldRange| RangeStatus {
        start: r.start,
        end: r.end,
        used: r.next.saturating_sub(r.start),
        size: r.end.saturating_sub(r.start),
    };
    TagStatus {
        tag: tag.to_owned(),
        current: stats.ranges.first().map(range),
        next: stats.ranges.get(1).map(range),
        ranges_held: stats.ranges.len() as u64,
        ids_left: stats.ids_left,
        step: stats.step,
        ranges_fetched: stats.ranges_fetched,
        last_fetched_ms: stats.last_fetched.map(unix_ms),
        rate_per_second: stats.rate_per_sec,
        runway_seconds: stats.runway.map(|r| r.as_secs_f64()),
        store_error: stats.store_error,
    }
}

pub(super) fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
