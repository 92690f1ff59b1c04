//! The daily category and brand lists at their worst. The catalog is shared,
//! so one tenant uploading, within the item limits, ever new category paths
//! (32 levels of 512 bytes) and brands must not make another tenant's plain
//! `GET /v1/categories` or `/v1/brands` grow with them: each list keeps at
//! most `VITRINA_SNAPSHOT_MAX_ENTRIES` entries and what fits in one answer
//! (`VITRINA_MAX_RESPONSE_MB`), those with the most products first, and an
//! answer that leaves entries out says `X-Result-Truncated: true`. Small
//! limits keep these tests quick.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use entity::{Marketplace, category_snapshot};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter, Statement,
    TransactionTrait,
};
use serde_json::{Value, json};
use vitrina::config::{ListConfig, Settings, SizeConfig};

use crate::fixtures::{insert_brand_snapshot, insert_category_snapshot};
use crate::helpers::graphql::post_response;
use crate::helpers::uploads::{item, send, with};
use crate::helpers::{TestApp, header, test_start};

/// Response limit of these tests, MiB, and the per-product limit that lets
/// a page of 100 products fit in it; a product with a category path and a
/// brand at their item limits, escaped, is within it.
const RESPONSE_MB: u64 = 3;
const PRODUCT_KB: u64 = 24;
/// Entries a snapshot list keeps here: more than the worst paths that fit
/// in an answer, fewer than the brands uploaded, so that the bytes cut one
/// list and the entries the other.
const MAX_ENTRIES: u64 = 160;
/// Items the hostile tenant uploads; the last few repeat earlier paths and
/// brands, so that counts differ.
const HOSTILE: usize = 200;
const REPEATED_PATHS: usize = 20;
const REPEATED_BRANDS: usize = 10;

fn budget() -> usize {
    (RESPONSE_MB * 1024 * 1024) as usize
}

async fn app_with(max_entries: u64) -> (TestApp, String) {
    let app = TestApp::spawn_with_settings(Settings {
        sizes: SizeConfig {
            max_product_kb: PRODUCT_KB,
            max_response_mb: RESPONSE_MB,
        },
        lists: ListConfig {
            snapshot_max_entries: max_entries,
            ..ListConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = app.key("victim").await;
    (app, key)
}

/// A text of exactly `bytes` bytes, starting with `key` (which orders it),
/// that JSON writes longer: Cyrillic, then `"`s, each escaped as `\"`.
fn long_text(key: &str, bytes: usize) -> String {
    let mut text = format!("{key}-");
    while text.len() + 2 <= bytes * 3 / 4 {
        text.push('ж');
    }
    while text.len() < bytes {
        text.push('"');
    }
    text
}

/// The path of hostile item `n`: 32 levels of 512 bytes, in an order
/// unlike the upload's.
fn hostile_path(n: usize) -> Vec<String> {
    let key = n * 7919 % 1000;
    (0..32)
        .map(|level| long_text(&format!("{key:03}-{level:02}"), 512))
        .collect()
}

fn hostile_brand(n: usize) -> String {
    long_text(&format!("{:03}", n * 7919 % 1000), 512)
}

/// Uploads the victim's kettles (3 on ozon, 1 on wildberries) and, from
/// another account, the hostile items on ozon; merges them and makes
/// today's snapshot. Returns the category and brand counts uploaded.
async fn upload_and_snapshot(app: &TestApp, key: &str) -> Counts {
    let kettles: Vec<Value> = (0..3).map(|n| item(&format!("kettle-{n}"))).collect();
    send(app, key, kettles).await;
    let wildberries = with(item("kettle-wb"), &["marketplace"], json!("wildberries"));
    send(
        app,
        key,
        vec![with(wildberries, &["seller", "id"], json!("s-wb"))],
    )
    .await;

    let hostile_key = app.key("hostile").await;
    let items: Vec<Value> = (0..HOSTILE)
        .map(|n| {
            let path = hostile_path(n % (HOSTILE - REPEATED_PATHS));
            let brand = hostile_brand(n % (HOSTILE - REPEATED_BRANDS));
            let hostile = with(item(&format!("h-{n}")), &["category_path"], json!(path));
            with(hostile, &["brand"], json!(brand))
        })
        .collect();
    send(app, &hostile_key, items).await;
    let report = app.jobs().tick().await.expect("tick");
    assert_eq!(report.merge.merged, 4 + HOSTILE as u64, "{report}");
    assert!(report.snapshot_made);

    let mut counts = Counts::default();
    let kettle_path = vec!["Бытовая техника".to_owned(), "Чайники".to_owned()];
    *counts.paths.entry(kettle_path).or_default() += 3;
    *counts.brands.entry("Redmond".to_owned()).or_default() += 3;
    for n in 0..HOSTILE {
        *counts
            .paths
            .entry(hostile_path(n % (HOSTILE - REPEATED_PATHS)))
            .or_default() += 1;
        *counts
            .brands
            .entry(hostile_brand(n % (HOSTILE - REPEATED_BRANDS)))
            .or_default() += 1;
    }
    counts
}

/// Products per category path and per brand, on ozon.
#[derive(Default)]
struct Counts {
    paths: BTreeMap<Vec<String>, i64>,
    brands: BTreeMap<String, i64>,
}

/// The whole list in its documented order: product_count desc, then the
/// path (element by element) or brand, by bytes.
fn documented<K: Ord + Clone>(counts: &BTreeMap<K, i64>) -> Vec<(K, i64)> {
    let mut list: Vec<(K, i64)> = counts.iter().map(|(k, n)| (k.clone(), *n)).collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    list
}

/// A GET answer: its truncation header, its length and its entries.
struct Listed {
    truncated: Option<String>,
    bytes: usize,
    data: Vec<Value>,
}

async fn list(app: &TestApp, key: &str, path: &str) -> Listed {
    let response = app.get_as(key, path).await;
    assert_eq!(response.status(), 200, "{path}");
    let truncated = header(&response, "x-result-truncated").map(str::to_owned);
    let body = response.bytes().await.unwrap();
    let json: Value = serde_json::from_slice(&body).unwrap();
    Listed {
        truncated,
        bytes: body.len(),
        data: json["data"].as_array().unwrap().clone(),
    }
}

/// `answer` is the start of `whole` (entries as JSON), as long as the
/// entry limit and the budget allow: the next entry would pass one of them.
fn assert_start_within_bounds(answer: &Listed, whole: &[Value], what: &str) {
    let shown = answer.data.len();
    assert!(shown < whole.len(), "{what}: the worst case is cut");
    assert_eq!(answer.data, whole[..shown], "{what}: the start, in order");
    assert!(answer.bytes <= budget(), "{what}: {} bytes", answer.bytes);
    assert!(shown as u64 <= MAX_ENTRIES, "{what}: {shown} entries");
    // The service counts a comma after every entry, one more than it writes.
    let next = serde_json::to_vec(&whole[shown]).unwrap().len();
    assert!(
        shown as u64 == MAX_ENTRIES || answer.bytes + next + 2 > budget(),
        "{what}: stopped at {shown} entries and {} bytes with room for the next",
        answer.bytes
    );
    assert_eq!(answer.truncated.as_deref(), Some("true"), "{what}");
}

#[tokio::test]
async fn a_tenant_uploading_ever_new_paths_and_brands_cannot_grow_another_tenants_lists() {
    let (app, key) = app_with(MAX_ENTRIES).await;
    let counts = upload_and_snapshot(&app, &key).await;

    let categories: Vec<Value> = documented(&counts.paths)
        .into_iter()
        .map(|(path, n)| json!({ "category_path": path, "product_count": n }))
        .collect();
    let answer = list(&app, &key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(
        answer.data[0],
        json!({ "category_path": ["Бытовая техника", "Чайники"], "product_count": 3 }),
        "the most products first"
    );
    assert_start_within_bounds(&answer, &categories, "categories");
    assert!(
        (answer.data.len() as u64) < MAX_ENTRIES,
        "the paths are cut by the answer's bytes"
    );
    // The snapshot holds no more than is shown, and the row saying it was cut.
    let stored = category_snapshot::Entity::find()
        .filter(category_snapshot::Column::Marketplace.eq(Marketplace::Ozon))
        .count(&app.db)
        .await
        .unwrap();
    assert_eq!(stored, answer.data.len() as u64 + 1);

    let brands: Vec<Value> = documented(&counts.brands)
        .into_iter()
        .map(|(brand, n)| json!({ "brand": brand, "product_count": n }))
        .collect();
    let ozon = list(&app, &key, "/v1/brands?marketplace=ozon").await;
    assert_start_within_bounds(&ozon, &brands, "ozon brands");
    assert_eq!(
        ozon.data.len() as u64,
        MAX_ENTRIES,
        "the brands are cut by the entry limit"
    );
    let mut across = brands.clone();
    across[0]["product_count"] = json!(4);
    assert_eq!(across[0]["brand"], "Redmond");
    let all = list(&app, &key, "/v1/brands").await;
    assert_start_within_bounds(&all, &across, "brands of all marketplaces");

    // A list with nothing left out says so.
    let whole = list(&app, &key, "/v1/categories?marketplace=wildberries").await;
    assert_eq!(whole.truncated.as_deref(), Some("false"));
    assert_eq!(
        whole.data,
        [json!({ "category_path": ["Бытовая техника", "Чайники"], "product_count": 1 })]
    );

    // GraphQL shows the same start and says it was cut.
    let query = "{ categories(marketplace: OZON) { category_path: categoryPath product_count: productCount } }";
    let response = post_response(&app, &key, query).await;
    assert_eq!(header(&response, "x-result-truncated"), Some("true"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["data"]["categories"].as_array().unwrap(),
        &answer.data,
        "{}",
        body["errors"]
    );
}

#[tokio::test]
async fn a_snapshot_is_read_within_the_current_entry_limit_in_order() {
    // Without the row that says a list was cut: as a snapshot made with a
    // larger limit than today's, or before there was one.
    const STORED: usize = 30;
    let day = test_start().date_naive();
    let entries: Vec<(String, i64)> = (0..STORED)
        .map(|n| (format!("{:02}", n * 7 % 30), (n % 4) as i64 + 1))
        .collect();
    let paths: BTreeMap<Vec<String>, i64> = entries
        .iter()
        .map(|(name, n)| (vec![name.clone(), "x".to_owned()], *n))
        .collect();
    let brands: BTreeMap<String, i64> = entries.iter().cloned().collect();
    let categories: Vec<Value> = documented(&paths)
        .into_iter()
        .map(|(path, n)| json!({ "category_path": path, "product_count": n }))
        .collect();
    let brands: Vec<Value> = documented(&brands)
        .into_iter()
        .map(|(brand, n)| json!({ "brand": brand, "product_count": n }))
        .collect();

    // Stored in order, as the snapshot job stores a list: the first 10.
    let (app, key) = app_with(10).await;
    for entry in &categories {
        let path: Vec<&str> = entry["category_path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|level| level.as_str().unwrap())
            .collect();
        let count = entry["product_count"].as_i64().unwrap();
        insert_category_snapshot(&app.db, day, Marketplace::Ozon, &path, count).await;
    }
    for entry in &brands {
        let (brand, count) = (
            entry["brand"].as_str().unwrap(),
            entry["product_count"].as_i64(),
        );
        insert_brand_snapshot(&app.db, day, None, brand, count.unwrap()).await;
    }
    let cut = list(&app, &key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(cut.truncated.as_deref(), Some("true"));
    assert_eq!(cut.data, categories[..10]);
    let cut = list(&app, &key, "/v1/brands").await;
    assert_eq!(cut.truncated.as_deref(), Some("true"));
    assert_eq!(cut.data, brands[..10]);

    // Stored in no order, with ties, and room for every entry: all of
    // them, in order, nothing cut.
    let (roomy, key) = app_with(STORED as u64).await;
    for (name, count) in entries.iter().rev() {
        let path = [name.as_str(), "x"];
        insert_category_snapshot(&roomy.db, day, Marketplace::Ozon, &path, *count).await;
    }
    let whole = list(&roomy, &key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(whole.truncated.as_deref(), Some("false"));
    assert_eq!(whole.data, categories);
}

#[tokio::test]
async fn the_largest_entry_limits_that_can_be_set_still_read() {
    let app = TestApp::spawn_with_settings(Settings {
        lists: ListConfig {
            snapshot_max_entries: u64::MAX,
            max_sellers_per_lookup: u64::MAX,
            products_page_window: u64::MAX,
            ..ListConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    send(&app, &key, vec![item("1")]).await;
    app.jobs().tick().await.expect("tick");
    for path in [
        "/v1/categories?marketplace=ozon",
        "/v1/brands",
        "/v1/sellers?tin=7701234567",
    ] {
        let answer = list(&app, &key, path).await;
        assert_eq!(answer.data.len(), 1, "{path}");
        assert_eq!(answer.truncated.as_deref(), Some("false"), "{path}");
    }
}

/// A snapshot reads its lists before it takes the write lock. SQLite has
/// one writer at a time, and at 1,000,000 products the lists take seconds
/// to read: read under the lock, they made every upload, merge and quota
/// charge of that time wait, and fail. Here another transaction holds the
/// lock the snapshot's writes need (SQLite: a write transaction;
/// PostgreSQL: the snapshot table's) while the snapshot runs: every list
/// is read meanwhile, and the snapshot is written once the lock is let go.
#[tokio::test]
async fn a_snapshot_reads_its_lists_before_it_takes_the_write_lock() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send(&app, &key, vec![item("1"), item("2")]).await;
    app.jobs().tick().await.expect("tick");
    let day = test_start().date_naive() + chrono::Days::new(1);
    let lists = Marketplace::ALL.len() * 2 + 1;
    let reads = |from| {
        app.statement_texts(from)
            .iter()
            .filter(|s| s.contains("FROM \"products\"") && s.contains("GROUP BY"))
            .count()
    };

    let holder = vitrina::db::begin_write(&app.db).await.unwrap();
    if app.db.get_database_backend() == DbBackend::Postgres {
        holder
            .execute_unprepared("LOCK TABLE category_snapshots IN EXCLUSIVE MODE")
            .await
            .unwrap();
    }
    let from = app.statements();
    let db = app.db.clone();
    let snapshot = tokio::spawn(async move { vitrina::jobs::snapshots::compute(&db, day).await });
    let deadline = Instant::now() + Duration::from_secs(2);
    while reads(from) < lists && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        reads(from),
        lists,
        "every list is read while the lock is held"
    );
    assert!(!snapshot.is_finished(), "the snapshot waits for the lock");
    holder.rollback().await.unwrap();
    snapshot.await.unwrap().expect("the snapshot");

    let written = category_snapshot::Entity::find()
        .filter(category_snapshot::Column::SnapshotDate.eq(day))
        .count(&app.db)
        .await
        .unwrap();
    assert!(written > 0, "the snapshot is written");
}

/// A day's snapshot is replaced whole: its old rows are deleted and the
/// new ones written in one transaction, so a reader sees the old lists or
/// the new ones, never a day with some of its lists gone. Here the
/// snapshot is held between its two deletes (PostgreSQL: another
/// transaction holds the brand list's table), and the day's category
/// list still reads as it was.
#[tokio::test]
async fn a_snapshot_being_replaced_reads_whole() {
    let app = TestApp::spawn().await;
    if app.db.get_database_backend() != DbBackend::Postgres {
        return; // SQLite: one writer, and readers see only what it committed.
    }
    let key = app.key("acme").await;
    send(&app, &key, vec![item("1"), item("2")]).await;
    app.jobs().tick().await.expect("tick");
    let day = test_start().date_naive() + chrono::Days::new(1);
    let categories = || async {
        category_snapshot::Entity::find()
            .filter(category_snapshot::Column::SnapshotDate.eq(day))
            .count(&app.db)
            .await
            .unwrap()
    };
    vitrina::jobs::snapshots::compute(&app.db, day)
        .await
        .unwrap();
    let written = categories().await;
    assert!(written > 0, "the first snapshot is written");

    let holder = app.db.begin().await.unwrap();
    holder
        .execute_unprepared("LOCK TABLE brand_snapshots IN EXCLUSIVE MODE")
        .await
        .unwrap();
    // Its own connection waits for the lock longer than the test takes.
    let mut config = app.database_config();
    config.db_wait_ms = 60_000;
    let db = vitrina::db::connect(&config).await.unwrap();
    let snapshot = tokio::spawn(async move { vitrina::jobs::snapshots::compute(&db, day).await });
    let waiting = "SELECT count(*) FROM pg_locks \
                   WHERE relation = 'brand_snapshots'::regclass AND NOT granted";
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let row = app
            .db
            .query_one_raw(Statement::from_string(DbBackend::Postgres, waiting))
            .await
            .unwrap()
            .unwrap();
        if row.try_get_by_index::<i64>(0).unwrap() > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the snapshot reaches its brands");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(categories().await, written, "the old lists read whole");
    holder.rollback().await.unwrap();
    snapshot.await.unwrap().expect("the snapshot");
    assert_eq!(categories().await, written, "the new lists are written");
}
