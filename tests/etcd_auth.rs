//! The rights the README names for an etcd with authentication on (a role with readwrite
//! on `PREFIX/` alone) are all the etcd store uses: on an etcd of the test's own, auth
//! enabled as the README's commands do, a user with that role alone takes, renews and
//! releases worker IDs and takes ranges through `StoreUrl`; a user whose role is on
//! another prefix is refused, and a wrong password is named without being shown.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use uidgen::{Acquired, LeaseRequest, StoreError, StoreUrl};

struct Etcd {
    child: Child,
    endpoint: String,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn etcdctl(endpoint: &str, user: Option<&str>, args: &[&str]) -> String {
    let mut command = Command::new("etcdctl");
    command
        .env("ETCDCTL_API", "3")
        .arg(format!("--endpoints=http://{endpoint}"));
    if let Some(user) = user {
        command.arg(format!("--user={user}"));
    }
    let out = command
        .args(args)
        .output()
        .expect("etcdctl runs (Debian: apt-get install etcd-client; scripts/test installs it)");
    assert!(
        out.status.success(),
        "etcdctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn start_etcd() -> Etcd {
    let dir = tempfile::tempdir().unwrap();
    let (client, peer) = (free_port(), free_port());
    let endpoint = format!("127.0.0.1:{client}");
    let child = Command::new("etcd")
        .args(["--name", "auth", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg(format!("--listen-client-urls=http://{endpoint}"))
        .arg(format!("--advertise-client-urls=http://{endpoint}"))
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
        .arg(format!(
            "--initial-advertise-peer-urls=http://127.0.0.1:{peer}"
        ))
        .arg(format!("--initial-cluster=auth=http://127.0.0.1:{peer}"))
        .arg("--log-level=error")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd starts (Debian: apt-get install etcd-server; scripts/test installs it)");
    let etcd = Etcd {
        child,
        endpoint,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let healthy = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints=http://{}", etcd.endpoint))
            .args(["endpoint", "health"])
            .output()
            .is_ok_and(|out| out.status.success());
        if healthy {
            return etcd;
        }
        assert!(Instant::now() < deadline, "etcd did not become healthy");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_role_with_readwrite_on_its_prefix_alone_runs_leases_and_segments() {
    let etcd = start_etcd();
    let at = etcd.endpoint.as_str();
    // The README's commands, with the passwords given here instead of asked for.
    etcdctl(
        at,
        None,
        &["user", "add", "root", "--new-user-password=r00t-pw"],
    );
    etcdctl(at, None, &["auth", "enable"]);
    let root = Some("root:r00t-pw");
    for (role, prefix) in [("uidgen", "uidgen-ids/"), ("elsewhere", "other-ids/")] {
        etcdctl(at, root, &["role", "add", role]);
        etcdctl(
            at,
            root,
            &[
                "role",
                "grant-permission",
                role,
                "readwrite",
                "--prefix=true",
                prefix,
            ],
        );
        etcdctl(
            at,
            root,
            &["user", "add", role, "--new-user-password=Pw-0f-the-user"],
        );
        etcdctl(at, root, &["user", "grant-role", role, role]);
    }

    let url = StoreUrl::parse(&format!("etcd://uidgen:Pw-0f-the-user@{at}/uidgen-ids")).unwrap();
    let leases = url.lease_store().unwrap();
    let request = LeaseRequest::new("holder-a", Duration::from_secs(5), 1023);
    let Acquired::Granted { worker_id, mark_ms } = leases.acquire(&request).unwrap() else {
        panic!("not granted");
    };
    assert_eq!((worker_id, mark_ms), (0, 0));
    assert!(leases
        .renew(0, "holder-a", Duration::from_secs(5), 1_000)
        .unwrap());
    assert_eq!(leases.leases().unwrap()[0].mark_ms, 1_000);
    assert!(leases.release(0, "holder-a", 1_200).unwrap());
    let segments = url.segment_store().unwrap();
    assert!(segments.create("order", 1, 100, "").unwrap());
    assert_eq!(segments.allocate("order", 100).unwrap(), 101);
    assert!(segments.give_back("order", 101, 51).unwrap());
    // Every key it wrote is under its prefix.
    let keys = etcdctl(at, root, &["get", "", "--prefix", "--keys-only"]);
    let written: Vec<&str> = keys.lines().filter(|l| !l.is_empty()).collect();
    assert!(!written.is_empty());
    assert!(
        written.iter().all(|k| k.starts_with("uidgen-ids/")),
        "{written:?}"
    );

    // A role on another prefix: refused by etcd, and said so.
    let other = StoreUrl::parse(&format!("etcd://elsewhere:Pw-0f-the-user@{at}/uidgen-ids"))
        .unwrap()
        .segment_store()
        .unwrap();
    let refused = other.tag("order").unwrap_err();
    let said = format!(
        "{refused}: {}",
        std::error::Error::source(&refused).map_or(String::new(), |s| s.to_string())
    );
    assert!(
        said.contains("permission denied") && said.contains("elsewhere@"),
        "{said}"
    );
    // A wrong password: access denied, naming the user, never the password.
    let wrong = StoreUrl::parse(&format!("etcd://uidgen:Wr0ng-pass@{at}/uidgen-ids"))
        .unwrap()
        .segment_store()
        .unwrap()
        .tag("order")
        .unwrap_err();
    assert!(
        matches!(wrong, StoreError::AccessDenied { .. }),
        "{wrong:?}"
    );
    let said = format!("{wrong} {wrong:?}");
    assert!(
        said.contains("\"uidgen\"") && !said.contains("Wr0ng-pass"),
        "{said}"
    );
}
