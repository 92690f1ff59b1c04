//! A request body must keep arriving: it may take the body timeout, plus one
//! second for every `min_rate` bytes it has delivered. A body that falls
//! behind is cut off, and its request answered 408 `request_timeout` whatever
//! the handler made of the cut (the connection then closes, the rest of the
//! body unread).
//!
//! Why a rate rather than tower-http's `RequestBodyTimeout`: that timeout
//! restarts with every chunk, so a client sending a byte every few seconds
//! holds its connection forever; and a total deadline long enough for an
//! 8 MiB upload over a slow link (minutes) lets a silent client hold a
//! connection as long. A minimum rate, as Apache's `mod_reqtimeout` has,
//! lets every honest upload finish and costs an attacker bandwidth for each
//! connection held.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep, sleep_until};

use crate::config::HttpConfig;
use crate::http::ApiError;

/// How long a body may take.
#[derive(Debug, Clone, Copy)]
pub struct BodyRate {
    timeout: Duration,
    /// Bytes a second; 0 allows no more than `timeout`.
    min_rate: u64,
}

impl BodyRate {
    pub fn new(config: &HttpConfig) -> BodyRate {
        BodyRate {
            timeout: Duration::from_millis(config.http_body_timeout_ms),
            min_rate: config.http_body_min_rate,
        }
    }

    /// The time allowed for the first `received` bytes.
    fn allowed(&self, received: u64) -> Duration {
        match received.saturating_mul(1000).checked_div(self.min_rate) {
            Some(extra_ms) => self.timeout.saturating_add(Duration::from_millis(extra_ms)),
            None => self.timeout,
        }
    }
}

/// Middleware: paces the request body and answers 408 when it fell behind.
pub async fn enforce(State(rate): State<BodyRate>, request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let refusal = Arc::new(OnceLock::new());
    let request = request.map(|body| {
        Body::new(Paced {
            body,
            rate,
            received: 0,
            timer: None,
            refusal: refusal.clone(),
        })
    });
    let response = next.run(request).await;
    match refusal.get() {
        Some(refusal) => refusal.clone().into_response(),
        None => response,
    }
}

struct Paced {
    body: Body,
    rate: BodyRate,
    received: u64,
    /// Set when the body first keeps its reader waiting (until then it has
    /// been no slower than the server): when that was, and the deadline.
    timer: Option<(Instant, Pin<Box<Sleep>>)>,
    refusal: Arc<OnceLock<ApiError>>,
}

impl HttpBody for Paced {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            if let Some(data) = frame.as_ref().and_then(|f| f.as_ref().ok()?.data_ref()) {
                this.received += data.len() as u64;
            }
            return Poll::Ready(frame);
        }
        let (rate, received) = (this.rate, this.received);
        let (since, timer) = this.timer.get_or_insert_with(|| {
            let now = Instant::now();
            (now, Box::pin(sleep_until(now + rate.allowed(received))))
        });
        // The deadline moves only when it is reached: by then more bytes may
        // have earned more time.
        while timer.as_mut().poll(cx).is_ready() {
            let allowed = rate.allowed(received);
            if *since + allowed > Instant::now() {
                timer.as_mut().reset(*since + allowed);
                continue;
            }
            let _ = this.refusal.set(ApiError::RequestTimeout {
                received_bytes: received,
                after_ms: since.elapsed().as_millis() as u64,
                allowed_ms: allowed.as_millis() as u64,
            });
            return Poll::Ready(Some(Err(axum::Error::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the request body arrived too slowly",
            )))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
