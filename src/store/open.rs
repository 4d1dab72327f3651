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

    /// The highest value of `column` in `table` (`schema.table` allowed): the highest ID
    /// an old scheme wrote, read with `SELECT MAX(column)`, for `uidgen migrate plan`.
    /// `None` when the table is empty. SQL stores only (SQLite, MySQL/MariaDB,
    /// PostgreSQL); names must be plain identifiers (letters, digits, `_`), so nothing
    /// but a name reaches the SQL.
    pub fn column_max(&self, table: &str, column: &str) -> Result<Option<u64>, StoreError> {
        let kind = self.kind();
        let plain = |what: &'static str, name: &str, dotted: bool| {
            let ok = if dotted {
                name.split('.').count() <= 2 && name.split('.').all(super::is_plain_identifier)
            } else {
                super::is_plain_identifier(name)
            };
            if ok {
                Ok(())
            } else {
                Err(StoreError::InvalidName {
                    store: kind.name(),
                    what,
                    name: name.to_owned(),
                    rule: if dotted {
                        "use letters, digits and _ only, not starting with a digit, at most \
                         64 (a table may be schema.table)"
                    } else {
                        "use letters, digits and _ only, not starting with a digit, at most 64"
                    },
                })
            }
        };
        plain("table name", table, true)?;
        plain("column name", column, false)?;
        let read = self
            .driver()?
            .column_max
            .ok_or_else(|| StoreError::Unexpected {
                store: kind.name(),
                location: self.target.shown(),
                step: "reading the highest ID",
                what: "this store keeps no tables: read the highest ID from the old scheme's \
                   SQL database (sqlite, mysql or postgres URL), or give it as a number"
                    .into(),
            })?;
        read(&self.place(Some(table)), column)
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

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::StoreUrl;

    #[test]
    fn the_highest_id_is_read_from_integer_columns_only_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE ids (id INTEGER PRIMARY KEY);
             INSERT INTO ids VALUES (10), (7623573822388641791);
             CREATE TABLE words (id TEXT); INSERT INTO words VALUES ('9'), ('7623573822388641791');
             CREATE TABLE mixed (id); INSERT INTO mixed VALUES (7623573822388641791), ('5');
             CREATE TABLE floats (id REAL); INSERT INTO floats VALUES (7623573822388641791);
             CREATE TABLE empty (id INTEGER);",
        )
        .unwrap();
        drop(conn);
        let url = StoreUrl::parse(path.to_str().unwrap()).unwrap();
        assert_eq!(
            url.column_max("ids", "id").unwrap(),
            Some(7623573822388641791)
        );
        assert_eq!(url.column_max("empty", "id").unwrap(), None);
        for table in ["words", "mixed", "floats"] {
            let err = url.column_max(table, "id").unwrap_err().to_string();
            assert!(err.contains("integer column"), "{table}: {err}");
        }
        // Read-only: no table of ours in the old file, and no file at a mistyped path.
        let conn = rusqlite::Connection::open(&path).unwrap();
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 5);
        let typo = dir.path().join("olde.db");
        let url = StoreUrl::parse(typo.to_str().unwrap()).unwrap();
        assert!(url.column_max("ids", "id").is_err());
        assert!(!typo.exists());
    }
}
