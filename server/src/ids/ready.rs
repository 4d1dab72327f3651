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
        let result = self.store.tag(PROBE_TAG);
        self.metrics
            .store_call("probe", started.elapsed(), result.is_ok());
        match result {
            Ok(_) => {
                let at = self.started.elapsed().as_millis() as u64;
                self.store_ok_at.store(at.max(1), Ordering::Relaxed);
                *write(&self.store_error) = None;
            }
            Err(e) => *write(&self.store_error) = Some(e.to_string()),
        }
    }

    /// What each ID source can serve now, one line each (snowflake, every tag, the
    /// store, the last data loss found), and whether any can: the service is ready while
    /// at least one configured source can serve.
    pub fn readiness(&self) -> (bool, String) {
        if self.shutting_down.load(Ordering::Relaxed) {
            return (false, "shutting down\n".into());
        }
        let mut lines = Vec::new();
        let snowflake = self.snowflake.load();
        let snowflake_ok = match snowflake.worker_id_trouble() {
            Some(why) => {
                lines.push(format!(
                    "snowflake: cannot serve new IDs (worker ID {}): {why}",
                    snowflake.worker_id()
                ));
                false
            }
            None if snowflake.stats().len == 0 => {
                lines.push(match snowflake.waiting_for_clock() {
                    Some(why) => format!("snowflake: worker ID {}: {why}", snowflake.worker_id()),
                    None => format!(
                        "snowflake: the ring is empty (worker ID {}, {:.1} s ahead of the clock)",
                        snowflake.worker_id(),
                        snowflake.time_ahead().as_secs_f64()
                    ),
                });
                false
            }
            None => {
                lines.push(format!(
                    "snowflake: ok (worker ID {})",
                    snowflake.worker_id()
                ));
                true
            }
        };
        let mut any_ok = snowflake_ok;
        for (tag, generator) in &self.periods {
            let (current, clock) = (generator.current_period(), generator.clock_period());
            any_ok = true;
            lines.push(if current > clock {
                format!(
                    "tag {}: period {current}, ahead of the clock's {clock} (begun by a \
                     process whose clock ran ahead)",
                    shown_tag(tag)
                )
            } else {
                format!("tag {}: period {current}", shown_tag(tag))
            });
        }
        let mut tag_line = |tag: &str, left: u64, error: Option<String>| {
            any_ok |= left > 0;
            lines.push(match (left, error) {
                (0, Some(e)) => format!("tag {}: cannot serve: {e}", shown_tag(tag)),
                (0, None) => format!("tag {}: no IDs fetched yet", shown_tag(tag)),
                (left, Some(e)) => format!(
                    "tag {}: serving the {left} IDs fetched; the store is failing: {e}",
                    shown_tag(tag)
                ),
                (left, None) => format!("tag {}: ok ({left} IDs fetched)", shown_tag(tag)),
            });
        };
        for (tag, generator) in read(&self.segments).iter() {
            let stats = generator.stats();
            tag_line(tag, stats.ids_left, stats.store_error);
        }
        for tag in self.residues.keys() {
            // Served from stores of their own: counted as able to serve.
            tag_line(tag, 1, None);
        }
        let ok_at = self.store_ok_at.load(Ordering::Relaxed);
        let now = self.started.elapsed().as_millis() as u64;
        if ok_at == 0 || now.saturating_sub(ok_at) > STORE_FRESH.as_millis() as u64 {
            let why = read(&self.store_error)
                .clone()
                .unwrap_or_else(|| format!("no answer for {} ms", now.saturating_sub(ok_at)));
            lines.push(format!("store {}: {why}", self.store.describe()));
        } else {
            lines.push(format!("store {}: ok", self.store.describe()));
        }
        if let Some(loss) = uidgen::last_data_loss() {
            lines.push(format!("data loss found: {loss}"));
        }
        let mut report = lines.join("\n");
        report.push('\n');
        (any_ok, report)
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
        }
        m.ready.set(i64::from(self.not_ready().is_none()));
        m.encode()
    }
}
