//! The service's JSON read by a real JavaScript engine (Node): `ids_str` gives every ID
//! exactly, where `ids` (JSON numbers) are rounded by `JSON.parse` above 2^53; the
//! js-safe layout's numbers are exact.

mod support;

use std::process::Command;
use support::{get, TestServer};

/// 1,000 snowflake IDs from `server` as the service wrote them, and the lines `script`
/// prints when Node runs it on that answer (its path is `process.argv[1]`).
fn through_node(server: &TestServer, script: &str) -> (Vec<u64>, Vec<String>) {
    let answer = get(server, "/v1/snowflake?count=1000");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let truth = serde_json::from_str::<serde_json::Value>(&answer.body).unwrap()["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("answer.json");
    std::fs::write(&file, &answer.body).unwrap();
    let out = Command::new("node")
        .args(["-e", script])
        .arg(&file)
        .output()
        .expect("node runs (Node 20: apt-get install nodejs)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    (truth, lines)
}

#[test]
fn node_reads_every_id_exactly_from_ids_str() {
    let server = TestServer::start(&[]);
    // What a browser's code does: JSON.parse, then use the values.
    let (truth, lines) = through_node(
        &server,
        r#"
        const body = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
        for (let i = 0; i < body.ids.length; i++) {
            console.log(body.ids_str[i] + ' ' + String(body.ids[i]));
        }
        "#,
    );
    assert_eq!(lines.len(), truth.len());
    let mut rounded = 0;
    for (line, id) in lines.iter().zip(&truth) {
        let (as_string, as_number) = line.split_once(' ').unwrap();
        assert_eq!(as_string, id.to_string(), "ids_str read by Node");
        if as_number != id.to_string() {
            rounded += 1;
        }
    }
    // Default-layout IDs are far above 2^53: JSON numbers lose digits in JavaScript,
    // which is why ids_str is there.
    assert!(truth[0] > 1 << 53);
    assert!(rounded > truth.len() / 2, "only {rounded} numbers rounded");
}

#[test]
fn node_reads_every_number_exactly_from_the_js_safe_layout() {
    let server = TestServer::start(&[("UIDGEN_LAYOUT", "js-safe")]);
    let (truth, lines) = through_node(
        &server,
        r#"
        const body = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
        for (const id of body.ids) {
            if (!Number.isSafeInteger(id)) { console.error('unsafe: ' + id); process.exit(1); }
            console.log(String(id));
        }
        "#,
    );
    let read: Vec<u64> = lines.iter().map(|l| l.parse().unwrap()).collect();
    assert_eq!(
        read, truth,
        "Node read the numbers of the js-safe layout exactly"
    );
}
