//! Sizes at their worst. The catalog is shared, so one tenant's uploads,
//! each within the item limits, must not make another tenant's plain
//! request enormous: a product's v1 JSON stays within the per-product limit
//! (the merge rejects what would pass it, an upload what alone would), and
//! an answer within the response limit, however large the products stored
//! before those limits are (a page of them is refused before their
//! documents are read). Small limits keep these tests quick and the bounds
//! tight.

use std::time::Duration;

use chrono::TimeDelta;
use entity::{
    Marketplace, StringList, SubmissionStatus, TrustStatus, UserAuthStatus, current_price, product,
    product_translation, special_price,
};
use sea_orm::{ActiveValue::Set, DatabaseConnection, EntityTrait, IntoActiveModel, NotSet};
use serde_json::{Map, Value, json};
use uuid::Uuid;
use vitrina::config::{Settings, SizeConfig};
use vitrina::jobs::merge::item_limits;

use crate::fixtures::{insert_seller, seller};
use crate::helpers::cli::{assert_clean_failure, stderr, vitrina_alongside};
use crate::helpers::graphql::post;
use crate::helpers::uploads::{item, send, submissions, upload, with};
use crate::helpers::{TestApp, TestDb, create_key, migrate_down_through, test_start};
use crate::serve::Serve;
use crate::ws;

/// The migration that measures products; legacy rows are written before it.
const STORED_SIZE: &str = "m20261128_000019_product_stored_size";

/// Per-product limit of these tests, KiB.
const PRODUCT_KB: u64 = 32;
/// Response limit of these tests, MiB: a page of 100 products of 32 KiB fits.
const RESPONSE_MB: u64 = 4;

fn sizes(product_kb: u64, response_mb: u64) -> SizeConfig {
    SizeConfig {
        max_product_kb: product_kb,
        max_response_mb: response_mb,
    }
}

async fn app_with(sizes: SizeConfig) -> (TestApp, String) {
    let app = TestApp::spawn_with_settings(Settings {
        sizes,
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    (app, key)
}

/// A text of `bytes` bytes that JSON writes six times as long: control
/// characters, each escaped as `\u00XX`, with a `"` and a `\` now and then.
fn escaped(bytes: usize, seed: usize) -> String {
    (0..bytes)
        .map(|i| match (i + seed) % 7 {
            0 => '"',
            1 => '\\',
            n => char::from(n as u8),
        })
        .collect()
}

/// An item with every text and list at its item limit, the texts those JSON
/// writes longest.
fn every_limit_item(external_id: &str, language: &str) -> Value {
    let mut big = with(item(external_id), &["language"], json!(language));
    big["name"] = json!(escaped(item_limits::NAME, 0));
    big["brand"] = json!(escaped(item_limits::BRAND, 1));
    big["category_path"] = (0..item_limits::CATEGORY_LEVELS)
        .map(|i| json!(escaped(item_limits::CATEGORY_LEVEL, i)))
        .collect();
    big["attributes"] = (0..item_limits::ATTRIBUTES)
        .map(|i| {
            let key = format!("{i:03}{}", escaped(item_limits::ATTRIBUTE_KEY - 3, i));
            (key, json!(escaped(item_limits::ATTRIBUTE_VALUE / 8, i)))
        })
        .collect::<Map<_, _>>()
        .into();
    let gallery: Vec<String> = (0..item_limits::GALLERY)
        .map(|i| {
            format!(
                "https://img.example/{i}/{}",
                "x".repeat(item_limits::MEDIA_URL - 40)
            )
        })
        .collect();
    big["image_gallery"] = json!(gallery);
    big["video_gallery"] = json!(gallery);
    big["prices"] = (0..item_limits::PRICES)
        .map(|i| json!({ "country_code": "ru", "region_code": format!("r{i}"), "user_auth_status": "anonymous", "price": item_limits::MAX_NUMBER as f64, "old_price": 2.2250738585072014e-308, "currency": "RUB", "stock_status": escaped(item_limits::STOCK_STATUS, i) }))
        .collect();
    big
}

/// An item in `language` whose name, category path and attributes (what a
/// translation keeps) take about `bytes` bytes of JSON, written longest.
fn translated_item(external_id: &str, language: &str, bytes: usize, seed: usize) -> Value {
    let mut translated = with(item(external_id), &["language"], json!(language));
    translated["name"] = json!(escaped(bytes / 24, seed));
    translated["category_path"] = json!([escaped(bytes / 24, seed + 1)]);
    translated["attributes"] = json!({ "a": escaped(bytes / 8, seed + 2) });
    translated
}

/// Two-letter language codes from `aa` on (never `ru`, the default).
fn language(i: usize) -> String {
    let letter = |n: usize| char::from(b'a' + (n % 26) as u8);
    format!("{}{}", letter(i / 26), letter(i))
}

/// Every product's v1 JSON, as `GET /v1/products/{id}` answers it, is at
/// most `max` bytes and exactly the size the merge stored for it.
async fn assert_products_within(app: &TestApp, key: &str, max: u64) {
    for stored in product::Entity::find().all(&app.db).await.unwrap() {
        let answer = app
            .json_as(key, &format!("/v1/products/{}", stored.id))
            .await;
        let shown = serde_json::to_vec(&answer["data"]).unwrap().len() as u64;
        assert_eq!(shown as i64, stored.stored_size, "{}", stored.external_id);
        assert!(shown <= max, "{} takes {shown} bytes", stored.external_id);
    }
}

/// The bytes of JSON a rejection reason measured, checked to name the limit.
fn measured_over_the_limit(reason: &str, max: u64) -> u64 {
    let limit = format!("over the per-product limit of {max} bytes (VITRINA_MAX_PRODUCT_KB)");
    assert!(reason.contains(&limit), "{reason}");
    let measured = reason
        .split_whitespace()
        .find_map(|word| word.parse::<u64>().ok())
        .expect("the measured size");
    assert!(measured > max, "{reason}");
    measured
}

#[tokio::test]
async fn uploads_at_the_item_limits_end_at_most_at_the_product_limit() {
    let max = PRODUCT_KB * 1024;
    let (app, key) = app_with(sizes(PRODUCT_KB, RESPONSE_MB)).await;

    // An item with every list and text at its limit is refused at upload,
    // alone: its product would be over the limit before any merge.
    let refused = app
        .post_as(
            &key,
            "/extension/v1/scrapes",
            &upload(vec![item("0"), every_limit_item("1", "ru")]),
        )
        .await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("items[1] would make a product of at least "),
        "{message}"
    );
    measured_over_the_limit(message, max);

    // Over several sessions of two tenants, 40 languages of one product,
    // each item within the limit alone: the product grows to the limit, and
    // every submission that would take it over is rejected naming the limit
    // and the size it measured.
    let other = app.key("rival").await;
    send(&app, &key, vec![item("p")]).await;
    app.jobs().tick().await.unwrap();
    let mut rejected = 0;
    for round in 0..4 {
        let items: Vec<Value> = (0..10)
            .map(|i| {
                let n = round * 10 + i;
                translated_item("p", &language(n), 1_000 + n * 150, n)
            })
            .collect();
        let tenant = if round % 2 == 0 { &key } else { &other };
        let session = send(&app, tenant, items).await;
        app.jobs().tick().await.unwrap();
        for done in submissions(&app, session).await {
            if done.status == SubmissionStatus::Rejected {
                measured_over_the_limit(done.reason.as_deref().unwrap_or_default(), max);
                rejected += 1;
            }
        }
        assert_products_within(&app, &key, max).await;
    }
    assert!(rejected > 0, "40 languages of this size pass {max} bytes");

    // A rejected submission leaves the product as it was.
    let before = app.json_as(&key, "/v1/products?page_size=500").await;
    send(&app, &key, vec![translated_item("p", "zz", 6_000, 9)]).await;
    let report = app.jobs().tick().await.unwrap().merge;
    assert_eq!((report.merged, report.rejected), (0, 1));
    assert_eq!(
        app.json_as(&key, "/v1/products?page_size=500").await,
        before
    );

    // Prices of new variants grow a product too, in its own language.
    let variants = |from: usize| {
        let prices: Vec<Value> = (from..from + 40)
            .map(|i| {
                let country = format!("{i:04}{}", escaped(item_limits::COUNTRY_CODE - 4, i));
                let region = format!("{i:04}{}", escaped(item_limits::REGION_CODE / 4, i));
                json!({ "country_code": country, "region_code": region, "user_auth_status": "authenticated", "price": 1.0000000000000002, "currency": "RUB" })
            })
            .collect();
        with(item("q"), &["prices"], json!(prices))
    };
    for round in 0..6 {
        let session = send(&app, &other, vec![variants(round * 40)]).await;
        app.jobs().tick().await.unwrap();
        if let Some(reason) = &submissions(&app, session).await[0].reason {
            measured_over_the_limit(reason, max);
        }
        assert_products_within(&app, &key, max).await;
    }
    let q = product::Entity::find()
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.external_id == "q")
        .expect("product q");
    assert!(
        q.stored_size as u64 > max / 2,
        "the prices grew it: {}",
        q.stored_size
    );
}

/// Products as an older release stored them, before the per-product limit:
/// `count` of them of about `bytes` bytes each (attributes in the default
/// language and three translations), newest first from `newest`. Written at
/// the migration before `stored_size`, which then measures them.
async fn store_legacy(db: &DatabaseConnection, tag: &str, count: usize, bytes: usize) -> Vec<Uuid> {
    migrate_down_through(db, STORED_SIZE).await;
    let shop = insert_seller(db, seller(Marketplace::Ozon, &format!("legacy-{tag}"))).await;
    let attributes = |seed: usize| {
        let entries = (bytes / 4 / 1_000).max(1);
        (0..entries)
            .map(|i| (format!("k{i}"), json!(escaped(1_000 / 6, seed + i))))
            .collect::<Map<_, _>>()
    };
    let mut ids = Vec::new();
    for n in 0..count {
        let id = Uuid::new_v4();
        let mut row = product::Model {
            id,
            marketplace: Marketplace::Ozon,
            external_id: format!("{tag}-{n}"),
            url: format!("https://www.ozon.ru/product/{tag}-{n}"),
            name: format!("Наследие {tag} {n}"),
            brand: "Legacy".into(),
            brand_key: "legacy".into(),
            category_path: StringList(vec!["Старое".into()]),
            attributes: Value::Object(attributes(n)),
            image_cover: "https://img.example/legacy.webp".into(),
            image_gallery: StringList(vec![]),
            video_cover: None,
            video_gallery: StringList(vec![]),
            seller_ref: shop.id,
            seller_code: format!("L-{n}"),
            seller_code_key: format!("l-{n}"),
            name_search: format!("наследие {tag} {n}"),
            trust_status: TrustStatus::Unverified,
            price_flagged: false,
            stats: None,
            first_seen_language: "ru".into(),
            default_language: "ru".into(),
            first_seen_at: test_start() + TimeDelta::minutes(n as i64),
            last_seen_at: test_start() + TimeDelta::minutes(n as i64),
            stored_size: 0,
        }
        .into_active_model();
        // The column did not exist yet.
        row.stored_size = NotSet;
        product::Entity::insert(row)
            .exec_without_returning(db)
            .await
            .expect("insert a legacy product");
        for language in ["en", "kk", "de"] {
            product_translation::Entity::insert(product_translation::ActiveModel {
                product_id: Set(id),
                language: Set(language.into()),
                name: Set(format!("Legacy {n}")),
                category_path: Set(StringList(vec!["Old".into()])),
                attributes: Set(Value::Object(attributes(n + 1))),
                updated_at: Set(test_start()),
            })
            .exec_without_returning(db)
            .await
            .expect("insert a legacy translation");
        }
        // Prices written as long as JSON writes them: the longest numbers,
        // escaped codes, a nanosecond timestamp.
        for variant in 0..3 {
            current_price::Entity::insert(current_price::ActiveModel {
                id: NotSet,
                product_id: Set(id),
                country_code: Set(format!("{variant}{}", escaped(15, variant))),
                region_code: Set(Some(escaped(250, variant))),
                user_auth_status: Set(UserAuthStatus::Authenticated),
                price: Set(-1.7976931348623157e308),
                old_price: Set(2.2250738585072014e-308),
                currency: Set(escaped(16, variant)),
                stock_status: Set(Some(escaped(64, variant))),
                stock_quantity: Set(Some(i64::MIN)),
                recorded_at: Set(test_start() + TimeDelta::nanoseconds(123_456_789)),
            })
            .exec_without_returning(db)
            .await
            .expect("insert a legacy price");
            special_price::Entity::insert(special_price::ActiveModel {
                id: NotSet,
                product_id: Set(id),
                country_code: Set(format!("{variant}{}", escaped(15, variant))),
                region_code: Set(escaped(250, variant)),
                user_auth_status: Set(UserAuthStatus::Authenticated),
                min: Set(-1.7976931348623157e308),
                max: Set(1e-7),
            })
            .exec_without_returning(db)
            .await
            .expect("insert a legacy special price");
        }
        ids.push(id);
    }
    vitrina::db::migrate(db).await.expect("migrate up");
    ids
}

/// The error code of a refusal, REST's or GraphQL's.
fn refusal_code(body: &Value) -> String {
    body["error"]["code"]
        .as_str()
        .or(body["errors"][0]["extensions"]["code"].as_str())
        .unwrap_or_default()
        .to_lowercase()
}

#[tokio::test]
async fn legacy_products_over_the_limit_make_a_page_refused_not_huge() {
    let app = TestApp::spawn_with_settings(Settings {
        sizes: sizes(4, 1),
        ..Settings::default()
    })
    .await;
    // Before anything reads products, so no statement is prepared against
    // the table as it was.
    let huge = store_legacy(&app.db, "huge", 3, 2 << 20).await;
    let small = store_legacy(&app.db, "small", 2, 8 << 10).await;
    let key = app.key("acme").await;

    // The migration's bound holds every legacy product's JSON.
    for id in huge.iter().chain(&small) {
        let stored = product::Entity::find_by_id(*id)
            .one(&app.db)
            .await
            .unwrap()
            .unwrap();
        let shown = app.get_as(&key, &format!("/v1/products/{id}")).await;
        if shown.status() == 200 {
            let answer: Value = shown.json().await.unwrap();
            let bytes = serde_json::to_vec(&answer["data"]).unwrap().len() as i64;
            assert!(
                stored.stored_size >= bytes,
                "{} < {bytes}",
                stored.stored_size
            );
        } else {
            assert!(stored.stored_size > 1 << 20, "{}", stored.stored_size);
        }
    }

    // A page holding them, a product alone, and GraphQL: refused, briefly.
    for path in [
        "/v1/products".to_owned(),
        "/v1/products?page_size=500".to_owned(),
        format!("/v1/products/{}", huge[0]),
    ] {
        let response = app.get_as(&key, &path).await;
        assert_eq!(response.status(), 422, "{path}");
        let body = response.bytes().await.unwrap();
        assert!(body.len() < 1_000, "{path}: {} bytes", body.len());
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(refusal_code(&body), "response_too_large", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("1048576 bytes (VITRINA_MAX_RESPONSE_MB)")
                && message.contains("page_size"),
            "{message}"
        );
    }
    for query in [
        "{ products(first: 10) { nodes { id attributes } } }",
        "{ products(first: 10) { nodes { id name } } }",
    ] {
        let (status, body) = post(&app, Some(&key), query, json!({})).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"], Value::Null, "{body}");
        assert_eq!(refusal_code(&body), "response_too_large", "{body}");
    }

    // The small ones still answer, alone or as a page.
    let page = app
        .json_as(&key, "/v1/products?name_contains=small&page_size=500")
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 2);

    // Over the WebSocket each operation has a budget of its own: a refused
    // one leaves the next its whole budget.
    let mut socket = ws::connect(&app, &key).await;
    let ack = ws::next(&mut socket).await.expect("an answer");
    assert_eq!(ack["type"], "connection_ack");
    ws::send(
        &mut socket,
        "1",
        "{ products(first: 10) { nodes { id attributes } } }",
    )
    .await;
    let refused = ws::next(&mut socket).await.expect("a reply");
    assert_eq!(refused["payload"]["data"], Value::Null, "{refused}");
    assert_eq!(
        refusal_code(&refused["payload"]),
        "response_too_large",
        "{refused}"
    );
    assert_eq!(
        ws::next(&mut socket).await.expect("complete")["type"],
        "complete"
    );
    let small =
        "{ products(first: 10, filter: { nameContains: \"small\" }) { nodes { attributes } } }";
    ws::send(&mut socket, "2", small).await;
    let answered = ws::next(&mut socket).await.expect("a reply");
    let nodes = &answered["payload"]["data"]["products"]["nodes"];
    assert_eq!(nodes.as_array().map(Vec::len), Some(2), "{answered}");
}

/// The rule the limits depend on is checked before anything starts: a page
/// of products at the per-product limit fits in one answer.
#[tokio::test]
async fn serve_refuses_sizes_with_which_a_page_cannot_be_answered() {
    let db = TestDb::new().await;
    let args = [
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--max-product-kb",
        "1024",
        "--max-response-mb",
        "16",
    ];
    let refused = vitrina_alongside(&db.url, &args).await;
    assert_clean_failure(
        &refused,
        "VITRINA_MAX_RESPONSE_MB=16 is too small for VITRINA_MAX_PRODUCT_KB=1024",
    );
    assert!(
        stderr(&refused).contains("at least 102 MiB"),
        "{}",
        stderr(&refused)
    );
}

/// Reads `VmRSS` or `VmHWM` (peak) of process `pid`, in bytes.
fn memory(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in {status}"));
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_concurrent_worst_cases_keep_the_servers_memory_bounded() {
    const PRODUCT_KB: u64 = 12;
    const RESPONSE_MB: u64 = 2;
    let db = TestDb::new().await;
    let conn = db.connect().await;
    let huge = store_legacy(&conn, "huge", 6, 4 << 20).await;
    store_legacy(&conn, "full", 200, 12 << 10).await;
    let key = create_key(&conn, "acme", test_start()).await.secret;
    conn.close().await.ok();

    let server = Serve::start(
        &db.url,
        &[],
        &[
            ("VITRINA_MAX_PRODUCT_KB", &PRODUCT_KB.to_string()),
            ("VITRINA_MAX_RESPONSE_MB", &RESPONSE_MB.to_string()),
        ],
    );
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let get = |path: String| {
        let (client, key, base) = (client.clone(), key.clone(), server.base.clone());
        async move {
            let response = client
                .get(format!("{base}{path}"))
                .bearer_auth(&key)
                .send()
                .await
                .expect("request");
            let status = response.status().as_u16();
            (status, response.bytes().await.map(|b| b.len()).unwrap_or(0))
        }
    };
    let graphql = |query: &str| {
        let encoded: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
        format!("/graphql?query={encoded}")
    };
    // Warm: the pools, the parser, the first statements.
    assert_eq!(
        get("/v1/products?name_contains=full-1&page_size=1".into())
            .await
            .0,
        200
    );
    assert_eq!(
        get(graphql("{ products(first: 1) { nodes { id } } }"))
            .await
            .0,
        200
    );
    let before = memory(server.pid(), "VmRSS");

    let worst = [
        "/v1/products?page_size=500".to_owned(),
        "/v1/products?name_contains=full&page_size=100".to_owned(),
        format!("/v1/products/{}", huge[0]),
        graphql(
            "{ a: products(first: 500) { nodes { attributes translations { attributes } } } \
               b: products(first: 500, filter: { nameContains: \"full\" }) { nodes { attributes } } }",
        ),
    ];
    for _round in 0..3 {
        let answers = futures_util::future::join_all(worst.iter().cloned().map(get)).await;
        for (path, (status, bytes)) in worst.iter().zip(answers) {
            assert!(status == 422 || status == 200, "{path}: {status}");
            assert!(bytes as u64 <= RESPONSE_MB << 20, "{path}: {bytes} bytes");
        }
    }
    let peak = memory(server.pid(), "VmHWM");
    let growth = peak.saturating_sub(before);
    // Each request holds at most its budget and one product more, in a few
    // forms at once (rows, views, the JSON, a copy to tag it); the process
    // keeps some of its own (SQLite's page cache per pooled connection, the
    // allocator's arenas per thread). Without the limits this load grew the
    // server by about 220 MiB.
    let per_request = 4 * ((RESPONSE_MB << 20) + (PRODUCT_KB << 10));
    let bound = worst.len() as u64 * per_request + (48 << 20);
    assert!(
        growth <= bound,
        "the server grew by {} MiB under 4 worst cases, over the {} MiB bound",
        growth >> 20,
        bound >> 20
    );
}
