//! Conditional requests: every successful GET of REST v1 and of `GET
//! /graphql` carries an ETag; the same request with it in `If-None-Match`
//! is `304 Not Modified`, with no body, counted against the rate limit like
//! any request (its answer was worked out to compare it) but charging no
//! quota; once a merge changes the answer it is a 200 again. The worst
//! cases (`*` in a loop, lists split over headers, hostile lists) are in
//! `hostile_conditional.rs`.

use reqwest::Response;
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::config::{Limits, Settings};

use crate::helpers::graphql::post_response;
use crate::helpers::uploads::{item, send};
use crate::helpers::{TestApp, header, required_header};

/// The app with `rate` requests a minute and `quota` rows a day.
async fn app_with(rate: u32, quota: i64) -> (TestApp, String) {
    let app = TestApp::spawn_with(Limits {
        rate_per_minute: rate,
        daily_quota: quota,
        ..Limits::default()
    })
    .await;
    let key = app.key("acme").await;
    (app, key)
}

async fn get(app: &TestApp, key: &str, path: &str, etag: Option<&str>) -> Response {
    let mut request = app.client.get(app.url(path)).bearer_auth(key);
    if let Some(etag) = etag {
        request = request.header("if-none-match", etag);
    }
    request.send().await.expect("request")
}

fn remaining(response: &Response, limit: &str) -> i64 {
    required_header(response, limit).parse().expect("a number")
}

/// Merges everything uploaded so far.
async fn merge(app: &TestApp) {
    app.jobs().tick().await.expect("tick");
}

/// A 304 as RFC 9110 has it: no body, the tag and how to keep the answer.
async fn assert_not_modified(response: Response, etag: &str, cache_control: &str) {
    assert_eq!(response.status(), 304);
    assert_eq!(required_header(&response, "etag"), etag);
    assert_eq!(required_header(&response, "cache-control"), cache_control);
    assert_eq!(header(&response, "vary"), Some("authorization"));
    assert!(response.bytes().await.expect("body").is_empty());
}

/// GET of `path` twice, the second time with the first's tag: 304, counted
/// as a request; then a merge that changes the answer makes it a 200 again.
/// `path_of` is given the id of the product the first upload made.
async fn revalidated_until_a_merge(path_of: impl Fn(&str) -> String) {
    let (app, key) = app_with(100, 1_000).await;
    send(&app, &key, vec![item("k-1")]).await;
    merge(&app).await;
    let list: Value = app.json_as(&key, "/v1/products").await;
    let product = list["data"][0]["id"].as_str().expect("id").to_owned();
    let path = path_of(&product);

    let first = get(&app, &key, &path, None).await;
    assert_eq!(first.status(), 200, "{path}");
    let etag = required_header(&first, "etag").to_owned();
    assert!(etag.starts_with("W/\""), "{etag}");
    assert_eq!(
        required_header(&first, "cache-control"),
        "private, no-cache"
    );
    let left = remaining(&first, "x-ratelimit-remaining");
    let body: Value = first.json().await.expect("JSON");

    for counted in 1..=3 {
        let again = get(&app, &key, &path, Some(&etag)).await;
        assert_eq!(
            remaining(&again, "x-ratelimit-remaining"),
            left - counted,
            "{path}: a 304 counts"
        );
        assert_not_modified(again, &etag, "private, no-cache").await;
    }
    let left = left - 3;
    // As browsers ask: compressed. The tag is the answer's, not its bytes'.
    let compressed = app
        .client
        .get(app.url(&path))
        .bearer_auth(&key)
        .header("accept-encoding", "gzip, deflate, br")
        .send()
        .await
        .expect("request");
    assert_eq!(compressed.status(), 200, "{path}");
    assert_eq!(required_header(&compressed, "etag"), etag, "{path}");
    let again = app
        .client
        .get(app.url(&path))
        .bearer_auth(&key)
        .header("accept-encoding", "gzip, deflate, br")
        .header("if-none-match", &etag)
        .send()
        .await
        .expect("request");
    assert_eq!(again.status(), 304, "{path}");
    assert_eq!(
        remaining(&again, "x-ratelimit-remaining"),
        left - 2,
        "{path}"
    );
    let other_tag = get(&app, &key, &path, Some("W/\"other\"")).await;
    assert_eq!(other_tag.status(), 200, "{path}");
    assert_eq!(
        required_header(&other_tag, "etag"),
        etag,
        "same answer, same tag"
    );
    assert_eq!(remaining(&other_tag, "x-ratelimit-remaining"), left - 3);

    let mut more = item("k-1");
    more["name"] = json!("Чайник переименован");
    more["prices"][0]["price"] = json!(900);
    send(&app, &key, vec![more]).await;
    merge(&app).await;
    let changed = get(&app, &key, &path, Some(&etag)).await;
    assert_eq!(
        changed.status(),
        200,
        "{path}: the merge changed the answer"
    );
    assert_ne!(required_header(&changed, "etag"), etag);
    let changed: Value = changed.json().await.expect("JSON");
    assert_ne!(changed, body, "{path}");
}

#[tokio::test]
async fn a_product_list_is_304_until_a_merge_changes_it() {
    revalidated_until_a_merge(|_| "/v1/products?marketplace=ozon".into()).await;
}

#[tokio::test]
async fn a_product_is_304_until_a_merge_changes_it() {
    revalidated_until_a_merge(|u| format!("/v1/products/{u}")).await;
}

#[tokio::test]
async fn a_price_history_is_304_until_a_merge_changes_it() {
    revalidated_until_a_merge(|u| format!("/v1/products/{u}/price-history")).await;
}

#[tokio::test]
async fn the_sessions_are_304_until_an_upload_changes_them() {
    revalidated_until_a_merge(|_| "/v1/me/scrapes".into()).await;
}

#[tokio::test]
async fn graphql_get_is_304_until_a_merge_changes_it() {
    let query = "{products(first: 5){edges{node{id name prices{price}}}}}";
    let encoded: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
    revalidated_until_a_merge(move |_| format!("/graphql?query={encoded}")).await;
}

/// The metered endpoint decides before it charges: a 304 costs no rows.
#[tokio::test]
async fn a_304_of_metered_rows_charges_no_quota() {
    let (app, key) = app_with(100, 1_000).await;
    let session = send(&app, &key, vec![item("k-1"), item("k-2")]).await;
    let rest = format!("/v1/me/scrapes/{session}/products");
    let query = format!(
        "{{me{{scrapeSession(id: \"{session}\"){{submissions(first: 10){{nodes{{status product{{id}}}}}}}}}}}}"
    );
    let encoded: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
    let graphql = format!("/graphql?query={encoded}");

    // Pending rows cost nothing; merged they cost one each.
    let pending = get(&app, &key, &rest, None).await;
    let pending_tag = required_header(&pending, "etag").to_owned();
    merge(&app).await;
    let merged = get(&app, &key, &rest, Some(&pending_tag)).await;
    assert_eq!(merged.status(), 200, "the merge changed the rows");
    assert_eq!(remaining(&merged, "x-quota-remaining"), 998);
    let rest_tag = required_header(&merged, "etag").to_owned();
    let merged = get(&app, &key, &graphql, None).await;
    assert_eq!(merged.status(), 200);
    assert_eq!(remaining(&merged, "x-quota-remaining"), 996);
    let graphql_tag = required_header(&merged, "etag").to_owned();

    for (path, tag) in [(&rest, &rest_tag), (&graphql, &graphql_tag)] {
        let again = get(&app, &key, path, Some(tag)).await;
        assert_eq!(header(&again, "x-quota-remaining"), None, "{path}");
        assert_not_modified(again, tag, "private, no-cache").await;
    }
    let standing: Value = app.json_as(&key, "/v1/rate_limit").await;
    assert_eq!(standing["data"]["quota"]["remaining"], 996, "{standing}");
}

/// A conditional request is counted when admitted and not given back when
/// it is a 304: a caller out of requests is refused before any work.
#[tokio::test]
async fn a_caller_out_of_requests_is_refused_before_the_answer_is_worked_out() {
    let (app, key) = app_with(3, 1_000).await;
    let first = get(&app, &key, "/v1/brands", None).await;
    let etag = required_header(&first, "etag").to_owned();
    let again = get(&app, &key, "/v1/brands", Some(&etag)).await;
    assert_eq!(again.status(), 304);
    assert_eq!(remaining(&again, "x-ratelimit-remaining"), 1);
    assert_eq!(get(&app, &key, "/v1/products", None).await.status(), 200);
    let refused = get(&app, &key, "/v1/brands", Some(&etag)).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "etag"), None);
}

#[tokio::test]
async fn snapshots_may_be_kept_for_the_configured_time() {
    let mut settings = Settings::default();
    settings.http.snapshot_max_age_secs = 120;
    let app = TestApp::spawn_with_settings(settings).await;
    let key = app.key("acme").await;
    for path in ["/v1/brands", "/v1/categories?marketplace=ozon"] {
        let first = get(&app, &key, path, None).await;
        assert_eq!(first.status(), 200, "{path}");
        assert_eq!(
            required_header(&first, "cache-control"),
            "private, max-age=120"
        );
        let etag = required_header(&first, "etag").to_owned();
        let again = get(&app, &key, path, Some(&etag)).await;
        assert_not_modified(again, &etag, "private, max-age=120").await;
    }
    let products = get(&app, &key, "/v1/products", None).await;
    assert_eq!(
        required_header(&products, "cache-control"),
        "private, no-cache"
    );
}

/// Only answers worth keeping are tagged: no errors, a GET.
#[tokio::test]
async fn errors_and_posts_carry_no_tag() {
    let (app, key) = app_with(100, 1_000).await;
    let missing = format!("/v1/products/{}", Uuid::new_v4());
    let not_found = get(&app, &key, &missing, None).await;
    assert_eq!(not_found.status(), 404);
    assert_eq!(header(&not_found, "etag"), None);

    let query = format!("{{product(id: \"{}\"){{id}}}}", Uuid::new_v4());
    let encoded: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
    let failed = get(&app, &key, &format!("/graphql?query={encoded}"), None).await;
    assert_eq!(failed.status(), 200);
    assert_eq!(header(&failed, "etag"), None, "an answer with errors");

    let posted = post_response(&app, &key, "{brands{brand}}").await;
    assert_eq!(posted.status(), 200);
    assert_eq!(header(&posted, "etag"), None, "a POST");
}

/// An `If-None-Match` that is no tag, or a huge list of them, is no match:
/// the answer as without it, counted.
#[tokio::test]
async fn a_hostile_if_none_match_is_no_match() {
    let (app, key) = app_with(100, 1_000).await;
    let first = get(&app, &key, "/v1/brands", None).await;
    let etag = required_header(&first, "etag").to_owned();
    let left = remaining(&first, "x-ratelimit-remaining");
    let many = vec!["W/\"0123456789abcdef0123456789abcdef\""; 1_500].join(", ");
    let hostile = [
        "garbage".to_owned(),
        "W/".to_owned(),
        "\"unterminated".to_owned(),
        ",,,,".to_owned(),
        format!("{etag}x"),
        many,
    ];
    for (sent, value) in hostile.iter().enumerate() {
        let response = get(&app, &key, "/v1/brands", Some(value)).await;
        assert_eq!(response.status(), 200, "{value:.80}");
        assert_eq!(required_header(&response, "etag"), etag);
        assert_eq!(
            remaining(&response, "x-ratelimit-remaining"),
            left - 1 - sent as i64
        );
    }
    let bytes = app
        .client
        .get(app.url("/v1/brands"))
        .bearer_auth(&key)
        .header(
            "if-none-match",
            reqwest::header::HeaderValue::from_bytes(b"W/\"\xff\xfe\"").unwrap(),
        )
        .send()
        .await
        .expect("request");
    assert_eq!(bytes.status(), 200, "not UTF-8");
}
