//! The service's JSON read by a real JavaScript engine (Node): `ids_str` gives every ID
//! exactly, where `ids` (JSON numbers) are rounded by `JSON.parse` above 2^53.

mod support;

use std::process::Command;
use support::{get, TestServer};

#[test]
fn node_reads_every_id_exactly_from_ids_str() {
    let server = TestServer::start(&[]);
    let answer = get(&server, "/v1/snowflake?count=1000");
    assert_eq!(answer.status, 200);
    let truth: Vec<u64> = serde_json::from_str::<serde_json::Value>(&answer.body).unwrap()["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("answer.json");
    std::fs::write(&file, &answer.body).unwrap();
    // What a browser's code does: JSON.parse, then use the values.
    let script = r#"
        const body = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
        for (let i = 0; i < body.ids.length; i++) {
            console.log(body.ids_str[i] + ' ' + String(body.ids[i]));
        }
    "#;
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
    let text = String::from_utf8(out.stdout).unwrap();
    let mut rounded = 0;
    for (line, id) in text.lines().zip(&truth) {
        let (as_string, as_number) = line.split_once(' ').unwrap();
        assert_eq!(as_string, id.to_string(), "ids_str read by Node");
        if as_number != id.to_string() {
            rounded += 1;
        }
    }
    assert_eq!(text.lines().count(), truth.len());
    // Default-layout IDs are far above 2^53: JSON numbers lose digits in JavaScript,
    // which is why ids_str is there.
    assert!(truth[0] > 1 << 53);
    assert!(rounded > truth.len() / 2, "only {rounded} numbers rounded");
}

#[test]
fn node_reads_every_number_exactly_from_the_js_safe_layout() {
    let server = TestServer::start(&[("UIDGEN_LAYOUT", "js-safe")]);
    let answer = get(&server, "/v1/snowflake?count=1000");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let truth: Vec<u64> = serde_json::from_str::<serde_json::Value>(&answer.body).unwrap()["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("answer.json");
    std::fs::write(&file, &answer.body).unwrap();
    let script = r#"
        const body = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
        for (const id of body.ids) {
            if (!Number.isSafeInteger(id)) { console.error('unsafe: ' + id); process.exit(1); }
            console.log(String(id));
        }
    "#;
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
    let read: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(
        read, truth,
        "Node read the numbers of the js-safe layout exactly"
    );
}
