//! A ZooKeeper sequential node per ID: the number ZooKeeper appends to the node's name
//! (its parent's count of children made, kept through restarts) is the ID. The nodes are
//! ephemeral, so a run leaves nothing behind when its sessions close.

use super::{runtime, set_open, Client, Entry, Error, Place, Scheme};

pub(super) fn fill(all: &mut [Entry]) {
    set_open(all, "zookeeper-sequential", open);
}

/// The parent of the sequential nodes when the URL names none.
const DEFAULT_PARENT: &str = "/uidgen-schemes";

struct ZooKeeper {
    /// `host:port[,host:port…]`.
    cluster: String,
    parent: String,
}

/// `zk://HOST:PORT[,HOST:PORT…][/PARENT]`.
fn open(place: &Place<'_>) -> Result<Box<dyn Scheme>, Error> {
    let url = place
        .stores
        .first()
        .ok_or("--store zk://HOST:PORT[/PARENT] is needed")?;
    let rest = url
        .strip_prefix("zk://")
        .ok_or_else(|| format!("not a ZooKeeper URL (zk://HOST:PORT[/PARENT]): {url}"))?;
    let (cluster, parent) = match rest.split_once('/') {
        Some((cluster, "")) => (cluster, DEFAULT_PARENT.to_owned()),
        Some((cluster, parent)) => (cluster, format!("/{parent}")),
        None => (rest, DEFAULT_PARENT.to_owned()),
    };
    let scheme = ZooKeeper {
        cluster: cluster.to_owned(),
        parent,
    };
    let session = scheme.connect()?;
    let made = session.rt.block_on(session.client.create(
        &scheme.parent,
        b"",
        &zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()),
    ));
    match made {
        Ok(_) | Err(zookeeper_client::Error::NodeExists) => Ok(Box::new(scheme)),
        Err(e) => Err(format!("cannot make {}: {e}", scheme.parent)),
    }
}

impl ZooKeeper {
    fn connect(&self) -> Result<Session, Error> {
        let rt = runtime()?;
        let client = rt
            .block_on(
                zookeeper_client::Client::connector()
                    .session_timeout(std::time::Duration::from_secs(10))
                    .connect(&self.cluster),
            )
            .map_err(|e| format!("cannot connect to ZooKeeper at {}: {e}", self.cluster))?;
        Ok(Session {
            rt,
            client,
            path: format!("{}/id-", self.parent),
        })
    }
}

impl Scheme for ZooKeeper {
    fn client(&self) -> Result<Box<dyn Client>, Error> {
        Ok(Box::new(self.connect()?))
    }
}

struct Session {
    rt: tokio::runtime::Runtime,
    client: zookeeper_client::Client,
    path: String,
}

impl Client for Session {
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), Error> {
        let mode = zookeeper_client::CreateMode::EphemeralSequential
            .with_acls(zookeeper_client::Acls::anyone_all());
        let (_, sequence) = self
            .rt
            .block_on(self.client.create(&self.path, b"", &mode))
            .map_err(|e| format!("ZooKeeper: {e}"))?;
        out.push(sequence.into_i64() as u128);
        Ok(())
    }
}
