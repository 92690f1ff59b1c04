//! Uploads through the extension API: a valid item to vary, and the
//! submissions an upload made.

use entity::{SubmissionStatus, submission};
use sea_orm::sea_query::Query;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, NotSet,
    QueryFilter, QueryOrder, QuerySelect,
};
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::clock::Clock;

use super::TestApp;

/// A valid item; tests change what they are about.
pub fn item(external_id: &str) -> Value {
    json!({
        "marketplace": "ozon",
        "external_id": external_id,
        "url": format!("https://www.ozon.ru/product/{external_id}/?from=search"),
        "language": "ru",
        "name": format!("Чайник {external_id}"),
        "brand": "Redmond",
        "category_path": ["Бытовая техника", "Чайники"],
        "attributes": { "цвет": "белый", "original": true },
        "image_cover": "https://img.example/1.webp",
        "seller": { "id": "s-1", "name": "ООО «Вектор»", "code": format!("RM-{external_id}"), "tin": "7701234567" },
        "prices": [{ "country_code": "ru", "user_auth_status": "anonymous", "price": 1000, "old_price": 1200, "currency": "RUB", "stock_status": "in_stock", "stock_quantity": 5 }],
        "special_price": [{ "country_code": "ru", "region_code": "", "user_auth_status": "anonymous", "min": 900, "max": 1000 }]
    })
}

/// `item(id)` of `brand`, priced `price` RUB.
pub fn priced(id: &str, brand: &str, price: f64) -> Value {
    let priced = with(item(id), &["prices", "0", "price"], json!(price));
    with(priced, &["brand"], json!(brand))
}

/// Uploads `items` as `key` and merges them (one tick of the app's jobs).
pub async fn send_and_merge(app: &TestApp, key: &str, items: Vec<Value>) {
    send(app, key, items).await;
    app.jobs().tick().await.expect("merge");
}

pub fn upload(items: Vec<Value>) -> Value {
    json!({ "source_type": "bulk", "intent": "catalog_import", "items": items })
}

/// `value` with the field at `path` (object keys or array indexes) replaced.
pub fn with(mut value: Value, path: &[&str], new: Value) -> Value {
    let mut target = &mut value;
    for key in path {
        target = match key.parse::<usize>() {
            Ok(i) => &mut target[i],
            Err(_) => &mut target[*key],
        };
    }
    *target = new;
    value
}

/// Stores `payload` as a pending submission of `session` straight into the
/// database, past the upload's checks.
pub async fn store(app: &TestApp, session: Uuid, payload: Value) -> Result<(), DbErr> {
    submission::ActiveModel {
        id: NotSet,
        session_id: Set(session),
        status: Set(SubmissionStatus::Pending),
        payload: Set(payload),
        product_id: Set(None),
        reason: Set(None),
        lease_expires_at: Set(None),
        created_at: Set(app.clock.now()),
        updated_at: Set(app.clock.now()),
    }
    .insert(&app.db)
    .await
    .map(|_| ())
}

/// POSTs `body` to the upload endpoint as `key`, exactly as written, with
/// an `Idempotency-Key` when given.
pub async fn post_raw(
    app: &TestApp,
    key: &str,
    body: impl Into<reqwest::Body>,
    idempotency_key: Option<&str>,
) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url("/extension/v1/scrapes"))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(body);
    if let Some(idempotency_key) = idempotency_key {
        request = request.header("idempotency-key", idempotency_key);
    }
    request.send().await.expect("request")
}

/// Uploads and returns the session id.
pub async fn send(app: &TestApp, key: &str, items: Vec<Value>) -> Uuid {
    let response = app
        .post_as(key, "/extension/v1/scrapes", &upload(items))
        .await;
    assert_eq!(response.status(), 202);
    let body: Value = response.json().await.unwrap();
    body["data"]["id"].as_str().unwrap().parse().unwrap()
}

pub async fn submissions(app: &TestApp, session: Uuid) -> Vec<submission::Model> {
    submission::Entity::find()
        .filter(submission::Column::SessionId.eq(session))
        .order_by_asc(submission::Column::Id)
        .all(&app.db)
        .await
        .unwrap()
}

/// The status and reason of each submission of `session`, in submission
/// order, without reading what they store (which may be unreadable).
pub async fn outcomes(app: &TestApp, session: Uuid) -> Vec<(SubmissionStatus, Option<String>)> {
    submission::Entity::find()
        .select_only()
        .columns([submission::Column::Status, submission::Column::Reason])
        .filter(submission::Column::SessionId.eq(session))
        .order_by_asc(submission::Column::Id)
        .into_tuple()
        .all(&app.db)
        .await
        .unwrap()
}

/// The merges begun of each submission of `session`, in submission order.
pub async fn attempts(app: &TestApp, session: Uuid) -> Vec<i32> {
    let query = Query::select()
        .column(submission::Attempts)
        .from(submission::Entity)
        .and_where(submission::Column::SessionId.eq(session))
        .order_by(submission::Column::Id, sea_orm::Order::Asc)
        .to_owned();
    let rows = app.db.query_all(&query).await.unwrap();
    rows.iter()
        .map(|row| row.try_get_by_index::<i32>(0).unwrap())
        .collect()
}
