//! The numbers an item may hold: finite, at most 2^53 - 1 either side of
//! zero, anywhere in the item. Outside that they are refused at upload,
//! naming the field, the value and the limit, and a stored one is rejected
//! by the merge in the same words; inside it every number reads back the
//! same from both databases (PostgreSQL prints jsonb numbers with every
//! digit, which once made the largest double unreadable there).

use entity::{SubmissionStatus, submission};
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};
use vitrina::jobs::merge::item_limits::MAX_NUMBER;

use crate::helpers::TestApp;
use crate::helpers::uploads::{item, post_raw, send, store, submissions, upload, with};

/// Where an item holds numbers: every numeric field of the format, and
/// numbers nested in free objects and in a field the item does not know.
const POSITIONS: &[&[&str]] = &[
    &["prices", "0", "price"],
    &["prices", "0", "old_price"],
    &["prices", "0", "stock_quantity"],
    &["special_price", "0", "min"],
    &["special_price", "0", "max"],
    &["seller", "rating"],
    &["seller", "items_sold"],
    &["seller", "reviews_count"],
    &["attributes", "weight"],
    &["stats", "rating"],
    &["stats", "reviews", "2", "votes"],
    &["extra", "deep", "0"],
];

/// Numbers a double holds that are outside the domain, as JSON text.
const OUTSIDE: &[&str] = &[
    "1.7976931348623157e308",
    "-1.7976931348623157e308",
    "1e300",
    "9007199254740992",
    "-9007199254740992",
    "9007199254740991.5",
    "18446744073709551615",
    "-9223372036854775808",
];

/// The field at `path` as the API names it: `prices[0].price`.
fn field(path: &[&str]) -> String {
    let mut name = String::new();
    for segment in path {
        match segment.parse::<usize>() {
            Ok(i) => name.push_str(&format!("[{i}]")),
            Err(_) if name.is_empty() => name.push_str(segment),
            Err(_) => name.push_str(&format!(".{segment}")),
        }
    }
    name
}

/// An item with a number at every position (each then replaced in turn).
fn numeric_item() -> Value {
    let mut full = item("n");
    full["seller"]["rating"] = json!(4.8);
    full["seller"]["items_sold"] = json!(1200);
    full["seller"]["reviews_count"] = json!(310);
    full["attributes"]["weight"] = json!(1.5);
    full["stats"] =
        json!({ "rating": 4.8, "reviews": [{ "votes": 1 }, { "votes": 2 }, { "votes": 3 }] });
    full["extra"] = json!({ "deep": [7] });
    full
}

/// An upload of a good item and, second, `numeric_item` with `number`
/// written as is (JSON text) at `path`.
fn body_with(path: &[&str], number: &str) -> String {
    let marked = with(numeric_item(), path, json!("@number@"));
    upload(vec![item("good"), marked])
        .to_string()
        .replace("\"@number@\"", number)
}

async fn refusal(app: &TestApp, key: &str, body: String) -> (u16, String) {
    let response = post_raw(app, key, body, None).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    if status == 400 {
        assert_eq!(body["error"]["code"], "invalid_body", "{body}");
    }
    (
        status,
        body["error"]["message"].as_str().unwrap_or("").to_owned(),
    )
}

fn domain() -> String {
    format!("outside the numbers an item may hold (finite, from -{MAX_NUMBER} to {MAX_NUMBER})")
}

#[tokio::test]
async fn a_number_outside_the_domain_anywhere_in_an_item_is_refused_naming_field_value_and_limit() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for path in POSITIONS {
        let field = field(path);
        for number in OUTSIDE {
            let shown = serde_json::from_str::<Value>(number).unwrap().to_string();
            let (status, message) = refusal(&app, &key, body_with(path, number)).await;
            assert_eq!(
                (status, message),
                (400, format!("items[1].{field} is {shown}, {}.", domain())),
                "{number} at {field}"
            );
        }
        // Beyond a double: never a value serde_json holds, refused as it is read.
        for number in ["1e309", "-1e400", &"9".repeat(400)] {
            let (status, message) = refusal(&app, &key, body_with(path, number)).await;
            assert_eq!(status, 400, "{number} at {field}: {message}");
            let named = format!(
                "items[1].{field} is a number beyond what a double holds (at line 1, column "
            );
            assert!(message.starts_with(&named), "{message}");
            assert!(message.ends_with(&format!("{}.", domain())), "{message}");
        }
    }
    assert_eq!(submission::Entity::find().count(&app.db).await.unwrap(), 0);

    // The edges are inside: the largest magnitude, the smallest subnormal,
    // negative zero.
    let inside = [
        MAX_NUMBER.to_string(),
        format!("-{MAX_NUMBER}"),
        "9007199254740991.0".to_owned(),
        "5e-324".to_owned(),
        "-0.0".to_owned(),
        "0".to_owned(),
    ];
    for path in POSITIONS {
        for number in &inside {
            let (status, message) = refusal(&app, &key, body_with(path, number)).await;
            assert_eq!(status, 202, "{number} at {}: {message}", field(path));
        }
    }
}

#[tokio::test]
async fn numbers_at_the_edges_of_the_domain_merge_and_read_back_the_same_on_both_databases() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let max = MAX_NUMBER as f64;
    let mut edge = item("edge");
    edge["prices"][0] = json!({ "country_code": "ru", "user_auth_status": "anonymous",
        "price": max, "old_price": max, "currency": "RUB", "stock_quantity": MAX_NUMBER });
    edge["special_price"][0]["min"] = json!(5e-324);
    edge["special_price"][0]["max"] = json!(max);
    edge["seller"]["rating"] = json!(2.2250738585072014e-308);
    edge["seller"]["items_sold"] = json!(MAX_NUMBER);
    edge["seller"]["reviews_count"] = json!(MAX_NUMBER);
    let stats = json!({ "largest": MAX_NUMBER, "most_negative": -(MAX_NUMBER as i64),
        "subnormal": 5e-324, "smallest_normal": 2.2250738585072014e-308, "tenth": 0.1,
        "third": 1.0 / 3.0, "double": max });
    edge["stats"] = stats.clone();
    // Negative zero is written as 0: PostgreSQL's jsonb keeps no sign on it.
    let body = upload(vec![edge])
        .to_string()
        .replace("\"tenth\":0.1", "\"tenth\":0.1,\"negative_zero\":-0.0");
    let response = post_raw(&app, &key, body, None).await;
    assert_eq!(response.status(), 202);
    let session: Value = response.json().await.unwrap();
    let session = session["data"]["id"].as_str().unwrap().to_owned();
    let stored = &submissions(&app, session.parse().unwrap()).await[0];
    assert_eq!(stored.payload["stats"]["negative_zero"], json!(0.0));
    assert!(
        !stored.payload["stats"]["negative_zero"]
            .as_f64()
            .unwrap()
            .is_sign_negative()
    );

    let report = app.jobs().tick().await.expect("the tick completes").merge;
    assert_eq!((report.merged, report.rejected), (1, 0));
    let entries = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}/products"))
        .await;
    let product = &entries["data"][0]["product"];
    let mut expected_stats = stats;
    expected_stats["negative_zero"] = json!(0.0);
    assert_eq!(product["stats"], expected_stats);
    assert_eq!(product["prices"][0]["price"], json!(max));
    assert_eq!(product["prices"][0]["stock_quantity"], json!(MAX_NUMBER));
    assert_eq!(product["special_price"][0]["min"], json!(5e-324));
    assert_eq!(product["special_price"][0]["max"], json!(max));
    let sellers = app
        .json_as(&key, "/v1/sellers?marketplace=ozon&seller_id=s-1")
        .await;
    let seller_stats = &sellers["data"][0]["stats"];
    assert_eq!(seller_stats["rating"], json!(2.2250738585072014e-308));
    assert_eq!(seller_stats["items_sold"], json!(MAX_NUMBER));
}

#[tokio::test]
async fn a_stored_number_outside_the_domain_is_rejected_at_merge_in_the_same_words() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("1")]).await;
    let cases = [
        (&["prices", "0", "price"][..], json!(1e300)),
        (
            &["stats"],
            json!({ "reviews": [1, { "votes": 1.7976931348623157e308 }] }),
        ),
        (&["seller", "items_sold"], json!(u64::MAX)),
    ];
    for (path, number) in &cases {
        // Past the upload's checks, as an older release stored it.
        let payload = with(item("stored"), path, number.clone());
        store(&app, session, payload).await.unwrap();
    }

    let report = app.jobs().tick().await.expect("the tick completes").merge;
    assert_eq!((report.merged, report.rejected), (1, 3));
    let rows = submissions(&app, session).await;
    let expected = [
        "prices[0].price is 1e+300",
        "stats.reviews[1].votes is 1.7976931348623157e+308",
        "seller.items_sold is 18446744073709551615",
    ];
    for (row, start) in rows[1..].iter().zip(expected) {
        assert_eq!(row.status, SubmissionStatus::Rejected);
        assert_eq!(
            row.reason.as_deref().unwrap(),
            format!("{start}, {}", domain())
        );
    }
}
