//! Segment counters on etcd: one key per tag, moved by compare-and-set on its revision in
//! a transaction, so a range is taken by exactly one caller.

use super::EtcdConn;
use crate::store::guard::now_ms;
use crate::store::segment::{
    check_create, check_tag, tag_from_text, tag_text, SegmentStore, TagRecord,
};
use crate::store::versioned::{allocate_versioned, set_counter_versioned, VersionedTags};
use crate::store::{StoreError, StoreKind};
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp};

const STORE: &str = "etcd";

/// The key prefix under the URL's, when no name is given.
const DEFAULT_NAME: &str = "segment/";

/// Segment counters ([`SegmentStore`]) on an etcd cluster (the `etcd` feature): one key
/// per tag under `PREFIX/segment/` (or [`prefix`](Self::prefix)), its value the counter,
/// the base step, the time of the last change and the description. Each step reads the
/// key and writes it in a transaction that holds only if its revision is still the one
/// read, so two processes never take the same range, and a range is given back only when
/// no one took one after. Bounds, TLS and passwords as for
/// [`EtcdLeaseStore`](crate::EtcdLeaseStore).
///
/// ```no_run
/// use uidgen::{EtcdSegmentStore, SegmentGenerator};
///
/// let store = EtcdSegmentStore::new("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/ids")?;
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1, 1000).build()?;
/// println!("{}", orders.next_uid()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct EtcdSegmentStore {
    conn: EtcdConn,
}

crate::store::net::key_value_store_face!(
    EtcdSegmentStore,
    conn,
    "etcd cluster",
    "segment/, under the URL's own prefix"
);

impl EtcdSegmentStore {
    /// The store on the cluster at `url`; nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            conn: EtcdConn::new(url)?.with_prefix(DEFAULT_NAME)?,
        })
    }

    /// Deletes the store's keys, with every tag. Only for a store no generator will use
    /// again (tests, a retired deployment).
    pub fn destroy(&self) -> Result<(), StoreError> {
        let prefix = self.conn.key_prefix().to_owned();
        self.conn
            .run("deleting the keys", async |client| {
                client
                    .delete(
                        prefix,
                        Some(etcd_client::DeleteOptions::new().with_prefix()),
                    )
                    .await
            })
            .map(drop)
    }

    fn key(&self, tag: &str) -> String {
        format!("{}{tag}", self.conn.key_prefix())
    }

    fn set_counter(
        &self,
        step: &'static str,
        tag: &str,
        from: u64,
        to: u64,
    ) -> Result<bool, StoreError> {
        set_counter_versioned(self, step, tag, from, to)
    }
}

impl VersionedTags for EtcdSegmentStore {
    type Version = i64;
    const STORE: &'static str = STORE;

    fn describe(&self) -> String {
        self.conn.describe()
    }

    /// The tag's record and the revision it was last written at.
    fn read(&self, tag: &str, step: &'static str) -> Result<Option<(TagRecord, i64)>, StoreError> {
        let key = self.key(tag);
        let found = self.conn.run(step, async |client| {
            let answer = client.get(key.clone(), None).await?;
            Ok(answer
                .kvs()
                .first()
                .map(|kv| (kv.value().to_vec(), kv.mod_revision())))
        })?;
        match found {
            None => Ok(None),
            Some((value, revision)) => tag_from_text(tag.to_owned(), &value)
                .map(|record| Some((record, revision)))
                .ok_or_else(|| {
                    self.conn
                        .unexpected(step, "a tag's value that is not a counter")
                }),
        }
    }

    /// Writes `record` if the key is still at `revision`.
    fn write_if(
        &self,
        step: &'static str,
        record: &TagRecord,
        revision: i64,
    ) -> Result<bool, StoreError> {
        let key = self.key(&record.tag);
        let value = tag_text(record);
        self.conn.run(step, async |client| {
            let answer = client
                .txn(
                    Txn::new()
                        .when([Compare::mod_revision(
                            key.clone(),
                            CompareOp::Equal,
                            revision,
                        )])
                        .and_then([TxnOp::put(key.clone(), value.clone(), None)]),
                )
                .await?;
            Ok(answer.succeeded())
        })
    }
}

impl SegmentStore for EtcdSegmentStore {
    fn describe(&self) -> String {
        self.conn.describe()
    }

    fn kind(&self) -> StoreKind {
        StoreKind::Etcd
    }

    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        allocate_versioned(self, tag, step)
    }

    fn create(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
        description: &str,
    ) -> Result<bool, StoreError> {
        check_create(STORE, tag, first_id, step, description)?;
        let key = self.key(tag);
        let value = tag_text(&TagRecord {
            tag: tag.to_owned(),
            max_id: first_id,
            step,
            description: description.to_owned(),
            updated_ms: now_ms(),
        });
        self.conn.run("creating a tag", async |client| {
            // Only if the key was never there: an existing tag is left as it is.
            let answer = client
                .txn(
                    Txn::new()
                        .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                        .and_then([TxnOp::put(key.clone(), value.clone(), None)]),
                )
                .await?;
            Ok(answer.succeeded())
        })
    }

    crate::store::segment::give_back_and_raise!(|_: &Self| STORE);

    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        check_tag(STORE, tag)?;
        Ok(VersionedTags::read(self, tag, "reading a tag")?.map(|(record, _)| record))
    }

    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        let prefix = self.conn.key_prefix().to_owned();
        let step = "listing the tags";
        let found = self.conn.run(step, async |client| {
            let answer = client
                .get(prefix.clone(), Some(GetOptions::new().with_prefix()))
                .await?;
            Ok(answer
                .kvs()
                .iter()
                .map(|kv| (kv.key().to_vec(), kv.value().to_vec()))
                .collect::<Vec<_>>())
        })?;
        found
            .into_iter()
            .map(|(key, value)| {
                let tag = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
                tag_from_text(tag, &value).ok_or_else(|| {
                    self.conn
                        .unexpected(step, "a tag's value that is not a counter")
                })
            })
            .collect()
    }
}
