//! The write side: extension uploads, the merge pass, session completion into
//! the outbox, snapshots and retention. Jobs are driven directly with the
//! test clock.

use chrono::TimeDelta;
use entity::{
    SubmissionStatus, SubscriptionStatus, TrustStatus, price_observation, product, submission,
    webhook_delivery, webhook_subscription,
};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter,
};
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::clock::Clock;
use vitrina::jobs::merge::{self, MergeSettings};

use crate::helpers::TestApp;
use crate::helpers::graphql::data;
use crate::helpers::uploads::{item, send, submissions, upload, with};

async fn merge_all(app: &TestApp) -> merge::MergeReport {
    app.jobs().tick().await.expect("tick").merge
}

#[tokio::test]
async fn an_upload_is_merged_into_products_visible_through_rest_and_graphql() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let en = with(
        with(item("42"), &["language"], json!("en")),
        &["name"],
        json!("Kettle 42"),
    );
    let session = send(&app, &key, vec![item("42"), en]).await;
    let pending = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}"))
        .await;
    assert_eq!(pending["data"]["stats"]["pending"], 2);

    let report = merge_all(&app).await;
    assert_eq!((report.merged, report.completed_sessions), (2, 1));
    let products = app
        .json_as(&key, "/v1/products?external_id=42&marketplace=ozon")
        .await;
    let p = &products["data"][0];
    assert_eq!(p["url"], "https://www.ozon.ru/product/42");
    assert_eq!(
        p["seller"],
        json!({ "id": "s-1", "name": "ООО «Вектор»", "code": "RM-42" })
    );
    assert_eq!(p["prices"][0]["price"], 1000.0);
    assert_eq!(p["special_price"][0]["region_code"], "");
    assert_eq!(p["translations"][0]["name"], "Kettle 42");
    assert_eq!(
        app.json_as(&key, "/v1/products?name_contains=kettle").await["data"][0]["id"],
        p["id"]
    );

    let query = "{ products(filter: {externalId: \"42\"}) { edges { node { name prices { price } translations { language name } seller { tin } } } } }";
    let d = data(&app, &key, query, json!({})).await;
    let node = &d["products"]["edges"][0]["node"];
    assert_eq!(
        (node["name"].as_str(), node["seller"]["tin"].as_str()),
        (Some("Чайник 42"), Some("7701234567"))
    );
    assert_eq!(node["translations"][0]["language"], "en");

    let entries = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}/products"))
        .await;
    assert_eq!(entries["data"][0]["product"]["id"], p["id"]);
    assert_eq!(
        app.json_as(&key, &format!("/v1/me/scrapes/{session}"))
            .await["data"]["status"],
        "completed"
    );
}

#[tokio::test]
async fn the_extension_document_describes_the_upload_and_the_item_format() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let doc: Value = app
        .get("/extension/v1/openapi.json")
        .await
        .json()
        .await
        .unwrap();
    let schema = &doc["components"]["schemas"]["ScrapedItem"];
    for field in [
        "marketplace",
        "external_id",
        "url",
        "language",
        "name",
        "seller",
    ] {
        assert!(
            schema["required"]
                .as_array()
                .unwrap()
                .contains(&json!(field)),
            "{field} is documented as required"
        );
    }
    let response = app
        .post_as(&key, "/extension/v1/scrapes", &upload(vec![item("1")]))
        .await;
    assert_eq!(response.status(), 202);
    crate::helpers::openapi::validate_operation(
        &doc,
        "post",
        "/scrapes",
        202,
        &response.json().await.unwrap(),
    );
    let refused = app
        .post_as(&key, "/extension/v1/scrapes", &json!({ "items": [] }))
        .await;
    crate::helpers::openapi::validate_operation(
        &doc,
        "post",
        "/scrapes",
        400,
        &refused.json().await.unwrap(),
    );
}

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
async fn an_idempotency_key_makes_a_retried_upload_return_the_first_session() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let post = || {
        app.client
            .post(app.url("/extension/v1/scrapes"))
            .bearer_auth(&key)
            .header("Idempotency-Key", "run-7")
            .json(&upload(vec![item("1")]))
    };
    let first: Value = post().send().await.unwrap().json().await.unwrap();
    let again = post().send().await.unwrap();
    assert_eq!(again.status(), 202);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(first["data"]["id"], again["data"]["id"]);
    assert_eq!(submission::Entity::find().count(&app.db).await.unwrap(), 1);

    let other = app.key("other").await;
    let theirs = app
        .client
        .post(app.url("/extension/v1/scrapes"))
        .bearer_auth(&other)
        .header("Idempotency-Key", "run-7")
        .json(&upload(vec![item("1")]))
        .send()
        .await
        .unwrap();
    let theirs: Value = theirs.json().await.unwrap();
    assert_ne!(
        theirs["data"]["id"], first["data"]["id"],
        "keys are per account"
    );
}

#[tokio::test]
async fn bad_uploads_are_refused_and_store_nothing() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let raw = |body: &'static str| {
        app.client
            .post(app.url("/extension/v1/scrapes"))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cases: Vec<(reqwest::Response, u16, &str)> = vec![
        (raw("{not json").await.unwrap(), 400, "invalid_body"),
        (
            raw(r#"{"source_type":"page","intent":"catalog_import","items":[1]}"#)
                .await
                .unwrap(),
            400,
            "invalid_body",
        ),
        (
            raw(r#"{"source_type":"tab","intent":"catalog_import","items":[]}"#)
                .await
                .unwrap(),
            400,
            "invalid_body",
        ),
        (
            app.post_as(
                &key,
                "/extension/v1/scrapes",
                &upload(vec![json!({}); 1001]),
            )
            .await,
            400,
            "invalid_body",
        ),
        (
            app.client
                .post(app.url("/extension/v1/scrapes"))
                .bearer_auth(&key)
                .body(vec![b' '; 9 << 20])
                .send()
                .await
                .unwrap(),
            413,
            "payload_too_large",
        ),
        (
            app.client
                .post(app.url("/extension/v1/scrapes"))
                .json(&upload(vec![item("1")]))
                .send()
                .await
                .unwrap(),
            401,
            "unauthorized",
        ),
    ];
    for (response, status, code) in cases {
        assert_eq!(response.status().as_u16(), status);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{body}");
    }
    assert_eq!(
        entity::scrape_session::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        0
    );
    assert_eq!(submission::Entity::find().count(&app.db).await.unwrap(), 0);
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

fn settings(batch: u64) -> MergeSettings {
    MergeSettings {
        batch,
        lease: TimeDelta::minutes(5),
        max_attempts: 3,
        public_url: "http://vitrina.test".into(),
        max_product_bytes: vitrina::config::SizeConfig::default().max_product_bytes(),
    }
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

async fn subscribe(app: &TestApp, key: &str, active: bool) -> Uuid {
    let caller = vitrina::accounts::authenticate(&app.db, key, app.clock.now())
        .await
        .unwrap()
        .unwrap();
    let id = Uuid::new_v4();
    webhook_subscription::ActiveModel {
        id: Set(id),
        account_id: Set(caller.account_id),
        target_url: Set("https://hooks.example/vitrina".into()),
        secret: Set("whsec_test".into()),
        status: Set(if active {
            SubscriptionStatus::Active
        } else {
            SubscriptionStatus::Disabled
        }),
        consecutive_failures: Set(0),
        created_at: Set(app.clock.now()),
        disabled_at: Set(None),
        session_events: Set(true),
        price_events: Set(false),
        price_filter: Set(None),
        ..Default::default()
    }
    .insert(&app.db)
    .await
    .unwrap();
    id
}

#[tokio::test]
async fn completion_writes_one_delivery_per_active_subscription_once() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let (first, second) = (
        subscribe(&app, &key, true).await,
        subscribe(&app, &key, true).await,
    );
    subscribe(&app, &key, false).await;
    let other = app.key("other").await;
    subscribe(&app, &other, true).await;

    let session = send(
        &app,
        &key,
        vec![item("1"), with(item("2"), &["name"], json!(""))],
    )
    .await;
    let claimed = merge::claim(&app.db, app.clock.now(), &settings(1))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    app.clock.advance(TimeDelta::minutes(6));
    let report = merge_all(&app).await;
    assert_eq!(report.completed_sessions, 1);
    assert_eq!(
        merge_all(&app).await.completed_sessions,
        0,
        "a session completes once"
    );

    let deliveries = webhook_delivery::Entity::find().all(&app.db).await.unwrap();
    let mut targets: Vec<Uuid> = deliveries.iter().map(|d| d.subscription_id).collect();
    targets.sort();
    let mut expected = vec![first, second];
    expected.sort();
    assert_eq!(targets, expected, "active subscriptions of the owner only");
    let caller = vitrina::accounts::authenticate(&app.db, &key, app.clock.now())
        .await
        .unwrap()
        .unwrap();
    let payload: Value = serde_json::from_str(&deliveries[0].payload).unwrap();
    assert_eq!(
        payload,
        json!({
            "event": "scrape_session.completed",
            "user_id": caller.account_id,
            "scrape_session_id": session,
            "status": "completed",
            "stats": { "total": 2, "pending": 0, "processing": 0, "merged": 1, "rejected": 1, "flagged": 0 },
            "url": format!("{}/v1/me/scrapes/{session}/products", app.state.public_url),
        })
    );
    assert_eq!(
        deliveries[0].payload, deliveries[1].payload,
        "the same bytes for every subscription"
    );
}

#[tokio::test]
async fn snapshots_are_made_once_a_day_and_lag_same_day_scrapes() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    send(
        &app,
        &key,
        vec![item("1"), with(item("2"), &["category_path"], json!([]))],
    )
    .await;
    assert!(
        app.jobs().tick().await.unwrap().snapshot_made,
        "the first tick of a day makes its snapshot"
    );
    let categories = app.json_as(&key, "/v1/categories?marketplace=ozon").await;
    assert_eq!(
        categories["data"],
        json!([
            { "category_path": [], "product_count": 1 },
            { "category_path": ["Бытовая техника", "Чайники"], "product_count": 1 },
        ]),
        "the empty path is an entry of its own"
    );
    let ozon = with(item("3"), &["seller", "id"], json!("s-2"));
    send(
        &app,
        &key,
        vec![with(
            with(ozon, &["marketplace"], json!("wildberries")),
            &["brand"],
            json!("REDMOND"),
        )],
    )
    .await;
    assert!(
        !app.jobs().tick().await.unwrap().snapshot_made,
        "once a day"
    );
    assert_eq!(
        app.json_as(&key, "/v1/brands").await["data"],
        json!([{ "brand": "Redmond", "product_count": 2 }]),
        "same-day scrapes wait"
    );

    app.clock.advance(TimeDelta::days(1));
    assert!(app.jobs().tick().await.unwrap().snapshot_made);
    assert_eq!(
        app.json_as(&key, "/v1/brands").await["data"],
        json!([{ "brand": "REDMOND", "product_count": 3 }]),
        "one brand across marketplaces"
    );
    assert_eq!(
        app.json_as(&key, "/v1/brands?marketplace=wildberries")
            .await["data"],
        json!([{ "brand": "REDMOND", "product_count": 1 }])
    );
}

#[tokio::test]
async fn retention_deletes_old_submissions_and_fires_nothing() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    subscribe(&app, &key, true).await;
    let session = send(&app, &key, vec![item("1")]).await;
    // Held by a dead worker until retention runs.
    merge::claim(&app.db, app.clock.now(), &settings(1))
        .await
        .unwrap();
    app.clock.advance(TimeDelta::days(91));
    let purged = app
        .jobs()
        .retention
        .purge(&app.db, app.clock.now())
        .await
        .unwrap();
    assert_eq!(purged.submissions, 1);
    app.jobs().tick().await.unwrap();
    let view = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}"))
        .await;
    assert_eq!(
        (
            view["data"]["status"].as_str(),
            view["data"]["stats"]["total"].as_i64()
        ),
        (Some("processing"), Some(0))
    );
    assert_eq!(
        webhook_delivery::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn an_upload_of_up_to_8_mib_is_taken_whole() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    // 1,000 items of about 7 KB: more than axum's own 2 MB default.
    let items: Vec<Value> = (0..1000)
        .map(|i| {
            let big = with(item(&i.to_string()), &["name"], json!("н".repeat(1000)));
            with(
                big,
                &["attributes"],
                json!({ "описание": "x".repeat(4096) }),
            )
        })
        .collect();
    let body = serde_json::to_vec(&upload(items)).unwrap();
    assert!((6 << 20..8 << 20).contains(&body.len()), "{}", body.len());
    let response = app
        .client
        .post(app.url("/extension/v1/scrapes"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let session: Value = response.json().await.unwrap();
    assert_eq!(session["data"]["stats"]["total"], 1000, "{session}");
}

mod live {
    use futures_util::SinkExt;
    use serde_json::{Value, json};
    use tokio_tungstenite::tungstenite::Message;

    use super::{item, send};
    use crate::helpers::TestApp;
    use crate::ws::{connect, next};

    fn subscription(id: &str) -> Message {
        let query = format!(
            "subscription {{ scrapeSessionUpdated(id: \"{id}\") {{ status stats {{ pending merged }} }} }}"
        );
        Message::text(
            json!({ "id": "1", "type": "subscribe", "payload": { "query": query } }).to_string(),
        )
    }

    #[tokio::test]
    async fn a_subscription_pushes_session_progress_as_the_merge_pass_moves_it() {
        let app = TestApp::spawn().await;
        let key = app.key("acme").await;
        let session = send(&app, &key, vec![item("1"), item("2")]).await;
        let mut socket = connect(&app, &key).await;
        assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
        socket
            .send(subscription(&session.to_string()))
            .await
            .unwrap();
        let first = next(&mut socket).await.unwrap();
        assert_eq!(
            first["payload"]["data"]["scrapeSessionUpdated"],
            json!({ "status": "PROCESSING", "stats": { "pending": 2, "merged": 0 } })
        );
        // Its cost, as every response over HTTP reports it: five fields, three deep.
        let cost = json!({ "complexity": 5, "depth": 3 });
        assert_eq!(first["payload"]["extensions"]["analyzer"], cost, "{first}");

        app.jobs().tick().await.unwrap();
        let mut last = Value::Null;
        while last["stats"]["merged"] != 2 {
            let update = next(&mut socket)
                .await
                .expect("an update per merged submission");
            assert_eq!(
                update["payload"]["extensions"]["analyzer"], cost,
                "{update}"
            );
            last = update["payload"]["data"]["scrapeSessionUpdated"].clone();
        }
        assert_eq!(
            last,
            json!({ "status": "COMPLETED", "stats": { "pending": 0, "merged": 2 } })
        );
    }

    #[tokio::test]
    async fn a_subscription_is_validated_in_full_like_any_request() {
        let app = TestApp::spawn().await;
        let key = app.key("acme").await;
        let session = send(&app, &key, vec![item("1")]).await;
        let mut socket = connect(&app, &key).await;
        assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
        // An unused variable breaks a rule only full validation checks.
        let query = format!(
            "subscription($unused: Int) {{ scrapeSessionUpdated(id: \"{session}\") {{ status }} }}"
        );
        let subscribe = json!({ "id": "1", "type": "subscribe", "payload": { "query": query } });
        socket
            .send(Message::text(subscribe.to_string()))
            .await
            .unwrap();
        let reply = next(&mut socket).await.expect("a reply");
        let message = reply["payload"]["errors"][0]["message"].as_str();
        assert!(message.is_some_and(|m| m.contains("$unused")), "{reply}");
        assert!(reply["payload"]["data"].is_null(), "{reply}");
        // Coded as over HTTP.
        assert_eq!(
            reply["payload"]["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
            "{reply}"
        );
    }

    #[tokio::test]
    async fn session_products_read_over_the_websocket_are_charged_to_the_quota() {
        let app = TestApp::spawn_with(crate::helpers::daily_quota(3)).await;
        let key = app.key("acme").await;
        let session = send(&app, &key, vec![item("1"), item("2")]).await;
        app.jobs().tick().await.unwrap();
        let mut socket = connect(&app, &key).await;
        assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
        let query = format!(
            "subscription {{ scrapeSessionUpdated(id: \"{session}\") {{ products {{ totalCount }} }} }}"
        );
        for (id, code) in [("1", None), ("2", Some("QUOTA_EXCEEDED"))] {
            let subscribe = json!({ "id": id, "type": "subscribe", "payload": { "query": query } });
            socket
                .send(Message::text(subscribe.to_string()))
                .await
                .unwrap();
            let reply = next(&mut socket).await.expect("the session now");
            // 2 merged products: charged for the first (2 of 3), refused for the second.
            let error = reply["payload"]["errors"][0]["extensions"]["code"].as_str();
            assert_eq!(error, code, "{reply}");
            // A refused response is refused whole, as over HTTP.
            assert_eq!(
                reply["payload"]["data"].is_null(),
                code.is_some(),
                "{reply}"
            );
        }
    }

    #[tokio::test]
    async fn another_accounts_session_cannot_be_watched() {
        let app = TestApp::spawn().await;
        let (owner, stranger) = (app.key("owner").await, app.key("stranger").await);
        let session = send(&app, &owner, vec![item("1")]).await;
        let mut socket = connect(&app, &stranger).await;
        assert_eq!(next(&mut socket).await.unwrap()["type"], "connection_ack");
        socket
            .send(subscription(&session.to_string()))
            .await
            .unwrap();
        let reply = next(&mut socket).await.unwrap();
        assert_eq!(
            reply["payload"]["errors"][0]["extensions"]["code"], "NOT_FOUND",
            "{reply}"
        );
        assert!(reply["payload"]["data"].is_null());
    }

    #[tokio::test]
    async fn a_connection_without_a_valid_key_is_refused() {
        let app = TestApp::spawn().await;
        let mut socket = connect(&app, "vtr_wrong").await;
        let reply = next(&mut socket).await;
        assert!(
            reply.as_ref().is_none_or(|m| m["type"] != "connection_ack"),
            "{reply:?}"
        );
    }
}
