//! `examples/axum_service.rs`, exercised: its handlers share one generator, and the IDs
//! requests get are distinct and increasing.

#[path = "../examples/axum_service.rs"]
#[allow(dead_code)]
mod axum_service;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use std::sync::Arc;
use tower::ServiceExt;
use uidgen::{CachedUidGenerator, UidGenerator};

async fn get(app: axum::Router, uri: &str) -> (StatusCode, String) {
    let response = app
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_share_one_generator_and_hand_out_distinct_increasing_ids() {
    let generator = Arc::new(CachedUidGenerator::builder().worker_id(9).build().unwrap());
    let app = axum_service::app(generator.clone());

    let (status, one) = get(app.clone(), "/id").await;
    assert_eq!(status, StatusCode::OK);
    let first: u64 = one.parse().unwrap();
    assert_eq!(generator.parse_uid(first).unwrap().worker_id, 9);

    let (status, many) = get(app.clone(), "/ids?n=5").await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<u64> = many.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(ids.len(), 5);
    assert!(
        ids[0] > first && ids.windows(2).all(|w| w[0] < w[1]),
        "{ids:?}"
    );

    // Concurrent requests: every ID distinct.
    let requests: Vec<_> = (0..16)
        .map(|_| tokio::spawn(get(app.clone(), "/ids?n=100")))
        .collect();
    let mut all = Vec::new();
    for request in requests {
        let (status, body) = request.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        all.extend(body.lines().map(|l| l.parse::<u64>().unwrap()));
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count, "duplicates across requests");
    assert_eq!(count, 1600);

    let (status, message) = get(app, "/ids?n=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(message.contains("1 to 1000"), "{message}");
}
