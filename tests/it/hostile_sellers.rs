//! Seller lookups cannot be turned into "every seller without a URL": a
//! URL that normalizes to nothing is refused naming the parameter, a seller
//! without a URL is stored as NULL (which no lookup matches), and a lookup
//! returns at most `VITRINA_MAX_SELLERS_PER_LOOKUP`, saying when more
//! matched.

use entity::{Marketplace, seller};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel, QueryFilter};
use serde_json::{Value, json};
use vitrina::config::{DEFAULT_MAX_SELLERS_PER_LOOKUP as MAX_SELLERS, ListConfig, Settings};

use crate::fixtures::{insert_seller, seller};
use crate::helpers::graphql::post;
use crate::helpers::uploads::{item, send, with};
use crate::helpers::{TestApp, TestDb, encoded, header, migrate_down_through};

/// URLs that normalize to nothing: blanks, a scheme alone, slashes, each
/// followed by nothing, a query string or a fragment. (The empty text is
/// left out: an empty parameter counts as absent.)
fn empty_urls() -> Vec<String> {
    let heads = [
        "",
        " ",
        "\t",
        "\u{3000}",
        "http://",
        "HTTPS://",
        "https:///",
        "//",
        "/",
        "ftp:",
    ];
    let tails = ["", "?", "#", "?x", "#x", "?a=1&b=2#c", "/?x", " "];
    let mut urls: Vec<String> = heads
        .iter()
        .flat_map(|head| tails.iter().map(move |tail| format!("{head}{tail}")))
        .filter(|url| !url.is_empty())
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

/// `count` sellers sharing `tin`, on every marketplace.
async fn sharing_a_tin(app: &TestApp, tin: &str, count: u64) {
    let shops: Vec<_> = (0..count)
        .map(|n| {
            let marketplace = Marketplace::ALL[n as usize % Marketplace::ALL.len()];
            let shop = seller(marketplace, &format!("{tin}-{n:04}"));
            seller::Model {
                tin: tin.into(),
                ..shop
            }
            .into_active_model()
        })
        .collect();
    vitrina::db::insert_batched(&app.db, shops).await.unwrap();
}

/// Three sellers stored without a URL: before the fix, what every empty
/// lookup matched.
async fn sellers_without_urls(app: &TestApp) {
    for id in ["1", "2", "3"] {
        let shop = seller(Marketplace::Ozon, id);
        insert_seller(&app.db, seller::Model { url: None, ..shop }).await;
    }
}

const SELLERS_BY_URL: &str = "query($url: String) { sellers(lookup: { url: $url }) { sellerId } }";

#[tokio::test]
async fn a_url_that_normalizes_to_nothing_is_invalid_parameter_on_rest_and_graphql() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    sellers_without_urls(&app).await;
    let urls = empty_urls();
    assert!(urls.len() > 60, "{} cases", urls.len());
    for url in &urls {
        let query = encoded(&[("url", url.clone())]);
        for path in ["/v1/sellers", "/v1/products"] {
            let response = app.get_as(&key, &format!("{path}?{query}")).await;
            let status = response.status().as_u16();
            let body: Value = response.json().await.expect("JSON");
            assert_eq!(status, 400, "{path} url={url:?}: {body}");
            assert_eq!(body["error"]["code"], "invalid_parameter", "{url:?}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.starts_with("url "), "{message}");
        }
        let (status, body) = post(&app, Some(&key), SELLERS_BY_URL, json!({ "url": url })).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"], Value::Null, "{url:?}: {body}");
        let error = &body["errors"][0];
        assert_eq!(error["extensions"]["code"], "INVALID_PARAMETER", "{body}");
        assert!(
            error["message"].as_str().unwrap().starts_with("url "),
            "{body}"
        );
    }
    // A real storefront is still found, its query string ignored.
    let s = seller(Marketplace::Ozon, "real");
    insert_seller(&app.db, s).await;
    let query = encoded(&[("url", " https://SHOP.example/real/?utm=1#x".into())]);
    let body = app.json_as(&key, &format!("/v1/sellers?{query}")).await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1, "{body}");
}

#[tokio::test]
async fn a_seller_scraped_without_a_usable_url_is_stored_as_null() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let mut items = Vec::new();
    for (n, url) in [
        None,
        Some(""),
        Some("?"),
        Some("#x"),
        Some("http://"),
        Some("  "),
    ]
    .into_iter()
    .enumerate()
    {
        let seller = json!({ "id": format!("s-{n}"), "name": "ООО «Вектор»", "tin": "7701234567" });
        let mut one = with(item(&n.to_string()), &["seller"], seller);
        if let Some(url) = url {
            one = with(one, &["seller", "url"], json!(url));
        }
        items.push(one);
    }
    send(&app, &key, items).await;
    app.jobs().tick().await.expect("tick");
    let stored = seller::Entity::find().all(&app.db).await.unwrap();
    assert_eq!(stored.len(), 6);
    for s in &stored {
        assert_eq!(s.url, None, "{}", s.seller_id);
    }
    // Shown as an unknown tin is: empty.
    let body = app.json_as(&key, "/v1/sellers?tin=7701234567").await;
    for shown in body["data"].as_array().unwrap() {
        assert_eq!(shown["url"], "", "{shown}");
    }
}

#[tokio::test]
async fn the_migration_turns_empty_seller_urls_into_null_and_back() {
    let test_db = TestDb::new().await;
    let db = test_db.connect().await;
    migrate_down_through(&db, "m20261128_000016_seller_url_null").await;
    // Stored as before the migration: an empty string for no URL.
    let (empty, known) = (
        seller(Marketplace::Ozon, "e"),
        seller(Marketplace::Ozon, "k"),
    );
    let (empty_id, known_id) = (empty.id, known.id);
    let before = [
        seller::Model {
            url: Some(String::new()),
            ..empty
        },
        seller::Model {
            url: Some("https://shop.example/k".into()),
            ..known
        },
    ];
    for row in before {
        insert_seller(&db, row).await;
    }
    vitrina::db::migrate(&db).await.unwrap();
    let stored = |id| seller::Entity::find_by_id(id).one(&db);
    assert_eq!(stored(empty_id).await.unwrap().unwrap().url, None);
    let known_url = stored(known_id).await.unwrap().unwrap().url;
    assert_eq!(known_url.as_deref(), Some("https://shop.example/k"));
    let by_url = seller::Entity::find()
        .filter(seller::Column::Url.eq("https://shop.example/k"))
        .all(&db)
        .await
        .unwrap();
    assert_eq!(by_url.len(), 1);

    migrate_down_through(&db, "m20261128_000016_seller_url_null").await;
    let sql = "SELECT url FROM sellers ORDER BY seller_id".to_owned();
    let statement = sea_orm::Statement::from_string(db.get_database_backend(), sql);
    let urls: Vec<String> = db
        .query_all_raw(statement)
        .await
        .unwrap()
        .iter()
        .map(|row| row.try_get("", "url").unwrap())
        .collect();
    assert_eq!(urls, ["", "https://shop.example/k"]);
    vitrina::db::migrate(&db).await.unwrap();
}

/// Lookups of a TIN that `shared` sellers hold (more than `most`) and of
/// one that `most` hold, on a server allowing `most` per lookup: the first
/// is cut to `most` on REST and GraphQL and says so, the second is whole.
/// Returns what the first listed over REST, as (marketplace, seller_id).
async fn assert_cut_at(app: &TestApp, key: &str, most: u64, shared: u64) -> Vec<(String, String)> {
    sharing_a_tin(app, "7709999999", shared).await;
    sharing_a_tin(app, "7708888888", most).await;

    let response = app.get_as(key, "/v1/sellers?tin=7709999999").await;
    assert_eq!(header(&response, "x-result-truncated"), Some("true"));
    let body: Value = response.json().await.unwrap();
    let listed: Vec<(String, String)> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["marketplace"].to_string(), s["seller_id"].to_string()))
        .collect();
    assert_eq!(listed.len() as u64, most);

    let query = "{ sellers(lookup: { tin: \"7709999999\" }) { sellerId } }";
    let response = crate::helpers::graphql::post_response(app, key, query).await;
    assert_eq!(header(&response, "x-result-truncated"), Some("true"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["data"]["sellers"].as_array().unwrap().len() as u64,
        most
    );

    // Exactly the bound is not cut.
    let response = app.get_as(key, "/v1/sellers?tin=7708888888").await;
    assert_eq!(header(&response, "x-result-truncated"), Some("false"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["data"].as_array().unwrap().len() as u64, most);
    listed
}

#[tokio::test]
async fn a_lookup_returns_at_most_max_sellers_and_says_when_more_matched() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let listed = assert_cut_at(&app, &key, MAX_SELLERS, 3 * MAX_SELLERS).await;
    let mut ordered = listed.clone();
    ordered.sort();
    assert_eq!(listed, ordered, "ordered by marketplace, then seller_id");
}

#[tokio::test]
async fn a_lookup_returns_at_most_the_configured_sellers() {
    const MOST: u64 = 7;
    let app = TestApp::spawn_with_settings(Settings {
        lists: ListConfig {
            max_sellers_per_lookup: MOST,
            ..ListConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = app.key("acme").await;
    assert_cut_at(&app, &key, MOST, MOST + 1).await;
}
