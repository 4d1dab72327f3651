//! Segment counters on ZooKeeper: one persistent node per tag, moved by compare-and-set
//! on its version, so a range is taken by exactly one caller.

use super::{ZkConn, STORE};
use crate::store::guard::now_ms;
use crate::store::segment::{
    check_create, check_tag, tag_from_text, tag_text, SegmentStore, TagRecord,
};
use crate::store::versioned::{allocate_versioned, set_counter_versioned, VersionedTags};
use crate::store::{StoreError, StoreKind};

/// The node of the tags under the URL's path, when no name is given.
const DEFAULT_NAME: &str = "segment";

/// Segment counters ([`SegmentStore`]) on a ZooKeeper ensemble (the `zookeeper`
/// feature): a persistent node per tag under `PATH/segment` (or
/// [`prefix`](Self::prefix)), named by the tag (`%XX` for any byte but letters, digits,
/// `-` and `_`), its data the counter, the base step, the time of the last change and
/// the description. Each step reads the node and writes it only if its version is still
/// the one read, so two processes never take the same range, and a range is given back
/// only when no one took one after. Bounds and passwords as for
/// [`ZooKeeperLeaseStore`](crate::ZooKeeperLeaseStore).
///
/// ```no_run
/// use uidgen::{SegmentGenerator, ZooKeeperSegmentStore};
///
/// let store = ZooKeeperSegmentStore::new("zookeeper://10.0.0.1,10.0.0.2,10.0.0.3/ids")?;
/// let orders = SegmentGenerator::builder(store, "order").create_missing(1, 1000).build()?;
/// println!("{}", orders.next_uid()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ZooKeeperSegmentStore {
    conn: ZkConn,
}

crate::store::net::key_value_store_face!(
    ZooKeeperSegmentStore,
    conn,
    "ZooKeeper ensemble",
    "segment, under the URL's own path"
);

/// A text as a node's name: letters, digits, `-` and `_` as they are, every other byte
/// `%XX` (so no name is `.`, `..` or holds a `/`).
pub(crate) fn node_name(text: &str) -> String {
    let mut name = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    name
}

/// The text of a [`node_name`] (`None`: not one).
pub(crate) fn from_node_name(name: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(name.len());
    let mut rest = name.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(after.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &after[2..];
        } else {
            bytes.push(byte);
            rest = after;
        }
    }
    String::from_utf8(bytes).ok()
}

impl ZooKeeperSegmentStore {
    /// The store on the ensemble at `url`; nothing is connected until the first step.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            conn: ZkConn::new(url)?.with_prefix(DEFAULT_NAME)?,
        })
    }

    /// Deletes the store's nodes, with every tag. Only for a store no generator will use
    /// again (tests, a retired deployment).
    pub fn destroy(&self) -> Result<(), StoreError> {
        let prefix = self.conn.key_prefix().to_owned();
        self.conn.run("deleting the nodes", async |client| {
            ZkConn::delete_tree(client, &prefix).await
        })
    }

    fn path(&self, tag: &str) -> String {
        format!("{}/{}", self.conn.key_prefix(), node_name(tag))
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

impl VersionedTags for ZooKeeperSegmentStore {
    type Version = i32;
    const STORE: &'static str = STORE;

    fn describe(&self) -> String {
        self.conn.describe()
    }

    /// The tag's record and its node's version.
    fn read(&self, tag: &str, step: &'static str) -> Result<Option<(TagRecord, i32)>, StoreError> {
        let path = self.path(tag);
        let prefix = self.conn.key_prefix().to_owned();
        let found = self.conn.run(step, async |client| {
            // Not there, as this session's member sees it: a tag another process just
            // created may not have reached that member yet (CI29), so it is caught up
            // with the leader and asked again before the tag counts as missing.
            for first in [true, false] {
                match client.get_data(&path).await {
                    Ok((data, stat)) => return Ok(Some((data, stat.version))),
                    Err(zookeeper_client::Error::NoNode) if first => {
                        super::sync(client, &prefix).await?
                    }
                    Err(zookeeper_client::Error::NoNode) => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
            Ok(None)
        })?;
        match found {
            None => Ok(None),
            Some((value, version)) => tag_from_text(tag.to_owned(), &value)
                .map(|record| Some((record, version)))
                .ok_or_else(|| {
                    self.conn
                        .unexpected(step, "a tag's node whose data is not a counter")
                }),
        }
    }

    /// Writes `record` if the node is still at `version`.
    fn write_if(
        &self,
        step: &'static str,
        record: &TagRecord,
        version: i32,
    ) -> Result<bool, StoreError> {
        let path = self.path(&record.tag);
        let value = tag_text(record);
        self.conn.run(step, async |client| {
            match client.set_data(&path, value.as_bytes(), Some(version)).await {
                Ok(_) => Ok(true),
                Err(zookeeper_client::Error::BadVersion | zookeeper_client::Error::NoNode) => {
                    Ok(false)
                }
                Err(e) => Err(e),
            }
        })
    }
}

impl SegmentStore for ZooKeeperSegmentStore {
    fn describe(&self) -> String {
        self.conn.describe()
    }

    fn kind(&self) -> StoreKind {
        StoreKind::ZooKeeper
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
        let path = self.path(tag);
        let prefix = self.conn.key_prefix().to_owned();
        let value = tag_text(&TagRecord {
            tag: tag.to_owned(),
            max_id: first_id,
            step,
            description: description.to_owned(),
            updated_ms: now_ms(),
        });
        let conn = &self.conn;
        // Only if the node was never there: an existing tag is left as it is.
        self.conn.run("creating a tag", async |client| {
            conn.create_under(client, &prefix, &path, value.as_bytes())
                .await
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
            super::sync(client, &prefix).await?;
            let names = super::children(client, &prefix).await?;
            let mut found = Vec::with_capacity(names.len());
            for batch in names.chunks(256) {
                let mut reads = client.new_multi_reader();
                for name in batch {
                    reads.add_get_data(&format!("{prefix}/{name}"))?;
                }
                let answers = reads.commit().await?;
                for (i, name) in batch.iter().enumerate() {
                    // A tag deleted between the listing and the read is not listed.
                    if let Some((data, _)) = super::node_data(answers.get(i))? {
                        found.push((name.clone(), data.to_vec()));
                    }
                }
            }
            Ok(found)
        })?;
        let mut tags = found
            .into_iter()
            .map(|(name, value)| {
                from_node_name(&name)
                    .and_then(|tag| tag_from_text(tag, &value))
                    .ok_or_else(|| {
                        self.conn
                            .unexpected(step, "a node that is not a tag's counter")
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        tags.sort_by(|a, b| a.tag.cmp(&b.tag));
        Ok(tags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_has_a_node_name_that_reads_back() {
        for tag in ["order", "a/b", ".", "..", "x y", "é%/_-", "%41"] {
            let name = node_name(tag);
            assert!(
                !name.contains('/') && name != "." && name != "..",
                "{tag:?} → {name}"
            );
            assert_eq!(from_node_name(&name).as_deref(), Some(tag));
        }
        assert_eq!(node_name("order_2-b"), "order_2-b");
        assert_eq!(from_node_name("%4"), None);
        assert_eq!(from_node_name("%FF"), None);
    }
}
