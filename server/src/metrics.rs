//! Prometheus metrics (prometheus-client, OpenMetrics text). Counters that the generators
//! keep themselves are copied in at scrape time.

use crate::tokens::SNOWFLAKE_GRANT;
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
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
struct RouteLabel {
    route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    commit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct StatusLabel {
    pub(crate) status: u16,
}

/// Request durations: a histogram whose observation is a few relaxed atomic adds, with
/// no lock. Every request records one, from every worker thread; prometheus-client's
/// `Histogram` takes a write lock per observation, and two cores contending for it at
/// 50,000 requests a second cost the segment routes a tenth of their rate in
/// `scripts/loadtest`.
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestHistogram(Arc<RequestCells>);

/// Upper bounds in nanoseconds: 25 µs, doubling, to about 1.6 s; then +Inf.
const REQUEST_BOUNDS: usize = 17;

fn request_bound_nanos(bucket: usize) -> u64 {
    25_000 << bucket
}

#[derive(Debug, Default)]
struct RequestCells {
    /// Per bucket (not cumulative); the last is +Inf.
    buckets: [AtomicU64; REQUEST_BOUNDS + 1],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl RequestHistogram {
    fn observe(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let bucket = (0..REQUEST_BOUNDS)
            .find(|&b| nanos <= request_bound_nanos(b))
            .unwrap_or(REQUEST_BOUNDS);
        let cells = &self.0;
        cells.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        cells.count.fetch_add(1, Ordering::Relaxed);
        cells.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

impl TypedMetric for RequestHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for RequestHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let cells = &self.0;
        let buckets: Vec<(f64, u64)> = (0..=REQUEST_BOUNDS)
            .map(|b| {
                let bound = if b < REQUEST_BOUNDS {
                    request_bound_nanos(b) as f64 / 1e9
                } else {
                    f64::MAX
                };
                (bound, cells.buckets[b].load(Ordering::Relaxed))
            })
            .collect();
        // Read after the buckets: a scrape racing an observation may count it in the
        // total but not yet in a bucket, never the other way.
        let count = cells.count.load(Ordering::Relaxed);
        let sum = cells.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

fn store_call_histogram() -> Histogram {
    // 0.25 ms to about 4 s.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 15))
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// The routes that hand out IDs, as the `route` label of `uidgen_ids_served` says them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Leaf,
    V1,
    V1Range,
    Tinyid,
    TinyidSegment,
    CosId,
    CosIdSegment,
}

impl Route {
    const COUNT: usize = 7;

    fn label(self) -> &'static str {
        match self {
            Route::Leaf => "leaf",
            Route::V1 => "v1",
            Route::V1Range => "v1_range",
            Route::Tinyid => "tinyid",
            Route::TinyidSegment => "tinyid_segment",
            Route::CosId => "cosid",
            Route::CosIdSegment => "cosid_segment",
        }
    }
}

/// One tag's `ids_served` counters, by route, each made on first use (so /metrics shows
/// no series for a route that never served the tag). Counters share their value with the
/// family's, so the hot path increments one without hashing a label or locking the family.
type ServedSlots = [OnceLock<Counter>; Route::COUNT];

/// Every metric the service exports.
pub(crate) struct Metrics {
    registry: Registry,
    pub(crate) ids_served: Family<RouteTag, Counter>,
    served_snowflake: ServedSlots,
    served_tags: RwLock<HashMap<String, ServedSlots>>,
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
    pub(crate) segment_ranges_fetched: Family<TagLabel, Counter>,
    pub(crate) ready: Gauge,
    pub(crate) store_data_loss: Counter,
    pub(crate) waiting_for_clock: Gauge,
    pub(crate) period_ahead: Family<TagLabel, Gauge>,
    pub(crate) leases_taken_again: Counter,
    /// By the route's index in `ROUTE_TEMPLATES`: the family's series, resolved once.
    request_durations: Vec<RequestHistogram>,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("uidgen");
        let metrics = Self {
            ids_served: Family::default(),
            served_snowflake: ServedSlots::default(),
            served_tags: RwLock::default(),
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
            segment_ranges_fetched: Family::default(),
            ready: Gauge::default(),
            store_data_loss: Counter::default(),
            waiting_for_clock: Gauge::default(),
            period_ahead: Family::default(),
            leases_taken_again: Counter::default(),
            request_durations: Vec::new(),
            registry: Registry::default(),
        };
        let durations: Family<RouteLabel, RequestHistogram> = Family::default();
        let request_durations = crate::route_table::ROUTE_TEMPLATES
            .iter()
            .map(|route| durations.get_or_create(&RouteLabel { route }).clone())
            .collect();
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's head read to its answer, by route template ((other) for any \
             path no route takes)",
            durations,
        );
        let build: Family<BuildLabels, Gauge> = Family::default();
        build
            .get_or_create(&BuildLabels {
                version: crate::VERSION,
                commit: crate::COMMIT,
            })
            .set(1);
        registry.register(
            "build_info",
            "1, with the version and the commit this service was built from",
            build,
        );
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
            "segment_ranges_fetched",
            "Ranges a tag's generator took from the store",
            metrics.segment_ranges_fetched.clone(),
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
            request_durations,
            ..metrics
        }
    }

    /// Records one request's duration under its route (an index in `ROUTE_TEMPLATES`).
    pub(crate) fn request_took(&self, route: usize, took: Duration) {
        if let Some(histogram) = self.request_durations.get(route) {
            histogram.observe(took);
        }
    }

    pub(crate) fn served(&self, route: Route, tag: &str, n: usize) {
        let n = n as u64;
        let counter = |slots: &ServedSlots| {
            slots[route as usize]
                .get_or_init(|| {
                    let tag = if tag == SNOWFLAKE_GRANT {
                        Cow::Borrowed(SNOWFLAKE_GRANT)
                    } else {
                        Cow::Owned(tag.to_owned())
                    };
                    let label = RouteTag {
                        route: route.label(),
                        tag,
                    };
                    self.ids_served.get_or_create(&label).clone()
                })
                .inc_by(n);
        };
        if tag == SNOWFLAKE_GRANT {
            return counter(&self.served_snowflake);
        }
        if let Some(slots) = self
            .served_tags
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tag)
        {
            return counter(slots);
        }
        // Bounded: a tag is counted only once it served IDs, so it is in the store.
        let mut tags = self
            .served_tags
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        counter(tags.entry(tag.to_owned()).or_default());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// Every series name the service exports, with its label names: one sample of every
    /// family is made first, since an empty family prints nothing.
    fn exported() -> BTreeMap<String, BTreeSet<String>> {
        let m = Metrics::new();
        m.served(Route::V1, "order", 1);
        m.refused.get_or_create(&StatusLabel { status: 503 }).inc();
        m.store_call("probe", Duration::from_millis(1), false);
        let tag = TagLabel {
            tag: "order".into(),
        };
        m.rejected_takes.get_or_create(&tag).inc();
        m.segment_ids_left.get_or_create(&tag).set(1);
        m.segment_runway.get_or_create(&tag).set(1.0);
        m.segment_ranges_fetched.get_or_create(&tag).inc();
        m.period_ahead.get_or_create(&tag).set(0);
        let mut series = BTreeMap::new();
        for line in m.encode().lines().filter(|l| !l.starts_with('#')) {
            let head = line.rsplit_once(' ').map_or(line, |(head, _)| head);
            let (name, labels) = head.split_once('{').unwrap_or((head, ""));
            let names: &mut BTreeSet<String> = series.entry(name.to_owned()).or_default();
            for pair in labels
                .trim_end_matches('}')
                .split(',')
                .filter(|p| !p.is_empty())
            {
                names.insert(pair.split('=').next().unwrap().to_owned());
            }
        }
        series
    }

    /// The PromQL expressions of the shipped dashboard and alert rules.
    fn shipped_queries() -> Vec<(String, String)> {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy");
        let read = |path: &str| {
            std::fs::read_to_string(format!("{root}/{path}"))
                .unwrap_or_else(|e| panic!("deploy/{path}: {e}"))
        };
        let dashboard: serde_json::Value =
            serde_json::from_str(&read("grafana/uidgen.json")).unwrap();
        let mut queries = Vec::new();
        for panel in dashboard["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let title = panel["title"].as_str().unwrap();
                queries.push((
                    format!("panel {title}"),
                    target["expr"].as_str().unwrap().to_owned(),
                ));
            }
        }
        let rules = read("prometheus/uidgen-alerts.yml");
        let mut alert = String::new();
        for line in rules.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix("- alert: ") {
                alert = name.to_owned();
            }
            if let Some(expr) = line.strip_prefix("expr: ") {
                queries.push((format!("alert {alert}"), expr.to_owned()));
            }
        }
        assert!(queries.len() >= 15, "{queries:?}");
        queries
    }

    /// The label names an expression uses: `{name=...}` matchers and `by (...)` lists.
    fn labels_used(expr: &str) -> Vec<String> {
        let mut labels = Vec::new();
        for (i, _) in expr.match_indices('{') {
            let body = &expr[i + 1..i + expr[i..].find('}').unwrap()];
            for matcher in body.split(',') {
                let name = matcher.split(['=', '!']).next().unwrap().trim();
                labels.push(name.to_owned());
            }
        }
        for (i, _) in expr.match_indices("by (") {
            let body = &expr[i + 4..i + expr[i..].find(')').unwrap()];
            labels.extend(body.split(',').map(|l| l.trim().to_owned()));
        }
        labels
    }

    #[test]
    fn every_metric_and_label_the_dashboard_and_the_alerts_query_is_exported() {
        let series = exported();
        // Prometheus adds these to every series it scrapes.
        let scraped = ["instance", "job"];
        for (source, expr) in shipped_queries() {
            let names: Vec<&str> = expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|word| word.starts_with("uidgen_"))
                .collect();
            assert!(!names.is_empty(), "{source}: no uidgen metric in {expr}");
            let mut known = BTreeSet::new();
            for name in &names {
                let labels = series.get(*name).unwrap_or_else(|| {
                    panic!(
                        "{source}: {name} is not exported by the service (exported: {:?})",
                        series.keys().collect::<Vec<_>>()
                    )
                });
                known.extend(labels.iter().cloned());
            }
            for label in labels_used(&expr) {
                assert!(
                    known.contains(&label) || scraped.contains(&label.as_str()),
                    "{source}: label {label} is on none of {names:?} (they have {known:?})"
                );
            }
        }
    }

    #[test]
    fn request_durations_land_in_their_buckets_and_encode_cumulatively() {
        let metrics = Metrics::new();
        for micros in [10, 25, 26, 50, 3_000, 5_000_000] {
            metrics.request_took(0, Duration::from_micros(micros));
        }
        let text = metrics.encode();
        let line = |suffix: &str| {
            let wanted = format!("uidgen_http_request_duration_seconds_{suffix}");
            text.lines()
                .find(|l| l.starts_with(&wanted))
                .unwrap_or_else(|| panic!("{wanted}: {text}"))
                .rsplit(' ')
                .next()
                .unwrap()
                .parse::<f64>()
                .unwrap()
        };
        assert_eq!(line("count{route=\"/v1/snowflake\"}"), 6.0);
        let sum = line("sum{route=\"/v1/snowflake\"}");
        assert!((sum - 5.003111).abs() < 1e-9, "{sum}");
        // 10 and 25 µs in the first bucket (≤ 25 µs), 26 and 50 in the second.
        assert_eq!(line("bucket{le=\"0.000025\",route=\"/v1/snowflake\"}"), 2.0);
        assert_eq!(line("bucket{le=\"0.00005\",route=\"/v1/snowflake\"}"), 4.0);
        assert_eq!(line("bucket{le=\"0.0032\",route=\"/v1/snowflake\"}"), 5.0);
        assert_eq!(line("bucket{le=\"+Inf\",route=\"/v1/snowflake\"}"), 6.0);
    }
}
