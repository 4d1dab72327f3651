//! A client of uidgen's ID service (`uidgen serve`): a range of a segment tag's IDs per
//! call, handed out in memory by one atomic add, the next range fetched in the background
//! before the current one runs out; snowflake IDs in batches kept at most a validity time;
//! several servers with failover. Its behaviour is the one every uidgen client shares
//! (`clients/PROTOCOL.md`).
//!
//! ```no_run
//! use uidgen_client::Client;
//!
//! let client = Client::builder(["10.0.0.1:8080", "10.0.0.2:8080"]).token("a-token-of-16+chars").build()?;
//! let order_id: u64 = client.next_id("order")?;
//! let snowflake: u64 = client.snowflake()?;
//! client.close(); // gives the unused part of each range back
//! # Ok::<(), uidgen_client::ClientError>(())
//! ```

mod error;
mod range;
mod servers;
mod snowflake;
mod tags;

pub use error::ClientError;
use range::Tag;
use servers::Servers;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a client takes and hands out IDs; see [`ClientBuilder`] for each setting.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) min_count: u64,
    pub(crate) max_count: u64,
    pub(crate) prefetch_share: f64,
    pub(crate) target: Duration,
    pub(crate) snowflake_batch: u64,
    pub(crate) validity: Duration,
}

/// Settings of a [`Client`], each with the default `clients/PROTOCOL.md` names.
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    servers: Vec<String>,
    start: Option<usize>,
    token: Option<String>,
    timeout: Duration,
    retry_after: Duration,
    options: Options,
}

impl ClientBuilder {
    /// Which server of the list is tried first (by default one chosen per process, so
    /// that clients spread over the servers).
    pub fn start_at(mut self, index: usize) -> Self {
        self.start = Some(index);
        self
    }

    /// The bearer token the service's tokens grant the tags (and `@snowflake`).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The longest one call to one server may take (2 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long a server that failed is tried last (5 s).
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// The smallest and largest range asked for (1,000 and 100,000, the service's
    /// `max_count` by default).
    pub fn range_sizes(mut self, min: u64, max: u64) -> Self {
        self.options.min_count = min;
        self.options.max_count = max;
        self
    }

    /// The share of a range handed out when the next one is fetched (0.5).
    pub fn prefetch_share(mut self, share: f64) -> Self {
        self.options.prefetch_share = share;
        self
    }

    /// How long a range should last: one used up sooner doubles the next, one that lasts
    /// over twice as long halves it (10 s).
    pub fn target(mut self, target: Duration) -> Self {
        self.options.target = target;
        self
    }

    /// How many snowflake IDs a call fetches (1,000), and how long after it they may be
    /// handed out (1 s).
    pub fn snowflake_batches(mut self, size: u64, validity: Duration) -> Self {
        self.options.snowflake_batch = size;
        self.options.validity = validity;
        self
    }

    /// The client; a setting that cannot be used is an error naming it.
    pub fn build(self) -> Result<Client, ClientError> {
        let o = &self.options;
        let config = |what, problem: &str| {
            Err(ClientError::Config {
                what,
                problem: problem.into(),
            })
        };
        if o.min_count == 0 || o.min_count > o.max_count {
            return config("range_sizes", "min from 1 to max");
        }
        if !(o.prefetch_share > 0.0 && o.prefetch_share <= 1.0) {
            return config("prefetch_share", "above 0 and at most 1");
        }
        if o.snowflake_batch == 0 {
            return config("snowflake_batches", "a size of at least 1");
        }
        let servers = Servers::new(
            self.start,
            &self.servers,
            self.token.as_deref(),
            self.timeout,
            self.retry_after,
        )?;
        Ok(Client {
            inner: Arc::new(Inner {
                servers: Arc::new(servers),
                options: self.options,
                tags: tags::OpenTags::default(),
                opening: Mutex::default(),
                opens_finished: std::sync::atomic::AtomicU64::new(0),
                snowflakes: snowflake::Snowflakes::default(),
                closed: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }
}

/// Tags being opened: how many opens finished, and the last one's failure.
#[derive(Default)]
struct Opening {
    finished: u64,
    failed: Option<(String, ClientError)>,
}

/// One tag's IDs from a [`Client`] ([`Client::tag`]); clones share the tag's ranges.
#[derive(Clone)]
pub struct TagIds {
    client: Client,
    state: Arc<Tag>,
}

impl TagIds {
    /// The tag's next ID, as [`Client::next_id`] gives it.
    #[inline]
    pub fn next_id(&self) -> Result<u64, ClientError> {
        let inner = &self.client.inner;
        self.state.take(&inner.servers, &inner.options, || {
            self.client.prefetch(Arc::clone(&self.state))
        })
    }
}

/// A client: share it between threads (it is cheap to clone; clones share everything).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Arc<Servers>,
    options: Options,
    /// Every open tag's state, read on every ID without a lock.
    tags: tags::OpenTags,
    /// One tag opened at a time.
    opening: Mutex<Opening>,
    /// `Opening::finished`, readable before waiting for the lock.
    opens_finished: std::sync::atomic::AtomicU64,
    snowflakes: snowflake::Snowflakes,
    closed: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("failovers", &self.failovers())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of `servers` (`host:port` or `http://…` base URLs), with the defaults.
    pub fn builder<S: Into<String>>(servers: impl IntoIterator<Item = S>) -> ClientBuilder {
        ClientBuilder {
            servers: servers.into_iter().map(Into::into).collect(),
            start: None,
            token: None,
            timeout: Duration::from_secs(2),
            retry_after: Duration::from_secs(5),
            options: Options {
                min_count: 1_000,
                max_count: 100_000,
                prefetch_share: 0.5,
                target: Duration::from_secs(10),
                snowflake_batch: 1_000,
                validity: Duration::from_secs(1),
            },
        }
    }

    /// The next ID of segment tag `tag`: from memory, or, when the current range is used
    /// up and the next has not arrived, after a fetch. Blocks only then.
    pub fn next_id(&self, tag: &str) -> Result<u64, ClientError> {
        // The fast path: the tag found without a lock, and an atomic add.
        if let Some(id) = self.taken_from_memory(tag) {
            return Ok(id);
        }
        let tag = self.state(tag)?;
        tag.take(&self.inner.servers, &self.inner.options, || {
            self.prefetch(Arc::clone(&tag))
        })
    }

    /// An ID of `tag` from its current range, if the tag is open and the range has one
    /// left (the tag found without a lock, and an atomic add); never waits.
    #[inline]
    fn taken_from_memory(&self, tag: &str) -> Option<u64> {
        let state = self.inner.tags.get(tag)?;
        state.try_take(&self.inner.options, &|| self.prefetch(Arc::clone(state)))
    }

    /// One tag's IDs without the lookup of the tag on each call: for hot paths (its first
    /// range is fetched now).
    pub fn tag(&self, tag: &str) -> Result<TagIds, ClientError> {
        Ok(TagIds {
            client: self.clone(),
            state: self.state(tag)?,
        })
    }

    /// Fetches `tag`'s next range in the background: a thread per range, which lasts
    /// seconds, so threads are rare.
    fn prefetch(&self, tag: Arc<Tag>) {
        let inner = Arc::clone(&self.inner);
        let _ = std::thread::Builder::new()
            .name("uidgen-client-prefetch".into())
            .spawn(move || tag.prefetch(&inner.servers, &inner.options));
    }

    /// A snowflake ID of the service, from a batch at most the validity time old.
    pub fn snowflake(&self) -> Result<u64, ClientError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(ClientError::Closed);
        }
        let o = &self.inner.options;
        self.inner
            .snowflakes
            .take(&self.inner.servers, o.snowflake_batch, o.validity)
    }

    /// How many calls moved to another server.
    pub fn failovers(&self) -> u64 {
        self.inner.servers.failovers.load(Ordering::Relaxed)
    }

    /// The size the next range of `tag` will be asked for (it follows the rate).
    pub fn next_range_size(&self, tag: &str) -> Option<u64> {
        self.inner.tags.find(tag).map(|t| t.next_count())
    }

    /// Hands nothing out any more, and gives back the unused part of every tag's ranges
    /// (the next range whole, then the current range's tail if both came from one server
    /// process, each to the server that
    /// handed it out). What could not be given back is only a gap in the tag's IDs; the
    /// errors say where.
    pub fn close(&self) -> Vec<ClientError> {
        let tags = {
            // Under the lock a tag is opened and added with: one added after this would
            // never be closed.
            let _opening = self.inner.opening.lock().unwrap_or_else(|p| p.into_inner());
            self.inner.closed.store(true, Ordering::Release);
            self.inner.tags.all()
        };
        tags.iter()
            .flat_map(|tag| tag.close(&self.inner.servers))
            .collect()
    }

    fn state(&self, name: &str) -> Result<Arc<Tag>, ClientError> {
        if let Some(tag) = self.inner.tags.find(name) {
            return Ok(tag);
        }
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(ClientError::Closed);
        }
        let seen = self.inner.opens_finished.load(Ordering::Acquire);
        // `close` sets `closed` under this lock too: it cannot come between the check
        // and the insert, so every tag added is one it closes.
        let mut opening = self.inner.opening.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tag) = self.inner.tags.find(name) {
            return Ok(tag);
        }
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(ClientError::Closed);
        }
        // An open of this tag failed while this thread waited: its error, rather than a
        // failover of its own after it (threads would otherwise wait for each other's
        // in turn).
        if opening.finished != seen {
            if let Some((_, e)) = opening.failed.as_ref().filter(|(tag, _)| tag == name) {
                return Err(e.clone());
            }
        }
        let opened = Tag::open(name, &self.inner.servers, &self.inner.options);
        opening.finished += 1;
        self.inner
            .opens_finished
            .store(opening.finished, Ordering::Release);
        let opened = match opened {
            Ok(tag) => Arc::new(tag),
            Err(e) => {
                opening.failed = Some((name.to_owned(), e.clone()));
                return Err(e);
            }
        };
        opening.failed = None;
        self.inner.tags.insert(Arc::clone(&opened));
        Ok(opened)
    }
}

#[cfg(feature = "tokio")]
impl Client {
    /// [`next_id`](Self::next_id) for async code: from memory without awaiting, and on
    /// tokio's blocking pool when it must fetch.
    pub async fn next_id_async(&self, tag: &str) -> Result<u64, ClientError> {
        if let Some(id) = self.taken_from_memory(tag) {
            return Ok(id);
        }
        let (client, tag) = (self.clone(), tag.to_owned());
        tokio::task::spawn_blocking(move || client.next_id(&tag))
            .await
            .unwrap_or(Err(ClientError::Closed))
    }

    /// [`snowflake`](Self::snowflake) for async code, on tokio's blocking pool.
    pub async fn snowflake_async(&self) -> Result<u64, ClientError> {
        let client = self.clone();
        tokio::task::spawn_blocking(move || client.snowflake())
            .await
            .unwrap_or(Err(ClientError::Closed))
    }
}
