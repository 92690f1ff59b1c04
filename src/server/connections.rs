//! Serving HTTP/1 connections with bounds, which `axum::serve` has none of: a
//! cap on open connections, shared fairly, and deadlines that close a
//! connection making no progress.
//!
//! Sharing the cap (what is counted lives in [`super::fairness`]):
//! - a client address (an IPv6 /64) may hold at most
//!   `VITRINA_HTTP_MAX_CONNECTIONS_PER_CLIENT` connections; one more is
//!   answered 429 `too_many_connections` at once and closed, unread;
//! - with every slot taken, a new connection makes room by closing the
//!   connection idle (kept alive between requests) the longest;
//! - with every slot taken and none idle, a new connection is served on one
//!   of `VITRINA_HTTP_PROBE_CONNECTIONS` slots above the cap kept for
//!   `/healthz` and `/readyz`, so that probes are answered whoever holds the rest; any
//!   other request there is answered 503 `unavailable`. With those taken
//!   too, new connections wait in the listen backlog until one closes.
//!
//! A connection is always in one phase:
//!
//! - head: a request's headers are arriving. They must be complete within the
//!   header timeout, counted from the accept for the first request and from
//!   its first byte for each later one;
//! - idle: kept alive between requests, closed after the idle timeout;
//! - busy: a request is being served. Its body is paced by
//!   [`super::body_rate`]; its response, if the client stops reading it, by
//!   the idle timeout.
//!
//! hyper's own `header_read_timeout` is not used: it starts whenever hyper
//! waits for a head (`poll_read_head` in hyper's proto/h1/conn.rs), which after
//! a response is at once (`State::idle` sets `notify_read`), so it would close
//! every kept-alive connection after the header timeout, leaving no idle
//! timeout of its own.
//!
//! Once a connection is upgraded to a WebSocket, the socket belongs to the
//! WebSocket, which keeps itself alive: no deadline applies to it any more,
//! but it keeps its place under the cap until it closes.
//!
//! At shutdown the server drains, losing no request a client has sent:
//!
//! - every answer from then on carries `Connection: close`, and the
//!   connection closes after it (then FIN), so a client learns it must go
//!   elsewhere from an answer, never from a dropped request;
//! - a connection with no request in flight (idle, or accepted with nothing
//!   read yet) is closed once it has stayed so for
//!   `VITRINA_SHUTDOWN_IDLE_CLOSE_MS`: closing it at once would lose a
//!   request already on its way, which a looping client sends within
//!   microseconds of its last answer;
//! - new connections are still accepted and served (`/readyz` answers 503
//!   `draining`) until every connection open at the signal has finished, so
//!   that a load balancer sees the drain; then the connections already
//!   waiting in the listen backlog are taken, the listener closes, and the
//!   last of them finish;
//! - WebSockets close themselves (see [`crate::state::Draining`]).
//!
//! The shutdown grace period bounds the whole drain: once it is over, the
//! connections still open are cut.

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, Response, StatusCode};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rustix::net::SocketFlags;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::{Instant, Sleep, sleep, sleep_until};
use tokio_util::task::TaskTracker;

use super::fairness::{ClientSlot, Clients, IdleQueue, OverLimit, Place};
use crate::config::HttpConfig;
use crate::http::ApiError;
use crate::http::error::Unavailable;

/// Connections served at once when `VITRINA_HTTP_MAX_CONNECTIONS` is not set
/// (fewer when the open-file limit is lower).
pub const DEFAULT_MAX_CONNECTIONS: u64 = 4096;

/// File descriptors kept out of the connection cap for everything else: the
/// database pool, SQLite's files, webhook deliveries, logs, the probe
/// connections (at most `config::MAX_PROBE_CONNECTIONS`) and the one connection
/// waiting to be admitted.
pub const RESERVED_DESCRIPTORS: u64 = 256;

/// The paths a probe connection answers.
const PROBES: [&str; 2] = ["/healthz", "/readyz"];

/// The share of the cap one client may hold when
/// `VITRINA_HTTP_MAX_CONNECTIONS_PER_CLIENT` is not set: a sixteenth (256 of
/// the default 4,096). Browsers open at most 6 connections to a host, so an
/// address shared by a few dozen users (an office behind NAT) still fits,
/// while one address can never hold the server.
const DEFAULT_CLIENT_SHARE: u64 = 16;

/// How long accepting pauses after an error that is not the client's, such as
/// running out of file descriptors (`EMFILE`): the pending connection stays
/// queued, so retrying at once would spin.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until `shutdown` resolves; then drains as
/// the module comment says, and returns once every connection is closed or
/// the grace period is over (the connections left are dropped with the
/// runtime when the process exits). Refuses to start when the connection
/// cap does not fit the open-file limit.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    config: &HttpConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let cap = connection_cap(config.http_max_connections, open_file_limit())?;
    let per_client = config
        .http_max_connections_per_client
        .unwrap_or_else(|| (u64::from(cap) / DEFAULT_CLIENT_SHARE).max(1));
    // Above the cap, once every slot under it is busy (see the module comment).
    let probes = config.http_probe_connections;
    tracing::info!(
        max_connections = cap,
        max_connections_per_client = per_client,
        probe_connections = probes,
        "serving HTTP"
    );
    let slots = Slots {
        cap,
        served: Arc::new(Semaphore::new(cap as usize)),
        probe_cap: probes,
        probes: Arc::new(Semaphore::new(probes as usize)),
        idle: Arc::new(IdleQueue::default()),
    };
    let clients = Clients::new(per_client);
    let deadlines = Deadlines {
        header: Duration::from_millis(config.http_header_timeout_ms),
        idle: Duration::from_millis(config.http_idle_timeout_ms),
        drain_idle: Duration::from_millis(config.shutdown_idle_close_ms),
    };
    let (stop, _) = watch::channel(false);
    let serving = Serving {
        router,
        deadlines,
        slots,
        clients,
        stop,
    };
    // Connections accepted before the signal: the drain waits for them.
    let before = TaskTracker::new();
    let waiting = serving
        .accept_until(&listener, shutdown, |connection| {
            before.spawn(connection);
        })
        .await;
    serving.stop.send_replace(true);
    before.close();
    let grace = Duration::from_secs(config.shutdown_grace_secs);
    let deadline = Instant::now() + grace;
    tracing::info!(
        open_connections = serving.slots.open(),
        "draining: every answer closes its connection; new connections are served until \
         the ones open now have finished, for at most {} s",
        grace.as_secs()
    );
    let drain = async {
        serving.serve_later(waiting).await;
        let waiting = serving
            .accept_until(&listener, before.wait(), |connection| {
                tokio::spawn(connection);
            })
            .await;
        serving.serve_later(waiting).await;
        serving.take_waiting(&listener).await;
    };
    let _ = tokio::time::timeout_at(deadline, drain).await;
    drop(listener);
    serving.slots.drained(deadline).await;
    Ok(())
}

/// A connection accepted and not yet given a slot.
type Accepted = (TcpStream, ClientSlot);

/// What serving a connection takes.
struct Serving {
    router: Router,
    deadlines: Deadlines,
    slots: Slots,
    clients: Arc<Clients>,
    /// `true` once the server drains.
    stop: watch::Sender<bool>,
}

impl Serving {
    /// Accepts connections and hands each, on its slot, to `spawn`, until
    /// `until` resolves. Returns the connection then accepted but still
    /// waiting for a slot, if any, so that it is not dropped unanswered.
    async fn accept_until(
        &self,
        listener: &TcpListener,
        until: impl Future<Output = ()>,
        spawn: impl Fn(Connection),
    ) -> Option<Accepted> {
        let mut until = pin!(until);
        loop {
            let (stream, client) = tokio::select! {
                biased;
                () = &mut until => return None,
                accepted = accept(listener, &self.clients) => accepted,
            };
            tokio::select! {
                biased;
                () = &mut until => return Some((stream, client)),
                slot = self.slots.admit() => spawn(self.serve(stream, client, slot?)),
            }
        }
    }

    /// Serves `accepted` once a slot comes free.
    async fn serve_later(&self, accepted: Option<Accepted>) {
        let Some((stream, client)) = accepted else {
            return;
        };
        if let Some(slot) = self.slots.admit().await {
            tokio::spawn(self.serve(stream, client, slot));
        }
    }

    /// Serving a connection on its slot, to be spawned.
    fn serve(&self, stream: TcpStream, client: ClientSlot, slot: Slot) -> Connection {
        Box::pin(serve_connection(
            Admitted {
                stream,
                slot,
                client,
                cap: self.slots.cap,
            },
            self.router.clone(),
            self.deadlines,
            self.slots.idle.clone(),
            self.stop.subscribe(),
        ))
    }

    /// Serves the connections the kernel has accepted that no `accept` has
    /// taken yet, which closing the listener would reset with their requests
    /// perhaps sent. Asked of the socket itself: it knows of connections the
    /// runtime has not been told about yet.
    async fn take_waiting(&self, listener: &TcpListener) {
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        while let Ok(socket) = rustix::net::accept_with(listener, flags) {
            let stream = std::net::TcpStream::from(socket);
            let Ok(peer) = stream.peer_addr() else {
                continue;
            };
            let Ok(stream) = TcpStream::from_std(stream) else {
                continue;
            };
            match self.clients.enter(peer.ip()) {
                Ok(client) => self.serve_later(Some((stream, client))).await,
                Err(over) => refuse(&stream, over),
            }
        }
    }
}

/// A connection being served, from accept to close.
type Connection = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The slots connections are served on.
struct Slots {
    cap: u32,
    /// Under the cap, serving everything.
    served: Arc<Semaphore>,
    /// How many slots above the cap serve only the probes.
    probe_cap: u32,
    /// Those slots.
    probes: Arc<Semaphore>,
    idle: Arc<IdleQueue>,
}

/// The slot a connection holds until it closes.
struct Slot {
    _permit: OwnedSemaphorePermit,
    /// A slot above the cap, kept for the probes.
    probes_only: bool,
}

impl Slot {
    fn served(permit: OwnedSemaphorePermit) -> Slot {
        Slot {
            _permit: permit,
            probes_only: false,
        }
    }

    fn probes(permit: OwnedSemaphorePermit) -> Slot {
        Slot {
            _permit: permit,
            probes_only: true,
        }
    }
}

impl Slots {
    /// Waits, until `deadline`, for every connection to close: each one, a
    /// WebSocket's too, holds its slot until then.
    async fn drained(&self, deadline: Instant) {
        tracing::info!(
            open_connections = self.open(),
            "stopped accepting connections; waiting for the open ones to finish"
        );
        let all_closed = async {
            let served = self.served.acquire_many(self.cap).await;
            let probes = self.probes.acquire_many(self.probe_cap).await;
            (served, probes)
        };
        if tokio::time::timeout_at(deadline, all_closed).await.is_err() {
            tracing::warn!(
                "the shutdown grace period is over; connections cut: {}",
                self.open()
            );
        }
    }

    /// A slot for the connection just accepted: a free one under the cap;
    /// else the one of the connection idle the longest, which is asked to
    /// close; else one kept for the probes; else the first to come free
    /// (meanwhile nothing more is accepted). `None` once the slots are
    /// closed (nothing closes them: serving ends by `shutdown`).
    async fn admit(&self) -> Option<Slot> {
        if let Ok(slot) = self.served.clone().try_acquire_owned() {
            return Some(Slot::served(slot));
        }
        if self.idle.close_oldest() {
            // Its slot comes free as soon as it has closed.
            return self
                .served
                .clone()
                .acquire_owned()
                .await
                .ok()
                .map(Slot::served);
        }
        if let Ok(slot) = self.probes.clone().try_acquire_owned() {
            return Some(Slot::probes(slot));
        }
        tokio::select! {
            biased;
            slot = self.served.clone().acquire_owned() => slot.ok().map(Slot::served),
            slot = self.probes.clone().acquire_owned() => slot.ok().map(Slot::probes),
        }
    }

    /// Connections open now.
    fn open(&self) -> usize {
        self.cap as usize - self.served.available_permits() + self.probe_cap as usize
            - self.probes.available_permits()
    }
}

/// The next connection of a client under its limit. One over it is told so
/// and closed at once, so that it holds no slot and no task.
async fn accept(listener: &TcpListener, clients: &Arc<Clients>) -> (TcpStream, ClientSlot) {
    let mut failing = false;
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                if failing {
                    tracing::warn!("accepting connections again");
                    failing = false;
                }
                match clients.enter(peer.ip()) {
                    Ok(client) => return (stream, client),
                    Err(over) => refuse(&stream, over),
                }
            }
            // The client gave up before it was accepted.
            Err(e) if is_client_error(&e) => {}
            Err(e) => {
                if !failing {
                    tracing::error!(error = %e, "cannot accept connections; retrying every {} ms", ACCEPT_PAUSE.as_millis());
                    failing = true;
                }
                tokio::time::sleep(ACCEPT_PAUSE).await;
            }
        }
    }
}

/// Answers a connection over its client's limit with 429
/// `too_many_connections`, without waiting: the answer fits in the empty
/// send buffer of a new socket, or is not sent. What the client already
/// sent is read first, so that closing does not reset the connection
/// before the answer is read.
fn refuse(stream: &TcpStream, OverLimit { open, max }: OverLimit) {
    let error = ApiError::TooManyConnections { open, max };
    let body = serde_json::json!({ "error": { "code": error.code(), "message": error.message() } })
        .to_string();
    let answer = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: {}\r\nconnection: close\r\n\r\n{body}",
        body.len(),
        error.retry_after().unwrap_or_default(),
    );
    let mut sent = [0u8; 4096];
    while matches!(stream.try_read(&mut sent), Ok(n) if n > 0) {}
    let _ = stream.try_write(answer.as_bytes());
}

fn is_client_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    )
}

/// The soft open-file limit (`ulimit -n`); `None` when unlimited.
fn open_file_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// How many connections may be open at once: the configured cap, or the
/// default, either under the open-file limit less the reserved descriptors.
fn connection_cap(configured: Option<u64>, open_files: Option<u64>) -> io::Result<u32> {
    let room = open_files.map(|limit| limit.saturating_sub(RESERVED_DESCRIPTORS));
    let cap = match (configured, room) {
        (Some(cap), Some(room)) if cap > room => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "VITRINA_HTTP_MAX_CONNECTIONS is {cap}, but the open-file limit (ulimit -n) of {} \
                     leaves room for {room} connections ({RESERVED_DESCRIPTORS} descriptors are kept \
                     for the database, files and webhooks)",
                    open_files.unwrap_or_default()
                ),
            ));
        }
        (Some(cap), _) => cap,
        (None, room) => room.map_or(DEFAULT_MAX_CONNECTIONS, |room| {
            room.min(DEFAULT_MAX_CONNECTIONS)
        }),
    };
    if cap == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the open-file limit (ulimit -n) of {} leaves no room for connections \
                 ({RESERVED_DESCRIPTORS} descriptors are kept for the database, files and webhooks)",
                open_files.unwrap_or_default()
            ),
        ));
    }
    // A drain takes every slot at once, which a semaphore counts in `u32`.
    let most = Semaphore::MAX_PERMITS.min(u32::MAX as usize) as u64;
    Ok(cap.min(most) as u32)
}

/// An accepted connection and what it holds until it closes.
struct Admitted {
    stream: TcpStream,
    slot: Slot,
    client: ClientSlot,
    /// The cap, told to requests refused on a probe slot.
    cap: u32,
}

/// One connection, from accept to close.
async fn serve_connection(
    admitted: Admitted,
    router: Router,
    deadlines: Deadlines,
    idle: Arc<IdleQueue>,
    mut stop: watch::Receiver<bool>,
) {
    let progress = Arc::new(Progress::new(deadlines, idle));
    let probes_only = admitted
        .slot
        .probes_only
        .then_some(Unavailable::ConnectionCap {
            max: u64::from(admitted.cap),
        });
    let close = progress.close.clone();
    let io = TokioIo::new(Watched {
        stream: admitted.stream,
        progress: progress.clone(),
        _held: (admitted.slot, admitted.client),
    });
    let service = Service {
        router: TowerToHyperService::new(router),
        progress: progress.clone(),
        probes_only,
        draining: stop.clone(),
    };
    let mut connection = pin!(
        http1::Builder::new()
            .serve_connection(io, service)
            .with_upgrades()
    );
    let mut stopped = pin!(stop.wait_for(|stop| *stop));
    let mut made_room = pin!(close.notified());
    // `graceful_shutdown` asked: hyper closes once the request in flight,
    // if any, is answered.
    let mut closing = false;
    // Once the server drains: when a quiet connection is closed.
    let mut quiet_until: Option<Pin<Box<Sleep>>> = None;
    let mut timer = pin!(sleep_until(Instant::now() + deadlines.header));
    // Every phase change happens while the connection is polled, so the
    // deadlines are looked at again after each poll.
    let ended = poll_fn(|cx| {
        // Chosen, idle, to make room for a new connection.
        if !closing && made_room.as_mut().poll(cx).is_ready() {
            closing = true;
            connection.as_mut().graceful_shutdown();
        }
        if quiet_until.is_none() && stopped.as_mut().poll(cx).is_ready() {
            quiet_until = Some(Box::pin(sleep(deadlines.drain_idle)));
        }
        if let Poll::Ready(served) = connection.as_mut().poll(cx) {
            return Poll::Ready(served.map_err(|e| e.to_string()));
        }
        if let Some(quiet) = quiet_until.as_mut()
            && !closing
            && progress.quiet()
            && quiet.as_mut().poll(cx).is_ready()
        {
            closing = true;
            connection.as_mut().graceful_shutdown();
            // hyper closes it when polled next.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let Some((deadline, phase)) = progress.deadline() else {
            return Poll::Pending;
        };
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        timer
            .as_mut()
            .poll(cx)
            .map(|()| Err(format!("no progress within the {phase} timeout")))
    })
    .await;
    if let Err(reason) = ended {
        tracing::debug!(%reason, "connection closed");
    }
}

#[derive(Debug, Clone, Copy)]
struct Deadlines {
    header: Duration,
    idle: Duration,
    /// How long a connection with no request in flight is kept once the
    /// server drains.
    drain_idle: Duration,
}

#[derive(Debug)]
enum Phase {
    /// Accepted, nothing read yet.
    Opened {
        until: Instant,
    },
    Head {
        until: Instant,
    },
    /// `place` is its place in the idle queue.
    Idle {
        until: Instant,
        place: Place,
    },
    /// `stalled` is when a blocked response write gives up.
    Busy {
        stalled: Option<Instant>,
    },
}

/// What a connection is doing, told by its socket and its service; while
/// idle it is listed in the idle queue.
struct Progress {
    deadlines: Deadlines,
    phase: Mutex<Phase>,
    idle: Arc<IdleQueue>,
    /// Notified when the connection, idle, is chosen to make room.
    close: Arc<Notify>,
}

impl Progress {
    fn new(deadlines: Deadlines, idle: Arc<IdleQueue>) -> Progress {
        Progress {
            deadlines,
            phase: Mutex::new(Phase::Opened {
                until: Instant::now() + deadlines.header,
            }),
            idle,
            close: Arc::default(),
        }
    }

    fn update(&self, change: impl FnOnce(&mut Phase, &Progress)) {
        change(
            &mut self.phase.lock().unwrap_or_else(PoisonError::into_inner),
            self,
        );
    }

    /// Leaves the idle phase for `next`, and the idle queue with it.
    fn leave_idle(&self, phase: &mut Phase, next: Phase) {
        if let Phase::Idle { place, .. } = *phase {
            self.idle.remove(place);
        }
        *phase = next;
    }

    /// Bytes arrived: an idle or new connection starts a request head (a
    /// new one within the header timeout counted from its accept).
    fn read(&self) {
        self.update(|phase, this| match *phase {
            Phase::Idle { .. } => {
                let until = Instant::now() + this.deadlines.header;
                this.leave_idle(phase, Phase::Head { until });
            }
            Phase::Opened { until } => *phase = Phase::Head { until },
            Phase::Head { .. } | Phase::Busy { .. } => {}
        });
    }

    /// No request is in flight or arriving: the connection is idle, or
    /// new with nothing read.
    fn quiet(&self) -> bool {
        matches!(
            *self.phase.lock().unwrap_or_else(PoisonError::into_inner),
            Phase::Opened { .. } | Phase::Idle { .. }
        )
    }

    /// A response write went through (`true`) or is blocked by a client not
    /// reading (`false`). A response still being flushed once hyper is done
    /// with its body counts as idle, and each write that goes through makes
    /// the idle time start again.
    fn wrote(&self, through: bool) {
        let deadlines = self.deadlines;
        self.update(|phase, _| match (phase, through) {
            (Phase::Busy { stalled }, true) => *stalled = None,
            (
                Phase::Busy {
                    stalled: stalled @ None,
                },
                false,
            ) => *stalled = Some(Instant::now() + deadlines.idle),
            (Phase::Idle { until, .. }, true) => *until = Instant::now() + deadlines.idle,
            _ => {}
        });
    }

    /// A request begins, read now or earlier (pipelined).
    fn request_started(&self) {
        self.update(|phase, this| this.leave_idle(phase, Phase::Busy { stalled: None }));
    }

    fn response_finished(&self) {
        self.update(|phase, this| {
            let idle = Phase::Idle {
                until: Instant::now() + this.deadlines.idle,
                place: this.idle.push(&this.close),
            };
            this.leave_idle(phase, idle);
        });
    }

    /// When the connection is closed unless it moves on, and which timeout that is.
    fn deadline(&self) -> Option<(Instant, &'static str)> {
        match *self.phase.lock().unwrap_or_else(PoisonError::into_inner) {
            Phase::Opened { until } | Phase::Head { until } => Some((until, "header")),
            Phase::Idle { until, .. } => Some((until, "idle")),
            Phase::Busy { stalled } => stalled.map(|until| (until, "idle")),
        }
    }
}

/// A closed connection leaves the idle queue.
impl Drop for Progress {
    fn drop(&mut self) {
        let phase = self.phase.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Phase::Idle { place, .. } = *phase {
            self.idle.remove(place);
        }
    }
}

/// The socket, reporting reads and writes to the connection's [`Progress`],
/// and holding the connection's slot and its place in its client's count
/// until it closes.
struct Watched {
    stream: TcpStream,
    progress: Arc<Progress>,
    _held: (Slot, ClientSlot),
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.progress.read();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.progress.wrote(written.is_ready());
        written
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.progress.wrote(written.is_ready());
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// The router, marking when each request starts and its response ends. On
/// a probe slot (`probes_only`), any other path is refused with the reason.
/// Once the server drains, every answer closes its connection.
struct Service {
    router: TowerToHyperService<Router>,
    progress: Arc<Progress>,
    probes_only: Option<Unavailable>,
    draining: watch::Receiver<bool>,
}

type Answer = Result<Response<Served>, Infallible>;

/// The router's answer, before it is marked.
type Routed = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Service {
    type Response = Response<Served>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        self.progress.request_started();
        let finished = Finished(self.progress.clone());
        let answer = match self.probes_only {
            Some(reason) if !PROBES.contains(&request.uri().path()) => {
                use axum::response::IntoResponse;
                let mut refused = ApiError::Unavailable(reason).into_response();
                closes(&mut refused);
                Box::pin(std::future::ready(Ok(refused))) as Routed
            }
            _ => Box::pin(self.router.call(request)),
        };
        let draining = self.draining.clone();
        Box::pin(async move {
            let mut response = answer.await?;
            // Looked at when answered: the drain may have started meanwhile.
            if *draining.borrow() && response.status() != StatusCode::SWITCHING_PROTOCOLS {
                closes(&mut response);
            }
            Ok(response.map(|body| Served {
                body,
                _finished: finished,
            }))
        })
    }
}

/// Makes `response` the connection's last: hyper closes it once sent.
fn closes(response: &mut Response<Body>) {
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
}

/// Marks the response finished when hyper drops its body, which it does
/// once the body has ended (or the connection is gone).
struct Finished(Arc<Progress>);

impl Drop for Finished {
    fn drop(&mut self) {
        self.0.response_finished();
    }
}

/// A response body carrying its [`Finished`] mark.
struct Served {
    body: Body,
    _finished: Finished,
}

impl hyper::body::Body for Served {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_fits_under_the_open_file_limit() {
        assert_eq!(connection_cap(None, Some(20_000)).unwrap(), 4096);
        assert_eq!(connection_cap(None, Some(1024)).unwrap(), 1024 - 256);
        assert_eq!(connection_cap(None, None).unwrap(), 4096);
    }

    #[test]
    fn a_configured_cap_over_the_open_file_limit_is_refused_with_both_numbers() {
        assert_eq!(connection_cap(Some(19_744), Some(20_000)).unwrap(), 19_744);
        let refused = connection_cap(Some(20_000), Some(20_000))
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("is 20000") && refused.contains("room for 19744"),
            "{refused}"
        );
        let none_left = connection_cap(None, Some(256)).unwrap_err().to_string();
        assert!(none_left.contains("of 256 leaves no room"), "{none_left}");
    }
}
