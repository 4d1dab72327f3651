//! Opening the stores of the place a [`StoreUrl`] names: the lease store and the segment
//! store, each behind the data-loss guard over the store's own records, by the driver of
//! the URL's engine (`DRIVERS` in `store/mod.rs`).

use super::driver::{At, Driver, Place};
use super::url::{not_built, StoreUrl, Target};
use super::StoreError;

/// The scope of a store opened in its default table or key prefix.
const DEFAULT_SCOPE: &str = "default";

impl StoreUrl {
    /// Opens the worker-ID lease store of this place (connecting on first use), in its
    /// default table (`WORKER_LEASE`) or key prefix (`uidgen:lease:`).
    pub fn lease_store(&self) -> Result<Box<dyn super::lease::LeaseStore>, StoreError> {
        self.open_lease(None)
    }

    /// The lease store in table `name` (a key prefix on Redis): deployments sharing one
    /// database kept apart.
    pub fn lease_store_in(
        &self,
        name: &str,
    ) -> Result<Box<dyn super::lease::LeaseStore>, StoreError> {
        self.open_lease(Some(name))
    }

    /// Opens the segment store of this place (connecting on first use), in its default
    /// table (`leaf_alloc`) or key prefix (`uidgen:segment:`).
    pub fn segment_store(&self) -> Result<Box<dyn super::segment::SegmentStore>, StoreError> {
        self.open_segment(None)
    }

    /// The segment store in table `name` (a key prefix on Redis).
    pub fn segment_store_in(
        &self,
        name: &str,
    ) -> Result<Box<dyn super::segment::SegmentStore>, StoreError> {
        self.open_segment(Some(name))
    }

    fn open_lease(
        &self,
        name: Option<&str>,
    ) -> Result<Box<dyn super::lease::LeaseStore>, StoreError> {
        let inner = self.raw_lease(name)?;
        Ok(match self.records()? {
            Some(records) => Box::new(super::guard::GuardedLeases {
                inner,
                shared: super::guard::Shared::of(records),
                scope: name.unwrap_or(DEFAULT_SCOPE).to_owned(),
            }),
            None => inner,
        })
    }

    fn open_segment(
        &self,
        name: Option<&str>,
    ) -> Result<Box<dyn super::segment::SegmentStore>, StoreError> {
        let inner = self.raw_segment(name)?;
        Ok(match self.records()? {
            Some(records) => Box::new(super::guard::GuardedSegments::new(
                inner,
                super::guard::Shared::of(records),
                name.unwrap_or(DEFAULT_SCOPE),
                self.force_create,
            )),
            None => inner,
        })
    }

    /// This build's driver of the URL's engine.
    fn driver(&self) -> Result<&'static Driver, StoreError> {
        super::DRIVERS
            .iter()
            .copied()
            .find(|driver| driver.kind == self.kind())
            .ok_or_else(|| not_built(self.kind(), &self.target.shown()))
    }

    /// Where the driver opens it: the URL's file or text, its bound, and `name`.
    fn place<'a>(&'a self, name: Option<&'a str>) -> Place<'a> {
        Place {
            at: match &self.target {
                Target::File(path) => At::File(path),
                Target::Url(url) => At::Url(url),
            },
            timeout: self.timeout,
            name,
        }
    }

    fn raw_lease(
        &self,
        name: Option<&str>,
    ) -> Result<Box<dyn super::lease::LeaseStore>, StoreError> {
        (self.driver()?.lease)(&self.place(name))
    }

    /// The segment store without the data-loss checks (for a repair).
    pub(super) fn raw_segment(
        &self,
        name: Option<&str>,
    ) -> Result<Box<dyn super::segment::SegmentStore>, StoreError> {
        (self.driver()?.segment)(&self.place(name))
    }

    /// The store's own records (its identity and floors): every engine keeps them.
    fn records(&self) -> Result<Option<Box<dyn super::guard::RecordSteps>>, StoreError> {
        (self.driver()?.records)(&self.place(None)).map(Some)
    }

    /// After a restore, a failover or any loss of data (and after checking the store):
    /// raises every segment counter (default table or prefix) by `margin` above itself
    /// and above every floor known (the store's records, this machine's memory), creates
    /// again the tags known to be gone above what they handed out, makes every lease
    /// start at least `ahead` past now (the largest time borrowed ahead of the clock),
    /// and gives the store a new identity that replaces the old, so processes that
    /// refused it take from it again. `uidgen store repair` runs it.
    pub fn repair(
        &self,
        margin: u64,
        ahead: std::time::Duration,
    ) -> Result<super::guard::RepairReport, StoreError> {
        let records = self.records()?.ok_or_else(|| StoreError::Unexpected {
            store: self.kind().name(),
            location: self.to_string(),
            step: "repairing",
            what: "this build keeps no records in such a store".into(),
        })?;
        let shared = super::guard::Shared::of(records);
        let segments = self.raw_segment(None)?;
        super::guard::repair(&shared, &*segments, DEFAULT_SCOPE, margin, ahead)
    }
}

// A URL in any form opens its lease store wherever a store is asked for (`.store(..)`).
impl super::lease::IntoLeaseStore for StoreUrl {
    fn into_lease_store(self) -> Result<Box<dyn super::lease::LeaseStore>, StoreError> {
        self.lease_store()
    }
}

impl super::lease::IntoLeaseStore for &StoreUrl {
    fn into_lease_store(self) -> Result<Box<dyn super::lease::LeaseStore>, StoreError> {
        self.lease_store()
    }
}

impl super::lease::IntoLeaseStore for &str {
    fn into_lease_store(self) -> Result<Box<dyn super::lease::LeaseStore>, StoreError> {
        StoreUrl::parse(self)?.lease_store()
    }
}

impl super::lease::IntoLeaseStore for String {
    fn into_lease_store(self) -> Result<Box<dyn super::lease::LeaseStore>, StoreError> {
        self.as_str().into_lease_store()
    }
}

impl super::lease::IntoLeaseStore for &String {
    fn into_lease_store(self) -> Result<Box<dyn super::lease::LeaseStore>, StoreError> {
        self.as_str().into_lease_store()
    }
}
