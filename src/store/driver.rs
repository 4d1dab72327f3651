//! What an engine folder gives the rest of `store/`: how it opens its lease store, its
//! segment store and its records at a place. Each engine's `driver.rs` fills one
//! [`Driver`]; `store/mod.rs` declares every engine once (`engines!`: its kind, feature,
//! schemes and folder), `open.rs` picks a driver by the URL's kind. Parsing and showing a
//! store's name is `url.rs`'s.

use super::guard::RecordSteps;
use super::lease::LeaseStore;
use super::segment::SegmentStore;
use super::{StoreError, StoreKind};
use std::path::Path;
use std::time::Duration;

/// Where a driver opens a store: a parsed store URL's parts.
#[derive(Debug)]
pub(crate) struct Place<'a> {
    /// The embedded store's file, or a network store's URL as given.
    pub(crate) at: At<'a>,
    /// The bound on each network step (the wait for the file's lock, for SQLite), if
    /// not the engine's default.
    pub(crate) timeout: Option<Duration>,
    /// The table (a key prefix, on key-value stores) asked for, else the engine's own.
    pub(crate) name: Option<&'a str>,
}

/// A file or a URL.
#[derive(Debug, Clone, Copy)]
pub(crate) enum At<'a> {
    File(&'a Path),
    Url(&'a str),
}

impl<'a> Place<'a> {
    /// The network URL; a file where an engine wants a URL is a bug of `open.rs`'s,
    /// reported rather than panicking.
    #[allow(dead_code)] // unused when only SQLite is built
    pub(crate) fn url(&self, kind: StoreKind) -> Result<&'a str, StoreError> {
        match self.at {
            At::Url(url) => Ok(url),
            At::File(_) => Err(self.misplaced(kind)),
        }
    }

    /// The embedded store's file.
    #[allow(dead_code)] // unused without SQLite
    pub(crate) fn file(&self, kind: StoreKind) -> Result<&'a Path, StoreError> {
        match self.at {
            At::File(path) => Ok(path),
            At::Url(_) => Err(self.misplaced(kind)),
        }
    }

    fn misplaced(&self, kind: StoreKind) -> StoreError {
        StoreError::Unexpected {
            store: kind.name(),
            location: String::new(),
            step: "opening",
            what: "a store of this kind was named by a file and a URL at once".into(),
        }
    }
}

/// Opens a store of one family at a place.
pub(crate) type Opener<T> = fn(&Place<'_>) -> Result<Box<T>, StoreError>;

/// One engine: its kind and how it opens each of its stores.
pub(crate) struct Driver {
    pub(crate) kind: StoreKind,
    /// Reads a URL of this engine as opening it would, without connecting.
    pub(crate) check: fn(&str) -> Result<(), StoreError>,
    pub(crate) lease: Opener<dyn LeaseStore>,
    pub(crate) segment: Opener<dyn SegmentStore>,
    /// The store's own records (its identity and floors), for the data-loss guard.
    pub(crate) records: Opener<dyn RecordSteps>,
    /// `SELECT MAX(column)` of the place's table (`place.name`), on SQL engines: the
    /// highest ID an old scheme wrote, for `uidgen migrate plan`.
    pub(crate) column_max: Option<ColumnMax>,
}

/// Reads the highest value of a column of the place's table (`None`: the table is empty).
pub(crate) type ColumnMax = fn(&Place<'_>, &str) -> Result<Option<u64>, StoreError>;

/// The builder surface every engine's stores share, for opening one at a place.
#[allow(dead_code)] // unused when no engine is built
pub(crate) trait Builder: Sized {
    /// The bound on each step (`timeout`; `busy_timeout` on SQLite).
    fn bounded(self, timeout: Duration) -> Self;
    /// Another table, or key prefix (`table`; `prefix`).
    fn named(self, name: &str) -> Result<Self, StoreError>;

    /// The store with the place's bound and name.
    fn at(self, place: &Place<'_>) -> Result<Self, StoreError> {
        let store = match place.timeout {
            Some(timeout) => self.bounded(timeout),
            None => self,
        };
        match place.name {
            Some(name) => store.named(name),
            None => Ok(store),
        }
    }
}

/// `store` at `place`, as a lease store.
#[allow(dead_code)] // unused when no engine is built
pub(crate) fn lease_at<S: Builder + LeaseStore + 'static>(
    store: S,
    place: &Place<'_>,
) -> Result<Box<dyn LeaseStore>, StoreError> {
    Ok(Box::new(store.at(place)?))
}

/// `store` at `place`, as a segment store.
#[allow(dead_code)] // unused when no engine is built
pub(crate) fn segment_at<S: Builder + SegmentStore + 'static>(
    store: S,
    place: &Place<'_>,
) -> Result<Box<dyn SegmentStore>, StoreError> {
    Ok(Box::new(store.at(place)?))
}
