//! Shutdown on SIGTERM and SIGINT, on the real binary: the server stops
//! accepting, readiness answers `draining`, requests in flight finish within
//! the grace period, subscriptions are closed with 1001, a merge pass hands
//! back what it claimed, and the process exits 0.
//!
//! The request in flight is a GraphQL POST whose client sends the head with
//! `Expect: 100-continue` and holds the body back: the server's `100
//! Continue` proves the request is being served, and the request stays in
//! flight for exactly as long as the test wants, with no test-only endpoint
//! and no timing guess.

use std::time::{Duration, Instant};

use chrono::Utc;
use entity::{SubmissionStatus, submission};
use futures_util::StreamExt;
use rustix::process::Signal;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, NotSet};
use sea_orm::{ExprTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::fixtures::insert_session;
use crate::helpers::uploads::item;
use crate::helpers::{TestDb, create_key};
use crate::serve::Serve;
use crate::ws;

/// Longest wait for anything the server does after a signal.
pub(crate) const BOUND: Duration = Duration::from_secs(15);

/// What the server logs once the drain starts.
const DRAINING: &str = "draining:";

/// A fresh database and a key of account `acme` in it.
pub(crate) async fn database_with_key() -> (TestDb, DatabaseConnection, String) {
    let db = TestDb::new().await;
    let conn = db.connect().await;
    let key = create_key(&conn, "acme", Utc::now()).await.secret;
    (db, conn, key)
}

/// Reads up to the end of a response head (an interim `100 Continue` too).
pub(crate) async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let byte = timeout(BOUND, stream.read_u8())
            .await
            .expect("a head in time")
            .expect("a head");
        head.push(byte);
    }
    String::from_utf8(head).expect("a text head")
}

/// Reads a response to its end (a draining server closes after it): its
/// status, JSON body, and whether it said `Connection: close`.
async fn read_answer(stream: &mut TcpStream) -> (u16, Value, bool) {
    let head = read_head(stream).await;
    let mut body = Vec::new();
    timeout(BOUND, stream.read_to_end(&mut body))
        .await
        .expect("the answer in time")
        .expect("the answer");
    let status = head[9..12].parse().expect("a status");
    let body = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}: {head}"));
    let closes = head
        .to_ascii_lowercase()
        .contains("\r\nconnection: close\r\n");
    (status, body, closes)
}

#[tokio::test]
async fn a_request_in_flight_at_sigterm_finishes_while_readiness_says_draining() {
    let (db, _conn, key) = database_with_key().await;
    let mut server = Serve::start(&db.url, &[], &[("RUST_LOG", "info")]);
    // A readiness request whose head is not finished at the signal.
    let mut ready = TcpStream::connect(server.addr).await.unwrap();
    ready
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let body = json!({ "query": "{ __typename }" }).to_string();
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    let interim = read_head(&mut slow).await;
    assert!(interim.starts_with("HTTP/1.1 100"), "{interim}");

    server.signal(Signal::TERM);
    server.wait_for_log(DRAINING);
    ready.write_all(b"\r\n").await.unwrap();
    let draining = (503, json!({ "status": "draining" }), true);
    assert_eq!(read_answer(&mut ready).await, draining);
    // While `slow` is in flight, new connections are still served, and
    // readiness tells load balancers to go elsewhere.
    for _ in 0..3 {
        let mut probe = TcpStream::connect(server.addr).await.unwrap();
        probe
            .write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(read_answer(&mut probe).await, draining);
    }
    slow.write_all(body.as_bytes()).await.unwrap();
    let (status, answer, closes) = read_answer(&mut slow).await;
    assert_eq!(
        (status, &answer["data"]["__typename"], closes),
        (200, &json!("QueryRoot"), true)
    );
    assert!(server.exit().success(), "{:#?}", server.logged);
    assert!(!server.logged("connections cut"), "{:#?}", server.logged);
}

#[tokio::test]
async fn open_subscriptions_are_closed_with_1001_at_sigterm() {
    let (db, conn, key) = database_with_key().await;
    let session = insert_session(&conn, &key, Utc::now()).await;
    let mut server = Serve::start(&db.url, &[], &[("RUST_LOG", "info")]);
    let mut socket = ws::open_at(server.addr).await;
    ws::init(&mut socket, &key).await;
    assert_eq!(
        ws::next(&mut socket).await.unwrap()["type"],
        "connection_ack"
    );
    let subscription = format!(
        "subscription {{ scrapeSessionUpdated(id: \"{}\") {{ status }} }}",
        session.id
    );
    ws::send(&mut socket, "1", &subscription).await;
    assert_eq!(ws::next(&mut socket).await.unwrap()["type"], "next");

    server.signal(Signal::TERM);
    let close = loop {
        match timeout(BOUND, socket.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => break frame.expect("a close frame"),
            Ok(Some(Ok(_))) => continue,
            other => panic!("the socket was not closed: {other:?}"),
        }
    };
    assert_eq!(close.code, CloseCode::Away, "{close:?}");
    assert!(close.reason.contains("shutting down"), "{close:?}");
    assert!(server.exit().success(), "{:#?}", server.logged);
}

/// Pending submissions in `session`, each a distinct valid product.
async fn pending_submissions(conn: &DatabaseConnection, session: uuid::Uuid, count: usize) {
    let rows = (0..count).map(|i| submission::ActiveModel {
        id: NotSet,
        session_id: Set(session),
        status: Set(SubmissionStatus::Pending),
        payload: Set(item(&format!("sku-{i}"))),
        product_id: Set(None),
        reason: Set(None),
        lease_expires_at: Set(None),
        created_at: Set(Utc::now()),
        updated_at: Set(Utc::now()),
    });
    vitrina::db::insert_batched(conn, rows.collect())
        .await
        .expect("insert submissions");
}

async fn count(conn: &DatabaseConnection, status: SubmissionStatus) -> u64 {
    submission::Entity::find()
        .filter(submission::Column::Status.eq(status))
        .count(conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_merge_pass_running_at_sigterm_leaves_no_submission_processing() {
    const SUBMISSIONS: usize = 1500;
    let (db, conn, key) = database_with_key().await;
    let session = insert_session(&conn, &key, Utc::now()).await;
    pending_submissions(&conn, session.id, SUBMISSIONS).await;
    // The first tick starts at once, claiming 500 at a time.
    let mut server = Serve::start(&db.url, &["--merge-batch", "500"], &[("RUST_LOG", "info")]);
    let deadline = Instant::now() + BOUND;
    while count(&conn, SubmissionStatus::Merged).await == 0 {
        assert!(Instant::now() < deadline, "nothing merged");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    server.signal(Signal::TERM);
    assert!(server.exit().success(), "{:#?}", server.logged);
    assert!(server.logged("jobs stopped"), "{:#?}", server.logged);
    assert_eq!(count(&conn, SubmissionStatus::Processing).await, 0);
    let merged = count(&conn, SubmissionStatus::Merged).await;
    let pending = count(&conn, SubmissionStatus::Pending).await;
    assert!(pending > 0, "the pass was not cut: all {merged} merged");
    assert_eq!(merged + pending, SUBMISSIONS as u64);
    // Handed back as never tried: no attempt counted, no lease kept.
    let touched = submission::Entity::find()
        .filter(submission::Column::Status.eq(SubmissionStatus::Pending))
        .filter(
            Expr::col(submission::Attempts)
                .gt(0)
                .or(submission::Column::LeaseExpiresAt.is_not_null()),
        )
        .count(&conn)
        .await
        .unwrap();
    assert_eq!(touched, 0);
}

#[tokio::test]
async fn sigint_shuts_down_like_sigterm() {
    let db = TestDb::new().await;
    let mut server = Serve::start(&db.url, &[], &[("RUST_LOG", "info")]);
    server.signal(Signal::INT);
    assert!(server.exit().success(), "{:#?}", server.logged);
    assert!(server.logged("SIGINT received"), "{:#?}", server.logged);
    assert!(server.logged(DRAINING), "{:#?}", server.logged);
}

#[tokio::test]
async fn requests_still_in_flight_after_the_grace_period_are_cut_and_the_exit_is_still_0() {
    let db = TestDb::new().await;
    let mut server = Serve::start(
        &db.url,
        &["--shutdown-grace-secs", "1"],
        &[("RUST_LOG", "info")],
    );
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(
        b"POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\nExpect: 100-continue\r\n\r\n",
    )
    .await
    .unwrap();
    let interim = read_head(&mut slow).await;
    assert!(interim.starts_with("HTTP/1.1 100"), "{interim}");

    server.signal(Signal::TERM);
    assert!(server.exit().success(), "{:#?}", server.logged);
    assert!(server.logged("connections cut: 1"), "{:#?}", server.logged);
    let mut rest = Vec::new();
    let read = timeout(BOUND, slow.read_to_end(&mut rest)).await.unwrap();
    assert!(
        read.is_err() || rest.is_empty(),
        "answered: {}",
        String::from_utf8_lossy(&rest)
    );
}
