//! A segment tag's ranges in a client: the current one, handed out by one atomic add, and
//! at most one next one, fetched in the background once a share of the current one is
//! used. IDs go out in increasing order per thread, all of the current range before any
//! of the next.

use crate::error::ClientError;
use crate::servers::Servers;
use crate::Options;
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// Where a closed range's cursor is moved: past any range's end, with room for every
/// thread's add after it.
const SEALED: u64 = u64::MAX / 2;

/// One range: `first..=last`, handed out from `cursor`.
#[derive(Debug)]
pub(crate) struct Range {
    last: u64,
    cursor: AtomicU64,
    /// The ID whose taker asks for the next range.
    prefetch_at: u64,
    server: usize,
    receipt: String,
    /// When it became the current range.
    since: Mutex<Option<Instant>>,
}

#[derive(serde::Deserialize)]
struct RangeBody {
    first_str: String,
    last_str: String,
    #[serde(default)]
    receipt: String,
}

/// The next range, and whether one is being fetched.
#[derive(Default)]
struct Next {
    range: Option<Arc<Range>>,
    fetching: bool,
    /// The last background fetch failed: the taker that needs it fetches again.
    failed: Option<ClientError>,
}

pub(crate) struct Tag {
    name: String,
    current: ArcSwap<Range>,
    next: Mutex<Next>,
    arrived: Condvar,
    /// The size the next range is asked for.
    count: AtomicU64,
    closed: AtomicBool,
}

impl Tag {
    /// The tag with its first range fetched now.
    pub(crate) fn open(
        name: &str,
        servers: &Servers,
        options: &Options,
    ) -> Result<Self, ClientError> {
        let first = fetch(name, servers, options.min_count, options.prefetch_share)?;
        *first.since.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Ok(Self {
            name: name.to_owned(),
            current: ArcSwap::from(Arc::new(first)),
            next: Mutex::new(Next::default()),
            arrived: Condvar::new(),
            count: AtomicU64::new(options.min_count),
            closed: AtomicBool::new(false),
        })
    }

    /// An ID, taking the next range when the current one is used up. `prefetch` is
    /// called (once per range) when the next range should be fetched in the background.
    pub(crate) fn take(
        self: &Arc<Self>,
        servers: &Arc<Servers>,
        options: &Options,
        prefetch: impl Fn(Arc<Self>),
    ) -> Result<u64, ClientError> {
        loop {
            let range = self.current.load();
            let id = range.cursor.fetch_add(1, Ordering::AcqRel);
            if id <= range.last {
                if id == range.prefetch_at {
                    prefetch(Arc::clone(self));
                }
                return Ok(id);
            }
            if self.closed.load(Ordering::Acquire) {
                return Err(ClientError::Closed);
            }
            self.advance(&range, servers, options)?;
        }
    }

    /// An ID from the current range if it has one left, and whether its taker should
    /// have the next range fetched; never waits.
    pub(crate) fn try_take(&self) -> Option<(u64, bool)> {
        let range = self.current.load();
        let id = range.cursor.fetch_add(1, Ordering::AcqRel);
        (id <= range.last).then_some((id, id == range.prefetch_at))
    }

    /// Moves past the used-up `old`: to the next range if it is here, else waits for the
    /// fetch in flight, else fetches in this thread.
    fn advance(
        &self,
        old: &Arc<Range>,
        servers: &Servers,
        options: &Options,
    ) -> Result<(), ClientError> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            // Checked under the lock `close` takes: nothing is fetched or switched to after.
            if self.closed.load(Ordering::Acquire) {
                return Err(ClientError::Closed);
            }
            if !Arc::ptr_eq(&self.current.load(), old) {
                return Ok(());
            }
            if let Some(range) = next.range.take() {
                self.adapt(old, options);
                *range.since.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
                self.current.store(range);
                return Ok(());
            }
            if !next.fetching {
                next.fetching = true;
                next.failed = None;
                drop(next);
                let fetched = fetch(
                    &self.name,
                    servers,
                    self.count.load(Ordering::Relaxed),
                    options.prefetch_share,
                );
                next = self.next.lock().unwrap_or_else(|p| p.into_inner());
                next.fetching = false;
                self.arrived.notify_all();
                match fetched {
                    Ok(range) => next.range = Some(Arc::new(range)),
                    Err(e) => return Err(e),
                }
                continue;
            }
            next = self.arrived.wait(next).unwrap_or_else(|p| p.into_inner());
            if let Some(e) = next.failed.take() {
                return Err(e);
            }
        }
    }

    /// The background fetch of the next range.
    pub(crate) fn prefetch(&self, servers: &Servers, options: &Options) {
        {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            if next.fetching || next.range.is_some() || self.closed.load(Ordering::Acquire) {
                return;
            }
            next.fetching = true;
        }
        let fetched = fetch(
            &self.name,
            servers,
            self.count.load(Ordering::Relaxed),
            options.prefetch_share,
        );
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        next.fetching = false;
        match fetched {
            Ok(range) => next.range = Some(Arc::new(range)),
            Err(e) => next.failed = Some(e),
        }
        self.arrived.notify_all();
    }

    /// The next range's size from how long `old` lasted: doubled when used up sooner than
    /// the target, halved when it lasted over twice the target.
    fn adapt(&self, old: &Range, options: &Options) {
        let Some(since) = *old.since.lock().unwrap_or_else(|p| p.into_inner()) else {
            return;
        };
        let lasted = since.elapsed();
        let count = self.count.load(Ordering::Relaxed);
        let target = options.target;
        let wanted = if lasted < target {
            (count * 2).min(options.max_count)
        } else if lasted > target * 2 {
            (count / 2).max(options.min_count)
        } else {
            count
        };
        self.count.store(wanted, Ordering::Relaxed);
    }

    /// The size the next range will be asked for.
    pub(crate) fn next_count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Hands nothing out any more and gives back what is left: the next range whole, then
    /// the current range's tail if both came from one server process, each to the server
    /// that handed it out.
    pub(crate) fn close(&self, servers: &Servers) -> Vec<ClientError> {
        self.closed.store(true, Ordering::Release);
        let mut failed = Vec::new();
        let next = {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            while next.fetching {
                next = self.arrived.wait(next).unwrap_or_else(|p| p.into_inner());
            }
            next.range.take()
        };
        let next_server = next.as_ref().map(|next| next.server);
        if let Some(next) = next {
            let unused = next.cursor.swap(SEALED, Ordering::AcqRel);
            give_back(&self.name, servers, &next, unused, &mut failed);
        }
        let current = self.current.load_full();
        let unused = current.cursor.swap(SEALED, Ordering::AcqRel);
        // The tail only to the process that took the next range back (or when there is
        // none): after another process's range went back, it would sit below what that
        // process last handed out, which its data-loss check takes for a store that went
        // back.
        if next_server.is_none_or(|server| server == current.server) {
            give_back(&self.name, servers, &current, unused, &mut failed);
        }
        failed
    }
}

fn give_back(
    tag: &str,
    servers: &Servers,
    range: &Range,
    unused: u64,
    failed: &mut Vec<ClientError>,
) {
    if unused > range.last || range.receipt.is_empty() {
        return;
    }
    let path = format!(
        "/v1/segment/{}/giveback?first={unused}&receipt={}",
        encode(tag),
        range.receipt
    );
    if let Err(e) = servers.call_at(range.server, "POST", &path) {
        failed.push(e);
    }
}

/// A range of `count` IDs of `tag`, from whichever server answers.
fn fetch(tag: &str, servers: &Servers, count: u64, share: f64) -> Result<Range, ClientError> {
    let path = format!("/v1/segment/{}/range?count={count}", encode(tag));
    let answer = servers.call("POST", &path)?;
    let bad = |why: &str| {
        ClientError::Unavailable(vec![(
            servers.name(answer.server).to_owned(),
            format!(
                "{why}: {}",
                answer.body.chars().take(200).collect::<String>()
            ),
        )])
    };
    let body: RangeBody =
        serde_json::from_str(&answer.body).map_err(|_| bad("an answer that is not a range"))?;
    let (first, last): (u64, u64) = match (body.first_str.parse(), body.last_str.parse()) {
        (Ok(first), Ok(last)) if first <= last => (first, last),
        _ => return Err(bad("a range with no ID in it")),
    };
    let len = last - first + 1;
    let prefetch_at = first + ((len as f64 * share) as u64).min(len - 1);
    Ok(Range {
        last,
        cursor: AtomicU64::new(first),
        prefetch_at,
        server: answer.server,
        receipt: body.receipt,
        since: Mutex::new(None),
    })
}

/// A tag as one path segment.
pub(crate) fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
