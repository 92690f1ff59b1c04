//! Hostile costs: counts, substring and price filters are costed by the rows they
//! may read before anything runs, and one request (one account) never holds
//! more than its share of the connection pool. So the worst document a key
//! can still get accepted, sent in a loop, leaves another key's requests
//! near their quiet latency; and a hundred aliased counts are refused
//! whole. On both databases.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use entity::product;
use sea_orm::{ConnectionTrait, DbBackend, EntityTrait, Iterable, PaginatorTrait};
use serde_json::{Value, json};
use vitrina::config::Settings;
use vitrina::limits::Limits;

use crate::fixtures::{self, insert_product, insert_seller, product};
use crate::helpers::graphql::{data, demo_app, only_error_code, post};
use crate::helpers::{TestApp, uncached};

/// The default complexity limit.
const LIMIT: u64 = 10_000;
/// What a count of the products costs when the kept counts answer it (no
/// filter, a marketplace, a trust status), and when it counts up to the
/// default bound of 10,000; and what a substring filter costs on top on a
/// catalog under 100,000 products.
const KEPT: u64 = 1;
const BOUNDED: u64 = 1 + 10;
const SUBSTRING: u64 = 10 * 100;
/// What a price filter costs on top, on such a catalog.
const PRICE_FILTER: u64 = 100;

/// Substrings too short for PostgreSQL's trigram index, found in most
/// names: each count reads every product's names.
const PARTS: [&str; 8] = ["а", "о", "е", "и", "н", "т", "р", "с"];

/// `n` aliased counts of products, each with a substring filter.
fn substring_counts(n: usize) -> String {
    let counts: String = (0..n)
        .map(|i| {
            let part = PARTS[i % PARTS.len()];
            format!("c{i}: products(first: 0, filter: {{ nameContains: \"{part}\" }}) {{ totalCount }}\n")
        })
        .collect();
    format!("{{\n{counts}}}")
}

/// `n` aliased counts of products of one marketplace.
fn marketplace_counts(n: usize) -> String {
    let counts: String = (0..n)
        .map(|i| {
            format!("c{i}: products(first: 0, filter: {{ marketplace: OZON }}) {{ totalCount }}\n")
        })
        .collect();
    format!("{{\n{counts}}}")
}

/// The complexity of an accepted `query`, as the response reports it.
async fn complexity(app: &TestApp, key: &str, query: &str) -> u64 {
    let (status, body) = post(app, Some(key), query, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("errors").is_none(), "{query}\n{body}");
    body["extensions"]["analyzer"]["complexity"]
        .as_u64()
        .expect("a complexity")
}

/// The message of the one QUERY_TOO_COMPLEX error refusing `query`.
async fn refusal(app: &TestApp, key: &str, query: &str) -> String {
    let (status, body) = post(app, Some(key), query, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(only_error_code(&body), "QUERY_TOO_COMPLEX", "{body}");
    assert!(body.get("data").is_none(), "nothing ran: {body}");
    body["errors"][0]["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_hundred_aliased_counts_are_refused_before_they_run_naming_the_limit_and_their_cost() {
    let (app, key) = demo_app(50).await;
    data(&app, &key, "{ __typename }", json!({})).await;
    // Each alias: its page (0 rows) 1, its count, and its substring.
    let cost = 100 * (1 + BOUNDED + SUBSTRING);
    let before = app.statements();
    let message = refusal(&app, &key, &substring_counts(100)).await;
    assert_eq!(
        message,
        format!(
            "The query's complexity is {cost} (each field 1, a connection's fields times \
             its page size); the limit is {LIMIT} (VITRINA_GRAPHQL_MAX_COMPLEXITY)."
        )
    );
    assert_eq!(
        app.statements_reading(before, "products"),
        Vec::<String>::new()
    );
    // A hundred counts of a marketplace are a hundred sums of kept counts:
    // cheap, and not one of them counts products.
    let before = app.statements();
    let query = marketplace_counts(100);
    assert_eq!(complexity(&app, &key, &query).await, 100 * (1 + KEPT));
    let counting = app.statement_texts(before).into_iter();
    assert_eq!(counting.filter(|s| s.contains("COUNT(")).count(), 0);
}

#[tokio::test]
async fn a_count_is_costed_once_per_list_whatever_its_page_size_and_its_scans_on_top() {
    let (app, key) = demo_app(50).await;
    let count = "query($n: Int) { products(first: $n) { totalCount } }";
    for n in [0, 1, 100, 500] {
        let (_, body) = post(&app, Some(&key), count, json!({ "n": n })).await;
        assert_eq!(body["extensions"]["analyzer"]["complexity"], 1 + KEPT);
    }
    // A page of 20 ids (edges, node, id: 3 each), its count once.
    let page = "{ products(first: 20) { totalCount edges { node { id } } } }";
    assert_eq!(complexity(&app, &key, page).await, 20 * 3 + 1 + KEPT);
    let branded = "{ products(first: 20, filter: { brand: \"Samsung\" }) { totalCount edges { node { id } } } }";
    assert_eq!(complexity(&app, &key, branded).await, 20 * 3 + 1 + KEPT);
    let coded = "{ products(first: 20, filter: { sellerCode: \"S-1\" }) { totalCount edges { node { id } } } }";
    assert_eq!(complexity(&app, &key, coded).await, 20 * 3 + 1 + BOUNDED);
    let substring =
        "{ products(first: 20, filter: { sellerCodeContains: \"sc\" }) { edges { node { id } } } }";
    assert_eq!(
        complexity(&app, &key, substring).await,
        20 * 3 + 1 + SUBSTRING
    );
    let priced = "{ products(first: 20, filter: { currency: \"RUB\", priceMax: 500 }) { totalCount edges { node { id } } } }";
    assert_eq!(
        complexity(&app, &key, priced).await,
        20 * 3 + 1 + BOUNDED + PRICE_FILTER
    );
    let both = "{ products(first: 20, filter: { inStock: true, nameContains: \"x\" }) { edges { node { id } } } }";
    assert_eq!(
        complexity(&app, &key, both).await,
        20 * 3 + 1 + SUBSTRING + PRICE_FILTER
    );
    // Each alias of a count runs its own.
    let twice =
        "{ products(first: 0, filter: { sellerCode: \"S-1\" }) { a: totalCount b: totalCount } }";
    assert_eq!(complexity(&app, &key, twice).await, 1 + 2 * BOUNDED);
}

/// Adds `n` copies of the product `template` (new ids and external ids),
/// in one statement.
async fn copies(app: &TestApp, template: &str, n: u64) {
    let backend = app.db.get_database_backend();
    let columns: Vec<String> = product::Column::iter()
        .map(|c| sea_orm::IdenStatic::as_str(&c).to_owned())
        .collect();
    let values: Vec<String> = columns
        .iter()
        .map(|column| match (column.as_str(), backend) {
            ("id", DbBackend::Postgres) => "gen_random_uuid()".into(),
            ("id", _) => "randomblob(16)".into(),
            ("external_id", _) => "'copy-' || n.i".into(),
            (other, _) => format!("p.{other}"),
        })
        .collect();
    let (with, series) = match backend {
        DbBackend::Postgres => (String::new(), format!("generate_series(1, {n}) AS n(i)")),
        _ => (
            format!(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n}) "
            ),
            "n".into(),
        ),
    };
    let sql = format!(
        "{with}INSERT INTO products ({}) SELECT {} FROM {series}, products p WHERE p.external_id = '{template}'",
        columns.join(", "),
        values.join(", ")
    );
    app.db.execute_unprepared(&sql).await.expect("copies");
    if backend == DbBackend::Postgres {
        // The planner's estimate, as autovacuum would make it in time.
        app.db
            .execute_unprepared("VACUUM ANALYZE products")
            .await
            .expect("analyze");
    }
}

#[tokio::test]
async fn a_count_costs_the_same_on_any_catalog_and_a_substring_grows_with_it() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(entity::Marketplace::Ozon, "1")).await;
    insert_product(&app.db, &shop, product("template")).await;
    copies(&app, "template", 150_000).await;
    let products = product::Entity::find().count(&app.db).await.unwrap();
    assert_eq!(products, 150_001);

    let count = "{ products(first: 0) { totalCount totalCountIsExact } }";
    let (status, body) = post(&app, Some(&key), count, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["products"],
        json!({ "totalCount": products, "totalCountIsExact": true })
    );
    assert_eq!(body["extensions"]["analyzer"]["complexity"], 1 + 2 * KEPT);
    let branded = "{ products(first: 0, filter: { brand: \"x\" }) { totalCount } }";
    assert_eq!(complexity(&app, &key, branded).await, 1 + KEPT);
    let coded = "{ products(first: 0, filter: { sellerCode: \"x\" }) { totalCount } }";
    assert_eq!(complexity(&app, &key, coded).await, 1 + BOUNDED);
    // The substring: 10 points per 1,000 products past the floor, 1,500.
    let substring = "{ products(first: 0, filter: { nameContains: \"x\" }) { totalCount } }";
    assert_eq!(
        complexity(&app, &key, substring).await,
        1 + BOUNDED + 10 * (products / 1_000)
    );
}

/// A request sent from a task of its own: the status and body.
async fn send(client: &reqwest::Client, url: &str, key: &str, query: &str) -> (u16, Value) {
    let response = client
        .post(url)
        .bearer_auth(key)
        .json(&json!({ "query": query }))
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

/// The times of `runs` requests of `query`, one after another.
async fn latencies(app: &TestApp, key: &str, query: &str, runs: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let (status, body) = send(&app.client, &app.url("/graphql"), key, query).await;
        times.push(started.elapsed());
        assert_eq!(status, 200, "{body}");
        assert!(body.get("errors").is_none(), "{body}");
    }
    times
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// A demo catalog served without the database-time budget: the tests that
/// loop the worst document measure the pool shares alone, and the budget
/// (tests/it/db_time.rs) would refuse such a loop once it spent its burst,
/// which never drains on the test clock: it does not move here.
async fn loop_app(products: u64) -> (TestApp, String) {
    let limits = Limits {
        db_time_per_minute_ms: 0,
        ..Limits::default()
    };
    // Uncached: a hostile client varies what it sends until each request
    // runs, which the loops here do by sending the same one to a server
    // without the response cache.
    let settings = uncached(Settings {
        limits,
        ..Settings::default()
    });
    TestApp::demo_on(settings, products, 7).await
}

/// A key's requests sent in a loop while `loud`, until `stop`.
#[derive(Default)]
struct Noise {
    loud: AtomicBool,
    /// A request is on its way (or about to be).
    busy: AtomicBool,
    stop: AtomicBool,
    sent: AtomicUsize,
}

impl Noise {
    fn start(app: &TestApp, key: &str, query: String) -> (Arc<Noise>, tokio::task::JoinHandle<()>) {
        let noise = Arc::new(Noise::default());
        let (client, url, key) = (app.client.clone(), app.url("/graphql"), key.to_owned());
        let looping = noise.clone();
        let task = tokio::spawn(async move {
            while !looping.stop.load(Ordering::SeqCst) {
                looping.busy.store(true, Ordering::SeqCst);
                if !looping.loud.load(Ordering::SeqCst) {
                    looping.busy.store(false, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                let (status, body) = send(&client, &url, &key, &query).await;
                assert_eq!(status, 200, "{body}");
                assert!(body.get("errors").is_none(), "{body}");
                looping.sent.fetch_add(1, Ordering::SeqCst);
                looping.busy.store(false, Ordering::SeqCst);
            }
        });
        (noise, task)
    }

    /// Makes it send, once `more` of its requests have been answered.
    async fn loud(&self, more: usize) {
        let sent = self.sent.load(Ordering::SeqCst);
        self.loud.store(true, Ordering::SeqCst);
        while self.sent.load(Ordering::SeqCst) < sent + more {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Makes it stop sending, once its request on the way is answered.
    async fn quiet(&self) {
        self.loud.store(false, Ordering::SeqCst);
        while self.busy.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// What the other key asks: a dashboard's page of products with sellers
/// and prices.
const QUIET: &str = "{ products(first: 20) { edges { node { id name seller { name } prices { price currency } } } } }";

// On several worker threads, as in production: the noisy requests and the
// quiet ones run at the same time for real.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worst_accepted_document_of_one_key_leaves_anothers_requests_near_their_quiet_latency()
{
    let (app, quiet_key) = loop_app(10_000).await;
    let noisy_key = app.key("noisy").await;

    // The worst document the noisy key can still get accepted: as many
    // aliased substring counts as the complexity (and aliases) allow.
    let one = complexity(&app, &noisy_key, &substring_counts(1)).await;
    let n = usize::try_from(LIMIT / one).unwrap().min(100);
    let worst = substring_counts(n);
    assert!(complexity(&app, &noisy_key, &worst).await <= LIMIT);
    if n < 100 {
        refusal(&app, &noisy_key, &substring_counts(n + 1)).await;
    }
    latencies(&app, &quiet_key, QUIET, 3).await;

    // The other key's latency with the noisy key quiet and sending in turn,
    // three times each, so that a change of the machine's load between
    // them weighs on both alike.
    let (noise, task) = Noise::start(&app, &noisy_key, worst);
    let (mut quiet, mut loaded, mut most) = (Vec::new(), Vec::new(), 0);
    for _ in 0..3 {
        noise.quiet().await;
        quiet.extend(latencies(&app, &quiet_key, QUIET, 5).await);
        let from = app.statements();
        noise.loud(2).await;
        // What the noisy requests alone ran at once.
        let held = app.most_at_once_reading(from..app.statements(), "products");
        most = most.max(held);
        loaded.extend(latencies(&app, &quiet_key, QUIET, 5).await);
    }
    noise.stop.store(true, Ordering::SeqCst);
    task.await.expect("the noisy loop");

    // The test's pool has 8 connections: a request's share is 2.
    assert_eq!(
        most, 2,
        "the noisy requests held {most} connections at once"
    );
    let (quiet, loaded) = (median(quiet), median(loaded));
    let ratio = loaded.as_secs_f64() / quiet.as_secs_f64();
    assert!(
        ratio <= 5.0,
        "quiet {quiet:?}, under load {loaded:?} ({ratio:.1} times), with {n} counts a request"
    );
}

/// The text of the Python triple-quoted string that follows `assigned`
/// (`NAME =`, or more of the assignment) at the start of a line of `source`.
fn python_string<'a>(source: &'a str, assigned: &str) -> &'a str {
    let start = source
        .find(&format!("\n{assigned}"))
        .unwrap_or_else(|| panic!("{assigned} in cases.py"));
    let rest = &source[start..];
    let open = rest.find("\"\"\"").expect("opening quotes") + 3;
    let close = rest[open..].find("\"\"\"").expect("closing quotes");
    &rest[open..open + close]
}

/// The demo dashboard's queries (every `/* GraphQL */` document of
/// `web/dashboard/queries.js` but its subscription), each with the variables
/// the page sends, `product` being one of the products it lists.
fn dashboard_queries(product: &str) -> Vec<(&'static str, Value)> {
    let source = include_str!("../../web/dashboard/queries.js");
    let filter = json!({ "brand": "Samsung", "currency": "RUB" });
    source
        .split("/* GraphQL */ `")
        .skip(1)
        .map(|rest| &rest[..rest.find('`').expect("a closing backquote")])
        .filter(|document| !document.trim_start().starts_with("subscription"))
        .map(|document| {
            let name = document
                .split_whitespace()
                .nth(1)
                .expect("a named operation");
            let name = name.split('(').next().unwrap_or(name);
            let variables = match name {
                "DashboardChoices" => json!({}),
                "DashboardCatalog" => json!({
                    "filter": filter, "currency": "RUB", "first": 20,
                    "order": { "field": "PRICE", "direction": "ASC" },
                }),
                "DashboardDrops" => {
                    json!({ "filter": filter, "currency": "RUB", "since": "2026-10-25T09:00:00Z" })
                }
                "DashboardSeries" => json!({ "id": product, "currency": "RUB", "bucket": "DAY" }),
                other => panic!("no variables for the dashboard's {other}: add them here"),
            };
            (document, variables)
        })
        .collect()
}

#[tokio::test]
async fn the_dashboards_and_benchmark_queries_pass_the_limits() {
    let (app, key) = demo_app(200).await;
    let (_, listed) = post(
        &app,
        Some(&key),
        r#"{ products(first: 1, filter: { brand: "Samsung", currency: "RUB" }) { nodes { id } } }"#,
        json!({}),
    )
    .await;
    let product = listed["data"]["products"]["nodes"][0]["id"]
        .as_str()
        .unwrap();
    let dashboard: Vec<(&str, Value)> = dashboard_queries(product);
    assert_eq!(dashboard.len(), 4, "the dashboard's queries");
    let cases = include_str!("../../bench/harness/cases.py");
    let full = python_string(cases, "FULL =");
    let page = format!("{full}{}", python_string(cases, "PAGE_QUERY = FULL +"));
    let others = [
        (vitrina::web::graphiql::EXAMPLE_QUERY, json!({})),
        (
            python_string(cases, "DASHBOARD ="),
            json!({ "brand": "Samsung", "n": 100 }),
        ),
        (&page, json!({ "n": 100 })),
        (
            python_string(cases, "VITRINA_WALK ="),
            json!({ "first": 500 }),
        ),
        ("{ products { totalCount } }", json!({})),
    ];
    for (query, variables) in dashboard.into_iter().chain(others) {
        let (status, body) = post(&app, Some(&key), query, variables).await;
        assert_eq!(status, 200, "{query}\n{body}");
        assert!(body.get("errors").is_none(), "{query}\n{body}");
        let complexity = body["extensions"]["analyzer"]["complexity"]
            .as_u64()
            .unwrap();
        assert!(complexity <= LIMIT, "{complexity}: {query}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_accounts_requests_together_hold_no_more_than_its_share_of_the_pool() {
    let (app, key) = loop_app(2_000).await;
    let worst = substring_counts(9);
    // Three loops of the worst document, each request's share 2: the
    // account's share, 4, holds them to half the pool of 8.
    let loops: Vec<_> = (0..3)
        .map(|_| Noise::start(&app, &key, worst.clone()))
        .collect();
    let from = app.statements();
    // On a busy machine the loops may overlap less than the share in a
    // round: they go on until it is reached (20 rounds at most), and every
    // statement since the first round counts, so the share is never passed.
    let mut most = 0;
    for _ in 0..20 {
        futures_util::future::join_all(loops.iter().map(|(noise, _)| noise.loud(3))).await;
        most = app.most_at_once_reading(from..app.statements(), "products");
        if most >= 4 {
            break;
        }
    }
    for (noise, task) in loops {
        noise.stop.store(true, Ordering::SeqCst);
        task.await.expect("a noisy loop");
    }
    assert_eq!(
        most, 4,
        "the account's requests held {most} connections at once"
    );
}
