//! A database briefly out of reach (no connection to hand out, a lock held
//! by another process, connections cut by a restart) is answered 503
//! `unavailable` with `Retry-After` (GraphQL: `UNAVAILABLE`, HTTP 503),
//! never 500, within the request deadline; `/readyz` fails while it lasts.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend};
use serde_json::{Value, json};

use crate::graphql_limits::hold_the_pool;
use crate::helpers::uploads::{item, upload};
use crate::helpers::{TestApp, header};

/// What one request was answered, read whole.
#[derive(Debug)]
struct Answered {
    what: &'static str,
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

impl Answered {
    /// The REST code, or GraphQL's first `extensions.code`.
    fn code(&self) -> &str {
        self.body["error"]["code"]
            .as_str()
            .or_else(|| self.body["errors"][0]["extensions"]["code"].as_str())
            .unwrap_or("")
    }

    /// 503 with `Retry-After` and the code of its surface (the probe: its
    /// status `unavailable`).
    fn is_unavailable(&self) -> bool {
        match self.what {
            "readyz" => self.status == 503 && self.body["status"] == "unavailable",
            _ => {
                self.status == 503
                    && self.retry_after.as_deref() == Some("1")
                    && (self.code() == "unavailable" || self.code() == "UNAVAILABLE")
            }
        }
    }

    fn assert_unavailable(&self) {
        assert!(self.is_unavailable(), "{self:?}");
    }

    /// Answered as if nothing was wrong, or 503 `unavailable`; never 500.
    fn assert_served_or_unavailable(&self) {
        assert!(
            (200..300).contains(&self.status) || self.is_unavailable(),
            "{self:?}"
        );
    }
}

async fn answered(what: &'static str, response: reqwest::Response) -> Answered {
    let status = response.status().as_u16();
    let retry_after = header(&response, "retry-after").map(str::to_owned);
    let body = response.json().await.unwrap_or(Value::Null);
    Answered {
        what,
        status,
        retry_after,
        body,
    }
}

/// A product page, an upload, a GraphQL query and `/readyz`, at once.
async fn every_kind(app: &TestApp, key: &str) -> Vec<Answered> {
    let graphql = json!({ "query": "{ products(first: 1) { edges { node { id } } } }" });
    let requests = [
        (
            "rest",
            app.client
                .get(app.url("/v1/products?page_size=1"))
                .bearer_auth(key),
        ),
        (
            "upload",
            app.client
                .post(app.url("/extension/v1/scrapes"))
                .bearer_auth(key)
                .json(&upload(vec![item("1")])),
        ),
        (
            "graphql",
            app.client
                .post(app.url("/graphql"))
                .bearer_auth(key)
                .json(&graphql),
        ),
        ("readyz", app.client.get(app.url("/readyz"))),
    ];
    join_all(requests.into_iter().map(|(what, request)| async move {
        answered(what, request.send().await.expect("answered")).await
    }))
    .await
}

fn by<'a>(answers: &'a [Answered], what: &str) -> &'a Answered {
    answers.iter().find(|a| a.what == what).expect("asked")
}

/// Waits no longer than the GraphQL deadline: twice the database wait
/// (a connection, then a lock) fits in it.
fn within_the_deadline(started: Instant) {
    let deadline = Duration::from_millis(vitrina::config::GraphqlConfig::default().deadline_ms);
    assert!(started.elapsed() < deadline, "took {:?}", started.elapsed());
}

#[tokio::test]
async fn with_no_pooled_connection_to_hand_out_every_request_is_503_unavailable_and_readyz_fails() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let held = hold_the_pool(&app).await;
    let started = Instant::now();
    let answers = every_kind(&app, &key).await;
    within_the_deadline(started);
    for answer in &answers {
        answer.assert_unavailable();
    }
    let message = by(&answers, "rest").body["error"]["message"]
        .as_str()
        .unwrap();
    crate::helpers::assert_plain_sentence(message);

    drop(held);
    for answer in every_kind(&app, &key).await {
        assert!((200..300).contains(&answer.status), "{answer:?}");
    }
}

/// Another process takes the write lock: SQLite's whole file
/// (`BEGIN EXCLUSIVE`), PostgreSQL's upload tables.
async fn lock_elsewhere(app: &TestApp) -> DatabaseConnection {
    // One connection, so that every statement runs on it.
    let mut options = ConnectOptions::new(app.db_url());
    options.max_connections(1);
    let other = Database::connect(options).await.expect("connect");
    let statements: &[&str] = match other.get_database_backend() {
        DbBackend::Sqlite => &["BEGIN EXCLUSIVE"],
        _ => &[
            "BEGIN",
            "LOCK TABLE scrape_sessions, submissions IN EXCLUSIVE MODE",
        ],
    };
    for sql in statements {
        other.execute_unprepared(sql).await.expect(sql);
    }
    other
}

#[tokio::test]
async fn a_write_lock_held_by_another_process_makes_uploads_503_within_the_deadline_and_readyz_fail_on_sqlite()
 {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let sqlite = app.db.get_database_backend() == DbBackend::Sqlite;
    // The key's first use records it (a write); from then on reads are
    // reads.
    for answer in every_kind(&app, &key).await {
        assert!((200..300).contains(&answer.status), "{answer:?}");
    }
    let other = lock_elsewhere(&app).await;
    let started = Instant::now();
    let answers = every_kind(&app, &key).await;
    within_the_deadline(started);
    by(&answers, "upload").assert_unavailable();
    // Reading needs no write lock.
    assert_eq!(by(&answers, "rest").status, 200);
    assert_eq!(by(&answers, "graphql").status, 200);
    if sqlite {
        // `SELECT 1` would still answer; the probe tries the write lock.
        by(&answers, "readyz").assert_unavailable();
    }

    other.execute_unprepared("ROLLBACK").await.expect("release");
    for answer in every_kind(&app, &key).await {
        assert!((200..300).contains(&answer.status), "{answer:?}");
    }
}

/// Every other backend of the test database, ended as a restart would.
async fn terminate_backends(admin: &DatabaseConnection, database: &str) {
    let sql = format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = '{database}' AND pid <> pg_backend_pid()"
    );
    admin.execute_unprepared(&sql).await.expect("terminate");
}

#[tokio::test]
async fn postgres_connections_cut_or_refused_are_503_unavailable_never_500() {
    let app = TestApp::spawn().await;
    if app.db.get_database_backend() != DbBackend::Postgres {
        return; // Only PostgreSQL has connections to cut.
    }
    let key = app.key("acme").await;
    let url = url::Url::parse(app.db_url()).expect("a URL");
    let database = url.path().trim_start_matches('/').to_owned();
    let mut admin_url = url.clone();
    admin_url.set_path("postgres");
    let admin = Database::connect(admin_url.as_str()).await.expect("admin");

    // Cut: each round the pool's connections die under it.
    let mut unavailable = 0;
    for _ in 0..5 {
        for answer in every_kind(&app, &key).await {
            answer.assert_served_or_unavailable();
        }
        terminate_backends(&admin, &database).await;
        for answer in every_kind(&app, &key).await {
            answer.assert_served_or_unavailable();
            unavailable += usize::from(answer.is_unavailable());
        }
    }
    assert!(unavailable > 0, "no request met a cut connection");

    // Refused: as while PostgreSQL restarts, no connection can be made.
    let blocked = format!("ALTER DATABASE \"{database}\" ALLOW_CONNECTIONS false");
    admin.execute_unprepared(&blocked).await.expect("block");
    terminate_backends(&admin, &database).await;
    let started = Instant::now();
    let answers = every_kind(&app, &key).await;
    within_the_deadline(started);
    for answer in &answers {
        answer.assert_unavailable();
    }
    let allowed = format!("ALTER DATABASE \"{database}\" ALLOW_CONNECTIONS true");
    admin.execute_unprepared(&allowed).await.expect("unblock");
    for answer in every_kind(&app, &key).await {
        assert!((200..300).contains(&answer.status), "{answer:?}");
    }
}
