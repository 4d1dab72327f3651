//! Snowflake IDs fetched in batches and handed out by one atomic add, each at most the
//! validity time after its batch arrived, so that the IDs handed out stay near time order.

use crate::error::ClientError;
use crate::servers::Servers;
use arc_swap::ArcSwapOption;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Batch {
    ids: Vec<u64>,
    cursor: AtomicUsize,
    arrived: Instant,
}

#[derive(serde::Deserialize)]
struct Body {
    ids_str: Vec<String>,
}

#[derive(Default)]
pub(crate) struct Snowflakes {
    batch: ArcSwapOption<Batch>,
    /// One fetch at a time; the others wait for it.
    fetching: Mutex<()>,
}

impl Snowflakes {
    pub(crate) fn take(
        &self,
        servers: &Servers,
        size: u64,
        validity: Duration,
    ) -> Result<u64, ClientError> {
        loop {
            let current = self.batch.load_full();
            if let Some(batch) = &current {
                if batch.arrived.elapsed() <= validity {
                    let at = batch.cursor.fetch_add(1, Ordering::AcqRel);
                    if let Some(&id) = batch.ids.get(at) {
                        return Ok(id);
                    }
                }
            }
            let _one = self.fetching.lock().unwrap_or_else(|p| p.into_inner());
            // Another thread may have fetched while this one waited.
            let now = self.batch.load_full();
            let same = match (&now, &current) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            if same {
                let answer = servers.call("GET", &format!("/v1/snowflake?count={size}"))?;
                let body: Body = serde_json::from_str(&answer.body).map_err(|_| {
                    ClientError::Unavailable(vec![(
                        servers.name(answer.server).to_owned(),
                        "an answer that is not a batch".into(),
                    )])
                })?;
                let ids = body
                    .ids_str
                    .iter()
                    .map(|s| s.parse())
                    .collect::<Result<Vec<u64>, _>>()
                    .map_err(|_| {
                        ClientError::Unavailable(vec![(
                            servers.name(answer.server).to_owned(),
                            "a batch with a non-ID".into(),
                        )])
                    })?;
                self.batch.store(Some(Arc::new(Batch {
                    ids,
                    cursor: AtomicUsize::new(0),
                    arrived: Instant::now(),
                })));
            }
        }
    }
}
