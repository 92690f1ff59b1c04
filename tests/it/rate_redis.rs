//! One per-minute rate limit across replicas: `vitrina serve` processes over
//! one database and one Redis (`TEST_REDIS_URL`, default
//! `redis://127.0.0.1:6379`), and what they do when Redis does not answer.
//!
//! Each test uses a new account, so its Redis keys are its own.

use std::collections::HashSet;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::future::join_all;
use reqwest::Response;

use crate::helpers::{TestDb, create_key, eventually, required_header};
use crate::serve::Serve;

const LIMIT: u32 = 5;

fn redis_url() -> String {
    std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A `vitrina serve` process allowing `LIMIT` requests a minute, counting in `redis_url`.
fn start(db: &TestDb, redis_url: &str) -> Serve {
    let limit = LIMIT.to_string();
    let env = [
        ("VITRINA_REDIS_URL", redis_url),
        ("VITRINA_RATE_LIMIT_PER_MINUTE", limit.as_str()),
        ("RUST_LOG", "info"),
    ];
    Serve::start(&db.url, &[], &env)
}

/// Stops the server and returns the lines it logged that contain `text`.
fn stop_and_grep(server: &mut Serve, text: &str) -> Vec<String> {
    server
        .kill()
        .into_iter()
        .filter(|line| line.contains(text))
        .collect()
}

/// A new account's key in `db`, and the account's id.
async fn new_key(db: &TestDb) -> (String, uuid::Uuid) {
    let conn = db.connect().await;
    let name = format!("acme-{}", uuid::Uuid::new_v4().simple());
    let created = create_key(&conn, &name, chrono::Utc::now()).await;
    (created.secret, created.key.account_id)
}

/// `requests` concurrent `GET /v1/brands` as `key`, spread evenly over `servers`.
async fn burst(servers: &[&Serve], key: &str, requests: usize) -> Vec<Response> {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let sends = (0..requests).map(|i| {
        client
            .get(format!("{}/v1/brands", servers[i % servers.len()].base))
            .bearer_auth(key)
            .send()
    });
    join_all(sends)
        .await
        .into_iter()
        .map(|sent| sent.expect("request"))
        .collect()
}

async fn redis_connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("TEST_REDIS_URL is a Redis URL")
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| {
            panic!("no Redis at {url} ({e}): start one with `redis-server --daemonize yes`")
        })
}

/// The account's count in Redis for the window ending at `reset_at`, and
/// the seconds its key has left.
async fn redis_window(url: &str, account: uuid::Uuid, reset_at: i64) -> (Option<u32>, i64) {
    let mut redis = redis_connection(url).await;
    let key = format!("vitrina:rate:{account}:{}", reset_at / 60 - 1);
    let used = redis::cmd("GET").arg(&key).query_async(&mut redis).await;
    let ttl = redis::cmd("TTL").arg(&key).query_async(&mut redis).await;
    (used.expect("GET"), ttl.expect("TTL"))
}

/// The checks of one burst within one window; `None` when it straddled two
/// windows (the wall clock passed a minute) and must be sent again.
fn one_window(responses: &[Response]) -> Option<i64> {
    let resets: HashSet<&str> = responses
        .iter()
        .map(|r| required_header(r, "x-ratelimit-reset"))
        .collect();
    (resets.len() == 1).then(|| resets.into_iter().next().unwrap().parse().unwrap())
}

#[tokio::test]
async fn replicas_share_one_rate_limit_through_redis() {
    let url = redis_url();
    redis_connection(&url).await;
    let db = TestDb::new().await;
    db.connect().await;
    let (first, second) = (start(&db, &url), start(&db, &url));

    for _attempt in 0..3 {
        let (key, account) = new_key(&db).await;
        let responses = burst(&[&first, &second], &key, 2 * LIMIT as usize).await;
        let Some(reset_at) = one_window(&responses) else {
            continue;
        };
        let (passed, refused): (Vec<_>, Vec<_>) = responses.iter().partition(|r| r.status() == 200);
        assert_eq!(passed.len(), LIMIT as usize, "exactly the limit passes");
        let mut remaining: Vec<u32> = passed
            .iter()
            .map(|r| required_header(r, "x-ratelimit-remaining").parse().unwrap())
            .collect();
        remaining.sort_unstable();
        assert_eq!(
            remaining,
            (0..LIMIT).collect::<Vec<_>>(),
            "one count for both servers"
        );
        for response in refused {
            assert_eq!(response.status(), 429);
            assert_eq!(
                required_header(response, "x-ratelimit-limit"),
                LIMIT.to_string()
            );
            assert_eq!(required_header(response, "x-ratelimit-remaining"), "0");
            let retry_after: i64 = required_header(response, "retry-after").parse().unwrap();
            assert!((1..=60).contains(&retry_after), "{retry_after}");
        }
        let (used, ttl) = redis_window(&url, account, reset_at).await;
        assert_eq!(used, Some(LIMIT), "refused requests are not counted");
        assert!(
            (1..=120).contains(&ttl),
            "the key expires on its own: {ttl}"
        );
        return;
    }
    panic!("every burst straddled a minute");
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn without_redis_each_process_keeps_the_limit_itself() {
    let db = TestDb::new().await;
    db.connect().await;
    let closed = format!("redis://127.0.0.1:{}", closed_port());
    let mut server = start(&db, &closed);

    for _attempt in 0..3 {
        let (key, _) = new_key(&db).await;
        let responses = burst(&[&server], &key, 2 * LIMIT as usize).await;
        if one_window(&responses).is_none() {
            continue;
        }
        let passed = responses.iter().filter(|r| r.status() == 200).count();
        assert_eq!(passed, LIMIT as usize, "the local limiter still applies");
        assert!(
            responses
                .iter()
                .all(|r| r.status() == 200 || r.status() == 429)
        );
        let warnings = stop_and_grep(&mut server, "Redis is unavailable");
        assert_eq!(
            warnings.len(),
            1,
            "logged once, not per request: {warnings:?}"
        );
        return;
    }
    panic!("every burst straddled a minute");
}

/// A Redis of this test's own on `port`, stopped when dropped.
struct OwnRedis(Child);

impl OwnRedis {
    async fn start(port: u16) -> OwnRedis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        let redis = OwnRedis(child);
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
        let (within, every) = (Duration::from_secs(10), Duration::from_millis(50));
        eventually(within, every, || async {
            let connected = client.get_multiplexed_async_connection().await;
            connected.map_err(|e| format!("redis-server did not start: {e}"))
        })
        .await;
        redis
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

#[tokio::test]
async fn the_limit_returns_to_redis_when_it_answers_again() {
    let db = TestDb::new().await;
    db.connect().await;
    let port = closed_port();
    let url = format!("redis://127.0.0.1:{port}");
    let mut server = start(&db, &url);
    let (key, account) = new_key(&db).await;
    assert_eq!(burst(&[&server], &key, 1).await[0].status(), 200);

    let _redis = OwnRedis::start(port).await;
    let (within, every) = (Duration::from_secs(10), Duration::from_millis(200));
    eventually(within, every, || async {
        let response = burst(&[&server], &key, 1).await.remove(0);
        let reset_at = required_header(&response, "x-ratelimit-reset")
            .parse()
            .unwrap();
        match redis_window(&url, account, reset_at).await.0 {
            Some(_) => Ok(()),
            None => Err("requests are still counted in process".to_owned()),
        }
    })
    .await;
    assert_eq!(stop_and_grep(&mut server, "Redis answers again").len(), 1);
}

/// A 304 counts like any request and `/v1/rate_limit` only reads, both in
/// the window every replica shares.
#[tokio::test]
async fn a_304_counts_in_the_shared_window_and_the_rate_limit_endpoint_only_reads() {
    let url = redis_url();
    redis_connection(&url).await;
    let db = TestDb::new().await;
    db.connect().await;
    let (first, second) = (start(&db, &url), start(&db, &url));
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    // Each server's connection to Redis opens on its first count, which
    // may take longer than the request waits; then it counts locally.
    let (warm_up, _) = new_key(&db).await;
    burst(&[&first, &second], &warm_up, 2).await;

    for _attempt in 0..3 {
        let (key, account) = new_key(&db).await;
        let tagged = client
            .get(format!("{}/v1/brands", first.base))
            .bearer_auth(&key)
            .send()
            .await
            .expect("request");
        let etag = required_header(&tagged, "etag").to_owned();
        let again = client
            .get(format!("{}/v1/brands", second.base))
            .bearer_auth(&key)
            .header("if-none-match", &etag)
            .send()
            .await
            .expect("request");
        assert_eq!(again.status(), 304);
        let standing = client
            .get(format!("{}/v1/rate_limit", second.base))
            .bearer_auth(&key)
            .send()
            .await
            .expect("request");
        let responses = [tagged, again, standing];
        let Some(reset_at) = one_window(&responses) else {
            continue;
        };
        let left = |r: &Response| required_header(r, "x-ratelimit-remaining").to_owned();
        let (one, two) = ((LIMIT - 1).to_string(), (LIMIT - 2).to_string());
        assert_eq!(
            responses.iter().map(left).collect::<Vec<_>>(),
            vec![one, two.clone(), two]
        );
        let (used, _) = redis_window(&url, account, reset_at).await;
        assert_eq!(used, Some(2), "the 200 and the 304 are counted");
        return;
    }
    panic!("three attempts straddled a minute");
}
