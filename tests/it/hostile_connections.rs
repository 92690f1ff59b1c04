//! Connections are shared fairly: one client address holds at most its
//! share, idle kept-alive connections make room for new clients before
//! anything else does, and the probes are answered on slots of their own
//! when every other is taken. The attackers connect from 127.0.0.2 and
//! above; the victim from 127.0.0.1.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;
use tokio::time::timeout;
use vitrina::config::HttpConfig;

use crate::connections::{Answer, HEALTHZ, ask, closed, read_answer, spawn};
use crate::helpers::TestApp;

/// `n` of 127.0.0.0/8 other than the victim's 127.0.0.1.
fn attacker(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + n))
}

async fn connect_from(ip: IpAddr, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(ip, 0)).unwrap();
    socket.connect(to).await.unwrap()
}

/// A request whose head is half sent: a busy connection, never closed to
/// make room (only its header timeout closes it).
async fn half_sent(ip: IpAddr, to: SocketAddr) -> TcpStream {
    let mut stream = connect_from(ip, to).await;
    stream.write_all(&HEALTHZ[..20]).await.unwrap();
    stream
}

/// A connection kept alive after one answered request: idle.
async fn kept_alive(ip: IpAddr, to: SocketAddr) -> TcpStream {
    let mut stream = connect_from(ip, to).await;
    assert_eq!(ask(&mut stream, HEALTHZ).await.status, 200);
    stream
}

/// Whether the server has closed `stream` (or answered and closed it)
/// within `within`, without reading what is there.
async fn ends_within(stream: &TcpStream, within: Duration) -> bool {
    timeout(within, stream.readable()).await.is_ok()
}

/// `path` as the victim at 127.0.0.1 asks it on a new connection, answered
/// within a second.
async fn victim(app: &TestApp, path: &str, key: &str) -> Answer {
    victim_keeping(app, path, key).await.0
}

/// [`victim`], keeping the connection open (and so its slot held).
async fn victim_keeping(app: &TestApp, path: &str, key: &str) -> (Answer, TcpStream) {
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\r\n");
    let answer = timeout(Duration::from_secs(1), ask(&mut stream, request.as_bytes()))
        .await
        .unwrap_or_else(|_| panic!("{path} is not answered within a second"));
    (answer, stream)
}

/// The app with `cap` connections, `per_client` of them for one address,
/// and a key.
async fn capped(cap: u64, per_client: u64) -> (TestApp, String) {
    let app = spawn(HttpConfig {
        http_max_connections: Some(cap),
        http_max_connections_per_client: Some(per_client),
        ..HttpConfig::default()
    })
    .await;
    let key = app.key("acme").await;
    (app, key)
}

#[tokio::test]
async fn one_address_opening_all_it_can_leaves_probes_and_tenants_answered_at_once() {
    const CAP: u64 = 32;
    const PER_CLIENT: u64 = 8;
    let (app, key) = capped(CAP, PER_CLIENT).await;

    // The attacker opens four times the cap, as fast as it can.
    let mut opened = Vec::new();
    for _ in 0..4 * CAP {
        opened.push(connect_from(attacker(0), app.addr).await);
    }
    let mut told = JoinSet::new();
    for (i, stream) in opened.into_iter().enumerate() {
        told.spawn(async move {
            let refused = ends_within(&stream, Duration::from_secs(1)).await;
            (i, stream, refused)
        });
    }
    let (mut held, mut refused) = (Vec::new(), Vec::new());
    while let Some(joined) = told.join_next().await {
        let (i, stream, was_refused) = joined.unwrap();
        match was_refused {
            true => refused.push(stream),
            false => held.push((i, stream)),
        }
    }
    assert_eq!(held.len() as u64, PER_CLIENT, "held by the attacker");
    assert_eq!(refused.len() as u64, 4 * CAP - PER_CLIENT);
    let mut first = refused.remove(0);
    let answer = read_answer(&mut first).await;
    assert_eq!(answer.status, 429, "{}", answer.body);
    assert_eq!(answer.json()["error"]["code"], "too_many_connections");
    let message = answer.json()["error"]["message"].to_string();
    assert!(
        message.contains("8 connections open")
            && message.contains("VITRINA_HTTP_MAX_CONNECTIONS_PER_CLIENT"),
        "{message}"
    );
    assert!(answer.head.contains("retry-after: 1"), "{}", answer.head);

    // It keeps them as it did: half idle between requests, half in the
    // middle of a slow request.
    held.sort_by_key(|(i, _)| *i);
    for (i, (_, stream)) in held.iter_mut().enumerate() {
        match i % 2 {
            0 => assert_eq!(ask(stream, HEALTHZ).await.status, 200),
            _ => stream.write_all(&HEALTHZ[..20]).await.unwrap(),
        }
    }
    let one_more = connect_from(attacker(0), app.addr).await;
    assert!(
        ends_within(&one_more, Duration::from_secs(1)).await,
        "refused"
    );

    for path in ["/healthz", "/readyz", "/v1/products?page_size=1"] {
        let answer = victim(&app, path, &key).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    }
    // Still all there: nothing of the attacker's was closed for the victim.
    for (_, stream) in &held {
        assert!(!ends_within(stream, Duration::from_millis(50)).await);
    }
}

#[tokio::test]
async fn as_the_cap_is_reached_the_connections_idle_longest_are_closed_first() {
    const CAP: u64 = 6;
    let (app, key) = capped(CAP, CAP).await;
    let mut busy = Vec::new();
    for n in 0..3 {
        busy.push(half_sent(attacker(n), app.addr).await);
    }
    let mut idle = Vec::new();
    for n in 0..3 {
        idle.push(kept_alive(attacker(n), app.addr).await);
    }
    // The cap is reached: each new client is served at once, and the
    // connection idle longest is closed for it, oldest first (the victim's
    // own, kept alive, are idle since later).
    let mut victims = Vec::new();
    for closed_for_it in 0..3 {
        let (answer, stream) = victim_keeping(&app, "/v1/products?page_size=1", &key).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        victims.push(stream);
        let idle_now = &idle[closed_for_it..];
        assert!(
            ends_within(&idle_now[0], Duration::from_secs(1)).await,
            "the oldest idle connection is closed"
        );
        for younger in &idle_now[1..] {
            assert!(!ends_within(younger, Duration::from_millis(50)).await);
        }
    }
    // The busy ones were never chosen: each finishes its request.
    for mut stream in busy {
        stream.write_all(&HEALTHZ[20..]).await.unwrap();
        assert_eq!(read_answer(&mut stream).await.status, 200);
    }
    for stream in idle {
        closed(stream, Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn with_every_slot_held_by_busy_connections_the_probes_are_answered_and_other_requests_refused()
 {
    const CAP: u64 = 4;
    let (app, key) = capped(CAP, CAP).await;
    let mut busy = Vec::new();
    for _ in 0..CAP {
        busy.push(half_sent(attacker(0), app.addr).await);
    }
    for path in ["/healthz", "/readyz"] {
        let answer = victim(&app, path, &key).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    }
    let refused = victim(&app, "/v1/products?page_size=1", &key).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    let error = &refused.json()["error"];
    assert_eq!(error["code"], "unavailable");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("all its 4 connections")
            && message.contains("VITRINA_HTTP_MAX_CONNECTIONS"),
        "{message}"
    );
    assert!(refused.head.contains("retry-after: 1"), "{}", refused.head);
    assert!(
        refused.head.contains("connection: close"),
        "{}",
        refused.head
    );

    // Once a busy connection finishes, tenants are served again.
    let mut done = busy.remove(0);
    done.write_all(&HEALTHZ[20..]).await.unwrap();
    assert_eq!(read_answer(&mut done).await.status, 200);
    drop(done);
    let answer = timeout(Duration::from_secs(2), async {
        loop {
            let answer = victim(&app, "/v1/products?page_size=1", &key).await;
            if answer.status == 200 {
                return answer;
            }
        }
    })
    .await
    .expect("a tenant is served once a slot is free");
    assert_eq!(answer.status, 200);
}
