//! Handing out IDs: snowflake IDs from the ring, a tag's IDs from its generator (made
//! on first use), period and residue tags, and ranges straight from the store.

use super::build::build_segment;
use super::{read, write, Ids, MAX_SERVED_TAGS};
use crate::error::{shown_tag, ApiError};
use crate::tokens::GRANT_NAMES;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use uidgen::{
    PeriodSegmentGenerator, SegmentError, SegmentGenerator, SegmentStore, StoreError, UidError,
    UidGenerator,
};

impl Ids {
    /// `count` snowflake IDs, in increasing order; waits (without blocking the runtime)
    /// only while the ring is empty.
    pub(crate) async fn snowflake_ids(&self, count: usize) -> Result<Vec<u64>, ApiError> {
        let mut out = vec![0u64; count];
        let mut filled = 0;
        let snowflake = self.snowflake.load_full();
        while filled < count {
            match snowflake.try_next_uids(&mut out[filled..]) {
                Ok(n) => filled += n,
                Err(UidError::WouldBlock { .. }) => {
                    out[filled] = snowflake
                        .next_uid_async()
                        .await
                        .map_err(|e| self.id_error(e))?;
                    filled += 1;
                }
                Err(e) => return Err(self.id_error(e)),
            }
        }
        Ok(out)
    }

    /// One snowflake ID, for the single-ID routes: no vector, no reference count
    /// taken unless it has to wait.
    pub(crate) async fn snowflake_id(&self) -> Result<u64, ApiError> {
        let ready = self.snowflake.load().try_next_uid();
        match ready {
            Err(UidError::WouldBlock { .. }) => {
                let snowflake = self.snowflake.load_full();
                snowflake
                    .next_uid_async()
                    .await
                    .map_err(|e| self.id_error(e))
            }
            other => other.map_err(|e| self.id_error(e)),
        }
    }

    /// Whether `tag` can be served, as a draw would find (an unknown tag is 404), without
    /// drawing: for HEAD.
    pub(crate) async fn servable(&self, tag: &str) -> Result<(), ApiError> {
        if self.periods.contains_key(tag) || self.residues.contains_key(tag) {
            return Ok(());
        }
        self.segment(tag).await.map(|_| ())
    }

    /// One ID of `tag`, for the single-ID routes.
    pub(crate) async fn segment_id(&self, tag: &str) -> Result<u64, ApiError> {
        if self.periods.contains_key(tag) || self.residues.contains_key(tag) {
            return Ok(self.segment_ids(tag, 1).await?[0]);
        }
        let generator = self.segment(tag).await?;
        self.one(|| generator.try_next_uid(), || generator.next_uid_async())
            .await
    }

    /// `count` IDs of `tag` (in increasing order, but for a residue tag's, which come
    /// from several stores).
    pub(crate) async fn segment_ids(&self, tag: &str, count: usize) -> Result<Vec<u64>, ApiError> {
        if let Some(generator) = self.periods.get(tag) {
            return self.period_ids(generator, count).await;
        }
        if let Some(generator) = self.residues.get(tag) {
            return self
                .collect(
                    count,
                    || generator.try_next_uid(),
                    || generator.next_uid_async(),
                )
                .await;
        }
        let generator = self.segment(tag).await?;
        self.collect(
            count,
            || generator.try_next_uid(),
            || generator.next_uid_async(),
        )
        .await
    }

    /// One ID, taken with `try_one` when one is ready, else awaited with `wait_one`
    /// (which never blocks the runtime).
    async fn one<F: std::future::Future<Output = Result<u64, UidError>>>(
        &self,
        try_one: impl Fn() -> Result<u64, UidError>,
        wait_one: impl Fn() -> F,
    ) -> Result<u64, ApiError> {
        match try_one() {
            Ok(id) => Ok(id),
            Err(UidError::WouldBlock { .. }) => wait_one().await.map_err(|e| self.id_error(e)),
            Err(e) => Err(self.id_error(e)),
        }
    }

    /// `count` IDs, each as [`Ids::one`] takes it.
    async fn collect<F: std::future::Future<Output = Result<u64, UidError>>>(
        &self,
        count: usize,
        try_one: impl Fn() -> Result<u64, UidError>,
        wait_one: impl Fn() -> F,
    ) -> Result<Vec<u64>, ApiError> {
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            out.push(self.one(&try_one, &wait_one).await?);
        }
        Ok(out)
    }

    /// `count` IDs of a period tag; the first take of a new period sets the period's
    /// counter up in the store, on a blocking thread.
    async fn period_ids(
        &self,
        generator: &Arc<PeriodSegmentGenerator>,
        count: usize,
    ) -> Result<Vec<u64>, ApiError> {
        // IDs a failed batch took come first, while their period is still the one served
        // (never an ID of an earlier period after one of a later).
        let mut out: Vec<u64> = {
            let mut kept = self.period_kept.lock().unwrap_or_else(|p| p.into_inner());
            let kept = kept.entry(generator.tag().to_owned()).or_default();
            let current = generator.current_period();
            kept.retain(|&id| generator.split(id).0 >= current);
            let n = kept.len().min(count);
            kept.drain(..n).collect()
        };
        while out.len() < count {
            let taken = match generator.try_next_uid() {
                Ok(id) => Ok(id),
                Err(UidError::WouldBlock { .. }) => {
                    let generator = Arc::clone(generator);
                    tokio::task::spawn_blocking(move || generator.next_uid())
                        .await
                        .map_err(|_| ApiError::unavailable("a period tag's take panicked"))?
                }
                Err(e) => Err(e),
            };
            match taken {
                Ok(id) => out.push(id),
                Err(e) => {
                    // Kept for the next request rather than dropped.
                    let mut kept = self.period_kept.lock().unwrap_or_else(|p| p.into_inner());
                    let kept = kept.entry(generator.tag().to_owned()).or_default();
                    out.append(kept);
                    *kept = out;
                    return Err(self.id_error(e));
                }
            }
        }
        Ok(out)
    }

    /// Refuses ranges of a period tag (each ID carries its period, so a client cannot
    /// hand out IDs of its own from a range) and of a residue tag (its IDs come from
    /// several stores).
    fn no_ranges(&self, tag: &str) -> Result<(), ApiError> {
        let kind = if self.periods.contains_key(tag) {
            "a period tag (its IDs start with their period)"
        } else if self.residues.contains_key(tag) {
            "a residue tag (its IDs come from several stores)"
        } else {
            return Ok(());
        };
        Err(ApiError::bad_request(
            format!("{} is {kind}: no ranges", shown_tag(tag)),
            "ranges of a plain segment tag; take this tag's IDs from /v1/segment/{tag}",
        ))
    }

    /// A range of `count` IDs of `tag` taken from the store now and marked used there:
    /// `[first, first + count)`. For clients that hand out IDs themselves.
    pub(crate) async fn range(&self, tag: &str, count: u64) -> Result<u64, ApiError> {
        self.check_tag(tag)?;
        self.no_ranges(tag)?;
        let store = Arc::clone(&self.store);
        let owned = tag.to_owned();
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || store.allocate(&owned, count))
            .await
            .map_err(|_| ApiError::unavailable("the store call panicked"))?;
        self.metrics
            .store_call("range", started.elapsed(), result.is_ok());
        match result {
            // A range below the floor is taken from the store but never handed out.
            Ok(end) => match self.config.id_floor.filter(|floor| end - count <= *floor) {
                Some(floor) => Err(ApiError::unavailable(format!(
                    "tag {} hands out {} next, not above the ID floor {floor}: create the tag \
                     above the floor (see uidgen migrate plan)",
                    shown_tag(tag),
                    end - count
                ))),
                None => Ok(end - count),
            },
            Err(StoreError::MissingTag { .. }) => Err(ApiError::unknown_tag(tag)),
            Err(StoreError::InvalidSegment { problem, .. }) => Err(ApiError::bad_request(
                format!(
                    "a range of {count} IDs of {} cannot be taken",
                    shown_tag(tag)
                ),
                problem,
            )),
            Err(e) => Err(ApiError::unavailable(format!("the store failed: {e}"))),
        }
    }

    /// Creates `tag` with its counter at `first_id` and base step `step`, unless it
    /// exists (left as it is): for CosId's `createDistributor`, the one request that
    /// creates a tag (tokens decide who may).
    pub(crate) async fn create_tag(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
    ) -> Result<(), ApiError> {
        self.check_tag(tag)?;
        self.no_ranges(tag)?;
        let store = Arc::clone(&self.store);
        let owned = tag.to_owned();
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || {
            store.create(
                &owned,
                first_id,
                step,
                "created by CosId's createDistributor",
            )
        })
        .await
        .map_err(|_| ApiError::unavailable("the store call panicked"))?;
        self.metrics
            .store_call("create", started.elapsed(), result.is_ok());
        match result {
            Ok(_) => Ok(()),
            Err(StoreError::InvalidSegment { problem, .. }) => Err(ApiError::bad_request(
                format!("the tag {} cannot be created", shown_tag(tag)),
                problem,
            )),
            Err(StoreError::InvalidName { rule, .. }) => Err(ApiError::bad_request(
                format!("the tag {} cannot be created", shown_tag(tag)),
                rule,
            )),
            Err(e) => Err(ApiError::unavailable(format!("the store failed: {e}"))),
        }
    }

    /// The tag's base step as the store holds it (read once per tag).
    pub(crate) async fn tag_step(&self, tag: &str) -> Result<u64, ApiError> {
        self.no_ranges(tag)?;
        if let Some(step) = read(&self.steps).get(tag) {
            return Ok(*step);
        }
        // Sets the tag up, so a missing tag is a 404 here.
        self.segment(tag).await?;
        let store = Arc::clone(&self.store);
        let owned = tag.to_owned();
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || store.tag(&owned))
            .await
            .map_err(|_| ApiError::unavailable("the store call panicked"))?;
        self.metrics
            .store_call("tag_step", started.elapsed(), result.is_ok());
        match result {
            Ok(Some(record)) => {
                let step = record.step.clamp(1, self.config.max_count);
                write(&self.steps).insert(tag.to_owned(), step);
                Ok(step)
            }
            Ok(None) => Err(ApiError::unknown_tag(tag)),
            Err(e) => Err(ApiError::unavailable(format!("the store failed: {e}"))),
        }
    }

    /// Refuses a tag no store can hold before any store call.
    fn check_tag(&self, tag: &str) -> Result<(), ApiError> {
        crate::config::check_tag(tag).map_err(|rule| {
            ApiError::bad_request(format!("the tag {} cannot be used", shown_tag(tag)), rule)
        })?;
        if GRANT_NAMES.contains(&tag) {
            return Err(ApiError::bad_request(
                format!("{tag} names a route in token grants, not a segment tag"),
                "a tag the store holds",
            ));
        }
        // A period tag's rows (`tag:20261124`) are served only through the period tag.
        if let Some((base, _)) = tag.rsplit_once(':') {
            if self.periods.contains_key(base) {
                return Err(ApiError::bad_request(
                    format!(
                        "{} is a row of the period tag {}",
                        shown_tag(tag),
                        shown_tag(base)
                    ),
                    format!("IDs of the period tag itself: /v1/segment/{base}"),
                ));
            }
        }
        Ok(())
    }

    /// The tag's generator, set up on first use.
    pub(crate) async fn segment(&self, tag: &str) -> Result<Arc<SegmentGenerator>, ApiError> {
        if let Some(generator) = read(&self.segments).get(tag) {
            return Ok(Arc::clone(generator));
        }
        self.check_tag(tag)?;
        if self.shutting_down.load(Ordering::Relaxed) {
            return Err(ApiError::unavailable("the service is shutting down"));
        }
        let _one_at_a_time = self.setting_up.lock().await;
        if let Some(generator) = read(&self.segments).get(tag) {
            return Ok(Arc::clone(generator));
        }
        if read(&self.segments).len() >= MAX_SERVED_TAGS {
            return Err(ApiError::unavailable(format!(
                "this service serves {MAX_SERVED_TAGS} tags already, its limit"
            )));
        }
        let started = Instant::now();
        let (store, owned) = (Arc::clone(&self.store), tag.to_owned());
        let floor = self.config.id_floor;
        // A request never creates a tag: a missing one is 404.
        let result = tokio::task::spawn_blocking(move || build_segment(store, &owned, None, floor))
            .await
            .map_err(|_| ApiError::unavailable("setting up the tag panicked"))?;
        self.metrics
            .store_call("tag_setup", started.elapsed(), result.is_ok());
        match result {
            Ok(generator) => {
                let generator = Arc::new(generator);
                write(&self.segments).insert(tag.to_owned(), Arc::clone(&generator));
                Ok(generator)
            }
            Err(SegmentError::Store(StoreError::MissingTag { .. })) => {
                Err(ApiError::unknown_tag(tag))
            }
            Err(SegmentError::Store(StoreError::InvalidName { rule, .. })) => Err(
                ApiError::bad_request(format!("the tag {} cannot be used", shown_tag(tag)), rule),
            ),
            Err(e) => Err(ApiError::unavailable(format!(
                "cannot set up tag {}: {e}",
                shown_tag(tag)
            ))),
        }
    }

    fn id_error(&self, e: UidError) -> ApiError {
        ApiError::unavailable(format!("no ID now: {e}"))
    }
}
