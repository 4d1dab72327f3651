//! The store's own records ([`RecordSteps`]) on etcd: one key per record under
//! `PREFIX/store/`, beside the lease and segment keys.

use super::{got, EtcdConn};
use crate::store::guard::RecordSteps;
use crate::store::{StoreError, StoreKind};
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp};

/// The records on an etcd cluster.
#[derive(Clone, Debug)]
pub(crate) struct EtcdRecords {
    pub(crate) conn: EtcdConn,
}

impl EtcdRecords {
    fn prefix(&self) -> String {
        format!("{}/store/", self.conn.root())
    }
}

impl RecordSteps for EtcdRecords {
    fn describe(&self) -> String {
        format!(
            "the etcd store {} (keys {}*)",
            self.conn.location(),
            self.prefix()
        )
    }

    fn kind(&self) -> StoreKind {
        StoreKind::Etcd
    }

    fn get(&self, names: &[&str]) -> Result<Vec<Option<String>>, StoreError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = names
            .iter()
            .map(|n| format!("{}{n}", self.prefix()))
            .collect();
        self.conn
            .run("reading the store's records", async |client| {
                // One revision for all of them.
                let answer = client
                    .txn(
                        Txn::new().and_then(
                            keys.iter()
                                .map(|key| TxnOp::get(key.clone(), None))
                                .collect::<Vec<_>>(),
                        ),
                    )
                    .await?;
                let answers = answer.op_responses();
                Ok((0..keys.len())
                    .map(|i| {
                        got(&answers, i)
                            .first()
                            .map(|kv| String::from_utf8_lossy(kv.value()).into_owned())
                    })
                    .collect())
            })
    }

    fn all(&self) -> Result<Vec<(String, String)>, StoreError> {
        let prefix = self.prefix();
        self.conn
            .run("listing the store's records", async |client| {
                let answer = client
                    .get(prefix.clone(), Some(GetOptions::new().with_prefix()))
                    .await?;
                Ok(answer
                    .kvs()
                    .iter()
                    .map(|kv| {
                        (
                            String::from_utf8_lossy(&kv.key()[prefix.len()..]).into_owned(),
                            String::from_utf8_lossy(kv.value()).into_owned(),
                        )
                    })
                    .collect())
            })
    }

    fn insert(&self, name: &str, value: &str) -> Result<bool, StoreError> {
        let key = format!("{}{name}", self.prefix());
        self.conn.run("writing a store record", async |client| {
            let answer = client
                .txn(
                    Txn::new()
                        .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                        .and_then([TxnOp::put(key.clone(), value, None)]),
                )
                .await?;
            Ok(answer.succeeded())
        })
    }

    fn put(&self, name: &str, value: &str) -> Result<(), StoreError> {
        let key = format!("{}{name}", self.prefix());
        self.conn
            .run("writing a store record", async |client| {
                client.put(key.clone(), value, None).await
            })
            .map(drop)
    }
}
