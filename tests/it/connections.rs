//! Connections are bounded: a request head, a request body and an idle
//! kept-alive connection each have a deadline, open connections have a cap,
//! and a panic is answered instead of dropping the connection. Raw sockets
//! play the slow, silent or half-finished clients.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::{sleep, timeout};
use tokio_tungstenite::tungstenite::Message;
use vitrina::config::{HttpConfig, Settings};

use crate::helpers::TestApp;
use crate::helpers::uploads::{item, upload};
use crate::ws;

pub const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

/// Every timeout set to `ms` milliseconds; one loopback address plays every
/// client, so it may hold the whole cap.
fn timeouts(ms: u64) -> HttpConfig {
    HttpConfig {
        http_header_timeout_ms: ms,
        http_body_timeout_ms: ms,
        http_idle_timeout_ms: ms,
        http_max_connections_per_client: Some(4096),
        ..HttpConfig::default()
    }
}

pub async fn spawn(http: HttpConfig) -> TestApp {
    TestApp::spawn_with_settings(Settings {
        http,
        ..Settings::default()
    })
    .await
}

/// `router` behind the service's own middleware and connection loop.
async fn serve(router: Router, http: HttpConfig) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = vitrina::server::middleware::apply(router, &http);
    tokio::spawn(async move {
        vitrina::server::connections::serve(listener, router, &http, std::future::pending()).await
    });
    addr
}

pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// Reads one response with a `Content-Length` body.
pub async fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or_else(|| panic!("no content-length: {head}"));
            if buf.len() >= end + 4 + length {
                return Answer {
                    status: head[9..12].parse().unwrap(),
                    body: String::from_utf8_lossy(&buf[end + 4..end + 4 + length]).into(),
                    head,
                };
            }
        }
        let n = stream.read(&mut chunk).await.expect("read an answer");
        assert!(n > 0, "closed before answering");
        buf.extend_from_slice(&chunk[..n]);
    }
}

pub async fn ask(stream: &mut TcpStream, request: &[u8]) -> Answer {
    stream.write_all(request).await.unwrap();
    read_answer(stream).await
}

/// `/healthz` on a new connection, within a second.
async fn healthz(addr: SocketAddr) -> Answer {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    timeout(Duration::from_secs(1), ask(&mut stream, HEALTHZ))
        .await
        .expect("/healthz answers within a second")
}

/// Waits (at most `within`) for the server to close `stream`, reading and
/// counting whatever it still sends; the bytes read.
pub async fn closed(mut stream: TcpStream, within: Duration) -> usize {
    let mut chunk = vec![0u8; 1 << 16];
    let mut total = 0;
    timeout(within, async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return total,
                Ok(n) => total += n,
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("still open after {within:?}"))
}

/// The request head of an upload of `length` bytes.
pub fn upload_head(key: &str, length: usize) -> Vec<u8> {
    format!(
        "POST /extension/v1/scrapes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
    .into_bytes()
}

#[tokio::test]
async fn half_sent_requests_idle_connections_and_a_stalled_body_are_closed_by_their_timeouts_while_healthz_answers()
 {
    let timeout_ms = 1500;
    let app = spawn(timeouts(timeout_ms)).await;
    let key = app.key("acme").await;
    let opened = Instant::now();
    let mut half_sent = Vec::new();
    for _ in 0..300 {
        let mut stream = TcpStream::connect(app.addr).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        half_sent.push(stream);
    }
    let mut idle = Vec::new();
    for _ in 0..20 {
        let mut stream = TcpStream::connect(app.addr).await.unwrap();
        assert_eq!(ask(&mut stream, HEALTHZ).await.status, 200);
        idle.push(stream);
    }
    let mut stalled = TcpStream::connect(app.addr).await.unwrap();
    stalled
        .write_all(&upload_head(&key, 100_000))
        .await
        .unwrap();
    stalled.write_all(b"{\"source_t").await.unwrap();

    for _ in 0..3 {
        assert_eq!(healthz(app.addr).await.status, 200);
    }
    let timeout = Duration::from_millis(timeout_ms);
    assert!(
        opened.elapsed() < timeout,
        "/healthz was asked while they were all open"
    );

    let mut closing = JoinSet::new();
    for stream in half_sent.into_iter().chain(idle) {
        closing.spawn(async move {
            closed(stream, timeout + Duration::from_secs(5)).await;
            opened.elapsed()
        });
    }
    let answer = tokio::time::timeout(Duration::from_secs(5), read_answer(&mut stalled))
        .await
        .expect("the stalled body is answered");
    assert_eq!(answer.status, 408, "{}", answer.body);
    let error = &answer.json()["error"];
    assert_eq!(error["code"], "request_timeout");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("10 bytes"), "{message}");
    assert!(answer.head.contains("connection: close"), "{}", answer.head);
    closed(stalled, Duration::from_secs(1)).await;
    let mut count = 0;
    while let Some(after) = closing.join_next().await {
        let after = after.unwrap();
        assert!(
            after >= timeout,
            "closed after {after:?}, before the timeout"
        );
        count += 1;
    }
    assert_eq!(count, 320);
    assert_eq!(healthz(app.addr).await.status, 200);
}

#[tokio::test]
async fn a_kept_alive_connection_outlives_the_header_timeout_and_is_closed_after_the_idle_timeout()
{
    let app = spawn(HttpConfig {
        http_header_timeout_ms: 300,
        http_idle_timeout_ms: 1200,
        ..HttpConfig::default()
    })
    .await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    assert_eq!(ask(&mut stream, HEALTHZ).await.status, 200);
    sleep(Duration::from_millis(700)).await;
    // Waiting for the next request is idle time, not header time.
    assert_eq!(ask(&mut stream, HEALTHZ).await.status, 200);
    let answered = Instant::now();
    closed(stream, Duration::from_secs(5)).await;
    let after = answered.elapsed();
    assert!(
        after >= Duration::from_millis(1200),
        "closed {after:?} after its last answer"
    );
}

#[tokio::test]
async fn a_request_body_must_keep_the_minimum_rate_rather_than_finish_within_the_timeout() {
    let app = spawn(HttpConfig {
        http_body_timeout_ms: 300,
        http_body_min_rate: 2000,
        ..HttpConfig::default()
    })
    .await;
    let key = app.key("acme").await;

    // 3 KB over a second: longer than the timeout, faster than the rate.
    let mut body = upload(vec![item("1")]).to_string().into_bytes();
    body.resize(3000, b' ');
    let mut steady = TcpStream::connect(app.addr).await.unwrap();
    steady
        .write_all(&upload_head(&key, body.len()))
        .await
        .unwrap();
    let started = Instant::now();
    for part in body.chunks(300) {
        steady.write_all(part).await.unwrap();
        sleep(Duration::from_millis(100)).await;
    }
    let answer = read_answer(&mut steady).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    assert!(started.elapsed() > Duration::from_millis(900));

    // 1000 bytes, then nothing: 300 ms plus 500 ms for those bytes.
    let mut stalled = TcpStream::connect(app.addr).await.unwrap();
    stalled
        .write_all(&upload_head(&key, body.len()))
        .await
        .unwrap();
    stalled.write_all(&body[..1000]).await.unwrap();
    let started = Instant::now();
    let answer = timeout(Duration::from_secs(5), read_answer(&mut stalled))
        .await
        .expect("the stalled body is answered");
    let after = started.elapsed();
    assert_eq!(answer.status, 408, "{}", answer.body);
    assert!(after >= Duration::from_millis(800), "cut after {after:?}");
    let error = &answer.json()["error"];
    assert_eq!(error["code"], "request_timeout");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("1000 bytes") && message.contains("800 ms were allowed"),
        "{message}"
    );
    closed(stalled, Duration::from_secs(1)).await;
}

#[tokio::test]
async fn with_the_connection_cap_and_the_probe_slots_taken_by_busy_connections_the_next_waits_until_one_closes()
 {
    // Fewer probe slots than the default: the setting is what is kept.
    const PROBES: u32 = 3;
    let app = spawn(HttpConfig {
        http_max_connections: Some(8),
        http_max_connections_per_client: Some(100),
        http_probe_connections: PROBES,
        ..HttpConfig::default()
    })
    .await;
    // Requests half sent: busy, so none is closed to make room.
    let mut held = Vec::new();
    for _ in 0..8 + PROBES {
        let mut stream = TcpStream::connect(app.addr).await.unwrap();
        stream.write_all(&HEALTHZ[..20]).await.unwrap();
        held.push(stream);
    }
    let mut waiting = TcpStream::connect(app.addr).await.unwrap();
    waiting.write_all(HEALTHZ).await.unwrap();
    assert!(
        timeout(Duration::from_millis(500), read_answer(&mut waiting))
            .await
            .is_err(),
        "a connection was served with every slot taken"
    );
    drop(held.pop());
    let answer = timeout(Duration::from_secs(2), read_answer(&mut waiting))
        .await
        .expect("served once a connection closed");
    assert_eq!(answer.status, 200);
    drop(waiting);
    drop(held);
    assert_eq!(healthz(app.addr).await.status, 200);
}

#[tokio::test]
async fn a_websocket_outlives_the_timeouts_that_close_an_idle_connection() {
    let app = spawn(timeouts(300)).await;
    let key = app.key("acme").await;
    let mut socket = ws::open(&app).await;
    let mut idle = TcpStream::connect(app.addr).await.unwrap();
    assert_eq!(ask(&mut idle, HEALTHZ).await.status, 200);

    sleep(Duration::from_secs(1)).await;
    closed(idle, Duration::from_millis(100)).await;
    ws::init(&mut socket, &key).await;
    assert_eq!(
        ws::next(&mut socket).await.unwrap()["type"],
        "connection_ack"
    );
    sleep(Duration::from_secs(1)).await;
    socket
        .send(Message::text(json!({ "type": "ping" }).to_string()))
        .await
        .unwrap();
    assert_eq!(ws::next(&mut socket).await.unwrap()["type"], "pong");
}

async fn panics() -> &'static str {
    panic!("the database password is hunter2")
}

#[tokio::test]
async fn a_panicking_handler_is_answered_500_internal_error_on_a_connection_that_keeps_serving() {
    let router = Router::new()
        .route("/panics", get(panics))
        .route("/answers", get(|| async { "fine" }));
    let addr = serve(router, HttpConfig::default()).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    for _ in 0..2 {
        let answer = ask(&mut stream, b"GET /panics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert_eq!(answer.status, 500);
        assert_eq!(
            answer.json(),
            json!({ "error": { "code": "internal_error", "message": "An unexpected error occurred." } })
        );
        let answer = ask(&mut stream, b"GET /answers HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert_eq!((answer.status, answer.body.as_str()), (200, "fine"));
    }
}

#[tokio::test]
async fn shutdown_finishes_the_request_in_flight_and_is_not_held_by_silent_connections() {
    let http = HttpConfig {
        http_header_timeout_ms: 1000,
        shutdown_idle_close_ms: 100,
        ..HttpConfig::default()
    };
    let router = Router::new()
        .route(
            "/slow",
            get(|| async {
                sleep(Duration::from_millis(500)).await;
                "done"
            }),
        )
        .route("/answers", get(|| async { "fine" }));
    let router = vitrina::server::middleware::apply(router, &http);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let shutdown = async {
            stopped.await.ok();
        };
        vitrina::server::connections::serve(listener, router, &http, shutdown).await
    });

    let mut idle = TcpStream::connect(addr).await.unwrap();
    let answer = ask(&mut idle, b"GET /answers HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(answer.status, 200);
    let silent = TcpStream::connect(addr).await.unwrap();
    let mut half_sent = TcpStream::connect(addr).await.unwrap();
    half_sent
        .write_all(b"GET /answers HTTP/1.1\r\n")
        .await
        .unwrap();
    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    sleep(Duration::from_millis(100)).await;

    let stopping = Instant::now();
    stop.send(()).unwrap();
    closed(idle, Duration::from_millis(300)).await;
    let answer = read_answer(&mut busy).await;
    assert_eq!((answer.status, answer.body.as_str()), (200, "done"));
    timeout(Duration::from_secs(3), server)
        .await
        .expect("serve returns")
        .unwrap()
        .unwrap();
    assert!(stopping.elapsed() < Duration::from_secs(2));
    closed(silent, Duration::from_millis(100)).await;
    closed(half_sent, Duration::from_millis(100)).await;
    assert!(TcpStream::connect(addr).await.is_err(), "still accepting");
}

#[tokio::test]
async fn a_response_the_client_does_not_read_is_cut_off_after_the_idle_timeout() {
    const SIZE: usize = 64 << 20;
    let router = Router::new().route("/large", get(|| async { vec![b'x'; SIZE] }));
    let addr = serve(router, timeouts(500)).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(16 << 10).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    stream
        .write_all(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    sleep(Duration::from_millis(1500)).await;
    let read = closed(stream, Duration::from_secs(10)).await;
    assert!(read < SIZE, "the whole response was sent: {read} bytes");
}
