//! One connection to an async (tokio) database, kept between the synchronous steps of a
//! lease store, with the runtime that drives it.

use super::StoreError;
use crate::sync::{lock, Arc, Mutex};

/// A lazily opened connection and its current-thread runtime. Clones share both: the
/// steps of one store (and its clones) run one at a time on one connection.
pub(crate) struct Session<C> {
    inner: Arc<Mutex<Slots<C>>>,
}

impl<C> Clone for Session<C> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C> std::fmt::Debug for Session<C> {
    // Not the connection (a driver's, which may hold the password), and no lock taken:
    // a store may be formatted from inside one of its own steps.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Session")
    }
}

struct Slots<C> {
    // Declared before the runtime: the connection is dropped first, while the runtime
    // that owns its socket still exists.
    conn: Option<C>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl<C> Drop for Slots<C> {
    fn drop(&mut self) {
        self.conn = None;
        // Dropping a runtime inside another runtime's task panics; this never blocks.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl<C: Send> Session<C> {
    pub(crate) fn new() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Slots {
                conn: None,
                runtime: None,
            })),
        }
    }

    /// Runs `work` on the connection (opened by `connect` if there is none), blocking
    /// until it is done. A step that fails drops the connection: after a timeout or a
    /// broken socket its state is unknown, and the next step opens a new one.
    pub(crate) fn run<T: Send>(
        &self,
        store: &'static str,
        location: &str,
        connect: impl AsyncFnOnce() -> Result<C, StoreError> + Send,
        work: impl AsyncFnOnce(&mut C) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        let failed = |step: &'static str, source: super::Cause| StoreError::Other {
            store,
            location: location.to_owned(),
            step,
            source,
        };
        let step = || {
            let mut slots = lock(&self.inner);
            let Slots { conn, runtime } = &mut *slots;
            let runtime = match runtime {
                Some(runtime) => runtime,
                None => runtime.insert(
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| failed("starting a tokio runtime", Box::new(e)))?,
                ),
            };
            runtime.block_on(async {
                let mut open = match conn.take() {
                    Some(open) => open,
                    None => connect().await?,
                };
                let result = work(&mut open).await;
                if result.is_ok() {
                    *conn = Some(open);
                }
                result
            })
        };
        // `block_on` on a thread that is already inside a tokio runtime would panic: from
        // there, the step runs on a helper thread. (Database code is never built under
        // loom, so std's scoped threads are fine here.)
        if tokio::runtime::Handle::try_current().is_err() {
            return step();
        }
        std::thread::scope(|scope| {
            scope.spawn(step).join().unwrap_or_else(|_| {
                Err(failed(
                    "running a step on a helper thread",
                    "the helper thread panicked".into(),
                ))
            })
        })
    }
}
