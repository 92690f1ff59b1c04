//! The test harness: a fresh database per test (a SQLite file in a temp
//! folder, or a new PostgreSQL database when `TEST_DATABASE_URL` is set), and
//! the real application served on a random loopback port; with the helpers
//! every test file shares (requests, error bodies, statements run, waiting).
//! Test data lives in `fixtures`.

pub mod cli;
pub mod graphql;
pub mod openapi;
pub mod receiver;
pub mod uploads;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use entity::{Marketplace, SubmissionStatus};
use sea_orm::{ConnectionTrait, Database, DatabaseConnection};
use serde_json::Value;
use uuid::Uuid;
use vitrina::app::App;
use vitrina::clock::{Clock, ManualClock};
use vitrina::config::DatabaseConfig;
use vitrina::config::Settings;
use vitrina::limits::Limits;
use vitrina::seed::SeedOptions;
use vitrina::state::AppState;

use crate::fixtures::{
    insert_current_price, insert_product, insert_seller, insert_session, insert_submission,
    observation, product, seller,
};

/// A database that exists for one test and is removed afterwards.
pub struct TestDb {
    pub url: String,
    _cleanup: Cleanup,
}

enum Cleanup {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres { admin_url: String, name: String },
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Cleanup::Postgres { admin_url, name } = self {
            let (admin_url, name) = (admin_url.clone(), name.clone());
            // Drop runs inside the test's runtime; use a thread with its own.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                if let Ok(rt) = rt {
                    rt.block_on(async {
                        if let Ok(admin) = Database::connect(admin_url).await {
                            let sql = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
                            let _ = admin.execute_unprepared(&sql).await;
                            let _ = admin.close().await;
                        }
                    });
                }
            })
            .join();
        }
    }
}

static NOTICE: Once = Once::new();

impl TestDb {
    pub async fn new() -> TestDb {
        match std::env::var("TEST_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            Some(admin_url) => {
                let name = format!("vitrina_test_{}", uuid::Uuid::new_v4().simple());
                let admin = Database::connect(admin_url.as_str())
                    .await
                    .expect("connect TEST_DATABASE_URL");
                admin
                    .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
                    .await
                    .expect("create test database");
                admin.close().await.ok();
                let mut url = url::Url::parse(&admin_url).expect("TEST_DATABASE_URL is a URL");
                url.set_path(&name);
                TestDb {
                    url: url.to_string(),
                    _cleanup: Cleanup::Postgres { admin_url, name },
                }
            }
            None => {
                NOTICE.call_once(|| {
                    eprintln!("note: TEST_DATABASE_URL is not set; tests run on SQLite and the PostgreSQL run is skipped");
                });
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite://{}", dir.path().join("vitrina.db").display());
                TestDb {
                    url,
                    _cleanup: Cleanup::Sqlite(dir),
                }
            }
        }
    }

    pub fn config(&self) -> DatabaseConfig {
        DatabaseConfig {
            database_url: self.url.clone(),
            db_max_connections: Some(8),
            db_wait_ms: vitrina::config::DEFAULT_DB_WAIT_MS,
            db_parallel_workers: vitrina::config::DEFAULT_DB_PARALLEL_WORKERS,
        }
    }

    /// Connects and migrates.
    pub async fn connect(&self) -> DatabaseConnection {
        let db = vitrina::db::connect(&self.config())
            .await
            .expect("connect test database");
        vitrina::db::migrate(&db)
            .await
            .expect("migrate test database");
        db
    }
}

/// Rolls `db` back to just before the migration `name`, undoing every
/// later one too: a test of one migration keeps testing it when more are
/// added. In one transaction, on one connection, as `db::migrate` goes up.
pub async fn migrate_down_through(db: &DatabaseConnection, name: &str) {
    use migration::{Migrator, MigratorTrait};
    let since = Migrator::migrations()
        .iter()
        .rev()
        .position(|m| m.name() == name)
        .unwrap_or_else(|| panic!("no migration {name}"));
    let steps = u32::try_from(since + 1).expect("few migrations");
    let txn = vitrina::db::begin_write(db).await.expect("begin");
    Migrator::down(&txn, Some(steps)).await.expect("down");
    txn.commit().await.expect("commit the way down");
}

/// A file of the repository, as checked in.
pub fn repository_file(path: &str) -> String {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The instant every test clock starts at.
pub fn test_start() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 12, 0, 0)
        .single()
        .expect("valid time")
}

/// The application running on a random loopback port over a fresh database.
pub struct TestApp {
    pub addr: SocketAddr,
    pub db: DatabaseConnection,
    pub clock: ManualClock,
    pub client: reqwest::Client,
    /// The state the app serves with (settings, events, ...).
    pub state: AppState,
    /// Every statement the app's connection has run, with its values.
    /// The statements the app ran, but for API-key bookkeeping.
    statements: Arc<std::sync::Mutex<Vec<Logged>>>,
    /// How many statements looked an API key up by its hash.
    key_lookups: Arc<AtomicUsize>,
    /// Keeps the database alive as long as the app.
    test_db: TestDb,
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        Self::spawn_with(test_limits()).await
    }

    pub async fn spawn_with(limits: Limits) -> TestApp {
        Self::spawn_with_settings(Settings {
            limits,
            ..Settings::default()
        })
        .await
    }

    /// The app over `products` demo products made by the seed generator with
    /// `seed`, and a key of the demo account.
    pub async fn demo(products: u64, seed: u64) -> (TestApp, String) {
        Self::demo_with(test_limits(), products, seed).await
    }

    /// As [`TestApp::demo`], with these per-account limits.
    pub async fn demo_with(limits: Limits, products: u64, seed: u64) -> (TestApp, String) {
        let settings = Settings {
            limits,
            ..Settings::default()
        };
        Self::demo_on(settings, products, seed).await
    }

    /// As [`TestApp::demo`], with the response cache off (see [`uncached`]).
    pub async fn demo_uncached(products: u64, seed: u64) -> (TestApp, String) {
        Self::demo_on(uncached(Settings::default()), products, seed).await
    }

    /// As [`TestApp::demo`], with these settings (the test's limits unless set).
    pub async fn demo_on(settings: Settings, products: u64, seed: u64) -> (TestApp, String) {
        let app = Self::spawn_with_settings(settings).await;
        let options = SeedOptions {
            demo: true,
            products,
            seed,
        };
        vitrina::seed::seed(&app.db, &options).await.expect("seed");
        let key = app.key(vitrina::seed::DEMO_ACCOUNT).await;
        (app, key)
    }

    /// The app with the response cache off (see [`uncached`]).
    pub async fn spawn_uncached() -> TestApp {
        let settings = Settings {
            limits: test_limits(),
            ..Settings::default()
        };
        Self::spawn_with_settings(uncached(settings)).await
    }

    /// The app with every setting chosen by the test (GraphQL limits, batching...).
    pub async fn spawn_with_settings(settings: Settings) -> TestApp {
        Self::start(settings, None).await
    }

    /// The app as `serve --demo` runs it: its pages carry `demo_key`.
    pub async fn spawn_demo_pages(demo_key: &str) -> TestApp {
        Self::start(Settings::default(), Some(demo_key.to_owned())).await
    }

    /// The app over a database the test made (and perhaps migrated down
    /// and filled): connected and migrated as `serve` starts.
    pub async fn spawn_on(test_db: TestDb, settings: Settings) -> TestApp {
        Self::start_on(test_db, settings, None).await
    }

    async fn start(settings: Settings, demo_key: Option<String>) -> TestApp {
        Self::start_on(TestDb::new().await, settings, demo_key).await
    }

    async fn start_on(test_db: TestDb, settings: Settings, demo_key: Option<String>) -> TestApp {
        let mut db = test_db.connect().await;
        let statements = Arc::new(std::sync::Mutex::new(Vec::new()));
        let key_lookups = Arc::new(AtomicUsize::new(0));
        let (log, lookups) = (statements.clone(), key_lookups.clone());
        db.set_metric_callback(move |info| {
            // Key bookkeeping (lookups, last-use stamps, the revocation
            // poll) comes and goes with the remembered keys' timing; the
            // statements a request's work takes are logged apart from it.
            if info.statement.sql.contains("\"api_keys\"") {
                if info.statement.sql.contains("\"key_hash\" =") {
                    lookups.fetch_add(1, Ordering::SeqCst);
                }
                return;
            }
            let logged = Logged {
                statement: info.statement.clone(),
                ended: Instant::now(),
                took: info.elapsed,
            };
            log.lock().unwrap().push(logged);
        });
        let clock = ManualClock::new(test_start());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        // No background jobs: tests run them by hand, on the test's clock.
        let app = App::build(
            db.clone(),
            Arc::new(clock.clone()),
            settings,
            listener,
            format!("http://{addr}"),
            demo_key,
        )
        .expect("the app");
        let state = app.state().clone();
        tokio::spawn(app.run(std::future::pending()));
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("http client");
        TestApp {
            addr,
            db,
            clock,
            client,
            state,
            statements,
            key_lookups,
            test_db,
        }
    }

    /// The app's database, for the CLI to run over.
    pub fn db_url(&self) -> &str {
        &self.test_db.url
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request")
    }

    /// GET with `Authorization: Bearer <key>`.
    pub async fn get_as(&self, key: &str, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .bearer_auth(key)
            .send()
            .await
            .expect("request")
    }

    /// GET as `key`, expecting 200, returning the JSON body.
    pub async fn json_as(&self, key: &str, path: &str) -> serde_json::Value {
        let response = self.get_as(key, path).await;
        let status = response.status();
        let body: serde_json::Value = response.json().await.expect("JSON body");
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// Creates an API key for the account and returns the secret.
    pub async fn key(&self, account: &str) -> String {
        create_key(&self.db, account, self.clock.now()).await.secret
    }

    /// How many statements have looked an API key up by its hash so far.
    pub fn key_lookups(&self) -> usize {
        self.key_lookups.load(Ordering::SeqCst)
    }

    /// SQL statements the app's connection has run so far, API-key
    /// bookkeeping aside (see [`TestApp::key_lookups`]).
    pub fn statements(&self) -> usize {
        self.statements.lock().unwrap().len()
    }

    /// The SQL text of the statements run since the first `from` of them.
    pub fn statement_texts(&self, from: usize) -> Vec<String> {
        self.statements.lock().unwrap()[from..]
            .iter()
            .map(|s| s.statement.sql.clone())
            .collect()
    }

    /// The same statements with their values written in.
    pub fn statements_with_values(&self, from: usize) -> Vec<String> {
        self.statements.lock().unwrap()[from..]
            .iter()
            .map(|s| s.statement.to_string())
            .collect()
    }

    /// The statements run since the first `from` of them that read rows of
    /// `table`, values written in.
    pub fn statements_reading(&self, from: usize, table: &str) -> Vec<String> {
        let (quoted, bare) = (format!("FROM \"{table}\""), format!("FROM {table} "));
        self.statements_with_values(from)
            .into_iter()
            .filter(|s| s.contains(&quoted) || s.contains(&bare))
            .collect()
    }

    /// The most statements reading `table` that ran at once, of the
    /// statements run in `range` (by their order): how many connections
    /// they held together.
    pub fn most_at_once_reading(&self, range: std::ops::Range<usize>, table: &str) -> usize {
        let (quoted, bare) = (format!("FROM \"{table}\""), format!("FROM {table} "));
        let mut edges: Vec<(Instant, i32)> = Vec::new();
        for s in &self.statements.lock().unwrap()[range] {
            if s.statement.sql.contains(&quoted) || s.statement.sql.contains(&bare) {
                // Ends sort before starts at the same instant.
                edges.push((s.ended - s.took, 1));
                edges.push((s.ended, -1));
            }
        }
        edges.sort();
        let (mut now, mut most) = (0, 0);
        for (_, step) in edges {
            now += step;
            most = most.max(now);
        }
        most as usize
    }

    /// The database settings the app connected with.
    pub fn database_config(&self) -> DatabaseConfig {
        self.test_db.config()
    }

    /// The one statement since the first `from` that reads `table`.
    pub fn statement_reading(&self, from: usize, table: &str) -> String {
        let mut found = self.statements_reading(from, table);
        assert_eq!(found.len(), 1, "one statement reads {table}: {found:#?}");
        found.remove(0)
    }

    /// Another instance of the service over this app's database, with
    /// `settings`, its own in-process state and a clock at this app's time:
    /// a second replica, or the service after a restart.
    pub async fn replica(&self, settings: Settings) -> SocketAddr {
        self.replica_with_state(settings).await.0
    }

    /// [`TestApp::replica`], with its state.
    pub async fn replica_with_state(&self, settings: Settings) -> (SocketAddr, AppState) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let app = App::build(
            self.db.clone(),
            Arc::new(ManualClock::new(self.clock.now())),
            settings,
            listener,
            format!("http://{addr}"),
            None,
        )
        .expect("the replica");
        let state = app.state().clone();
        tokio::spawn(app.run(std::future::pending()));
        (addr, state)
    }

    /// The background jobs over this app's database and clock.
    pub fn jobs(&self) -> vitrina::jobs::scheduler::Jobs {
        vitrina::app::jobs_of(&self.state)
    }

    /// POST a JSON body as `key`.
    pub async fn post_as(
        &self,
        key: &str,
        path: &str,
        body: &serde_json::Value,
    ) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .expect("request")
    }
}

/// A statement the app ran, and when.
struct Logged {
    statement: sea_orm::Statement,
    ended: Instant,
    took: Duration,
}

/// Creates an API key for `account` (made if new) at `now`.
pub async fn create_key(
    db: &DatabaseConnection,
    account: &str,
    now: DateTime<Utc>,
) -> vitrina::accounts::NewKey {
    vitrina::accounts::create_key(db, account, now)
        .await
        .expect("create key")
}

/// Default settings but for the development switch that lets webhooks
/// target loopback receivers.
pub fn loopback_webhooks() -> Settings {
    Settings {
        webhooks: vitrina::config::WebhookConfig {
            targets: vitrina::config::WebhookTargets {
                webhook_allow_insecure_targets: true,
            },
            ..Default::default()
        },
        ..Settings::default()
    }
}

/// The default limits, but with a burst of database time as large as a
/// minute's budget: the test clock moves only when a test moves it, so an
/// account's balance never drains, and a test's many requests on one key
/// would otherwise meet the default burst sooner or later by how busy the
/// machine is. `db_time.rs` tests the burst itself.
pub fn test_limits() -> Limits {
    Limits {
        db_time_burst_ms: vitrina::config::DEFAULT_DB_TIME_PER_MINUTE_MS,
        ..Limits::default()
    }
}

/// `settings` with the response cache off: for tests that write rows
/// straight into the database, past the app (the cache learns only of the
/// writes Vitrina makes), or that count the statements a request sends
/// when it runs.
pub fn uncached(mut settings: Settings) -> Settings {
    settings.http.cache_mb = 0;
    settings
}

/// Limits with this daily quota and the default rate limit.
pub fn daily_quota(rows: i64) -> Limits {
    Limits {
        daily_quota: rows,
        ..Limits::default()
    }
}

// ---------------------------------------------------------------- statements

/// The row counts a statement (values written in) asks for with `LIMIT`, in
/// the order they stand: a subquery's before the statement's own.
pub fn limits(statement: &str) -> Vec<u64> {
    statement
        .match_indices("LIMIT ")
        .map(|(at, word)| {
            let digits: String = statement[at + word.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits
                .parse()
                .unwrap_or_else(|_| panic!("a row count after LIMIT: {statement}"))
        })
        .collect()
}

// ---------------------------------------------------------------- HTTP

/// A response header, when present and readable.
pub fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

/// A response header that must be present.
pub fn required_header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    header(response, name).unwrap_or_else(|| panic!("{name} is missing"))
}

/// The status and REST error code of an error response.
pub async fn error_of(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("JSON error body");
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_owned(),
    )
}

/// The REST error code of a failed GET.
pub async fn rest_error(app: &TestApp, key: &str, path: &str) -> (u16, String) {
    error_of(app.get_as(key, path).await).await
}

/// A message is one plain sentence and names nothing internal.
pub fn assert_plain_sentence(message: &str) {
    assert!(
        !message.trim().is_empty(),
        "message must not be empty: {message:?}"
    );
    assert!(message.ends_with('.'), "one sentence: {message:?}");
    assert!(
        !message.trim_end_matches('.').contains(". "),
        "one sentence: {message:?}"
    );
    for leak in [
        "::",
        "`",
        "\n",
        "Err(",
        "Error",
        "error returned",
        "sqlx",
        "SQL",
        "SELECT",
        "table",
        "panicked",
        "serde",
    ] {
        assert!(!message.contains(leak), "{leak:?} leaks in {message:?}");
    }
}

/// Query parameters as a URL query string.
pub fn encoded(params: &[(&str, String)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())))
        .finish()
}

/// The `id` of each item.
pub fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| i["id"].as_str().expect("id").to_owned())
        .collect()
}

/// A time as the API writes it.
pub fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

// ---------------------------------------------------------------- data

/// A session of `key` with `merged` merged products (each with a current
/// price) followed by `pending` pending placeholders.
pub async fn session_with(app: &TestApp, key: &str, merged: usize, pending: usize) -> Uuid {
    let session = insert_session(&app.db, key, test_start()).await;
    let shop = seller(Marketplace::Wildberries, &format!("s-{}", session.id));
    let shop = insert_seller(&app.db, shop).await;
    for i in 0..merged {
        let p = insert_product(&app.db, &shop, product(&format!("m{i}-{}", session.id))).await;
        insert_current_price(&app.db, p.id, observation(100.0, test_start())).await;
        insert_submission(&app.db, session.id, SubmissionStatus::Merged, Some(p.id)).await;
    }
    for _ in 0..pending {
        insert_submission(&app.db, session.id, SubmissionStatus::Pending, None).await;
    }
    session.id
}

// ---------------------------------------------------------------- faults

/// Makes the database refuse to insert the product whose external id is
/// `external_id`, with a trigger raising `message`: on PostgreSQL `RAISE
/// EXCEPTION`, with the SQLSTATE named `errcode` when given; on SQLite
/// `RAISE(ABORT)`.
pub async fn refuse_product(
    app: &TestApp,
    external_id: &str,
    message: &str,
    errcode: Option<&str>,
) {
    let statements = match app.db.get_database_backend() {
        sea_orm::DbBackend::Postgres => {
            let errcode =
                errcode.map_or(String::new(), |code| format!(" USING ERRCODE = '{code}'"));
            vec![
                format!(
                    "CREATE FUNCTION refuse_{external_id}() RETURNS trigger LANGUAGE plpgsql \
                     AS $$ BEGIN IF NEW.external_id = '{external_id}' THEN \
                     RAISE EXCEPTION '{message}'{errcode}; END IF; RETURN NEW; END $$"
                ),
                format!(
                    "CREATE TRIGGER refuse_{external_id} BEFORE INSERT ON products \
                     FOR EACH ROW EXECUTE FUNCTION refuse_{external_id}()"
                ),
            ]
        }
        _ => vec![format!(
            "CREATE TRIGGER refuse_{external_id} BEFORE INSERT ON products \
             WHEN NEW.external_id = '{external_id}' BEGIN SELECT RAISE(ABORT, '{message}'); END"
        )],
    };
    for sql in statements {
        app.db.execute_unprepared(&sql).await.unwrap();
    }
}

/// Pins the app's SQLite file at its size (`pinned`), so that any write
/// needing a new page fails as on a full disk (SQLITE_FULL), or unpins it.
/// A setting of each connection: all of them are held to set it.
pub async fn pin_sqlite_file(app: &TestApp, pinned: bool) {
    let pool = app.db.get_sqlite_connection_pool();
    let mut held = Vec::new();
    for _ in 0..pool.options().get_max_connections() {
        held.push(pool.acquire().await.unwrap());
    }
    // Down to the file's size, or back up to SQLite's default.
    let sql = if pinned {
        "PRAGMA max_page_count = 1"
    } else {
        "PRAGMA max_page_count = 1073741823"
    };
    for connection in &mut held {
        sea_orm::sqlx::raw_sql(sql)
            .execute(&mut **connection)
            .await
            .unwrap();
    }
}

// ---------------------------------------------------------------- waiting

/// Asks `check` every `every` until it gives a value; fails after `within`
/// with the last thing `check` said.
pub async fn eventually<T, F>(within: Duration, every: Duration, mut check: impl FnMut() -> F) -> T
where
    F: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + within;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) => assert!(Instant::now() < deadline, "not within {within:?}: {last}"),
        }
        tokio::time::sleep(every).await;
    }
}
