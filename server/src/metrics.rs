//! Prometheus metrics (prometheus-client, OpenMetrics text). Counters that the generators
//! keep themselves are copied in at scrape time.

use crate::config::SNOWFLAKE_GRANT;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RouteTag {
    pub(crate) route: &'static str,
    /// Borrowed for the snowflake routes, so their hot path allocates no label.
    pub(crate) tag: Cow<'static, str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct TagLabel {
    pub(crate) tag: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CallLabel {
    pub(crate) call: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct StatusLabel {
    pub(crate) status: u16,
}

fn store_call_histogram() -> Histogram {
    // 0.25 ms to about 4 s.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 15))
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// Every metric the service exports.
pub(crate) struct Metrics {
    registry: Registry,
    pub(crate) ids_served: Family<RouteTag, Counter>,
    pub(crate) refused: Family<StatusLabel, Counter>,
    pub(crate) store_calls: Family<CallLabel, Histogram, fn() -> Histogram>,
    pub(crate) store_call_failures: Family<CallLabel, Counter>,
    pub(crate) ring_ids: Gauge,
    pub(crate) ring_capacity: Gauge,
    pub(crate) time_ahead: FloatGauge,
    pub(crate) lease_renewals: Counter,
    pub(crate) lease_renewal_failures: Counter,
    pub(crate) clock_rollbacks: Counter,
    pub(crate) rejected_takes: Family<TagLabel, Counter>,
    pub(crate) segment_ids_left: Family<TagLabel, Gauge>,
    pub(crate) segment_runway: Family<TagLabel, FloatGauge>,
    pub(crate) ready: Gauge,
    pub(crate) store_data_loss: Counter,
    pub(crate) waiting_for_clock: Gauge,
    pub(crate) period_ahead: Family<TagLabel, Gauge>,
    pub(crate) leases_taken_again: Counter,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("uidgen");
        let metrics = Self {
            ids_served: Family::default(),
            refused: Family::default(),
            store_calls: Family::new_with_constructor(store_call_histogram),
            store_call_failures: Family::default(),
            ring_ids: Gauge::default(),
            ring_capacity: Gauge::default(),
            time_ahead: FloatGauge::default(),
            lease_renewals: Counter::default(),
            lease_renewal_failures: Counter::default(),
            clock_rollbacks: Counter::default(),
            rejected_takes: Family::default(),
            segment_ids_left: Family::default(),
            segment_runway: Family::default(),
            ready: Gauge::default(),
            store_data_loss: Counter::default(),
            waiting_for_clock: Gauge::default(),
            period_ahead: Family::default(),
            leases_taken_again: Counter::default(),
            registry: Registry::default(),
        };
        registry.register(
            "ids_served",
            "IDs handed out, by route and tag (@snowflake for snowflake IDs)",
            metrics.ids_served.clone(),
        );
        registry.register(
            "requests_refused",
            "Requests answered with an error, by HTTP status",
            metrics.refused.clone(),
        );
        registry.register(
            "store_call_seconds",
            "Time of calls to the store made by the service (readiness probe, ranges, tag set-up)",
            metrics.store_calls.clone(),
        );
        registry.register(
            "store_call_failures",
            "Calls to the store that failed",
            metrics.store_call_failures.clone(),
        );
        registry.register(
            "ring_ids",
            "Snowflake IDs waiting in the ring",
            metrics.ring_ids.clone(),
        );
        registry.register(
            "ring_capacity",
            "Slots in the snowflake ring",
            metrics.ring_capacity.clone(),
        );
        registry.register(
            "time_ahead_seconds",
            "How far the newest padded tick is ahead of the clock (borrowed time)",
            metrics.time_ahead.clone(),
        );
        registry.register(
            "lease_renewals",
            "Times the worker ID's keeper recorded a higher time mark (each renews the lease)",
            metrics.lease_renewals.clone(),
        );
        registry.register(
            "lease_renewal_failures",
            "Times the worker ID's keeper could not renew the lease",
            metrics.lease_renewal_failures.clone(),
        );
        registry.register(
            "clock_rollbacks",
            "Times the padding thread found the clock behind its previous reading",
            metrics.clock_rollbacks.clone(),
        );
        registry.register(
            "rejected_takes",
            "Takes that found no ID ready (ring or fetched ranges empty), by tag",
            metrics.rejected_takes.clone(),
        );
        registry.register(
            "segment_ids_left",
            "IDs left in a tag's fetched ranges",
            metrics.segment_ids_left.clone(),
        );
        registry.register(
            "segment_runway_seconds",
            "How long a tag's fetched IDs last at the recent rate",
            metrics.segment_runway.clone(),
        );
        registry.register(
            "ready",
            "1 while /readyz answers 200",
            metrics.ready.clone(),
        );
        registry.register(
            "store_data_loss",
            "Times a store was found to have lost data (a range below one handed out, an \
             identity changed or gone, a lease row gone); /readyz names the last",
            metrics.store_data_loss.clone(),
        );
        registry.register(
            "snowflake_waiting_for_clock",
            "1 while the snowflake ring waits for the clock (a step back past the rollback \
             allowance, or a worker ID's mark ahead); /readyz says until when",
            metrics.waiting_for_clock.clone(),
        );
        registry.register(
            "period_ahead_of_clock",
            "1 while a period tag serves a period ahead of the clock's (begun under a clock \
             that ran ahead)",
            metrics.period_ahead.clone(),
        );
        registry.register(
            "leases_taken_again",
            "Times the snowflake routes took a new lease after theirs was lost",
            metrics.leases_taken_again.clone(),
        );
        Self {
            registry,
            ..metrics
        }
    }

    pub(crate) fn served(&self, route: &'static str, tag: &str, n: usize) {
        let tag = if tag == SNOWFLAKE_GRANT {
            Cow::Borrowed(SNOWFLAKE_GRANT)
        } else {
            Cow::Owned(tag.to_owned())
        };
        self.ids_served
            .get_or_create(&RouteTag { route, tag })
            .inc_by(n as u64);
    }

    pub(crate) fn store_call(&self, call: &'static str, took: Duration, ok: bool) {
        let label = CallLabel { call };
        self.store_calls
            .get_or_create(&label)
            .observe(took.as_secs_f64());
        if !ok {
            self.store_call_failures.get_or_create(&label).inc();
        }
    }

    /// The OpenMetrics text of every metric.
    pub(crate) fn encode(&self) -> String {
        let mut body = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut body, &self.registry);
        body
    }
}

/// Sets a counter to a total kept elsewhere (it only ever grows there).
pub(crate) fn set_counter(counter: &Counter, total: u64) {
    counter.inner().store(total, Ordering::Relaxed);
}
