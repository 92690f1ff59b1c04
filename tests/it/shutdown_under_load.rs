//! Shutdown under load, on the real binary: clients looping over kept-alive
//! connections lose no request they sent. Each is answered, the last answer
//! of each connection says `Connection: close`, and the server then ends
//! the connection with a FIN, not a reset. A second signal ends the drain
//! at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use rustix::process::Signal;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::helpers::create_key;
use crate::serve::Serve;
use crate::shutdown::{BOUND, database_with_key, read_head};

/// What the server logs once the drain starts.
const DRAINING: &str = "draining:";

/// Clients looping at the signal.
const CLIENTS: usize = 8;

/// A kept-alive HTTP/1.1 connection that sends a request and reads its
/// answer, one at a time.
struct Connection {
    stream: BufReader<TcpStream>,
    key: String,
}

/// One answer: its status and whether it closes the connection.
struct Answer {
    status: u16,
    closes: bool,
}

impl Connection {
    async fn open(addr: std::net::SocketAddr, key: &str) -> Connection {
        Connection {
            stream: BufReader::new(TcpStream::connect(addr).await.expect("connect")),
            key: key.to_owned(),
        }
    }

    /// The `n`th request of a loop: REST and GraphQL in turn.
    fn request(&self, n: usize) -> String {
        let key = &self.key;
        if n.is_multiple_of(2) {
            return format!(
                "GET /v1/products?page_size=2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\r\n"
            );
        }
        let body = json!({ "query": "{ products(first: 2) { edges { node { id } } } }" });
        let body = body.to_string();
        format!(
            "POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    /// Sends `request` and reads its whole answer; `Err` says how a request
    /// that was sent went unanswered.
    async fn ask(&mut self, request: &str) -> Result<Answer, String> {
        let sent = self.stream.get_mut().write_all(request.as_bytes()).await;
        sent.map_err(|e| format!("sending: {e}"))?;
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let read = timeout(BOUND, self.stream.read_until(b'\n', &mut head)).await;
            match read.map_err(|_| "no answer in time".to_owned())? {
                Ok(0) => return Err(format!("closed after {} bytes of a head", head.len())),
                Ok(_) => {}
                Err(e) => return Err(format!("reading the head: {e}")),
            }
        }
        let head = String::from_utf8(head)
            .expect("a text head")
            .to_ascii_lowercase();
        assert!(!head.contains("transfer-encoding"), "{head}");
        let length = header(&head, "content-length").map_or(0, |v| v.parse().expect("a length"));
        let mut body = vec![0; length];
        let read = timeout(BOUND, self.stream.read_exact(&mut body)).await;
        read.map_err(|_| "no body in time".to_owned())?
            .map_err(|e| format!("reading the body: {e}"))?;
        Ok(Answer {
            status: head[9..12].parse().expect("a status"),
            closes: header(&head, "connection") == Some("close"),
        })
    }

    /// The server's end of the connection: a FIN (`Ok`), not a reset.
    async fn closed(mut self) -> Result<(), String> {
        let mut rest = Vec::new();
        match timeout(BOUND, self.stream.read_to_end(&mut rest)).await {
            Ok(Ok(_)) if rest.is_empty() => Ok(()),
            Ok(Ok(_)) => Err(format!("{} bytes after the last answer", rest.len())),
            Ok(Err(e)) => Err(format!("not a clean close: {e}")),
            Err(_) => Err("never closed".into()),
        }
    }
}

/// The value of header `name` in a lowercased head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// Loops over one connection until an answer closes it; counts the answers
/// in `answered`. `Err` names the request that went unanswered.
async fn loop_until_closed(
    addr: std::net::SocketAddr,
    key: String,
    answered: Arc<AtomicUsize>,
) -> Result<(), String> {
    let mut connection = Connection::open(addr, &key).await;
    for n in 0.. {
        let request = connection.request(n);
        let answer = connection
            .ask(&request)
            .await
            .map_err(|e| format!("request {n}: {e}"))?;
        answered.fetch_add(1, Ordering::Relaxed);
        if answer.closes {
            return connection.closed().await;
        }
    }
    unreachable!("a loop of every integer")
}

#[tokio::test]
async fn clients_looping_at_sigterm_lose_no_request_and_see_connection_close() {
    let (db, conn, key) = database_with_key().await;
    let mut server = Serve::start(&db.url, &[], &[("RUST_LOG", "info")]);
    // A client between two requests at the signal: idle, its next request
    // not sent yet. Its own account, so that the loops' spending of theirs
    // (rate limit, database time) cannot refuse it.
    let own_key = create_key(&conn, "idle", Utc::now()).await.secret;
    let mut idle = Connection::open(server.addr, &own_key).await;
    let first = idle.request(0);
    assert_eq!(idle.ask(&first).await.unwrap().status, 200);
    let answered = Arc::new(AtomicUsize::new(0));
    let loops: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let answered = answered.clone();
            tokio::spawn(loop_until_closed(server.addr, key.clone(), answered))
        })
        .collect();
    let deadline = Instant::now() + BOUND;
    while answered.load(Ordering::Relaxed) < 10 * CLIENTS {
        assert!(Instant::now() < deadline, "the clients are not answered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    server.signal(Signal::TERM);
    server.wait_for_log(DRAINING);
    let next = idle.request(1);
    let last = idle.ask(&next).await.expect("the idle client's request");
    assert_eq!((last.status, last.closes), (200, true));
    idle.closed().await.expect("the idle connection");
    for (client, ended) in loops.into_iter().enumerate() {
        let ended = timeout(BOUND, ended).await.expect("a client still loops");
        ended
            .unwrap()
            .unwrap_or_else(|e| panic!("client {client}: {e}"));
    }
    assert!(server.exit().success(), "{:#?}", server.logged);
    assert!(!server.logged("connections cut"), "{:#?}", server.logged);
}

#[tokio::test]
async fn a_quiet_connection_is_closed_after_the_idle_close_time_and_the_drain_ends() {
    let (db, _conn, key) = database_with_key().await;
    let mut server = Serve::start(
        &db.url,
        &["--shutdown-idle-close-ms", "200"],
        &[("RUST_LOG", "info")],
    );
    let mut idle = Connection::open(server.addr, &key).await;
    let first = idle.request(0);
    let answer = idle.ask(&first).await.unwrap();
    assert_eq!((answer.status, answer.closes), (200, false));
    let opened = Connection::open(server.addr, &key).await;

    let signalled = Instant::now();
    server.signal(Signal::TERM);
    idle.closed().await.expect("the idle connection");
    // Kept open for the idle close time, not closed at the signal: a
    // request its client was sending would be answered.
    let kept = signalled.elapsed();
    assert!(kept >= Duration::from_millis(200), "closed after {kept:?}");
    opened
        .closed()
        .await
        .expect("the connection that sent nothing");
    assert!(server.exit().success(), "{:#?}", server.logged);
    assert!(!server.logged("connections cut"), "{:#?}", server.logged);
}

#[tokio::test]
async fn a_second_sigterm_ends_the_drain_at_once() {
    let (db, _conn, key) = database_with_key().await;
    let mut server = Serve::start(
        &db.url,
        &["--shutdown-grace-secs", "600"],
        &[("RUST_LOG", "info")],
    );
    // A request held in flight (its body never sent) would keep the drain
    // for the whole grace period.
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    let interim = read_head(&mut slow).await;
    assert!(interim.starts_with("HTTP/1.1 100"), "{interim}");

    server.signal(Signal::TERM);
    server.wait_for_log(DRAINING);
    server.signal(Signal::TERM);
    let status = server.exit();
    assert_eq!(status.code(), Some(128 + 15), "{:#?}", server.logged);
    assert!(
        server.logged("second signal (SIGTERM)"),
        "{:#?}",
        server.logged
    );
}
