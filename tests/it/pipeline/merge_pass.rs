//! What the merge pass makes of submitted items: validation rejections,
//! price flags, trust, repeated observations, languages, searchable fields
//! and category rows; and workers that die or run concurrently losing and
//! duplicating nothing.

use chrono::TimeDelta;
use entity::{SubmissionStatus, TrustStatus, price_observation, product, submission};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};
use vitrina::clock::Clock;
use vitrina::jobs::merge;

use super::{merge_all, settings};
use crate::helpers::TestApp;
use crate::helpers::uploads::{item, send, submissions, with};
#[tokio::test]
async fn a_category_lists_merged_products_newest_first_and_its_rows_keep_their_first_sighting() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for external_id in ["1", "2"] {
        send(&app, &key, vec![item(external_id)]).await;
        merge_all(&app).await;
        app.clock.advance(TimeDelta::minutes(5));
    }
    // Seen again later, in another language: reindexed, first sighting kept.
    let en = with(item("1"), &["language"], json!("en"));
    send(&app, &key, vec![with(en, &["name"], json!("Kettle 1"))]).await;
    merge_all(&app).await;

    let listed = app.json_as(&key, "/v1/products?category=ЧАЙНИКИ").await;
    let external: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["external_id"].as_str().unwrap())
        .collect();
    assert_eq!(external, ["2", "1"], "newest first");
    let products = product::Entity::find().all(&app.db).await.unwrap();
    let rows = entity::product_category::Entity::find()
        .all(&app.db)
        .await
        .unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        let product = products.iter().find(|p| p.id == row.product_id).unwrap();
        assert_eq!(row.first_seen_at, product.first_seen_at, "{row:?}");
    }
}
#[tokio::test]
async fn each_validation_rule_rejects_its_item_with_a_reason() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let cases = [
        (
            with(item("a"), &["marketplace"], json!("amazon")),
            "not a valid item",
        ),
        (with(item("b"), &["external_id"], json!(" ")), "external_id"),
        (with(item("c"), &["name"], json!("")), "name"),
        (with(item("d"), &["seller", "id"], json!("")), "seller.id"),
        (with(item("e"), &["url"], json!("ozon.ru/product/e")), "url"),
        (with(item("f"), &["language"], json!("Russian")), "language"),
        (
            with(item("g"), &["prices", "0", "price"], json!(-1)),
            "prices",
        ),
        (
            with(item("h"), &["prices", "0", "currency"], json!("")),
            "currency",
        ),
        (
            with(item("i"), &["special_price", "0", "min"], json!(2000)),
            "special prices",
        ),
        (
            with(item("j"), &["attributes"], json!({ "weight": 1.5 })),
            "attribute",
        ),
        (
            with(item("k"), &["observed_at"], json!("2030-01-01T00:00:00Z")),
            "future",
        ),
    ];
    let (items, reasons): (Vec<Value>, Vec<&str>) = cases.into_iter().unzip();
    let session = send(&app, &key, items).await;
    let report = merge_all(&app).await;
    assert_eq!(report.rejected, reasons.len() as u64);
    for (row, reason) in submissions(&app, session).await.iter().zip(reasons) {
        assert_eq!(row.status, SubmissionStatus::Rejected);
        assert!(
            row.reason.as_deref().unwrap_or_default().contains(reason),
            "{:?} should mention {reason}",
            row.reason
        );
    }
    assert_eq!(
        product::Entity::find().count(&app.db).await.unwrap(),
        0,
        "nothing rejected reaches the catalog"
    );
    let session = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}"))
        .await;
    assert_eq!(
        session["data"]["status"], "completed",
        "rejections complete a session too"
    );
}

async fn product_42(app: &TestApp) -> product::Model {
    product::Entity::find()
        .filter(product::Column::ExternalId.eq("42"))
        .one(&app.db)
        .await
        .unwrap()
        .expect("merged")
}

#[tokio::test]
async fn a_price_far_from_the_current_one_flags_the_item_and_the_product() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send(&app, &key, vec![item("42")]).await;
    merge_all(&app).await;
    app.clock.advance(TimeDelta::hours(1));
    let jump = with(
        item("42"),
        &["prices", "0"],
        json!({ "country_code": "ru", "user_auth_status": "anonymous", "price": 1600, "old_price": 2000, "currency": "RUB" }),
    );
    let session = send(&app, &key, vec![jump]).await;
    assert_eq!(merge_all(&app).await.flagged, 1);
    let row = &submissions(&app, session).await[0];
    assert_eq!(row.status, SubmissionStatus::Flagged);
    assert!(row.reason.as_deref().unwrap().contains("more than 50%"));
    let p = product_42(&app).await;
    assert!(p.price_flagged);
    assert_eq!(p.trust_status, TrustStatus::Flagged);

    app.clock.advance(TimeDelta::hours(1));
    let calm = with(item("42"), &["prices", "0", "price"], json!(1500));
    send(
        &app,
        &key,
        vec![with(calm, &["prices", "0", "old_price"], json!(1700))],
    )
    .await;
    assert_eq!(merge_all(&app).await.merged, 1);
    let p = product_42(&app).await;
    assert!(!p.price_flagged, "a clean item clears the flag");
    assert_eq!(p.trust_status, TrustStatus::Unverified);
}

#[tokio::test]
async fn an_old_price_below_the_price_flags_the_item() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send(
        &app,
        &key,
        vec![with(item("42"), &["prices", "0", "old_price"], json!(500))],
    )
    .await;
    assert_eq!(merge_all(&app).await.flagged, 1);
    assert!(product_42(&app).await.price_flagged);
}

#[tokio::test]
async fn a_product_merged_from_two_accounts_becomes_verified() {
    let app = TestApp::spawn().await;
    let (a, b) = (app.key("alpha").await, app.key("beta").await);
    send(&app, &a, vec![item("42")]).await;
    send(&app, &a, vec![item("42")]).await;
    merge_all(&app).await;
    assert_eq!(
        product_42(&app).await.trust_status,
        TrustStatus::Unverified,
        "one account twice is not a confirmation"
    );
    send(&app, &b, vec![item("42")]).await;
    merge_all(&app).await;
    assert_eq!(product_42(&app).await.trust_status, TrustStatus::Verified);
}

#[tokio::test]
async fn an_identical_repeated_observation_is_not_stored_twice() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send(&app, &key, vec![item("42")]).await;
    merge_all(&app).await;
    app.clock.advance(TimeDelta::hours(1));
    send(&app, &key, vec![item("42")]).await;
    merge_all(&app).await;
    let p = product_42(&app).await;
    let history = price_observation::Entity::find()
        .filter(price_observation::Column::ProductId.eq(p.id))
        .count(&app.db)
        .await
        .unwrap();
    assert_eq!(history, 1);
    let current = app.json_as(&key, &format!("/v1/products/{}", p.id)).await;
    let seen = chrono::DateTime::parse_from_rfc3339(
        current["data"]["prices"][0]["recorded_at"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        seen,
        app.clock.now(),
        "the current price was seen again later"
    );

    app.clock.advance(TimeDelta::hours(1));
    send(
        &app,
        &key,
        vec![with(item("42"), &["prices", "0", "price"], json!(1100))],
    )
    .await;
    merge_all(&app).await;
    let history = app
        .json_as(&key, &format!("/v1/products/{}/price-history", p.id))
        .await;
    let prices: Vec<f64> = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["price"].as_f64().unwrap())
        .collect();
    assert_eq!(prices, [1100.0, 1000.0]);
}

#[tokio::test]
async fn russian_content_becomes_the_default_language_when_it_arrives_later() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let english = with(
        with(item("42"), &["language"], json!("en")),
        &["name"],
        json!("Kettle"),
    );
    send(&app, &key, vec![english]).await;
    merge_all(&app).await;
    let p = product_42(&app).await;
    assert_eq!(
        (
            p.first_seen_language.as_str(),
            p.default_language.as_str(),
            p.name.as_str()
        ),
        ("en", "en", "Kettle")
    );

    app.clock.advance(TimeDelta::hours(1));
    send(&app, &key, vec![item("42")]).await;
    merge_all(&app).await;
    let body = app.json_as(&key, &format!("/v1/products/{}", p.id)).await;
    let data = &body["data"];
    assert_eq!(
        (
            data["first_seen_language"].as_str(),
            data["default_language"].as_str()
        ),
        (Some("en"), Some("ru"))
    );
    assert_eq!(data["name"], "Чайник 42");
    assert_eq!(
        data["translations"],
        json!([{ "language": "en", "name": "Kettle", "category_path": ["Бытовая техника", "Чайники"], "attributes": { "original": true, "цвет": "белый" }, "updated_at": data["translations"][0]["updated_at"] }])
    );
    assert_eq!(
        app.json_as(&key, "/v1/products?name_contains=kettle").await["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

async fn found(app: &TestApp, key: &str, query: &str) -> usize {
    let listed = app.json_as(key, &format!("/v1/products?{query}")).await;
    listed["data"].as_array().unwrap().len()
}

#[tokio::test]
async fn brand_and_seller_code_searches_follow_the_newest_item_only() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send(&app, &key, vec![item("42")]).await;
    merge_all(&app).await;
    assert_eq!(found(&app, &key, "brand=REDMOND").await, 1);
    assert_eq!(found(&app, &key, "seller_code_contains=rm-4").await, 1);

    app.clock.advance(TimeDelta::hours(1));
    let renamed = with(item("42"), &["brand"], json!("ПОЛАРИС"));
    let renamed = with(renamed, &["seller", "code"], json!("ПЛ-Ёж"));
    send(&app, &key, vec![renamed]).await;
    merge_all(&app).await;
    assert_eq!(found(&app, &key, "brand=поларис").await, 1);
    assert_eq!(found(&app, &key, "brand=redmond").await, 0);
    assert_eq!(found(&app, &key, "seller_code_contains=ЁЖ").await, 1);
    assert_eq!(found(&app, &key, "seller_code_contains=rm").await, 0);

    // Seen earlier than the stored content: only its price history counts.
    let earlier = app.clock.now() - TimeDelta::hours(2);
    let older = with(item("42"), &["observed_at"], json!(earlier));
    send(&app, &key, vec![with(older, &["brand"], json!("Старый"))]).await;
    assert_eq!(merge_all(&app).await.merged, 1);
    assert_eq!(found(&app, &key, "brand=поларис").await, 1);
    assert_eq!(found(&app, &key, "brand=старый").await, 0);
    assert_eq!(found(&app, &key, "seller_code_contains=ёж").await, 1);
}
#[tokio::test]
async fn a_worker_that_dies_mid_batch_loses_and_duplicates_nothing() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1"), item("2"), item("3")]).await;
    // A worker claims two submissions and dies before merging them.
    let claimed = merge::claim(&app.db, app.clock.now(), &settings(2))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 2);
    let report = merge::run_pass(&app.db, &app.clock, &settings(10), &app.state.events)
        .await
        .unwrap();
    assert_eq!(report.merged, 1, "leased rows wait for their lease");
    assert_eq!(
        app.json_as(&key, &format!("/v1/me/scrapes/{session}"))
            .await["data"]["status"],
        "processing"
    );

    app.clock.advance(TimeDelta::minutes(6));
    let report = merge::run_pass(&app.db, &app.clock, &settings(10), &app.state.events)
        .await
        .unwrap();
    assert_eq!((report.released, report.merged), (2, 2));
    assert_eq!(product::Entity::find().count(&app.db).await.unwrap(), 3);
    assert_eq!(
        price_observation::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        3
    );
    assert!(
        submissions(&app, session)
            .await
            .iter()
            .all(|s| s.status == SubmissionStatus::Merged)
    );
}

#[tokio::test]
async fn concurrent_workers_merge_each_submission_once() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    // Items of one product and of distinct products, so the workers contend.
    let items: Vec<Value> = (0..40)
        .map(|i| item(&(i % 8).to_string()))
        .map(|v| with(v, &["prices", "0", "price"], json!(1000)))
        .collect();
    send(&app, &key, items).await;
    let small = settings(3);
    let worker = || merge::run_pass(&app.db, &app.clock, &small, &app.state.events);
    let (a, b, c) = tokio::join!(worker(), worker(), worker());
    let total = [a.unwrap(), b.unwrap(), c.unwrap()]
        .iter()
        .map(|r| r.merged + r.flagged + r.rejected)
        .sum::<u64>();
    assert_eq!(total, 40, "every submission merged exactly once");
    assert_eq!(product::Entity::find().count(&app.db).await.unwrap(), 8);
    assert_eq!(
        price_observation::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        8,
        "repeats are not stored twice"
    );
    assert_eq!(
        submission::Entity::find()
            .filter(submission::Column::Status.eq(SubmissionStatus::Merged))
            .count(&app.db)
            .await
            .unwrap(),
        40
    );
}
