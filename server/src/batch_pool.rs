//! Threads of their own, at a lower CPU priority, for work that can run long (opaque
//! batches of up to `max_count` IDs): when the cores are busy, the request threads are
//! scheduled before it, so probes and single-ID routes keep their latency while large
//! batches run. Tokio's blocking pool runs at normal priority and is shared with store
//! calls, so ten large batches there took both cores from the requests.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// A fixed pool fed by a channel; its threads end when it is dropped.
pub(crate) struct BatchPool {
    jobs: Mutex<mpsc::Sender<Job>>,
}

/// How much lower the pool's threads run (Linux `nice`, 0 to 19): enough that a thread
/// of normal priority gets most of a core it contends for, while batches still progress.
const NICENESS: i32 = 10;

impl BatchPool {
    /// `threads` threads (at least one).
    pub(crate) fn start(threads: usize) -> std::io::Result<Self> {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        for _ in 0..threads.max(1) {
            let receiver = Arc::clone(&receiver);
            std::thread::Builder::new()
                .name("uidgen-batch".into())
                .spawn(move || {
                    lower_priority();
                    loop {
                        let job = match receiver.lock() {
                            Ok(receiver) => receiver.recv(),
                            Err(poisoned) => poisoned.into_inner().recv(),
                        };
                        let Ok(job) = job else { return };
                        // A job that panics loses its answer (the caller hears of it),
                        // never the thread.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    }
                })?;
        }
        Ok(Self {
            jobs: Mutex::new(sender),
        })
    }

    /// Runs `work` on the pool; `None` if it panicked.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (done, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(work());
        });
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(job)
            .ok()?;
        answer.await.ok()
    }
}

/// Lowers the calling thread's CPU priority (on Linux `setpriority` with `who = 0`
/// applies to the calling thread only); elsewhere a no-op.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority takes plain integers and touches no memory of ours; its
        // failure (a policy that forbids it) only leaves the priority as it was.
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICENESS) };
    }
}
