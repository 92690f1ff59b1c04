//! The small lookup lists: `GET /sellers` by each identifying parameter,
//! and `/categories` and `/brands` from the latest snapshot, in their
//! documented order.

use entity::Marketplace;
use serde_json::{Value, json};
use vitrina::text::normalize_url;

use super::{day, expect_error};
use crate::fixtures::{
    insert_brand_snapshot, insert_category_snapshot, insert_product, insert_seller, product, seller,
};
use crate::helpers::TestApp;
/// `(marketplace, seller_id)` of each record, in response order.
fn seller_keys(body: &Value) -> Vec<(String, String)> {
    body["data"]
        .as_array()
        .expect("data array")
        .iter()
        .map(|s| {
            (
                s["marketplace"].as_str().unwrap_or_default().to_owned(),
                s["seller_id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

fn encoded(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}
// --------------------------------------------------------------- sellers

#[tokio::test]
async fn sellers_without_an_identifying_parameter_is_missing_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "1")).await;
    for path in [
        "/v1/sellers",
        "/v1/sellers?name=x",
        "/v1/sellers?tin=&psrn=",
    ] {
        expect_error(app.get_as(&key, path).await, 400, "missing_parameter").await;
    }
}

#[tokio::test]
async fn sellers_marketplace_or_seller_id_alone_is_missing_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "1")).await;
    for path in [
        "/v1/sellers?marketplace=ozon",
        "/v1/sellers?seller_id=1",
        "/v1/sellers?marketplace=ozon&seller_id=",
    ] {
        expect_error(app.get_as(&key, path).await, 400, "missing_parameter").await;
    }
}

#[tokio::test]
async fn sellers_unknown_marketplace_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in [
        "/v1/sellers?marketplace=amazon&seller_id=1",
        "/v1/sellers?marketplace=Ozon&seller_id=1",
        "/v1/sellers?tin=7700000000&marketplace=amazon",
    ] {
        expect_error(app.get_as(&key, path).await, 400, "invalid_parameter").await;
    }
}

#[tokio::test]
async fn sellers_by_tin_returns_every_marketplace_ordered_by_marketplace_then_seller_id() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (marketplace, id) in [
        (Marketplace::Wildberries, "b"),
        (Marketplace::Ozon, "z"),
        (Marketplace::YandexMarket, "y"),
        (Marketplace::Ozon, "a"),
        (Marketplace::Megamarket, "m"),
    ] {
        let s = seller(marketplace, id);
        insert_seller(
            &app.db,
            entity::seller::Model {
                tin: "7701234567".into(),
                ..s
            },
        )
        .await;
    }
    insert_seller(&app.db, seller(Marketplace::Ozon, "other")).await;
    let body = app.json_as(&key, "/v1/sellers?tin=7701234567").await;
    assert_eq!(
        seller_keys(&body),
        pairs(&[
            ("megamarket", "m"),
            ("ozon", "a"),
            ("ozon", "z"),
            ("wildberries", "b"),
            ("yandex_market", "y"),
        ])
    );
}

#[tokio::test]
async fn sellers_by_psrn() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let s = seller(Marketplace::Megamarket, "42");
    insert_seller(
        &app.db,
        entity::seller::Model {
            psrn: "304770000012345".into(),
            ..s
        },
    )
    .await;
    insert_seller(&app.db, seller(Marketplace::Megamarket, "43")).await;
    let body = app.json_as(&key, "/v1/sellers?psrn=304770000012345").await;
    assert_eq!(seller_keys(&body), pairs(&[("megamarket", "42")]));
}

#[tokio::test]
async fn sellers_by_url_ignore_query_fragment_host_case_and_trailing_slash() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let url = Some(normalize_url("https://shop.example/Store-42"));
    let s = seller(Marketplace::Ozon, "42");
    insert_seller(&app.db, entity::seller::Model { url, ..s }).await;
    // The path keeps its case: this is another storefront.
    let s = seller(Marketplace::Ozon, "43");
    let other = Some(normalize_url("https://shop.example/store-42"));
    insert_seller(&app.db, entity::seller::Model { url: other, ..s }).await;
    let messy = encoded("HTTPS://Shop.EXAMPLE/Store-42/?utm_source=x&b=2#reviews");
    let body = app.json_as(&key, &format!("/v1/sellers?url={messy}")).await;
    assert_eq!(seller_keys(&body), pairs(&[("ozon", "42")]));
}

#[tokio::test]
async fn sellers_by_marketplace_and_seller_id() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "42")).await;
    insert_seller(&app.db, seller(Marketplace::Wildberries, "42")).await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "43")).await;
    let body = app
        .json_as(&key, "/v1/sellers?marketplace=ozon&seller_id=42")
        .await;
    assert_eq!(seller_keys(&body), pairs(&[("ozon", "42")]));
}

#[tokio::test]
async fn sellers_with_no_match_return_an_empty_list() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_seller(&app.db, seller(Marketplace::Ozon, "42")).await;
    let body = app.json_as(&key, "/v1/sellers?tin=0000000000").await;
    assert_eq!(body, json!({"data": []}));
}

#[tokio::test]
async fn seller_record_has_every_documented_field() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let mine = insert_seller(&app.db, seller(Marketplace::Ozon, "S-1")).await;
    let theirs = insert_seller(&app.db, seller(Marketplace::Ozon, "S-2")).await;
    for (owner, sku) in [(&mine, "p1"), (&mine, "p2"), (&theirs, "p3")] {
        let spec = product(sku);
        let spec = crate::fixtures::ProductSpec {
            marketplace: Marketplace::Ozon,
            ..spec
        };
        insert_product(&app.db, owner, spec).await;
    }
    let body = app
        .json_as(&key, "/v1/sellers?marketplace=ozon&seller_id=S-1")
        .await;
    assert_eq!(
        body,
        json!({"data": [{
            "marketplace": "ozon",
            "seller_id": "S-1",
            "name": "Seller S-1",
            "tin": "7700000000",
            "psrn": "1027700000000",
            "address": "г. Москва, ул. Ленина, д. 1",
            "url": "https://shop.example/S-1",
            "stats": {"rating": 4.5, "reg_date": "2020-01-02", "items_sold": 100, "reviews_count": 10},
            "product_count": 2,
            "first_seen_at": "2026-08-12T12:00:00Z",
            "last_seen_at": "2026-11-19T12:00:00Z",
        }]})
    );
}

// ------------------------------------------------------------ categories

#[tokio::test]
async fn categories_without_marketplace_is_missing_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in ["/v1/categories", "/v1/categories?marketplace="] {
        expect_error(app.get_as(&key, path).await, 400, "missing_parameter").await;
    }
}

#[tokio::test]
async fn categories_unknown_marketplace_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in [
        "/v1/categories?marketplace=amazon",
        "/v1/categories?marketplace=OZON",
    ] {
        expect_error(app.get_as(&key, path).await, 400, "invalid_parameter").await;
    }
}

#[tokio::test]
async fn categories_come_from_the_latest_snapshot_of_the_marketplace() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let db = &app.db;
    insert_category_snapshot(db, day(17), Marketplace::Ozon, &["Старое"], 100).await;
    insert_category_snapshot(db, day(18), Marketplace::Ozon, &["Дом"], 7).await;
    insert_category_snapshot(db, day(18), Marketplace::Ozon, &["Авто"], 3).await;
    // Another marketplace's newer day decides nothing for ozon.
    insert_category_snapshot(db, day(19), Marketplace::Wildberries, &["Одежда"], 9).await;
    let body = app.json_as(&key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(
        body,
        json!({"data": [
            {"category_path": ["Дом"], "product_count": 7},
            {"category_path": ["Авто"], "product_count": 3},
        ]})
    );
}

#[tokio::test]
async fn categories_are_ordered_by_product_count_desc_then_path() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (path, count) in [
        (&["Дом"][..], 5),
        (&["Электроника"][..], 9),
        (&["Электроника", "Наушники"][..], 5),
        (&["Авто"][..], 5),
        (&["Дом", "Кухня"][..], 1),
        (&["Дом", "Декор"][..], 1),
    ] {
        insert_category_snapshot(&app.db, day(19), Marketplace::Ozon, path, count).await;
    }
    let body = app.json_as(&key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(
        body,
        json!({"data": [
            {"category_path": ["Электроника"], "product_count": 9},
            {"category_path": ["Авто"], "product_count": 5},
            {"category_path": ["Дом"], "product_count": 5},
            {"category_path": ["Электроника", "Наушники"], "product_count": 5},
            {"category_path": ["Дом", "Декор"], "product_count": 1},
            {"category_path": ["Дом", "Кухня"], "product_count": 1},
        ]})
    );
}

#[tokio::test]
async fn categories_empty_path_is_an_entry_of_its_own() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_category_snapshot(&app.db, day(19), Marketplace::Ozon, &["Дом"], 2).await;
    insert_category_snapshot(&app.db, day(19), Marketplace::Ozon, &[], 2).await;
    let body = app.json_as(&key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(
        body,
        json!({"data": [
            {"category_path": [], "product_count": 2},
            {"category_path": ["Дом"], "product_count": 2},
        ]})
    );
}

// ---------------------------------------------------------------- brands

#[tokio::test]
async fn brands_without_marketplace_cover_all_marketplaces() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_brand_snapshot(&app.db, day(19), None, "Acme", 12).await;
    insert_brand_snapshot(&app.db, day(19), Some(Marketplace::Ozon), "Acme", 5).await;
    insert_brand_snapshot(&app.db, day(19), Some(Marketplace::Ozon), "OnlyOzon", 50).await;
    let body = app.json_as(&key, "/v1/brands").await;
    assert_eq!(
        body,
        json!({"data": [{"brand": "Acme", "product_count": 12}]})
    );
}

#[tokio::test]
async fn brands_with_marketplace_are_that_marketplace_only() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    insert_brand_snapshot(&app.db, day(19), None, "Acme", 12).await;
    insert_brand_snapshot(&app.db, day(19), Some(Marketplace::Ozon), "Acme", 5).await;
    insert_brand_snapshot(&app.db, day(19), Some(Marketplace::Wildberries), "Acme", 7).await;
    let body = app.json_as(&key, "/v1/brands?marketplace=ozon").await;
    assert_eq!(
        body,
        json!({"data": [{"brand": "Acme", "product_count": 5}]})
    );
}

#[tokio::test]
async fn brands_come_from_the_latest_snapshot() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let db = &app.db;
    insert_brand_snapshot(db, day(18), None, "Old", 100).await;
    insert_brand_snapshot(db, day(19), None, "New", 1).await;
    insert_brand_snapshot(db, day(17), Some(Marketplace::Ozon), "OldOzon", 100).await;
    insert_brand_snapshot(db, day(18), Some(Marketplace::Ozon), "NewOzon", 1).await;
    let all = app.json_as(&key, "/v1/brands").await;
    assert_eq!(all, json!({"data": [{"brand": "New", "product_count": 1}]}));
    // Ozon's latest day is its own, older than the all-marketplaces one.
    let ozon = app.json_as(&key, "/v1/brands?marketplace=ozon").await;
    assert_eq!(
        ozon,
        json!({"data": [{"brand": "NewOzon", "product_count": 1}]})
    );
}

#[tokio::test]
async fn brands_are_ordered_by_product_count_desc_then_brand() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (brand, count) in [("Zeta", 3), ("Бренд", 7), ("Acme", 3), ("Mid", 5)] {
        insert_brand_snapshot(&app.db, day(19), None, brand, count).await;
    }
    let body = app.json_as(&key, "/v1/brands").await;
    assert_eq!(
        body,
        json!({"data": [
            {"brand": "Бренд", "product_count": 7},
            {"brand": "Mid", "product_count": 5},
            {"brand": "Acme", "product_count": 3},
            {"brand": "Zeta", "product_count": 3},
        ]})
    );
}

#[tokio::test]
async fn brands_unknown_marketplace_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    expect_error(
        app.get_as(&key, "/v1/brands?marketplace=amazon").await,
        400,
        "invalid_parameter",
    )
    .await;
}
