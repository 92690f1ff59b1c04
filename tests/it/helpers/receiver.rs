//! A webhook receiver for tests: an HTTP server on 127.0.0.1:0 that puts every
//! request it gets on a channel and answers from a script.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("{name} is missing"))
            .to_str()
            .expect("an ASCII header")
    }
}

/// How to answer one request.
#[derive(Debug, Clone)]
pub enum Reply {
    Status(u16),
    /// 429 with this `Retry-After` value.
    TooManyRequests(String),
    /// 302 to this location.
    Redirect(String),
    /// 200, after this long.
    Slow(Duration),
    /// This status, after this long.
    Late(Duration, u16),
}

type Script = Arc<Mutex<VecDeque<Reply>>>;

pub struct TestReceiver {
    /// Base address, e.g. `http://127.0.0.1:41234`.
    pub url: String,
    requests: mpsc::UnboundedReceiver<Received>,
    script: Script,
}

impl TestReceiver {
    pub async fn start() -> TestReceiver {
        let (tx, requests) = mpsc::unbounded_channel();
        let script = Script::default();
        let app = Router::new()
            .fallback(record)
            .with_state((tx, script.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        TestReceiver {
            url,
            requests,
            script,
        }
    }

    /// `url` with a path, e.g. `hook("/a")`.
    pub fn hook(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// Answers the next requests with these replies in turn; 200 after them.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.script.lock().unwrap().extend(replies);
    }

    /// Every request received so far and not yet taken. A request is on the
    /// channel before its answer leaves, so after a delivery run returns this
    /// holds everything the run sent.
    pub fn take(&mut self) -> Vec<Received> {
        std::iter::from_fn(|| self.requests.try_recv().ok()).collect()
    }

    /// The one request received since the last `take`.
    pub fn take_one(&mut self) -> Received {
        let mut all = self.take();
        assert_eq!(all.len(), 1, "expected exactly one request: {all:?}");
        all.remove(0)
    }
}

async fn record(
    State((tx, script)): State<(mpsc::UnboundedSender<Received>, Script)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let _ = tx.send(Received {
        method,
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let reply = script.lock().unwrap().pop_front();
    match reply.unwrap_or(Reply::Status(200)) {
        Reply::Status(code) => StatusCode::from_u16(code)
            .expect("a status")
            .into_response(),
        Reply::TooManyRequests(retry_after) => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, retry_after)],
        )
            .into_response(),
        Reply::Redirect(location) => {
            (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
        }
        Reply::Slow(delay) => {
            tokio::time::sleep(delay).await;
            StatusCode::OK.into_response()
        }
        Reply::Late(delay, code) => {
            tokio::time::sleep(delay).await;
            StatusCode::from_u16(code)
                .expect("a status")
                .into_response()
        }
    }
}

/// A TCP listener that only counts connections: proof that something was,
/// or was not, dialled at all.
pub struct ConnectionCounter {
    pub addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
}

impl ConnectionCounter {
    pub async fn start() -> ConnectionCounter {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while listener.accept().await.is_ok() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        ConnectionCounter { addr, accepted }
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}
