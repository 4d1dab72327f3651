//! A ZooKeeper sequential node per ID: the number ZooKeeper appends to the node's name
//! (from its parent's count of changes to its children, kept through restarts) is the
//! ID. The nodes are ephemeral: they go when their session ends (at most its 10 s
//! timeout after the run).

use super::{runtime, set_open, within_limit, Client, Entry, Error, Place, Scheme};

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
    let rest = url.strip_prefix("zk://").ok_or_else(|| {
        format!(
            "not a ZooKeeper URL (zk://HOST:PORT[/PARENT]): {}",
            super::describe(url)
        )
    })?;
    let (cluster, parent) = match rest.split_once('/') {
        Some((cluster, parent)) if !parent.trim_matches('/').is_empty() => {
            (cluster, format!("/{}", parent.trim_matches('/')))
        }
        Some((cluster, _)) => (cluster, DEFAULT_PARENT.to_owned()),
        None => (rest, DEFAULT_PARENT.to_owned()),
    };
    let scheme = ZooKeeper {
        cluster: cluster.to_owned(),
        parent,
    };
    let session = scheme.connect()?;
    let mode =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    within_limit(&session.rt, async {
        match session.client.create(&scheme.parent, b"", &mode).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => Ok(()),
            Err(e) => Err(format!("cannot make {}: {e}", scheme.parent)),
        }
    })?;
    Ok(Box::new(scheme))
}

impl ZooKeeper {
    fn connect(&self) -> Result<Session, Error> {
        // With uidgen's TLS built, zookeeper-client brings aws-lc-rs beside ring, and its
        // client, TLS or not, finds no rustls provider unless one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let rt = runtime()?;
        let client = within_limit(&rt, async {
            zookeeper_client::Client::connector()
                .session_timeout(std::time::Duration::from_secs(10))
                .connect(&self.cluster)
                .await
                .map_err(|e| format!("cannot connect to ZooKeeper at {}: {e}", self.cluster))
        })?;
        Ok(Session {
            client,
            path: format!("{}/id-", self.parent),
            rt,
        })
    }
}

impl Scheme for ZooKeeper {
    fn client(&self) -> Result<Box<dyn Client>, Error> {
        Ok(Box::new(self.connect()?))
    }
}

/// The runtime last: fields drop in order, and the client's session task runs on it.
struct Session {
    client: zookeeper_client::Client,
    path: String,
    rt: tokio::runtime::Runtime,
}

impl Client for Session {
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), Error> {
        let mode = zookeeper_client::CreateMode::EphemeralSequential
            .with_acls(zookeeper_client::Acls::anyone_all());
        let (client, path) = (&self.client, &self.path);
        let (_, sequence) = within_limit(&self.rt, async {
            client
                .create(path, b"", &mode)
                .await
                .map_err(|e| format!("ZooKeeper: {e}"))
        })?;
        out.push(sequence.into_i64() as u128);
        Ok(())
    }
}
