//! REST v1 tests: the caller's scrape sessions (`/v1/me/scrapes*`), their live
//! status, their products, and the daily data quota metered on
//! `/v1/me/scrapes/{id}/products`.

use std::collections::BTreeSet;

use chrono::{DateTime, NaiveTime, TimeDelta};
use entity::{Marketplace, SubmissionStatus, account, quota_usage, submission};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait,
    IntoActiveModel, QueryFilter,
};
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::clock::Clock;

use crate::fixtures::{
    insert_brand_snapshot, insert_category_snapshot, insert_current_price, insert_observation,
    insert_product, insert_seller, insert_session, insert_special_price, insert_submission,
    observation, product, seller, strings,
};
use crate::helpers::{
    TestApp, daily_quota, error_of, header, ids, required_header, rest_error, session_with,
    test_start,
};

// ---------------------------------------------------------------- helpers

fn scrapes(id: Uuid) -> String {
    format!("/v1/me/scrapes/{id}")
}

fn session_products(id: Uuid) -> String {
    format!("/v1/me/scrapes/{id}/products")
}

fn keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

/// (X-Quota-Limit, X-Quota-Remaining), both required.
fn quota(response: &reqwest::Response) -> (i64, i64) {
    let number = |name| {
        required_header(response, name)
            .parse::<i64>()
            .expect("an integer")
    };
    (number("x-quota-limit"), number("x-quota-remaining"))
}

async fn account_id(db: &DatabaseConnection, name: &str) -> Uuid {
    account::Entity::find()
        .filter(account::Column::Name.eq(name))
        .one(db)
        .await
        .unwrap()
        .expect("account exists")
        .id
}

async fn set_status(db: &DatabaseConnection, row: &submission::Model, status: SubmissionStatus) {
    let mut active = row.clone().into_active_model();
    active.status = Set(status);
    active.update(db).await.expect("update submission");
}

fn stats(
    total: i64,
    pending: i64,
    processing: i64,
    merged: i64,
    rejected: i64,
    flagged: i64,
) -> Value {
    json!({
        "total": total, "pending": pending, "processing": processing,
        "merged": merged, "rejected": rejected, "flagged": flagged,
    })
}

// ---------------------------------------------------------------- GET /me/scrapes

#[tokio::test]
async fn scrapes_list_only_the_callers_sessions_most_recent_first() {
    let app = TestApp::spawn().await;
    let (a, b) = (app.key("alpha").await, app.key("beta").await);
    let t = test_start();
    let oldest = insert_session(&app.db, &a, t - TimeDelta::hours(3)).await;
    let newest = insert_session(&app.db, &a, t - TimeDelta::hours(1)).await;
    let middle = insert_session(&app.db, &a, t - TimeDelta::hours(2)).await;
    insert_session(&app.db, &b, t).await;

    let body = app.json_as(&a, "/v1/me/scrapes").await;
    let expected: Vec<String> = [&newest, &middle, &oldest]
        .iter()
        .map(|s| s.id.to_string())
        .collect();
    assert_eq!(ids(body["data"].as_array().expect("data")), expected);
    assert_eq!(
        body["meta"],
        json!({"total": 3, "page": 1, "page_size": 100})
    );
}

#[tokio::test]
async fn scrapes_list_pages_with_total_meta() {
    let app = TestApp::spawn().await;
    let key = app.key("alpha").await;
    let t = test_start();
    for minutes in [180, 30, 120] {
        insert_session(&app.db, &key, t - TimeDelta::minutes(minutes)).await;
    }
    let second = insert_session(&app.db, &key, t - TimeDelta::minutes(60)).await;

    let body = app.json_as(&key, "/v1/me/scrapes?page_size=1&page=2").await;
    assert_eq!(
        ids(body["data"].as_array().expect("data")),
        vec![second.id.to_string()]
    );
    assert_eq!(body["meta"], json!({"total": 4, "page": 2, "page_size": 1}));

    let past_end = app.json_as(&key, "/v1/me/scrapes?page_size=2&page=3").await;
    assert_eq!(past_end["data"], json!([]));
    assert_eq!(
        past_end["meta"],
        json!({"total": 4, "page": 3, "page_size": 2})
    );
}

#[tokio::test]
async fn scrape_session_has_exactly_the_documented_fields() {
    let app = TestApp::spawn().await;
    let key = app.key("alpha").await;
    let created = test_start() - TimeDelta::minutes(5);
    let session = insert_session(&app.db, &key, created).await;

    let listed = app.json_as(&key, "/v1/me/scrapes").await["data"][0].clone();
    let single = app.json_as(&key, &scrapes(session.id)).await;
    assert_eq!(keys(&single), BTreeSet::from(["data"]));
    assert_eq!(single["data"], listed, "list element and single agree");

    assert_eq!(
        keys(&listed),
        BTreeSet::from([
            "id",
            "status",
            "stats",
            "metadata",
            "created_at",
            "updated_at"
        ])
    );
    assert_eq!(listed["id"], session.id.to_string());
    assert_eq!(
        keys(&listed["stats"]),
        BTreeSet::from([
            "total",
            "pending",
            "processing",
            "merged",
            "rejected",
            "flagged"
        ])
    );
    assert_eq!(
        listed["metadata"],
        json!({"source_type": "page", "intent": "price_monitoring", "url_count": 1})
    );
    for field in ["created_at", "updated_at"] {
        let text = listed[field].as_str().expect("a string");
        assert!(text.ends_with('Z'), "{field} = {text}");
        let parsed = DateTime::parse_from_rfc3339(text).expect("RFC 3339");
        assert_eq!(parsed, created, "{field}");
    }
}

#[tokio::test]
async fn scrapes_list_stats_take_one_query_per_page_not_per_session() {
    let app = TestApp::spawn_uncached().await;
    let key = app.key("alpha").await;
    let statements_for_list = || async {
        let before = app.statements();
        app.json_as(&key, "/v1/me/scrapes").await;
        app.statements() - before
    };
    let session = insert_session(&app.db, &key, test_start()).await;
    insert_submission(&app.db, session.id, SubmissionStatus::Pending, None).await;
    let one = statements_for_list().await;
    for _ in 0..9 {
        let session = insert_session(&app.db, &key, test_start()).await;
        insert_submission(&app.db, session.id, SubmissionStatus::Merged, None).await;
    }
    let body = app.json_as(&key, "/v1/me/scrapes").await;
    assert_eq!(body["meta"]["total"], 10);
    assert_eq!(
        statements_for_list().await,
        one,
        "stats are not fetched per session"
    );
}

// ---------------------------------------------------------------- tenancy and ids

#[tokio::test]
async fn another_accounts_session_is_not_found_like_an_unknown_id() {
    let app = TestApp::spawn().await;
    let (a, b) = (app.key("alpha").await, app.key("beta").await);
    let theirs = session_with(&app, &a, 1, 0).await;
    let unknown = Uuid::new_v4();

    for (mine, other) in [
        (scrapes(theirs), scrapes(unknown)),
        (session_products(theirs), session_products(unknown)),
    ] {
        let hidden = app.get_as(&b, &mine).await;
        assert_eq!(hidden.status(), 404, "{mine}");
        let hidden: Value = hidden.json().await.unwrap();
        let missing: Value = app.get_as(&b, &other).await.json().await.unwrap();
        assert_eq!(hidden["error"]["code"], "not_found");
        assert_eq!(hidden, missing, "nothing tells the two apart");
    }
    let listed = app.json_as(&b, "/v1/me/scrapes").await;
    assert_eq!(listed["data"], json!([]));
    assert_eq!(listed["meta"]["total"], 0);
    // The owner still sees it.
    assert_eq!(
        ids(app.json_as(&a, "/v1/me/scrapes").await["data"]
            .as_array()
            .expect("data")),
        vec![theirs.to_string()]
    );
}

#[tokio::test]
async fn malformed_session_id_is_invalid_parameter() {
    let app = TestApp::spawn().await;
    let key = app.key("alpha").await;
    for path in ["/v1/me/scrapes/not-a-uuid", "/v1/me/scrapes/123/products"] {
        assert_eq!(
            rest_error(&app, &key, path).await,
            (400, "invalid_parameter".to_owned()),
            "{path}"
        );
    }
}

// ---------------------------------------------------------------- live status

#[tokio::test]
async fn session_without_submissions_is_processing() {
    let app = TestApp::spawn().await;
    let key = app.key("alpha").await;
    let session = insert_session(&app.db, &key, test_start()).await;

    let data = app.json_as(&key, &scrapes(session.id)).await["data"].clone();
    assert_eq!(data["status"], "processing");
    assert_eq!(data["stats"], stats(0, 0, 0, 0, 0, 0));
}

#[tokio::test]
async fn session_with_pending_or_processing_submissions_is_processing() {
    let app = TestApp::spawn().await;
    let key = app.key("alpha").await;
    let pending = insert_session(&app.db, &key, test_start()).await;
    insert_submission(&app.db, pending.id, SubmissionStatus::Pending, None).await;
    insert_submission(&app.db, pending.id, SubmissionStatus::Rejected, None).await;
    let processing = insert_session(&app.db, &key, test_start()).await;
    insert_submission(&app.db, processing.id, SubmissionStatus::Processing, None).await;
    insert_submission(&app.db, processing.id, SubmissionStatus::Flagged, None).await;
    insert_submission(&app.db, processing.id, SubmissionStatus::Flagged, None).await;

    let data = app.json_as(&key, &scrapes(pending.id)).await["data"].clone();
    assert_eq!(data["status"], "processing");
    assert_eq!(data["stats"], stats(2, 1, 0, 0, 1, 0));
    let data = app.json_as(&key, &scrapes(processing.id)).await["data"].clone();
    assert_eq!(data["status"], "processing");
    assert_eq!(data["stats"], stats(3, 0, 1, 0, 0, 2));
}

#[tokio::test]
async fn session_is_completed_once_nothing_is_pending_or_processing() {
    let app = TestApp::spawn().await;
    let key = app.key("alpha").await;
    let session = insert_session(&app.db, &key, test_start()).await;
    for status in [
        SubmissionStatus::Merged,
        SubmissionStatus::Rejected,
        SubmissionStatus::Rejected,
        SubmissionStatus::Flagged,
    ] {
        insert_submission(&app.db, session.id, status, None).await;
    }

    let data = app.json_as(&key, &scrapes(session.id)).await["data"].clone();
    assert_eq!(
        data["status"], "completed",
        "rejected and flagged do not hold it back"
    );
    assert_eq!(data["stats"], stats(4, 0, 0, 1, 2, 1));
    let listed = app.json_as(&key, "/v1/me/scrapes").await["data"][0].clone();
    assert_eq!(listed, data);
}

#[tokio::test]
async fn session_status_follows_its_submissions_live() {
    // Statuses are set past the app: uncached, each read runs.
    let app = TestApp::spawn_uncached().await;
    let key = app.key("alpha").await;
    let session = insert_session(&app.db, &key, test_start()).await;
    let first = insert_submission(&app.db, session.id, SubmissionStatus::Pending, None).await;
    let second = insert_submission(&app.db, session.id, SubmissionStatus::Merged, None).await;
    let path = scrapes(session.id);
    let read = || async { app.json_as(&key, &path).await["data"].clone() };

    assert_eq!(read().await["status"], "processing");
    set_status(&app.db, &first, SubmissionStatus::Processing).await;
    let data = read().await;
    assert_eq!(data["status"], "processing");
    assert_eq!(data["stats"], stats(2, 0, 1, 1, 0, 0));

    set_status(&app.db, &first, SubmissionStatus::Rejected).await;
    let data = read().await;
    assert_eq!(data["status"], "completed");
    assert_eq!(data["stats"], stats(2, 0, 0, 1, 1, 0));

    // Nothing is cached: a row going back to pending reopens it.
    set_status(&app.db, &second, SubmissionStatus::Pending).await;
    let data = read().await;
    assert_eq!(data["status"], "processing");
    assert_eq!(data["stats"], stats(2, 1, 0, 0, 1, 0));
}

// ---------------------------------------------------------------- GET /me/scrapes/{id}/products

#[tokio::test]
async fn session_products_list_every_submission_in_submission_order() {
    let app = TestApp::spawn().await;
    let key = app.key("alpha").await;
    let shop = insert_seller(&app.db, seller(Marketplace::Wildberries, "s1")).await;
    let merged = insert_product(&app.db, &shop, product("merged")).await;
    let flagged = insert_product(&app.db, &shop, product("flagged")).await;
    let session = insert_session(&app.db, &key, test_start()).await;
    let order = [
        (SubmissionStatus::Rejected, None),
        (SubmissionStatus::Merged, Some(merged.id)),
        (SubmissionStatus::Pending, None),
        (SubmissionStatus::Flagged, Some(flagged.id)),
        (SubmissionStatus::Processing, None),
    ];
    for (status, product_id) in order {
        insert_submission(&app.db, session.id, status, product_id).await;
    }

    let body = app.json_as(&key, &session_products(session.id)).await;
    let rows = body["data"].as_array().unwrap();
    let statuses: Vec<&str> = rows
        .iter()
        .map(|r| r["submission_status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["rejected", "merged", "pending", "flagged", "processing"]
    );
    for (row, (status, _)) in rows.iter().zip(order) {
        assert_eq!(keys(row), BTreeSet::from(["submission_status", "product"]));
        if status == SubmissionStatus::Merged {
            assert_eq!(row["product"]["id"], merged.id.to_string());
        } else {
            assert_eq!(row["product"], Value::Null, "{status:?} shows no product");
        }
    }
    assert_eq!(
        body["meta"],
        json!({"total": 5, "page": 1, "page_size": 100})
    );
}

#[tokio::test]
async fn merged_session_product_is_the_full_product() {
    let app = TestApp::spawn().await;
    let key = app.key("alpha").await;
    let shop = insert_seller(&app.db, seller(Marketplace::Ozon, "ozon-42")).await;
    let p = insert_product(&app.db, &shop, product("sku-7")).await;
    insert_current_price(&app.db, p.id, observation(199.5, test_start())).await;
    insert_special_price(&app.db, p.id, "msk").await;
    let session = insert_session(&app.db, &key, test_start()).await;
    insert_submission(&app.db, session.id, SubmissionStatus::Merged, Some(p.id)).await;

    let body = app.json_as(&key, &session_products(session.id)).await;
    let shown = &body["data"][0]["product"];
    assert_eq!(shown["id"], p.id.to_string());
    assert_eq!(shown["external_id"], "sku-7");
    assert_eq!(
        shown["category_path"],
        json!(strings(&["Электроника", "Наушники"]))
    );
    assert_eq!(shown["special_price"][0]["region_code"], "msk");
    assert_eq!(
        shown["seller"],
        json!({"id": "ozon-42", "name": "Seller ozon-42", "code": "SC-sku-7"})
    );
    let prices = shown["prices"].as_array().expect("prices array");
    assert_eq!(prices.len(), 1);
    assert_eq!(prices[0]["price"], 199.5);
    assert_eq!(prices[0]["currency"], "RUB");
    // The same object as GET /products/{id}.
    let direct = app.json_as(&key, &format!("/v1/products/{}", p.id)).await;
    assert_eq!(shown, &direct["data"]);
}

#[tokio::test]
async fn session_products_page_with_total_meta() {
    let app = TestApp::spawn().await;
    let key = app.key("alpha").await;
    let session = insert_session(&app.db, &key, test_start()).await;
    for status in [
        SubmissionStatus::Pending,
        SubmissionStatus::Rejected,
        SubmissionStatus::Flagged,
    ] {
        insert_submission(&app.db, session.id, status, None).await;
    }

    let path = format!("{}?page_size=1&page=2", session_products(session.id));
    let body = app.json_as(&key, &path).await;
    assert_eq!(
        body["data"],
        json!([{"submission_status": "rejected", "product": null}])
    );
    assert_eq!(body["meta"], json!({"total": 3, "page": 2, "page_size": 1}));

    let path = format!("{}?page_size=2&page=2", session_products(session.id));
    let body = app.json_as(&key, &path).await;
    assert_eq!(
        body["data"],
        json!([{"submission_status": "flagged", "product": null}])
    );
}

// ---------------------------------------------------------------- daily quota

#[tokio::test]
async fn quota_is_charged_only_for_rows_with_a_product() {
    let app = TestApp::spawn_with(daily_quota(10)).await;
    let key = app.key("alpha").await;
    let shop = insert_seller(&app.db, seller(Marketplace::Wildberries, "s1")).await;
    let session = insert_session(&app.db, &key, test_start()).await;
    for (i, status) in [
        SubmissionStatus::Merged,
        SubmissionStatus::Pending,
        SubmissionStatus::Merged,
        SubmissionStatus::Flagged,
        SubmissionStatus::Rejected,
    ]
    .into_iter()
    .enumerate()
    {
        let p = insert_product(&app.db, &shop, product(&format!("p{i}"))).await;
        // Non-merged rows point at a product too: they must still cost nothing.
        insert_submission(&app.db, session.id, status, Some(p.id)).await;
    }

    let response = app.get_as(&key, &session_products(session.id)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(quota(&response), (10, 8), "two merged rows charged");
    let response = app.get_as(&key, &session_products(session.id)).await;
    assert_eq!(quota(&response), (10, 6), "every read is charged");
}

#[tokio::test]
async fn pending_placeholders_cost_no_quota() {
    let app = TestApp::spawn_with(daily_quota(2)).await;
    let key = app.key("alpha").await;
    let pending = insert_session(&app.db, &key, test_start()).await;
    for _ in 0..3 {
        insert_submission(&app.db, pending.id, SubmissionStatus::Pending, None).await;
    }
    let merged = session_with(&app, &key, 2, 0).await;

    let response = app.get_as(&key, &session_products(pending.id)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(quota(&response), (2, 2), "nothing charged");

    let response = app.get_as(&key, &session_products(merged)).await;
    assert_eq!(quota(&response), (2, 0));
    // With the quota used up, placeholders are still served for free.
    let response = app.get_as(&key, &session_products(pending.id)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(quota(&response), (2, 0));
}

#[tokio::test]
async fn request_passing_the_quota_is_refused_whole_and_charges_nothing() {
    let app = TestApp::spawn_with(daily_quota(5)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 3, 0).await;
    let path = session_products(session);

    assert_eq!(quota(&app.get_as(&key, &path).await), (5, 2));

    let refused = app.get_as(&key, &path).await;
    assert_eq!(header(&refused, "retry-after"), Some("43200"));
    assert_eq!(
        quota(&refused),
        (5, 2),
        "the refusal tells the true remainder"
    );
    assert_eq!(error_of(refused).await, (429, "quota_exceeded".to_owned()));

    let smaller = app.get_as(&key, &format!("{path}?page_size=2")).await;
    assert_eq!(smaller.status(), 200);
    assert_eq!(
        quota(&smaller),
        (5, 0),
        "the refused request charged nothing"
    );
    let body: Value = smaller.json().await.unwrap();
    assert_eq!(body["data"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn quota_resets_at_the_next_utc_midnight() {
    let app = TestApp::spawn_with(daily_quota(2)).await;
    let key = app.key("alpha").await;
    let path = session_products(session_with(&app, &key, 2, 0).await);

    assert_eq!(quota(&app.get_as(&key, &path).await), (2, 0));
    let refused = app.get_as(&key, &path).await;
    assert_eq!(refused.status(), 429);
    let wait: i64 = header(&refused, "retry-after").unwrap().parse().unwrap();

    app.clock.advance(TimeDelta::seconds(wait - 1));
    assert_eq!(
        app.clock.now().time(),
        NaiveTime::from_hms_opt(23, 59, 59).unwrap()
    );
    let last_second = app.get_as(&key, &path).await;
    assert_eq!(header(&last_second, "retry-after"), Some("1"));
    assert_eq!(error_of(last_second).await.1, "quota_exceeded");

    app.clock.advance(TimeDelta::seconds(1));
    let next_day = app.get_as(&key, &path).await;
    assert_eq!(next_day.status(), 200);
    assert_eq!(quota(&next_day), (2, 0), "a fresh day, charged again");
}

#[tokio::test]
async fn accounts_own_daily_quota_overrides_the_default() {
    let app = TestApp::spawn_with(daily_quota(100)).await;
    let key = app.key("alpha").await;
    let path = session_products(session_with(&app, &key, 3, 0).await);
    let id = account_id(&app.db, "alpha").await;
    let mut row = account::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
        .into_active_model();
    row.daily_quota = Set(Some(4));
    row.update(&app.db).await.unwrap();

    assert_eq!(quota(&app.get_as(&key, &path).await), (4, 1));
    let refused = app.get_as(&key, &path).await;
    assert_eq!(error_of(refused).await, (429, "quota_exceeded".to_owned()));
}

#[tokio::test]
async fn other_endpoints_do_not_consume_the_quota() {
    let app = TestApp::spawn_with(daily_quota(1)).await;
    let key = app.key("alpha").await;
    let session = session_with(&app, &key, 1, 0).await;
    let product_id = app.json_as(&key, "/v1/products").await["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let pid = Uuid::parse_str(&product_id).unwrap();
    insert_observation(&app.db, pid, observation(90.0, test_start())).await;
    let day = test_start().date_naive();
    let wb = Marketplace::Wildberries;
    insert_category_snapshot(&app.db, day, wb, &["Электроника"], 1).await;
    insert_brand_snapshot(&app.db, day, None, "Acme", 1).await;

    for path in [
        "/v1/me/scrapes".to_owned(),
        scrapes(session),
        "/v1/products".to_owned(),
        format!("/v1/products/{product_id}"),
        format!("/v1/products/{product_id}/price-history"),
        "/v1/categories?marketplace=wildberries".to_owned(),
        "/v1/brands".to_owned(),
    ] {
        for _ in 0..2 {
            let response = app.get_as(&key, &path).await;
            assert_eq!(response.status(), 200, "{path}");
            assert_eq!(
                header(&response, "x-quota-limit"),
                None,
                "{path} is not metered"
            );
            assert_eq!(
                header(&response, "x-quota-remaining"),
                None,
                "{path} is not metered"
            );
        }
    }
    let metered = app.get_as(&key, &session_products(session)).await;
    assert_eq!(metered.status(), 200);
    assert_eq!(quota(&metered), (1, 0), "the whole quota was still there");
}

#[tokio::test]
async fn quota_is_per_account() {
    let app = TestApp::spawn_with(daily_quota(1)).await;
    let (a, b) = (app.key("alpha").await, app.key("beta").await);
    let a_path = session_products(session_with(&app, &a, 1, 0).await);
    let b_path = session_products(session_with(&app, &b, 1, 0).await);

    assert_eq!(quota(&app.get_as(&a, &a_path).await), (1, 0));
    assert_eq!(app.get_as(&a, &a_path).await.status(), 429);

    let other = app.get_as(&b, &b_path).await;
    assert_eq!(other.status(), 200);
    assert_eq!(quota(&other), (1, 0));
    // A second key of the same account shares its quota.
    let a2 = app.key("alpha").await;
    assert_eq!(app.get_as(&a2, &a_path).await.status(), 429);
}

#[tokio::test]
async fn quota_usage_lives_in_the_database_and_survives_a_restart() {
    let app = TestApp::spawn_with(daily_quota(5)).await;
    let key = app.key("alpha").await;
    let path = session_products(session_with(&app, &key, 3, 0).await);
    assert_eq!(quota(&app.get_as(&key, &path).await), (5, 2));

    let usage = quota_usage::Entity::find().all(&app.db).await.unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].account_id, account_id(&app.db, "alpha").await);
    assert_eq!(usage[0].day, test_start().date_naive());
    assert_eq!(usage[0].rows_used, 3);

    let addr = app
        .replica(vitrina::config::Settings {
            limits: daily_quota(5),
            ..Default::default()
        })
        .await;
    let again = |p: String| {
        app.client
            .get(format!("http://{addr}{p}"))
            .bearer_auth(&key)
            .send()
    };
    let refused = again(path.clone()).await.unwrap();
    assert_eq!(error_of(refused).await, (429, "quota_exceeded".to_owned()));
    let smaller = again(format!("{path}?page_size=2")).await.unwrap();
    assert_eq!(quota(&smaller), (5, 0));
}
