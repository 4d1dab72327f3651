//! A store that loses data never makes uidgen repeat an ID (issue 29): the ways real
//! stores fail, replayed through the command line as one machine runs it (one state
//! folder across runs), on SQLite, MariaDB, PostgreSQL, Redis, etcd and ZooKeeper:
//!
//! - a counter rolled back (an older SQLite file, a dump restored, a Redis failover to a
//!   replica that missed the last writes): the next run hands out no ID it handed out
//!   before, says the store lost data, and raises the counter past it;
//! - lease rows and time marks lost (a restored dump, a Redis restarted without
//!   persistence, FLUSHALL): the next run repeats nothing, or refuses naming the loss
//!   until `uidgen store repair`, after which it repeats nothing either;
//! - a missing tag is not created again below what it handed out;
//! - a Redis that keeps nothing on disk is refused unless the URL accepts the risk.
//!
//! MariaDB and PostgreSQL get a database of the test's own (dumped and restored with
//! their own tools); Redis servers are private ones the test starts and restarts; etcd
//! and ZooKeeper a prefix or path of the test's own, its keys or nodes put back as a
//! backup restored would.

mod common;
#[path = "../../tests/support/relay.rs"]
mod relay;
#[path = "../../tests/support/servers.rs"]
mod servers;

use common::machine::Machine;

use std::collections::HashSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Asserts `run` either succeeded with no ID of `before`, or failed naming the loss.
fn never_repeats(before: &HashSet<u64>, run: &Output, what: &str) -> Option<Vec<u64>> {
    let stderr = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() {
        assert!(
            stderr.contains("lost data") || stderr.contains("lost its data"),
            "{what}: failed without naming the loss: {stderr}"
        );
        return None;
    }
    let ids: Vec<u64> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let repeated = ids.iter().filter(|id| before.contains(id)).count();
    assert_eq!(
        repeated,
        0,
        "{what}: {repeated} of {} IDs repeated; stderr: {stderr}",
        ids.len()
    );
    Some(ids)
}

/// A store of the test's own, and how to take it back to an earlier state.
enum Place {
    Sqlite(tempfile::TempDir),
    Sql {
        mysql: bool,
        url: String,
        db: String,
    },
    /// A key prefix of the test's own on the suite's etcd cluster.
    Etcd {
        url: String,
        prefix: String,
    },
    /// A path of the test's own on the suite's ZooKeeper ensemble.
    #[cfg(feature = "zookeeper")]
    ZooKeeper {
        url: String,
        hosts: String,
        root: String,
    },
}

enum Snapshot {
    File(Vec<u8>),
    Dump(Vec<u8>),
    /// Every key under the prefix and its value.
    Keys(Vec<(String, String)>),
    /// Every persistent node under the path, parents first, and its data.
    #[cfg(feature = "zookeeper")]
    Nodes(Vec<(String, Vec<u8>)>),
}

impl Place {
    fn sqlite() -> Self {
        Place::Sqlite(tempfile::tempdir().unwrap())
    }

    fn mariadb() -> Self {
        let db = format!("uidgen_loss_{}", servers::random_suffix());
        let server = servers::mysql_url();
        let url = with_database(&server, &db);
        let place = Place::Sql {
            mysql: true,
            url,
            db: db.clone(),
        };
        place.sql(&format!("CREATE DATABASE {db}"), false);
        place
    }

    fn postgres() -> Self {
        let db = format!("uidgen_loss_{}", servers::random_suffix());
        let url = with_database(&servers::postgres_url(), &db);
        let place = Place::Sql {
            mysql: false,
            url,
            db: db.clone(),
        };
        place.sql(&format!("CREATE DATABASE {db}"), false);
        place
    }

    fn etcd() -> Self {
        let server = servers::etcd_url();
        let prefix = format!("uidgen-loss-{}", servers::random_suffix());
        let (scheme, rest) = server.split_once("://").unwrap();
        let hosts = rest.split(['/', '?']).next().unwrap();
        Place::Etcd {
            url: format!("{scheme}://{hosts}/{prefix}"),
            prefix,
        }
    }

    #[cfg(feature = "zookeeper")]
    fn zookeeper() -> Self {
        let server = servers::zookeeper_store_url();
        let rest = server.strip_prefix("zookeeper://").unwrap();
        let hosts = rest.split(['/', '?']).next().unwrap().to_owned();
        let root = format!("/uidgen-loss-{}", servers::random_suffix());
        Place::ZooKeeper {
            url: format!("zookeeper://{hosts}{root}"),
            hosts,
            root,
        }
    }

    fn url(&self) -> String {
        match self {
            Place::Sqlite(dir) => dir.path().join("ids.sqlite3").display().to_string(),
            Place::Sql { url, .. } | Place::Etcd { url, .. } => url.clone(),
            #[cfg(feature = "zookeeper")]
            Place::ZooKeeper { url, .. } => url.clone(),
        }
    }

    /// `work` with a ZooKeeper client on the place's ensemble.
    #[cfg(feature = "zookeeper")]
    fn zookeeper_do<T>(&self, work: impl AsyncFnOnce(&zookeeper_client::Client, &str) -> T) -> T {
        let Place::ZooKeeper { hosts, root, .. } = self else {
            unreachable!()
        };
        // zookeeper-client, built with TLS beside uidgen's, needs the rustls provider chosen.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let client = zookeeper_client::Client::connect(hosts).await.unwrap();
            work(&client, root).await
        })
    }

    /// etcdctl against the place's cluster.
    fn etcdctl(&self, args: &[&str]) -> String {
        let Place::Etcd { url, .. } = self else {
            unreachable!()
        };
        let hosts = url.split_once("://").unwrap().1.split('/').next().unwrap();
        let endpoints: Vec<String> = hosts.split(',').map(|h| format!("http://{h}")).collect();
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", endpoints.join(",")))
            .args(args)
            .output()
            .expect("etcdctl runs");
        assert!(
            out.status.success(),
            "etcdctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs SQL with the engine's own client, in the test's database (`in_db`) or not.
    fn sql(&self, statement: &str, in_db: bool) -> String {
        let Place::Sql { mysql, url, db } = self else {
            unreachable!()
        };
        let (user, host, port) = authority(url);
        let out = if *mysql {
            let mut cmd = Command::new("mariadb");
            cmd.args(["-h", &host, "-P", &port, "-u", &user, "-N", "-e", statement]);
            if in_db {
                cmd.arg(db);
            }
            cmd.output()
        } else {
            let mut cmd = Command::new("psql");
            cmd.args([
                "-h", &host, "-p", &port, "-U", &user, "-tA", "-c", statement,
            ]);
            cmd.args(["-d", if in_db { db } else { "postgres" }]);
            cmd.output()
        }
        .expect("the SQL client runs");
        assert!(
            out.status.success(),
            "{statement}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn snapshot(&self) -> Snapshot {
        match self {
            Place::Sqlite(dir) => {
                Snapshot::File(std::fs::read(dir.path().join("ids.sqlite3")).unwrap())
            }
            Place::Sql { mysql, url, db } => {
                let (user, host, port) = authority(url);
                let out = if *mysql {
                    Command::new("mariadb-dump")
                        .args(["-h", &host, "-P", &port, "-u", &user, db])
                        .output()
                } else {
                    Command::new("pg_dump")
                        .args([
                            "-h",
                            &host,
                            "-p",
                            &port,
                            "-U",
                            &user,
                            "--clean",
                            "--if-exists",
                            db,
                        ])
                        .output()
                }
                .expect("the dump tool runs");
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                Snapshot::Dump(out.stdout)
            }
            #[cfg(feature = "zookeeper")]
            Place::ZooKeeper { .. } => Snapshot::Nodes(self.zookeeper_do(async |client, root| {
                // Breadth first, so parents come before their children; ephemeral
                // nodes (lease holders) are no part of a backup.
                let mut nodes = Vec::new();
                let mut queue = std::collections::VecDeque::from([root.to_owned()]);
                while let Some(path) = queue.pop_front() {
                    let Ok((data, stat)) = client.get_data(&path).await else {
                        continue;
                    };
                    if stat.ephemeral_owner != 0 {
                        continue;
                    }
                    for child in client.list_children(&path).await.unwrap_or_default() {
                        queue.push_back(format!("{path}/{child}"));
                    }
                    nodes.push((path, data));
                }
                nodes
            })),
            Place::Etcd { prefix, .. } => {
                let listed = self.etcdctl(&["get", &format!("{prefix}/"), "--prefix"]);
                let lines: Vec<&str> = listed.lines().collect();
                Snapshot::Keys(
                    lines
                        .chunks(2)
                        .map(|kv| {
                            (
                                kv[0].to_owned(),
                                kv.get(1).copied().unwrap_or("").to_owned(),
                            )
                        })
                        .collect(),
                )
            }
        }
    }

    /// Puts the store back to `snapshot`, as a restore (or a replica that is behind) does.
    fn restore(&self, snapshot: &Snapshot) {
        match (self, snapshot) {
            (Place::Sqlite(dir), Snapshot::File(bytes)) => {
                std::fs::write(dir.path().join("ids.sqlite3"), bytes).unwrap()
            }
            (Place::Sql { mysql, url, db }, Snapshot::Dump(dump)) => {
                let (user, host, port) = authority(url);
                let mut child = if *mysql {
                    Command::new("mariadb")
                        .args(["-h", &host, "-P", &port, "-u", &user, db])
                        .stdin(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                } else {
                    Command::new("psql")
                        .args(["-h", &host, "-p", &port, "-U", &user, "-q", "-d", db])
                        .stdin(Stdio::piped())
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped())
                        .spawn()
                }
                .unwrap();
                std::io::Write::write_all(child.stdin.as_mut().unwrap(), dump).unwrap();
                drop(child.stdin.take());
                let out = child.wait_with_output().unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            #[cfg(feature = "zookeeper")]
            (Place::ZooKeeper { .. }, Snapshot::Nodes(nodes)) => {
                // As a restored backup: the nodes of then, and nothing written since.
                self.zookeeper_do(async |client, root| {
                    delete_tree(client, root).await;
                    let options = zookeeper_client::CreateMode::Persistent
                        .with_acls(zookeeper_client::Acls::anyone_all());
                    for (path, data) in nodes {
                        client.create(path, data, &options).await.unwrap();
                    }
                })
            }
            (Place::Etcd { prefix, .. }, Snapshot::Keys(keys)) => {
                // As a restored backup: the keys of then, and nothing written since.
                self.etcdctl(&["del", &format!("{prefix}/"), "--prefix"]);
                for (key, value) in keys {
                    self.etcdctl(&["put", key, value]);
                }
            }
            _ => unreachable!(),
        }
    }
}

/// Deletes `path` and everything under it.
#[cfg(feature = "zookeeper")]
async fn delete_tree(client: &zookeeper_client::Client, path: &str) {
    let mut stack = vec![(path.to_owned(), false)];
    while let Some((node, listed)) = stack.pop() {
        if listed {
            let _ = client.delete(&node, None).await;
            continue;
        }
        let children = client.list_children(&node).await.unwrap_or_default();
        stack.push((node.clone(), true));
        stack.extend(children.into_iter().map(|c| (format!("{node}/{c}"), false)));
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        #[cfg(feature = "zookeeper")]
        if let Place::ZooKeeper { .. } = self {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.zookeeper_do(async |client, root| delete_tree(client, root).await)
            }));
            return;
        }
        if let Place::Etcd { prefix, .. } = self {
            let prefix = format!("{prefix}/");
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.etcdctl(&["del", &prefix, "--prefix"])
            }));
            return;
        }
        if let Place::Sql { db, .. } = self {
            let statement = format!("DROP DATABASE IF EXISTS {db}");
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.sql(&statement, false)
            }));
        }
    }
}

/// (user, host, port) of a `scheme://user[:pw]@host:port/db` URL.
fn authority(url: &str) -> (String, String, String) {
    let rest = url.split_once("://").unwrap().1;
    let authority = rest.split('/').next().unwrap();
    let (user, hostport) = authority.rsplit_once('@').unwrap_or(("root", authority));
    let user = user.split(':').next().unwrap().to_owned();
    let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, ""));
    (user, host.to_owned(), port.to_owned())
}

/// `url` naming database `db` instead of its own.
fn with_database(url: &str, db: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let authority = rest.split('/').next().unwrap();
    let query = rest
        .split_once('?')
        .map_or(String::new(), |(_, q)| format!("?{q}"));
    format!("{scheme}://{authority}/{db}{query}")
}

/// A Redis server of the test's own, with no persistence (as the suite's is), restarted
/// empty on demand.
struct PrivateRedis {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
    replica_of: Option<u16>,
}

impl PrivateRedis {
    fn start() -> Self {
        Self::start_as(None)
    }

    fn start_as(replica_of: Option<u16>) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let child = Self::spawn(dir.path(), port, replica_of);
        Self {
            dir,
            port,
            child,
            replica_of,
        }
    }

    fn spawn(dir: &Path, port: u16, replica_of: Option<u16>) -> Child {
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null());
        if let Some(primary) = replica_of {
            cmd.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
        }
        let child = cmd.spawn().expect("redis-server runs");
        let started = Instant::now();
        while redis_cli(port, &["PING"]) != "PONG" {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/?accept_data_loss=true", self.port)
    }

    /// Stops it and starts it again, empty (nothing was kept on disk).
    fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = Self::spawn(self.dir.path(), self.port, self.replica_of);
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Three runs of 5,000 IDs of a new tag, the store set back to before them, a fourth run.
fn segment_rollback(place: &Place, machine: &Machine) {
    let url = place.url();
    let tag = format!("loss-{}", servers::random_suffix());
    machine.ok(&[
        "segment", "create", "--tag", &tag, "--step", "1000", "--store", &url,
    ]);
    let snapshot = place.snapshot();
    let mut before = HashSet::new();
    for _ in 0..3 {
        before.extend(machine.ids(&[
            "segment", "next", "--tag", &tag, "-n", "5000", "--store", &url,
        ]));
    }
    assert_eq!(before.len(), 15_000);
    place.restore(&snapshot);
    let run = machine.run(&[
        "segment", "next", "--tag", &tag, "-n", "5000", "--store", &url,
    ]);
    let after = never_repeats(&before, &run, "after the rollback").expect("the run goes on above");
    assert_eq!(after.len(), 5000);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("lost data") && stderr.contains(&tag),
        "{stderr}"
    );
    // Another machine, with no memory of its own, now finds the counter raised.
    let other = Machine::new();
    let run = other.run(&[
        "segment", "next", "--tag", &tag, "-n", "5000", "--store", &url,
    ]);
    let mut seen = before.clone();
    seen.extend(after);
    never_repeats(&seen, &run, "another machine after the repair").expect("it goes on");
}

/// A flat-out run on a lease, the store set back to before it, another run.
fn lease_rollback(place: &Place, machine: &Machine) {
    let url = place.url();
    // Set the store up (tables, identity) first, so the snapshot holds them.
    machine.ids(&["next", "-n", "1", "--store", &url]);
    let snapshot = place.snapshot();
    let before: HashSet<u64> = machine
        .ids(&["next", "-n", "300000", "--store", &url])
        .into_iter()
        .collect();
    place.restore(&snapshot);
    for generator in ["cached", "default"] {
        let run = machine.run(&[
            "next",
            "-n",
            "100000",
            "--generator",
            generator,
            "--store",
            &url,
        ]);
        never_repeats(&before, &run, generator).expect("the machine's memory carries the mark");
    }
}

#[test]
fn an_older_sqlite_file_never_repeats_segments_or_worker_ids() {
    let machine = Machine::new();
    segment_rollback(&Place::sqlite(), &machine);
    lease_rollback(&Place::sqlite(), &machine);
}

#[cfg(feature = "mysql")]
#[test]
fn a_restored_mariadb_dump_never_repeats_segments_or_worker_ids() {
    let machine = Machine::new();
    segment_rollback(&Place::mariadb(), &machine);
    lease_rollback(&Place::mariadb(), &machine);
}

#[cfg(feature = "postgres")]
#[test]
fn a_restored_postgres_dump_never_repeats_segments_or_worker_ids() {
    let machine = Machine::new();
    segment_rollback(&Place::postgres(), &machine);
    lease_rollback(&Place::postgres(), &machine);
}

#[cfg(feature = "etcd")]
#[test]
fn a_restored_etcd_backup_never_repeats_segments_or_worker_ids() {
    let machine = Machine::new();
    segment_rollback(&Place::etcd(), &machine);
    lease_rollback(&Place::etcd(), &machine);
}

#[cfg(feature = "zookeeper")]
#[test]
fn a_restored_zookeeper_backup_never_repeats_segments_or_worker_ids() {
    let machine = Machine::new();
    segment_rollback(&Place::zookeeper(), &machine);
    lease_rollback(&Place::zookeeper(), &machine);
}

#[cfg(feature = "mysql")]
#[test]
fn a_counter_row_set_back_is_raised_past_what_it_handed_out() {
    let place = Place::mariadb();
    let machine = Machine::new();
    let url = place.url();
    machine.ok(&[
        "segment", "create", "--tag", "t", "--step", "100", "--store", &url,
    ]);
    let before: HashSet<u64> = machine
        .ids(&[
            "segment", "next", "--tag", "t", "-n", "1000", "--store", &url,
        ])
        .into_iter()
        .collect();
    place.sql("UPDATE leaf_alloc SET max_id = 1 WHERE biz_tag = 't'", true);
    let run = machine.run(&[
        "segment", "next", "--tag", "t", "-n", "1000", "--store", &url,
    ]);
    never_repeats(&before, &run, "a row set back").expect("it goes on above");
    let raised: u64 = place
        .sql("SELECT max_id FROM leaf_alloc WHERE biz_tag = 't'", true)
        .parse()
        .unwrap();
    assert!(raised > 1000 + uidgen::REPAIR_MARGIN, "max_id {raised}");
}

#[cfg(feature = "redis")]
#[test]
fn a_redis_restarted_without_persistence_is_refused_until_repaired_and_never_repeats() {
    let mut redis = PrivateRedis::start();
    let machine = Machine::new();
    let url = redis.url();
    let tag = "order";
    machine.ok(&[
        "segment", "create", "--tag", tag, "--step", "1000", "--store", &url,
    ]);
    let mut before: HashSet<u64> = machine
        .ids(&[
            "segment", "next", "--tag", tag, "-n", "5000", "--store", &url,
        ])
        .into_iter()
        .collect();
    let snowflakes: HashSet<u64> = machine
        .ids(&["next", "-n", "300000", "--store", &url])
        .into_iter()
        .collect();
    redis.restart();

    // Every path refuses, naming the loss: no tag is made again below what it handed out.
    for args in [
        vec!["segment", "next", "--tag", tag, "-n", "10"],
        vec!["segment", "create", "--tag", tag, "--step", "1000"],
        vec!["next", "-n", "10"],
    ] {
        let mut args = args;
        args.extend(["--store", &url]);
        let run = machine.run(&args);
        assert!(
            !run.status.success(),
            "{args:?} succeeded after the restart"
        );
        never_repeats(&before, &run, "after the restart");
    }
    // The runbook: repair, then go on, repeating nothing.
    let repaired = machine.run(&["store", "repair", "--store", &url]);
    assert!(
        repaired.status.success(),
        "{}",
        String::from_utf8_lossy(&repaired.stderr)
    );
    let report = String::from_utf8_lossy(&repaired.stdout);
    assert!(
        report.contains(tag) && report.contains("created again"),
        "{report}"
    );
    let run = machine.run(&[
        "segment", "next", "--tag", tag, "-n", "5000", "--store", &url,
    ]);
    before.extend(never_repeats(&before, &run, "after the repair").expect("it goes on"));
    let run = machine.run(&["next", "-n", "100000", "--store", &url]);
    never_repeats(&snowflakes, &run, "snowflake after the repair").expect("it goes on");
}

#[cfg(feature = "redis")]
#[test]
fn flushall_is_refused_and_a_redis_that_keeps_nothing_needs_the_opt_in() {
    let redis = PrivateRedis::start();
    let machine = Machine::new();
    let url = redis.url();
    let before: HashSet<u64> = machine
        .ids(&["next", "-n", "100000", "--store", &url])
        .into_iter()
        .collect();
    redis_cli(redis.port, &["FLUSHALL"]);
    let run = machine.run(&["next", "-n", "1000", "--store", &url]);
    assert!(!run.status.success());
    never_repeats(&before, &run, "after FLUSHALL");
    // The machine that noticed left word: another machine, with no memory of the store,
    // refuses it too rather than creating a tag at 1 or taking worker ID 0 afresh.
    let other = Machine::new();
    for args in [
        ["segment", "next", "--tag", "t", "-n", "3"].as_slice(),
        ["segment", "create", "--tag", "t", "--step", "10"].as_slice(),
        ["next", "-n", "3"].as_slice(),
    ] {
        let mut args = args.to_vec();
        args.extend(["--store", &url]);
        let run = other.run(&args);
        assert!(
            !run.status.success(),
            "{args:?} succeeded on another machine"
        );
        never_repeats(&before, &run, "another machine after FLUSHALL");
    }

    let bare = format!("redis://127.0.0.1:{}", redis.port);
    let run = machine.run(&["next", "-n", "1", "--store", &bare]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && stderr.contains("accept_data_loss=true"),
        "{stderr}"
    );
}

#[cfg(feature = "redis")]
#[test]
fn a_failover_to_a_replica_that_missed_writes_never_repeats() {
    let primary = PrivateRedis::start();
    let replica = PrivateRedis::start_as(Some(primary.port));
    // The clients reach the primary through one address, which the failover moves.
    let front = relay::Relay::to(format!("127.0.0.1:{}", primary.port).parse().unwrap());
    let url = format!("redis://{}/?accept_data_loss=true", front.addr);
    let machine = Machine::new();
    let tag = "order";
    machine.ok(&[
        "segment", "create", "--tag", tag, "--step", "1000", "--store", &url,
    ]);
    let mut before: HashSet<u64> = machine
        .ids(&[
            "segment", "next", "--tag", tag, "-n", "3000", "--store", &url,
        ])
        .into_iter()
        .collect();
    // The replica has all of that, then stops following: it misses what comes next.
    let started = Instant::now();
    while redis_cli(
        replica.port,
        &["HGET", &format!("uidgen:segment:{tag}"), "max_id"],
    ) != redis_cli(
        primary.port,
        &["HGET", &format!("uidgen:segment:{tag}"), "max_id"],
    ) {
        assert!(started.elapsed() < Duration::from_secs(10), "replication");
        std::thread::sleep(Duration::from_millis(50));
    }
    redis_cli(replica.port, &["REPLICAOF", "NO", "ONE"]);
    before.extend(machine.ids(&[
        "segment", "next", "--tag", tag, "-n", "3000", "--store", &url,
    ]));
    front.point_to(format!("127.0.0.1:{}", replica.port).parse().unwrap());
    let run = machine.run(&[
        "segment", "next", "--tag", tag, "-n", "3000", "--store", &url,
    ]);
    never_repeats(&before, &run, "after the failover").expect("it goes on above");
}

/// Where `uidgen` would keep its memory for a home: a sanity check of the test's setup.
#[test]
fn each_machine_keeps_its_memory_in_its_state_folder() {
    let machine = Machine::new();
    let place = Place::sqlite();
    machine.ok(&[
        "segment",
        "create",
        "--tag",
        "t",
        "--step",
        "10",
        "--store",
        &place.url(),
    ]);
    machine.ids(&[
        "segment",
        "next",
        "--tag",
        "t",
        "-n",
        "5",
        "--store",
        &place.url(),
    ]);
    let files: Vec<PathBuf> = std::fs::read_dir(machine.home.path().join("stores"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "state"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("\tt\t"), "{text}");
}

/// `uidgen serve` on this machine's state folder.
fn serve(machine: &Machine, args: &[&str], envs: &[(&str, &str)]) -> common::serve::Serve {
    let state = machine.home.path().join("stores");
    let mut all = vec![("UIDGEN_STATE_DIR", state.to_str().unwrap())];
    all.extend_from_slice(envs);
    common::serve::Serve::start(args, &all)
}

/// The range `[first, first + count)` a `/v1/segment/{tag}/range` answer names.
fn range_of(body: &str) -> std::ops::Range<u64> {
    let value: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{body}"));
    let first = value["first"].as_u64().unwrap_or_else(|| panic!("{body}"));
    let count = value["count"].as_u64().unwrap_or_else(|| panic!("{body}"));
    first..first + count
}

#[cfg(feature = "redis")]
#[test]
fn a_running_service_whose_redis_is_flushed_stops_says_so_and_heals_after_the_repair() {
    use common::serve::{curl, ids_of};
    let redis = PrivateRedis::start();
    let url = redis.url();
    let machine = Machine::new();
    machine.ok(&[
        "segment", "create", "--tag", "order", "--step", "1000", "--store", &url,
    ]);
    let a = serve(&machine, &["--store", &url, "--tag", "order"], &[]);
    let mut before = HashSet::new();
    let (status, body) = curl(&[&a.url("/v1/snowflake?count=1000")]);
    assert_eq!(status, 200, "{body}");
    before.extend(ids_of(&body));
    let (status, body) = curl(&["-X", "POST", &a.url("/v1/segment/order/range?count=100")]);
    assert_eq!(status, 200, "{body}");
    before.extend(range_of(&body));

    redis_cli(redis.port, &["FLUSHALL"]);
    // Within about a second the service sees the identity gone: snowflake IDs stop, ranges
    // are refused, /readyz and /metrics say so, and the store carries word of it.
    let flushed = Instant::now();
    loop {
        let (status, _) = curl(&[&a.url("/v1/snowflake")]);
        if status == 503 {
            break;
        }
        assert!(
            flushed.elapsed() < Duration::from_secs(5),
            "still serving snowflake IDs"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, body) = curl(&["-X", "POST", &a.url("/v1/segment/order/range?count=100")]);
    assert_ne!(status, 200, "a range after the flush: {body}");
    assert!(body.contains("lost data"), "{body}");
    let (_, ready) = curl(&[&a.url("/readyz")]);
    assert!(ready.contains("data loss found"), "{ready}");
    let (_, metrics) = curl(&[&a.url("/metrics")]);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("uidgen_store_data_loss_total") && !l.ends_with(" 0")),
        "{metrics}"
    );
    assert!(!redis_cli(redis.port, &["HGET", "uidgen:store", "lost"]).is_empty());

    // A service on another machine, with no memory of its own, refuses it too.
    let other = Machine::new();
    let mut b = Command::new(env!("CARGO_BIN_EXE_uidgen"));
    common::clean(&mut b)
        .args(["serve", "--listen", "127.0.0.1:0", "--store", &url])
        .env("HOME", other.home.path());
    let out = b.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("lost data"),
        "{stderr}"
    );

    // The runbook: repair (here from a machine that never used the store: the word the
    // service left names the identity it lost); the service takes from it again by itself.
    Machine::new().ok(&["store", "repair", "--store", &url]);
    let repaired = Instant::now();
    let after = loop {
        let (status, body) = curl(&[&a.url("/v1/snowflake?count=1000")]);
        if status == 200 {
            break ids_of(&body);
        }
        assert!(
            repaired.elapsed() < Duration::from_secs(8),
            "not healed: {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let (status, body) = curl(&["-X", "POST", &a.url("/v1/segment/order/range?count=100")]);
    assert_eq!(status, 200, "{body}");
    for id in after.into_iter().chain(range_of(&body)) {
        assert!(!before.contains(&id), "{id} handed out again");
    }
}

#[cfg(feature = "mysql")]
#[test]
fn ranges_tinyid_and_a_second_service_after_a_counter_set_back_never_repeat() {
    use common::serve::curl;
    let place = Place::mariadb();
    let url = place.url();
    let machine = Machine::new();
    machine.ok(&[
        "segment", "create", "--tag", "t", "--step", "1000", "--store", &url,
    ]);
    let token = "data-loss-token-0123456789abcdef";
    let tokens = format!("{token}=t");
    let envs = [("UIDGEN_TOKENS", tokens.as_str())];
    let a = serve(&machine, &["--store", &url], &envs);
    let range = |server: &common::serve::Serve| {
        let (status, body) = curl(&[
            "-X",
            "POST",
            "-H",
            &format!("Authorization: Bearer {token}"),
            &server.url("/v1/segment/t/range?count=1000"),
        ]);
        assert_eq!(status, 200, "{body}");
        range_of(&body)
    };
    let tinyid = |server: &common::serve::Serve| {
        let (status, body) = curl(&[
            "-X",
            "POST",
            &server.url(&format!(
                "/tinyid/id/nextSegmentIdSimple?token={token}&bizType=t"
            )),
        ]);
        assert_eq!(status, 200, "{body}");
        let fields: Vec<u64> = body.trim().split(',').map(|f| f.parse().unwrap()).collect();
        fields[0] + 1..fields[2] + 1
    };
    let mut before: HashSet<u64> = HashSet::new();
    for _ in 0..3 {
        before.extend(range(&a));
        before.extend(tinyid(&a));
    }
    place.sql("UPDATE leaf_alloc SET max_id = 1 WHERE biz_tag = 't'", true);
    for got in [range(&a), tinyid(&a)] {
        assert!(
            got.clone().all(|id| !before.contains(&id)),
            "{got:?} repeats"
        );
        before.extend(got);
    }
    // A second service, on another machine, also goes on above.
    let other = Machine::new();
    let b = serve(&other, &["--store", &url], &envs);
    for got in [range(&b), tinyid(&b)] {
        assert!(
            got.clone().all(|id| !before.contains(&id)),
            "{got:?} repeats"
        );
    }
    let (_, ready) = curl(&[&a.url("/readyz")]);
    assert!(ready.contains("data loss found"), "{ready}");
}

#[cfg(feature = "redis")]
#[test]
fn a_new_holder_on_a_flushed_redis_never_overlaps_the_service_that_held_it() {
    use common::serve::{curl, ids_of};
    let redis = PrivateRedis::start();
    let url = redis.url();
    let first = Machine::new();
    let a = serve(&first, &["--store", &url], &[]);
    let base = a.url("/v1/snowflake?count=1000");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // A client of the service draws the whole time.
    let client = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut ids = HashSet::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (status, body) = curl(&[&base]);
                if status == 200 {
                    ids.extend(ids_of(&body));
                }
            }
            ids
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    redis_cli(redis.port, &["FLUSHALL"]);
    // At once, a process on another machine (no memory of the store) takes worker ID 0
    // of the emptied store: it must not hand out what the service is still handing out.
    let second = Machine::new();
    let run = second.run(&["next", "-n", "200000", "--store", &url]);
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let served = client.join().unwrap();
    assert!(
        served.len() > 1000,
        "the service served {} IDs",
        served.len()
    );
    never_repeats(&served, &run, "the new holder");
}

#[cfg(feature = "redis")]
#[test]
fn wait_replicas_takes_no_step_as_written_until_a_replica_has_it() {
    let primary = PrivateRedis::start();
    let replica = PrivateRedis::start_as(Some(primary.port));
    // One replica following and in sync ("online"), or none.
    let replicas = |n: &str| {
        let started = Instant::now();
        let wanted = format!("connected_slaves:{n}");
        let ready =
            |info: &str| info.contains(&wanted) && (n == "0" || info.contains("state=online"));
        while !ready(&redis_cli(primary.port, &["INFO", "replication"])) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "never {wanted}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    replicas("1");
    let url = format!(
        "redis://127.0.0.1:{}/?accept_data_loss=true&wait_replicas=1",
        primary.port
    );
    let machine = Machine::new();
    machine.ok(&[
        "segment", "create", "--tag", "t", "--step", "10", "--store", &url,
    ]);
    assert_eq!(
        machine
            .ids(&["segment", "next", "--tag", "t", "-n", "25", "--store", &url])
            .len(),
        25
    );
    redis_cli(replica.port, &["REPLICAOF", "NO", "ONE"]);
    replicas("0");
    let run = machine.run(&["segment", "next", "--tag", "t", "-n", "25", "--store", &url]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && stderr.contains("wait_replicas"),
        "{stderr}"
    );
}

#[test]
fn a_residue_tag_whose_store_files_are_set_back_never_repeats() {
    use common::serve::{curl, ids_of};
    let dir = tempfile::tempdir().unwrap();
    let (a, b, main) = (
        dir.path().join("a.sqlite3"),
        dir.path().join("b.sqlite3"),
        dir.path().join("main.sqlite3"),
    );
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "tag_start = 1\n[[residue_tags]]\ntag = \"r\"\nstores = [{:?}, {:?}]\n",
            a.display().to_string(),
            b.display().to_string()
        ),
    )
    .unwrap();
    let machine = Machine::new();
    let args = [
        "--store",
        main.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ];
    let draw = |server: &common::serve::Serve| {
        let (status, body) = curl(&[&server.url("/v1/segment/r?count=1000")]);
        assert_eq!(status, 200, "{body}");
        ids_of(&body)
    };
    // Set the stores up (a service that starts and stops gives its ranges back), and
    // keep copies of their files as they are before any ID is handed out.
    let (exit, stderr) = serve(&machine, &args, &[]).terminate();
    assert!(exit.success(), "{stderr}");
    let (old_a, old_b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let first = serve(&machine, &args, &[]);
    let mut before = HashSet::new();
    for _ in 0..5 {
        before.extend(draw(&first));
    }
    let (exit, stderr) = first.terminate();
    assert!(exit.success(), "{stderr}");
    // Both stores go back to their older files, as a restore of each would.
    std::fs::write(&a, old_a).unwrap();
    std::fs::write(&b, old_b).unwrap();
    let second = serve(&machine, &args, &[]);
    for _ in 0..5 {
        for id in draw(&second) {
            assert!(!before.contains(&id), "{id} handed out again");
        }
    }
}

#[cfg(feature = "mysql")]
#[test]
fn a_dump_restored_under_a_running_service_is_raised_before_others_take_from_it() {
    use common::serve::{curl, ids_of};
    let place = Place::mariadb();
    let url = place.url();
    let machine = Machine::new();
    machine.ok(&[
        "segment", "create", "--tag", "t", "--step", "100", "--store", &url,
    ]);
    let snapshot = place.snapshot();
    let service = serve(&machine, &["--store", &url, "--tag", "t"], &[]);
    let mut before = HashSet::new();
    for _ in 0..5 {
        let (status, body) = curl(&[&service.url("/v1/segment/t?count=100")]);
        assert_eq!(status, 200, "{body}");
        before.extend(ids_of(&body));
    }
    place.restore(&snapshot);
    // Within about a second the service sees the counter below what it handed out and
    // raises it (waited for, up to 15 s); a process on another machine, with no memory
    // of the store, then starts above.
    let highest = before.iter().copied().max().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let max_id: u64 = place
            .sql("SELECT max_id FROM leaf_alloc WHERE biz_tag = 't'", true)
            .parse()
            .unwrap();
        if max_id > highest {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the service did not raise the counter ({max_id}) past {highest} within 15 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let other = Machine::new();
    let run = other.run(&[
        "segment", "next", "--tag", "t", "-n", "300", "--store", &url,
    ]);
    never_repeats(&before, &run, "another machine after the restore").expect("it goes on");
    let (_, ready) = curl(&[&service.url("/readyz")]);
    assert!(ready.contains("data loss found"), "{ready}");
}
