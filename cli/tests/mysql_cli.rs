//! The command line with worker IDs from WORKER_NODE on a real MariaDB/MySQL
//! (`UIDGEN_MYSQL_URL`, default mysql://root@127.0.0.1:3306/test).

mod common;

use common::printed_ids;
use std::collections::{HashMap, HashSet};
use uidgen::BitsAllocator;

fn mysql_url() -> String {
    std::env::var("UIDGEN_MYSQL_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "mysql://root@127.0.0.1:3306/test".into())
}

#[test]
fn eight_processes_started_at_once_print_800k_distinct_ids() {
    let url = mysql_url();
    let children: Vec<_> = (0..8)
        .map(|_| {
            common::uidgen(&[
                "next",
                "-n",
                "100000",
                "--mysql-url",
                &url,
                "--create-table",
            ])
            .spawn()
            .unwrap()
        })
        .collect();
    let bits = BitsAllocator::default();
    let mut all = HashSet::new();
    let mut workers = HashMap::new();
    for child in children {
        let ids = printed_ids(&child.wait_with_output().unwrap());
        assert_eq!(ids.len(), 100_000);
        let worker = bits.parse(ids[0]).unwrap().worker_id;
        assert!(ids
            .iter()
            .all(|&id| bits.parse(id).unwrap().worker_id == worker));
        assert_eq!(
            workers.insert(worker, ()),
            None,
            "two processes got worker {worker}"
        );
        all.extend(ids);
    }
    assert_eq!(all.len(), 800_000);
}
