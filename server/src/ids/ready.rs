//! What `/readyz` and `/metrics` say of the sources: the store probed, each source's
//! state, the gauges refreshed.

use super::{read, write, Ids, PROBE_TAG, STORE_FRESH};
use crate::error::shown_tag;
use crate::tokens::SNOWFLAKE_GRANT;
use std::sync::atomic::Ordering;
use std::time::Instant;
use uidgen::{SegmentStore, UidGenerator};

impl Ids {
    /// Reads the store once (a tag that is never created), for readiness and the store
    /// latency metric.
    pub(crate) fn probe_store(&self) {
        let started = Instant::now();
        let started_ms = super::status::unix_ms(std::time::SystemTime::now()).max(1);
        self.probe_started_ms.store(started_ms, Ordering::Relaxed);
        let result = self.store.tag(PROBE_TAG);
        let took = started.elapsed();
        self.probe_started_ms.store(0, Ordering::Relaxed);
        self.metrics.store_call("probe", took, result.is_ok());
        self.store_latency_us.store(
            took.as_micros().min(u128::from(u64::MAX)) as u64,
            Ordering::Relaxed,
        );
        let at = (self.started.elapsed().as_millis() as u64).max(1);
        match result {
            Ok(_) => {
                self.store_ok_at.store(at, Ordering::Relaxed);
                self.store_failing_since_ms.store(0, Ordering::Relaxed);
                *write(&self.store_error) = None;
            }
            Err(e) => {
                // The first failure after an answer: the trouble began when it was sent.
                let _ = self.store_failing_since_ms.compare_exchange(
                    0,
                    started_ms,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                *write(&self.store_error) = Some(e.to_string());
            }
        }
    }

    /// What each ID source can serve now, one line each (snowflake, every tag, the
    /// store, the last data loss found), and whether any can: the service is ready while
    /// at least one configured source can serve.
    pub fn readiness(&self) -> (bool, String) {
        if self.shutting_down.load(Ordering::Relaxed) {
            return (false, "shutting down\n".into());
        }
        let (ready, sources) = self.sources();
        let mut report: String = sources
            .iter()
            .map(|s| format!("{}: {}", s.source, s.says))
            .collect::<Vec<_>>()
            .join("\n");
        report.push('\n');
        (ready, report)
    }

    /// What [`Ids::readiness`] says, a [`Source`] per line.
    pub(crate) fn sources(&self) -> (bool, Vec<Source>) {
        if self.shutting_down.load(Ordering::Relaxed) {
            return (
                false,
                vec![Source::new("service", Some(false), "shutting down".into())],
            );
        }
        let mut lines = Vec::new();
        let snowflake = self.snowflake.load();
        let snowflake_ok = match snowflake.worker_id_trouble() {
            Some(why) => {
                lines.push(Source::new(
                    "snowflake",
                    Some(false),
                    format!(
                        "cannot serve new IDs (worker ID {}): {why}",
                        snowflake.worker_id()
                    ),
                ));
                false
            }
            None if snowflake.stats().len == 0 => {
                lines.push(Source::new(
                    "snowflake",
                    Some(false),
                    match snowflake.waiting_for_clock() {
                        Some(why) => format!("worker ID {}: {why}", snowflake.worker_id()),
                        None => format!(
                            "the ring is empty (worker ID {}, {:.1} s ahead of the clock)",
                            snowflake.worker_id(),
                            snowflake.time_ahead().as_secs_f64()
                        ),
                    },
                ));
                false
            }
            None => {
                lines.push(Source::new(
                    "snowflake",
                    Some(true),
                    format!("ok (worker ID {})", snowflake.worker_id()),
                ));
                true
            }
        };
        let mut any_ok = snowflake_ok;
        for (tag, generator) in &self.periods {
            let (current, clock) = (generator.current_period(), generator.clock_period());
            any_ok = true;
            let says = if current > clock {
                format!(
                    "period {current}, ahead of the clock's {clock} (begun by a process whose \
                     clock ran ahead)"
                )
            } else {
                format!("period {current}")
            };
            lines.push(Source::new(
                &format!("tag {}", shown_tag(tag)),
                Some(true),
                says,
            ));
        }
        let mut tag_line = |tag: &str, left: u64, error: Option<String>| {
            any_ok |= left > 0;
            let says = match (left, error) {
                (0, Some(e)) => format!("cannot serve: {e}"),
                (0, None) => "no IDs fetched yet".to_owned(),
                (left, Some(e)) => {
                    format!("serving the {left} IDs fetched; the store is failing: {e}")
                }
                (left, None) => format!("ok ({left} IDs fetched)"),
            };
            lines.push(Source::new(
                &format!("tag {}", shown_tag(tag)),
                Some(left > 0),
                says,
            ));
        };
        let mut segments: Vec<_> = read(&self.segments)
            .iter()
            .map(|(tag, generator)| (tag.clone(), generator.stats()))
            .collect();
        segments.sort_by(|a, b| a.0.cmp(&b.0));
        for (tag, stats) in segments {
            tag_line(&tag, stats.ids_left, stats.store_error);
        }
        for tag in self.residues.keys() {
            // Served from stores of their own: counted as able to serve.
            tag_line(tag, 1, None);
        }
        let store = format!("store {}", self.store.describe());
        lines.push(match self.store_trouble() {
            Some(why) => Source::new(&store, None, why),
            None => Source::new(&store, None, "ok".into()),
        });
        if let Some(loss) = uidgen::last_data_loss() {
            lines.push(Source::new("data loss found", None, loss));
        }
        (any_ok, lines)
    }

    /// Why the store counts as not answering, if it does: its last error, or how long
    /// it has been silent, once no call succeeded for [`STORE_FRESH`].
    pub(crate) fn store_trouble(&self) -> Option<String> {
        let ok_at = self.store_ok_at.load(Ordering::Relaxed);
        let now = self.started.elapsed().as_millis() as u64;
        (ok_at == 0 || now.saturating_sub(ok_at) > STORE_FRESH.as_millis() as u64).then(|| {
            read(&self.store_error)
                .clone()
                .unwrap_or_else(|| format!("no answer for {} ms", now.saturating_sub(ok_at)))
        })
    }

    /// Why the service is not ready, if it is not (no configured ID source can serve):
    /// what each source says.
    pub fn not_ready(&self) -> Option<String> {
        let (ready, report) = self.readiness();
        (!ready).then_some(report)
    }

    /// Refreshes the gauges and copied counters, then encodes every metric.
    pub(crate) fn metrics_text(&self) -> String {
        use crate::metrics::{set_counter, TagLabel};
        let m = &self.metrics;
        let snowflake = self.snowflake.load();
        let stats = snowflake.stats();
        let retired = *self.retired.lock().unwrap_or_else(|p| p.into_inner());
        m.ring_ids.set(stats.len as i64);
        m.ring_capacity.set(stats.capacity as i64);
        m.time_ahead.set(snowflake.time_ahead().as_secs_f64());
        set_counter(&m.lease_renewals, retired[0] + stats.lease_renewals);
        set_counter(
            &m.lease_renewal_failures,
            retired[1] + stats.lease_renewal_failures,
        );
        set_counter(&m.clock_rollbacks, retired[2] + stats.clock_rollbacks);
        set_counter(
            &m.rejected_takes.get_or_create(&TagLabel {
                tag: SNOWFLAKE_GRANT.into(),
            }),
            retired[3] + stats.rejected_takes,
        );
        set_counter(&m.store_data_loss, uidgen::data_loss_events());
        m.waiting_for_clock
            .set(i64::from(snowflake.waiting_for_clock().is_some()));
        for (tag, generator) in &self.periods {
            m.period_ahead
                .get_or_create(&TagLabel { tag: tag.clone() })
                .set(i64::from(
                    generator.current_period() > generator.clock_period(),
                ));
        }
        for (tag, generator) in read(&self.segments).iter() {
            let stats = generator.stats();
            let label = TagLabel { tag: tag.clone() };
            m.segment_ids_left
                .get_or_create(&label)
                .set(stats.ids_left.min(i64::MAX as u64) as i64);
            if let Some(runway) = stats.runway {
                m.segment_runway
                    .get_or_create(&label)
                    .set(runway.as_secs_f64());
            }
            set_counter(&m.rejected_takes.get_or_create(&label), stats.hungry_takes);
            set_counter(
                &m.segment_ranges_fetched.get_or_create(&label),
                stats.ranges_fetched,
            );
        }
        m.ready.set(i64::from(self.not_ready().is_none()));
        m.encode()
    }
}

/// One line of `/readyz`: a source (snowflake, a tag, the store, a data loss found),
/// whether it can serve IDs (`None`: not an ID source), and what it says.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) source: String,
    pub(crate) serving: Option<bool>,
    pub(crate) says: String,
}

impl Source {
    fn new(source: &str, serving: Option<bool>, says: String) -> Self {
        Self {
            source: source.to_owned(),
            serving,
            says,
        }
    }
}
