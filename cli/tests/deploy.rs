//! The packaging in deploy/: the systemd unit passes `systemd-analyze verify` and names
//! flags `uidgen serve` takes; the Kubernetes manifests parse, take the worker ID from
//! the pod ordinal, probe /healthz and /readyz, and read the store and the tokens from a
//! Secret.

mod common;

use std::path::Path;
use std::process::Command;

fn repo(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// `uidgen serve --help`.
fn serve_help() -> String {
    let out = common::clean(&mut Command::new(env!("CARGO_BIN_EXE_uidgen")))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Every `--flag` in `args` is one `uidgen serve` takes.
fn assert_flags_exist(args: &[String], help: &str) {
    for arg in args {
        if let Some(flag) = arg.strip_prefix("--") {
            let name = flag.split('=').next().unwrap();
            assert!(
                help.contains(&format!("--{name}")),
                "--{name} is not a serve flag"
            );
        }
    }
}

#[test]
fn the_systemd_unit_verifies_and_names_flags_serve_takes() {
    let unit = repo("deploy/systemd/uidgen.service");
    for wanted in [
        "Type=notify",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "KillSignal=SIGTERM",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "StateDirectory=uidgen",
    ] {
        assert!(unit.contains(wanted), "{wanted}");
    }
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    let args: Vec<String> = exec.split_whitespace().map(String::from).collect();
    assert_eq!(args[..2], ["/usr/local/bin/uidgen", "serve"]);
    assert_flags_exist(&args, &serve_help());

    let Ok(out) = Command::new("systemd-analyze").arg("--version").output() else {
        println!("skipped systemd-analyze verify: systemd-analyze is not installed");
        return;
    };
    assert!(out.status.success());
    // The unit as installed, but for the binary's path: verify checks it exists.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("uidgen.service");
    std::fs::write(
        &file,
        unit.replace("/usr/local/bin/uidgen", env!("CARGO_BIN_EXE_uidgen")),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&file)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Only what concerns this unit counts (the host's own units may warn).
    let ours: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("uidgen.service"))
        .collect();
    assert!(
        ours.is_empty() && out.status.success(),
        "systemd-analyze verify: {said}"
    );
}

#[test]
fn the_kubernetes_manifests_take_the_worker_id_from_the_pod_and_probe_the_service() {
    let text = repo("deploy/kubernetes/uidgen.yaml");
    let docs: Vec<serde_json::Value> = text
        .split("\n---\n")
        .map(|doc| serde_norway::from_str(doc).unwrap_or_else(|e| panic!("{e}: {doc}")))
        .collect();
    let kind = |k: &str| {
        docs.iter()
            .find(|d| d["kind"] == k)
            .unwrap_or_else(|| panic!("no {k}"))
    };
    let service = kind("Service");
    assert_eq!(service["spec"]["ports"][0]["port"], 8080);
    let set = kind("StatefulSet");
    let container = &set["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(args[0], "serve");
    assert!(args.iter().any(|a| a == "--pod-ordinal"), "{args:?}");
    assert_flags_exist(&args, &serve_help());
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    let env = container["env"].as_array().unwrap();
    for secret in ["UIDGEN_STORE", "UIDGEN_TOKENS"] {
        let entry = env.iter().find(|e| e["name"] == secret).unwrap();
        assert_eq!(
            entry["valueFrom"]["secretKeyRef"]["name"], "uidgen",
            "{secret}"
        );
    }
    let hostname = env.iter().find(|e| e["name"] == "HOSTNAME").unwrap();
    assert_eq!(
        hostname["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.name"
    );
    assert_eq!(
        set["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"],
        true
    );
}
