//! When a request's body was read to its end: the time before is the
//! client's sending, not the database's work, so the database-time budget
//! (`limits::db_time`) charges a REST request from then on (`access`).

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use hyper::body::{Frame, SizeHint};

/// The instant a body ended (its last frame, an error, or its reader
/// dropping it), once it has.
#[derive(Debug, Clone, Default)]
pub struct BodyClock(Arc<OnceLock<Instant>>);

impl BodyClock {
    /// `request` with its body timed by the returned clock.
    pub fn wrap(request: Request) -> (Request, BodyClock) {
        let clock = BodyClock::default();
        if request.body().is_end_stream() {
            return (request, clock);
        }
        let timed = clock.clone();
        let request = request.map(|body| Body::new(Timed { body, clock: timed }));
        (request, clock)
    }

    /// When the body ended; `None` when there was none, or it was never read.
    pub fn ended(&self) -> Option<Instant> {
        self.0.get().copied()
    }

    fn stop(&self) {
        let _ = self.0.set(Instant::now());
    }
}

struct Timed {
    body: Body,
    clock: BodyClock,
}

impl HttpBody for Timed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            this.clock.stop();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        // A body read in part (a limit met) ends when its reader lets go.
        self.clock.stop();
    }
}
