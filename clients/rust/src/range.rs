//! A segment tag's ranges in a client, handed out from uidgen's chain of ranges
//! (`uidgen::segment_chain`, loom-checked): one atomic add per ID on a fixed slot, as the
//! in-process segment generator takes. Each fetched range goes into the chain as two
//! pieces, split where `prefetch_share` of it is handed out, so that the taker who moves
//! into the second piece is the one who has the next range fetched. IDs go out in
//! increasing order per thread, all of the current range before any of the next.
//! Closing seals the chain, which says exactly where each range's unused tail starts.

use crate::error::ClientError;
use crate::servers::Servers;
use crate::Options;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;
use uidgen::segment_chain::{Chain, PublishError, RangeLeft, MAX_END};

/// A range fetched from a server: `first..=last`.
#[derive(Debug)]
struct Fetched {
    first: u64,
    last: u64,
    /// Where its second piece starts (`last + 1` when it is one piece).
    split: u64,
    server: usize,
    receipt: String,
    /// When its first ID was taken.
    since: Option<Instant>,
}

#[derive(serde::Deserialize)]
struct RangeBody {
    first_str: String,
    last_str: String,
    #[serde(default)]
    receipt: String,
}

/// What only the slow path touches: the ranges in the chain and the fetch in flight.
#[derive(Default)]
struct State {
    /// The ranges in the chain that may have IDs left, oldest first: the current one and
    /// at most one next.
    fetched: VecDeque<Fetched>,
    fetching: bool,
    /// Fetches finished so far, and the last one's error if it failed: the takers that
    /// waited for that fetch all get its error (each fetching again would make the last
    /// of them wait for every one's failover in turn); a taker that comes later fetches
    /// again.
    fetches: u64,
    failed: Option<ClientError>,
}

impl State {
    /// A fetch finished with `result`; its waiters are woken by the caller.
    fn finished(&mut self, result: Result<(), ClientError>) {
        self.fetching = false;
        self.fetches += 1;
        self.failed = result.err();
    }
}

pub(crate) struct Tag {
    name: String,
    chain: Chain,
    state: Mutex<State>,
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
        let tag = Self::new(name, options.min_count);
        let mut first = fetch(name, servers, options.min_count, options.prefetch_share)?;
        // Current from the start: no move of the chain's starts its clock.
        first.since = Some(Instant::now());
        tag.publish(&mut tag.lock(), first)?;
        Ok(tag)
    }

    /// The tag's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The tag with no range yet, the next asked for of `count` IDs.
    fn new(name: &str, count: u64) -> Self {
        Self {
            name: name.to_owned(),
            chain: Chain::new(),
            state: Mutex::new(State::default()),
            arrived: Condvar::new(),
            count: AtomicU64::new(count),
            closed: AtomicBool::new(false),
        }
    }

    /// A tag with no ranges that hands nothing out (for tests of the tags' table).
    #[cfg(test)]
    pub(crate) fn closed_for_test(name: &str) -> Self {
        let tag = Self::new(name, 1);
        tag.closed.store(true, Ordering::Release);
        tag
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An ID, fetching a range when the chain has none left. `prefetch` is called when
    /// the next range should be fetched in the background (once per range).
    #[inline]
    pub(crate) fn take(
        &self,
        servers: &Servers,
        options: &Options,
        prefetch: impl Fn(),
    ) -> Result<u64, ClientError> {
        loop {
            if let Some(id) = self.try_take(options, &prefetch) {
                return Ok(id);
            }
            self.refill(servers, options)?;
        }
    }

    /// An ID from the ranges in the chain, if one is left; never waits.
    #[inline(always)]
    pub(crate) fn try_take(&self, options: &Options, prefetch: &impl Fn()) -> Option<u64> {
        self.chain.take(|| {
            if self.moved(options) {
                prefetch();
            }
        })
    }

    /// The chain moved to its next piece: into a range's first piece (its clock starts,
    /// and the range size follows how long the last one lasted) or into its second piece
    /// (time to fetch the next range, unless it is here or on its way). Whether to fetch.
    #[cold]
    fn moved(&self, options: &Options) -> bool {
        let Some(current) = self.chain.current().map(|r| r.start) else {
            return false;
        };
        let mut state = self.lock();
        while state.fetched.len() > 1 && state.fetched[0].last < current {
            let done = state.fetched.pop_front().expect("two or more");
            if let Some(since) = done.since {
                self.adapt(since, options);
            }
        }
        let Some(range) = state.fetched.front_mut() else {
            return false;
        };
        if range.since.is_none() && current >= range.first {
            range.since = Some(Instant::now());
        }
        // In the second piece: past the prefetch share. (A range of one piece, a single
        // ID or a share of 1, has the next fetched when it is used up.)
        current >= range.split
            && state.fetched.len() == 1
            && !state.fetching
            && !self.closed.load(Ordering::Acquire)
    }

    /// The chain has nothing left: waits for the fetch in flight, else fetches in this
    /// thread. Returns once the chain may have IDs again.
    #[cold]
    fn refill(&self, servers: &Servers, options: &Options) -> Result<(), ClientError> {
        let mut state = self.lock();
        loop {
            // Checked under the lock `close` takes: nothing is fetched or published after.
            if self.closed.load(Ordering::Acquire) {
                return Err(ClientError::Closed);
            }
            if self.chain.ids_left() > 0 {
                return Ok(());
            }
            if !state.fetching {
                state.fetching = true;
                drop(state);
                let published;
                (state, published) = self.fetch_and_publish(servers, options);
                published?;
                continue;
            }
            let waited_for = state.fetches;
            while state.fetching && state.fetches == waited_for {
                state = self.arrived.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            if let Some(e) = &state.failed {
                return Err(e.clone());
            }
        }
    }

    /// Puts `range` into the chain after the others, as its two pieces; under the state
    /// lock, the only place anything is published. Even when the client was closed
    /// during the fetch: `close` waits for the fetch in flight, then seals the chain,
    /// which finds this range's tail to give back.
    fn publish(&self, state: &mut State, range: Fetched) -> Result<(), ClientError> {
        // At most the current range and the next are live (four pieces): the chain has
        // room for them.
        let refused = |why: &str| {
            ClientError::Unavailable(vec![(
                format!("tag {}", self.name),
                format!(
                    "the range {}..={} was not handed out: {why}",
                    range.first, range.last
                ),
            )])
        };
        for (start, end) in [(range.first, range.split), (range.split, range.last + 1)] {
            match (start < end).then(|| self.chain.publish(start, end)) {
                None | Some(Ok(())) => {}
                Some(Err(PublishError::Full)) => {
                    return Err(refused("more ranges fetched ahead than the client keeps"))
                }
                Some(Err(PublishError::NotARange)) => {
                    return Err(refused(
                        "it is below a range handed out before (a store that went back, or \
                         a give-back out of the protocol's order)",
                    ))
                }
            }
        }
        state.fetched.push_back(range);
        Ok(())
    }

    /// The background fetch of the next range.
    pub(crate) fn prefetch(&self, servers: &Servers, options: &Options) {
        {
            let mut state = self.lock();
            if state.fetching || state.fetched.len() > 1 || self.closed.load(Ordering::Acquire) {
                return;
            }
            state.fetching = true;
        }
        let _ = self.fetch_and_publish(servers, options);
    }

    /// The fetch its caller marked in flight (`fetching`, the lock released): the range
    /// published, the fetch's waiters woken with its result, and the lock held again.
    fn fetch_and_publish(
        &self,
        servers: &Servers,
        options: &Options,
    ) -> (std::sync::MutexGuard<'_, State>, Result<(), ClientError>) {
        let fetched = fetch(
            &self.name,
            servers,
            self.count.load(Ordering::Relaxed),
            options.prefetch_share,
        );
        let mut state = self.lock();
        let published = fetched.and_then(|range| self.publish(&mut state, range));
        state.finished(published.clone());
        self.arrived.notify_all();
        (state, published)
    }

    /// The next range's size from how long the last one lasted (since its first ID was
    /// taken): doubled when used up sooner than the target, halved when it lasted over
    /// twice the target.
    fn adapt(&self, since: Instant, options: &Options) {
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
        let fetched = {
            let mut state = self.lock();
            self.closed.store(true, Ordering::Release);
            while state.fetching {
                state = self.arrived.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            std::mem::take(&mut state.fetched)
        };
        let left = self.chain.seal();
        let mut failed = Vec::new();
        // Newest first: a range goes back only after every range taken after it did, and
        // only to the process the newer one went back to.
        let mut went_back_to = None;
        for range in fetched.iter().rev() {
            let Some(unused) = unused_from(range, &left) else {
                break;
            };
            if went_back_to.is_some_and(|server| server != range.server) {
                break;
            }
            // The tail only to the process that took the newer range back: after another
            // process's range went back, it would sit below what that process last
            // handed out, which its data-loss check takes for a store that went back.
            give_back(&self.name, servers, range, unused, &mut failed);
            went_back_to = Some(range.server);
        }
        failed
    }
}

/// Where `range`'s unused tail starts, from the pieces the seal found (`None` when all
/// of it was handed out).
fn unused_from(range: &Fetched, left: &[RangeLeft]) -> Option<u64> {
    left.iter()
        .filter(|piece| (range.first..=range.last).contains(&piece.start))
        .find(|piece| piece.next < piece.end)
        .map(|piece| piece.next)
}

fn give_back(
    tag: &str,
    servers: &Servers,
    range: &Fetched,
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

/// A range of `count` IDs of `tag`, from whichever server answers, split where `share`
/// of it is handed out.
fn fetch(tag: &str, servers: &Servers, count: u64, share: f64) -> Result<Fetched, ClientError> {
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
        (Ok(first), Ok(last)) if first <= last && last < MAX_END => (first, last),
        (Ok(_), Ok(last)) if last >= MAX_END => {
            return Err(bad("a range past 2^63 - 1, the highest ID a store holds"))
        }
        _ => return Err(bad("a range with no ID in it")),
    };
    let len = last - first + 1;
    // At least one ID in each piece, when there are two.
    let split = first + ((len as f64 * share) as u64).clamp(1, len);
    Ok(Fetched {
        first,
        last,
        split,
        server: answer.server,
        receipt: body.receipt,
        since: None,
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
