//! Segment counters on etcd: one key per tag, moved by compare-and-set on its revision in
//! a transaction, so a range is taken by exactly one caller.

use super::EtcdConn;
use crate::store::guard::now_ms;
use crate::store::segment::{
    check_create, check_step, check_tag, counter_overflow, missing_tag, SegmentStore, TagRecord,
};
use crate::store::{StoreError, StoreKind};
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp};

const STORE: &str = "etcd";

/// The key prefix under the URL's, when no name is given.
const DEFAULT_NAME: &str = "segment/";

/// How many times a step tries again after another process moved the counter between
/// its read and its write. Each retry means someone else took a range.
const CAS_ATTEMPTS: usize = 100;

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

/// A tag's value: `max_id step updated_ms description`.
fn encode(max_id: u64, step: u64, updated_ms: u64, description: &str) -> String {
    format!("{max_id} {step} {updated_ms} {description}")
}

fn decode(tag: String, value: &[u8]) -> Option<TagRecord> {
    let text = std::str::from_utf8(value).ok()?;
    let mut fields = text.splitn(4, ' ');
    let max_id = fields.next()?.parse().ok()?;
    let step = fields.next()?.parse().ok()?;
    let updated_ms = fields.next()?.parse().ok()?;
    let description = fields.next().unwrap_or_default().to_owned();
    Some(TagRecord {
        tag,
        max_id,
        step,
        description,
        updated_ms,
    })
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

    /// Deletes every tag under the prefix. Only for tags no one will use again.
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

    /// The tag's record and the revision it was read at; `None` if it does not exist.
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
            Some((value, revision)) => decode(tag.to_owned(), &value)
                .map(|record| Some((record, revision)))
                .ok_or_else(|| {
                    self.conn
                        .unexpected(step, "a tag's value that is not a counter")
                }),
        }
    }

    /// Writes `record` over the key if its revision is still `revision`.
    fn write_if(
        &self,
        step: &'static str,
        record: &TagRecord,
        revision: i64,
    ) -> Result<bool, StoreError> {
        let key = self.key(&record.tag);
        let value = encode(
            record.max_id,
            record.step,
            record.updated_ms,
            &record.description,
        );
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

    /// Sets `tag`'s counter from `from` to `to` if it is still `from`.
    fn set_counter(
        &self,
        step: &'static str,
        tag: &str,
        from: u64,
        to: u64,
    ) -> Result<bool, StoreError> {
        for _ in 0..CAS_ATTEMPTS {
            let Some((mut record, revision)) = self.read(tag, step)? else {
                return Ok(false);
            };
            if record.max_id != from {
                return Ok(false);
            }
            record.max_id = to;
            record.updated_ms = now_ms();
            if self.write_if(step, &record, revision)? {
                return Ok(true);
            }
        }
        Ok(false)
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
        check_tag(STORE, tag)?;
        check_step(STORE, tag, step)?;
        let what = "taking a range";
        for _ in 0..CAS_ATTEMPTS {
            let Some((mut record, revision)) = self.read(tag, what)? else {
                return Err(missing_tag(STORE, &self.describe(), tag));
            };
            let grown = record
                .max_id
                .checked_add(step)
                .filter(|max| *max <= i64::MAX as u64)
                .ok_or_else(|| counter_overflow(STORE, tag, &record.max_id.to_string(), step))?;
            record.max_id = grown;
            record.updated_ms = now_ms();
            if self.write_if(what, &record, revision)? {
                return Ok(grown);
            }
        }
        Err(StoreError::Unexpected {
            store: STORE,
            location: self.describe(),
            step: what,
            what: format!(
                "other processes moved tag {tag:?}'s counter first, {CAS_ATTEMPTS} times in a \
                 row; try again"
            ),
        })
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
        let value = encode(first_id, step, now_ms(), description);
        self.conn.run("creating a tag", async |client| {
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
        Ok(self.read(tag, "reading a tag")?.map(|(record, _)| record))
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
                decode(tag, &value).ok_or_else(|| {
                    self.conn
                        .unexpected(step, "a tag's value that is not a counter")
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_value_reads_back_with_spaces_in_its_description() {
        let value = encode(42, 1000, 7, "orders of shop 3");
        let record = decode("t".into(), value.as_bytes()).unwrap();
        assert_eq!(
            (
                record.max_id,
                record.step,
                record.updated_ms,
                record.description.as_str()
            ),
            (42, 1000, 7, "orders of shop 3")
        );
        assert!(decode("t".into(), b"x 1 2 d").is_none());
        assert_eq!(decode("t".into(), b"1 2 3").unwrap().description, "");
    }
}
