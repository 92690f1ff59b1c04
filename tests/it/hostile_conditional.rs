//! Conditional requests at their worst: `If-None-Match: *` in a loop,
//! matching tags sent to answers that cost the most to work out, a tag
//! split over several headers, and lists built to cost the server. A 304
//! is worked out like a 200, so it counts against the rate limit like one;
//! several `If-None-Match` headers are one list; a list past its bounds is
//! not read (the answer is a full 200).

use reqwest::Response;
use serde_json::Value;
use vitrina::config::Limits;
use vitrina::seed::SeedOptions;

use crate::helpers::uploads::{item, send};
use crate::helpers::{TestApp, header, required_header};

/// Requests a minute in these tests: few, so that a loop meets the limit.
const RATE: u32 = 12;

/// The app at `RATE` requests a minute over 100 generated products, and a
/// key.
async fn catalog() -> (TestApp, String) {
    let app = TestApp::spawn_with(Limits {
        rate_per_minute: RATE,
        ..Limits::default()
    })
    .await;
    let options = SeedOptions {
        demo: false,
        products: 100,
        seed: 27,
    };
    vitrina::seed::seed(&app.db, &options).await.expect("seed");
    let key = app.key("acme").await;
    (app, key)
}

/// GET `path` as `key` with one `If-None-Match` header per entry of `tags`.
async fn get(app: &TestApp, key: &str, path: &str, tags: &[&str]) -> Response {
    let mut request = app.client.get(app.url(path)).bearer_auth(key);
    for tag in tags {
        request = request.header("if-none-match", *tag);
    }
    request.send().await.expect("request")
}

fn remaining(response: &Response) -> u32 {
    required_header(response, "x-ratelimit-remaining")
        .parse()
        .expect("a number")
}

/// `GET /graphql?query=...` of `query`.
fn graphql_path(query: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
    format!("/graphql?query={encoded}")
}

/// The heaviest product page GraphQL accepts at the default complexity
/// limit: 500 products of 13 fields.
const HEAVY: &str = "{ products(first: 500) { nodes { id name brand url externalId marketplace \
    imageCover trustStatus priceFlagged firstSeenLanguage defaultLanguage firstSeenAt lastSeenAt } } }";

/// Sends `path` with `tags` until refused: every answer before the refusal
/// is a 304 that counted one request, and the refusal comes when the
/// minute's requests are spent.
async fn spend_the_minute(app: &TestApp, key: &str, path: &str, tags: &[&str], left: u32) {
    for sent in 1..=left {
        let response = get(app, key, path, tags).await;
        assert_eq!(response.status(), 304, "{path}, request {sent}");
        assert_eq!(remaining(&response), left - sent, "{path}: a 304 counts");
    }
    let refused = get(app, key, path, tags).await;
    assert_eq!(refused.status(), 429, "{path}");
    assert_eq!(header(&refused, "etag"), None);
    let body: Value = refused.json().await.expect("JSON");
    // REST's error body, or GraphQL's errors.
    let code = body["error"]["code"]
        .as_str()
        .or(body["errors"][0]["extensions"]["code"].as_str());
    assert_eq!(
        code.map(str::to_lowercase).as_deref(),
        Some("rate_limited"),
        "{body}"
    );
}

#[tokio::test]
async fn a_loop_of_if_none_match_star_spends_the_rate_limit_and_ends_in_429() {
    let (app, key) = catalog().await;
    spend_the_minute(&app, &key, "/v1/products?page_size=100", &["*"], RATE).await;

    let (app, key) = catalog().await;
    spend_the_minute(&app, &key, &graphql_path(HEAVY), &["*"], RATE).await;
}

#[tokio::test]
async fn a_graphql_get_of_high_complexity_with_a_matching_tag_counts() {
    let (app, key) = catalog().await;
    let path = graphql_path(HEAVY);
    let first = get(&app, &key, &path, &[]).await;
    assert_eq!(first.status(), 200);
    let etag = required_header(&first, "etag").to_owned();
    let body: Value = first.json().await.expect("JSON");
    let complexity = body["extensions"]["analyzer"]["complexity"]
        .as_u64()
        .expect("a complexity");
    assert!(complexity > 6_500, "the worst case: {complexity}");
    spend_the_minute(&app, &key, &path, &[&etag], RATE - 1).await;
}

/// Every conditional path reads the headers as one list: the middleware
/// of REST v1, the metered endpoint that compares before it charges, and
/// `GET /graphql`.
#[tokio::test]
async fn a_tag_split_over_several_headers_or_within_a_list_matches() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = send(&app, &key, vec![item("k-1")]).await;
    app.jobs().tick().await.expect("tick");
    for path in [
        "/v1/products".to_owned(),
        format!("/v1/me/scrapes/{session}/products"),
        graphql_path("{ products(first: 5) { nodes { id name } } }"),
    ] {
        let first = get(&app, &key, &path, &[]).await;
        assert_eq!(first.status(), 200, "{path}");
        let etag = required_header(&first, "etag").to_owned();
        let strong = etag.trim_start_matches("W/").to_owned();
        let held: [&[&str]; 4] = [
            &["\"a\"", &etag],
            &["\"a\", \"b\"", &format!("\"c\",{etag}")],
            &[&format!("\"a,b\" , {strong}"), "\"c\""],
            &["", &format!(",, {etag} ,")],
        ];
        for tags in held {
            let again = get(&app, &key, &path, tags).await;
            assert_eq!(again.status(), 304, "{path}: {tags:?}");
        }
        let stale = get(&app, &key, &path, &["\"a\"", "W/\"b\", \"c\""]).await;
        assert_eq!(stale.status(), 200, "{path}");
    }
}

/// Lists no client needs: thousands of tags, a header of 60 KB, `*` among
/// tags, tags over many headers. None is read (the answer is the full 200,
/// counted), however the matching tag is placed; the bound itself is kept
/// exactly.
#[tokio::test]
async fn a_hostile_if_none_match_list_is_bounded() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let path = "/v1/products";
    let first = get(&app, &key, path, &[]).await;
    let etag = required_header(&first, "etag").to_owned();
    let other = "W/\"0123456789abcdef0123456789abcdef\"";

    // At the bounds: 64 tags, the match last, in one header or in 64.
    let mut at_bound = vec![other; 63];
    at_bound.push(&etag);
    let joined = at_bound.join(", ");
    assert_eq!(get(&app, &key, path, &[&joined]).await.status(), 304);
    assert_eq!(get(&app, &key, path, &at_bound).await.status(), 304);

    let mut past_bound = vec![other; 64];
    past_bound.push(&etag);
    let thousands = [vec![other; 5_000], vec![etag.as_str()]].concat().join(",");
    let padded = format!("\"{}\", {etag}", "x".repeat(60_000));
    let one_header = past_bound.join(",");
    let huge: [Vec<&str>; 5] = [
        vec![&one_header],
        past_bound.clone(),
        vec![&thousands],
        vec![&padded],
        vec!["*", &etag],
    ];
    let mut left = remaining(&first) - 2;
    for tags in huge {
        let response = get(&app, &key, path, &tags).await;
        assert_eq!(response.status(), 200, "{:.60}", tags.join(" | "));
        assert_eq!(required_header(&response, "etag"), etag);
        left -= 1;
        assert_eq!(remaining(&response), left, "a 200 like any other");
    }
}
