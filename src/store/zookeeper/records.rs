//! The store's own records ([`RecordSteps`]) on ZooKeeper: one persistent node per
//! record under `PATH/store`, beside the lease and segment nodes.

use super::segment::{from_node_name, node_name};
use super::ZkConn;
use crate::store::guard::RecordSteps;
use crate::store::{StoreError, StoreKind};

/// The records on a ZooKeeper ensemble.
#[derive(Clone, Debug)]
pub(crate) struct ZkRecords {
    pub(crate) conn: ZkConn,
}

impl ZkRecords {
    fn prefix(&self) -> String {
        format!("{}/store", self.conn.root())
    }

    fn path(&self, name: &str) -> String {
        format!("{}/{}", self.prefix(), node_name(name))
    }
}

impl RecordSteps for ZkRecords {
    fn describe(&self) -> String {
        format!(
            "the ZooKeeper store {} (nodes under {})",
            self.conn.location(),
            self.prefix()
        )
    }

    fn kind(&self) -> StoreKind {
        StoreKind::ZooKeeper
    }

    fn get(&self, names: &[&str]) -> Result<Vec<Option<String>>, StoreError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let paths: Vec<String> = names.iter().map(|name| self.path(name)).collect();
        let root = self.conn.root().to_owned();
        self.conn
            .run("reading the store's records", async |client| {
                // Another session's writes seen, then all of them in one read.
                super::sync(client, &root).await?;
                let mut reads = client.new_multi_reader();
                for path in &paths {
                    reads.add_get_data(path)?;
                }
                let answers = reads.commit().await?;
                (0..paths.len())
                    .map(|i| {
                        super::node_data(answers.get(i)).map(|found| {
                            found.map(|(data, _)| String::from_utf8_lossy(data).into_owned())
                        })
                    })
                    .collect()
            })
    }

    fn all(&self) -> Result<Vec<(String, String)>, StoreError> {
        let prefix = self.prefix();
        let found = self
            .conn
            .run("listing the store's records", async |client| {
                let names = super::children(client, &prefix).await?;
                let mut found = Vec::with_capacity(names.len());
                for name in names {
                    match client.get_data(&format!("{prefix}/{name}")).await {
                        Ok((data, _)) => found.push((name, data)),
                        Err(zookeeper_client::Error::NoNode) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(found)
            })?;
        found
            .into_iter()
            .map(|(name, data)| {
                from_node_name(&name)
                    .map(|name| (name, String::from_utf8_lossy(&data).into_owned()))
                    .ok_or_else(|| {
                        self.conn
                            .unexpected("listing the store's records", "a node that is not a record")
                    })
            })
            .collect()
    }

    fn insert(&self, name: &str, value: &str) -> Result<bool, StoreError> {
        let (path, prefix) = (self.path(name), self.prefix());
        let conn = &self.conn;
        self.conn.run("writing a store record", async |client| {
            conn.create_under(client, &prefix, &path, value.as_bytes())
                .await
        })
    }

    fn put(&self, name: &str, value: &str) -> Result<(), StoreError> {
        let (path, prefix) = (self.path(name), self.prefix());
        let conn = &self.conn;
        self.conn.run("writing a store record", async |client| {
            // Written over if there; made if not (and written over if another process
            // made it between the two).
            match client.set_data(&path, value.as_bytes(), None).await {
                Err(zookeeper_client::Error::NoNode) => {}
                other => return other.map(drop),
            }
            if !conn.create_under(client, &prefix, &path, value.as_bytes()).await? {
                client.set_data(&path, value.as_bytes(), None).await?;
            }
            Ok(())
        })
    }
}
