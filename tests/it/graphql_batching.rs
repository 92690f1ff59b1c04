//! Dataloaders and batched reads: a query runs the same few SQL statements
//! for 10 rows as for 100, and what a page reads in its own statement equals
//! what other lists load apart.

use chrono::{SecondsFormat, TimeDelta};
use entity::{Marketplace, SubmissionStatus};
use sea_orm::{DbBackend, EntityTrait};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::fixtures::{
    self, Observation, ProductSpec, insert_current_price, insert_observation, insert_product,
    insert_seller, insert_session, insert_special_price, insert_submission, observation, product,
    strings,
};
use crate::helpers::graphql::{data, nodes, statements_for};
use crate::helpers::{TestApp, test_start};

/// The GraphiQL example: a brand's products with their seller, translations,
/// current prices and latest price history.
const DASHBOARD: &str = r#"query($first: Int) {
  products(filter: { brand: "Samsung" }, first: $first) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { node {
      id name marketplace
      seller { name tin productCount }
      translations { language name }
      prices { countryCode price currency }
      priceHistory(first: 5) { edges { node { price recordedAt } } }
    } }
  }
}"#;

/// Three sellers and `n` products spread over them (the first 105 of brand
/// Samsung), each with a translation, two current prices and six price
/// observations.
async fn rich_catalog(app: &TestApp, n: usize) -> Vec<Uuid> {
    let mut shops = Vec::new();
    for (marketplace, id) in [
        (Marketplace::Wildberries, "1"),
        (Marketplace::Ozon, "2"),
        (Marketplace::Megamarket, "3"),
    ] {
        shops.push(insert_seller(&app.db, fixtures::seller(marketplace, id)).await);
    }
    let mut ids = Vec::new();
    for i in 0..n {
        let shop = &shops[i % shops.len()];
        let p = insert_product(
            &app.db,
            shop,
            ProductSpec {
                marketplace: shop.marketplace,
                brand: if i < 105 { "Samsung" } else { "Other" }.into(),
                first_seen_at: test_start() - TimeDelta::minutes(i as i64),
                translations: vec![("en".into(), format!("Phone {i}"), strings(&["Phones"]))],
                ..product(&format!("s{i}"))
            },
        )
        .await;
        for (country, price) in [("ru", 100.0), ("kz", 530.0)] {
            let current = Observation {
                country_code: country,
                ..observation(price, test_start())
            };
            insert_current_price(&app.db, p.id, current).await;
        }
        for h in 0..6 {
            let at = test_start() - TimeDelta::hours(h);
            insert_observation(&app.db, p.id, observation(90.0 + h as f64, at)).await;
        }
        ids.push(p.id);
    }
    ids
}

// On several worker threads, as in production: the dataloaders' time window
// then races the resolvers for real.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_query_runs_the_same_few_statements_for_10_and_100_products() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    rich_catalog(&app, 111).await;
    // The first request of a key stamps its last use; measure after it.
    data(&app, &key, "{ __typename }", json!({})).await;

    let (ten, small) = statements_for(&app, &key, DASHBOARD, json!({ "first": 10 })).await;
    let (hundred, large) = statements_for(&app, &key, DASHBOARD, json!({ "first": 100 })).await;
    let edges = nodes(&large["products"]);
    assert_eq!((nodes(&small["products"]).len(), edges.len()), (10, 100));
    assert_eq!(large["products"]["totalCount"], 105);
    for node in &edges {
        assert_eq!(node["seller"]["productCount"], 37, "{node}");
        assert_eq!(node["translations"].as_array().map(Vec::len), Some(1));
        assert_eq!(node["prices"].as_array().map(Vec::len), Some(2));
        assert_eq!(nodes(&node["priceHistory"]).len(), 5);
    }
    assert_eq!(ten, hundred, "statements must not grow with the page");
    // The page with its sellers, translations, prices, latest history and
    // total; then the sellers' product counts (key lookups are not counted).
    assert_eq!(
        hundred, 2,
        "one statement per nesting level, none per product"
    );
}

#[tokio::test]
async fn every_product_page_counts_the_whole_list_and_shows_each_products_own_seller() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    rich_catalog(&app, 7).await;
    let page = "query($after: String, $brand: String) {
      products(filter: { brand: $brand }, first: 3, after: $after) {
        totalCount pageInfo { hasNextPage endCursor } nodes { id seller { name } }
      }
    }";
    let single = "query($id: UUID!) { product(id: $id) { seller { name } } }";
    let (mut after, mut seen) = (Value::Null, 0);
    loop {
        let d = data(
            &app,
            &key,
            page,
            json!({ "after": after, "brand": "Samsung" }),
        )
        .await;
        let products = &d["products"];
        assert_eq!(
            products["totalCount"], 7,
            "every page counts the whole list"
        );
        for node in products["nodes"].as_array().unwrap() {
            let alone = data(&app, &key, single, json!({ "id": node["id"] })).await;
            assert_eq!(node["seller"], alone["product"]["seller"], "{node}");
            seen += 1;
        }
        after = products["pageInfo"]["endCursor"].clone();
        if products["pageInfo"]["hasNextPage"] != true {
            break;
        }
    }
    assert_eq!(seen, 7);

    // Past the last row and on an empty list, nothing carries the count.
    let past = data(
        &app,
        &key,
        page,
        json!({ "after": after, "brand": "Samsung" }),
    )
    .await;
    assert_eq!(past["products"]["nodes"], json!([]));
    assert_eq!(past["products"]["totalCount"], 7);
    let none = data(&app, &key, page, json!({ "brand": "Nokia" })).await;
    assert_eq!(none["products"]["totalCount"], 0);
    // Without sellers asked for, the page reads products alone.
    let bare = "{ products(filter: { brand: \"Samsung\" }, last: 2) { totalCount edges { node { id } } } }";
    let d = data(&app, &key, bare, json!({})).await;
    assert_eq!(
        (
            d["products"]["totalCount"].clone(),
            nodes(&d["products"]).len()
        ),
        (json!(7), 2)
    );
}

#[tokio::test]
async fn batched_first_n_lists_match_the_head_of_the_full_list() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let ids = rich_catalog(&app, 7).await;
    // Ties on the time: the id decides among them.
    for price in [501.0, 502.0, 503.0] {
        insert_observation(&app.db, ids[0], observation(price, test_start())).await;
    }
    let query = r#"{
      products(first: 10) { edges { node { id short: priceHistory(first: 4) { edges { node { price recordedAt } } } } } }
      sellers(lookup: { marketplace: OZON, sellerId: "2" }) { products(first: 1) { edges { node { id } } } }
    }"#;
    let d = data(&app, &key, query, json!({})).await;
    for node in nodes(&d["products"]) {
        let full = data(
            &app,
            &key,
            "query($id: UUID!) { priceHistory(productId: $id, first: 100) { edges { node { price recordedAt } } } }",
            json!({ "id": node["id"] }),
        )
        .await;
        let head: Vec<Value> = nodes(&full["priceHistory"]).into_iter().take(4).collect();
        assert_eq!(nodes(&node["short"]), head, "{}", node["id"]);
    }
    let newest = data(
        &app,
        &key,
        "{ products(filter: { marketplace: OZON, sellerId: \"2\" }, first: 1) { edges { node { id } } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        nodes(&d["sellers"][0]["products"]),
        nodes(&newest["products"])
    );
}

/// PostgreSQL gets each list of ids as one array parameter: pages of
/// different sizes send the same statements but for their limits, so a
/// page size shares prepared statements and plans (an `IN` list would be a
/// new statement per length). The limits are written into the text, so
/// that PostgreSQL can plan a page once (`query::literal_limits`).
#[tokio::test]
async fn pages_of_any_size_send_the_same_statements_on_postgres() {
    let app = TestApp::spawn().await;
    if app.db.get_database_backend() != DbBackend::Postgres {
        return; // SQLite has no arrays; its IN lists follow the page size
    }
    let key = app.key("acme").await;
    rich_catalog(&app, 7).await;
    let query = format!(
        "query($n: Int!) {{ products(first: $n) {{ edges {{ node {{ {NODE} }} }} }} \
         sellers(lookup: {{ marketplace: OZON, sellerId: \"2\" }}) {{ products(first: 2) {{ edges {{ node {{ id }} }} }} }} }}"
    );
    // The key's first use also records when it was used; not part of a page.
    data(&app, &key, &query, json!({ "n": 1 })).await;
    let mut sent = Vec::new();
    for n in [3, 7] {
        let before = app.statements();
        let d = data(&app, &key, &query, json!({ "n": n })).await;
        assert_eq!(nodes(&d["products"]).len(), n);
        // PostgreSQL shares a prepared statement by its text: the text
        // (values left out) is the point here.
        let mut texts: Vec<String> = app
            .statement_texts(before)
            .iter()
            .map(|text| without_limits(text))
            .collect();
        texts.sort();
        sent.push(texts);
    }
    assert!(sent[0].len() > 3, "{:?}", sent[0]);
    let differing: Vec<&String> = sent[0].iter().filter(|t| !sent[1].contains(t)).collect();
    assert!(differing.is_empty(), "sent at 3 rows only: {differing:#?}");
    assert_eq!(sent[0], sent[1]);
}

/// `text` with the count of each `LIMIT` left out.
fn without_limits(text: &str) -> String {
    let mut parts = text.split("LIMIT ");
    let mut out = parts.next().unwrap_or_default().to_owned();
    for part in parts {
        out.push_str("LIMIT n");
        out.push_str(part.trim_start_matches(|c: char| c.is_ascii_digit()));
    }
    out
}

/// A page reads its products' translations in its own statement (a JSON
/// column); other lists load them apart. Both give the same translations,
/// by language, with their JSON and sub-second times intact, and REST the same.
/// The `node` fields of every product, read by a page's own statement
/// (`products`) and loaded apart (seller 77's `products`): both lists.
async fn paged_and_apart(app: &TestApp, key: &str, node: &str) -> (Value, Value) {
    let paged = format!("{{ products(first: 10) {{ nodes {{ {node} }} }} }}");
    let apart = format!(
        "{{ sellers(lookup: {{ marketplace: OZON, sellerId: \"77\" }}) \
         {{ products(first: 10) {{ nodes {{ {node} }} }} }} }}"
    );
    let paged = data(app, key, &paged, json!({})).await;
    let apart = data(app, key, &apart, json!({})).await;
    (
        paged["products"].clone(),
        apart["sellers"][0]["products"].clone(),
    )
}

/// The node of product `id` in a connection's `nodes`.
fn node_of(list: &Value, id: Uuid) -> Value {
    let nodes = list["nodes"].as_array().expect("nodes");
    let node = nodes.iter().find(|n| n["id"] == json!(id));
    node.expect("the product's node").clone()
}

/// Each item of the array `items` as the array of its `fields`.
fn rows(items: &Value, fields: &[&str]) -> Vec<Value> {
    let items = items.as_array().expect("an array");
    items
        .iter()
        .map(|item| Value::Array(fields.iter().map(|f| item[*f].clone()).collect()))
        .collect()
}

#[tokio::test]
async fn translations_read_with_a_page_equal_those_loaded_apart() {
    use entity::product_translation;
    use sea_orm::{ActiveModelTrait, ActiveValue::Set, IntoActiveModel};

    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "77")).await;
    let spec = |id: &str, translations| ProductSpec {
        marketplace: Marketplace::Ozon,
        translations,
        ..product(id)
    };
    let none = insert_product(&app.db, &shop, spec("bare", vec![])).await;
    let both = insert_product(
        &app.db,
        &shop,
        spec(
            "two",
            vec![
                ("kk".into(), "Құлаққап".into(), strings(&["Электроника"])),
                (
                    "en".into(),
                    "Headphones".into(),
                    strings(&["Audio", "In-ear"]),
                ),
            ],
        ),
    )
    .await;
    let mut kk = product_translation::Entity::find_by_id((both.id, "kk".to_owned()))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
        .into_active_model();
    kk.attributes =
        Set(json!({ "түсі": "қара \"матовый\"", "size": [1, 2.5], "nested": { "ok": true } }));
    kk.updated_at = Set(test_start() + TimeDelta::microseconds(123_456));
    kk.update(&app.db).await.unwrap();

    let fields = "language name categoryPath attributes updatedAt";
    let node = format!("id translations {{ {fields} }}");
    let (paged, apart) = paged_and_apart(&app, &key, &node).await;
    let of = |list: &Value, id: Uuid| node_of(list, id)["translations"].clone();
    for id in [none.id, both.id] {
        assert_eq!(of(&paged, id), of(&apart, id));
    }
    assert_eq!(of(&paged, none.id), json!([]));
    let two = of(&paged, both.id);
    assert_eq!(
        two,
        json!([
            { "language": "en", "name": "Headphones", "categoryPath": ["Audio", "In-ear"],
              "attributes": { "color": "black" },
              "updatedAt": both.first_seen_at.to_rfc3339_opts(SecondsFormat::AutoSi, true) },
            { "language": "kk", "name": "Құлаққап", "categoryPath": ["Электроника"],
              // Attributes show as strings; other JSON values as their JSON text.
              "attributes": { "түсі": "қара \"матовый\"", "size": "[1,2.5]", "nested": "{\"ok\":true}" },
              "updatedAt": (test_start() + TimeDelta::microseconds(123_456))
                  .to_rfc3339_opts(SecondsFormat::AutoSi, true) },
        ])
    );
    let rest = app
        .json_as(&key, &format!("/v1/products/{}", both.id))
        .await;
    assert_eq!(
        rows(
            &rest["data"]["translations"],
            &[
                "language",
                "name",
                "category_path",
                "attributes",
                "updated_at"
            ]
        ),
        rows(
            &two,
            &[
                "language",
                "name",
                "categoryPath",
                "attributes",
                "updatedAt"
            ]
        )
    );
}

/// A page reads its products' current prices, special prices and latest
/// observations in its own statement (JSON columns); a seller's products
/// load them apart, as does a page whose price histories differ in size.
/// All give the same lists in the same order, and REST the same prices.
#[tokio::test]
async fn prices_read_with_a_page_equal_those_loaded_apart() {
    use entity::UserAuthStatus::{Anonymous, Authenticated};

    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "77")).await;
    let spec = |id: &str, minutes| ProductSpec {
        marketplace: Marketplace::Ozon,
        first_seen_at: test_start() - TimeDelta::minutes(minutes),
        ..product(id)
    };
    let bare = insert_product(&app.db, &shop, spec("bare", 0)).await;
    let priced = insert_product(&app.db, &shop, spec("priced", 1)).await;
    let at = test_start() + TimeDelta::microseconds(654_321);
    for (country_code, region_code, user_auth_status, price) in [
        ("ru", Some("msk"), Authenticated, 101.5),
        ("ru", None, Anonymous, 99.0),
        ("kz", None, Authenticated, 530.25),
    ] {
        let variant = Observation {
            country_code,
            region_code,
            user_auth_status,
            price,
            recorded_at: at,
        };
        insert_current_price(&app.db, priced.id, variant).await;
    }
    insert_special_price(&app.db, priced.id, "msk").await;
    insert_special_price(&app.db, priced.id, "").await;
    // Seven observations; the first two share a time (the later id is newer).
    for (i, hours) in [0, 0, 1, 2, 3, 4, 5].into_iter().enumerate() {
        let o = observation(90.0 + i as f64, at - TimeDelta::hours(hours));
        insert_observation(&app.db, priced.id, o).await;
    }

    let prices = "prices { countryCode regionCode userAuthStatus price oldPrice currency \
                  stockStatus stockQuantity recordedAt } \
                  specialPrices { countryCode regionCode userAuthStatus min max }";
    let history = |first: u32| {
        format!(
            "priceHistory(first: {first}) {{ pageInfo {{ hasNextPage }} edges {{ node {{ \
             price oldPrice currency stockStatus stockQuantity recordedAt }} }} }}"
        )
    };
    let node = format!("id {prices} {}", history(3));
    let (paged, apart) = paged_and_apart(&app, &key, &node).await;
    let two_sizes = data(
        &app,
        &key,
        &format!(
            "{{ products(first: 10) {{ nodes {{ {node} more: {} }} }} }}",
            history(10)
        ),
        json!({}),
    )
    .await;
    let of = |list: &Value, id: Uuid| -> Value {
        let node = node_of(list, id);
        json!([node["prices"], node["specialPrices"], node["priceHistory"]])
    };
    for id in [bare.id, priced.id] {
        let expected = of(&paged, id);
        assert_eq!(of(&apart, id), expected);
        assert_eq!(of(&two_sizes["products"], id), expected);
    }

    let bare = of(&paged, bare.id);
    assert_eq!(
        bare,
        json!([[], [], { "pageInfo": { "hasNextPage": false }, "edges": [] }])
    );
    let shown = of(&paged, priced.id);
    let variants = rows(
        &shown[0],
        &["countryCode", "regionCode", "price", "recordedAt"],
    );
    let time = at.to_rfc3339_opts(SecondsFormat::AutoSi, true);
    assert_eq!(
        variants,
        [
            json!(["kz", null, 530.25, time]),
            json!(["ru", null, 99.0, time]),
            json!(["ru", "msk", 101.5, time]),
        ]
    );
    assert_eq!(shown[1].as_array().map(Vec::len), Some(2));
    let latest: Vec<Value> = nodes(&shown[2])
        .iter()
        .map(|n| n["price"].clone())
        .collect();
    assert_eq!(latest, [json!(91.0), json!(90.0), json!(92.0)]);
    assert_eq!(shown[2]["pageInfo"]["hasNextPage"], true);
    assert_eq!(nodes(&shown[2])[0]["recordedAt"], json!(time));
    let more = node_of(&two_sizes["products"], priced.id)["more"].clone();
    assert_eq!(nodes(&more).len(), 7);
    assert_eq!(more["pageInfo"]["hasNextPage"], false);

    let rest = app
        .json_as(&key, &format!("/v1/products/{}", priced.id))
        .await;
    let rest_variants = rows(
        &rest["data"]["prices"],
        &["country_code", "region_code", "price", "recorded_at"],
    );
    assert_eq!(rest_variants, variants);
}

#[tokio::test]
async fn a_products_seller_counts_its_products_as_the_seller_lookup_does() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    // Seven products over three sellers: the first seller has products 0, 3 and 6.
    let ids = rich_catalog(&app, 7).await;
    let d = data(
        &app,
        &key,
        r#"query($id: UUID!) {
          product(id: $id) { seller { productCount } }
          sellers(lookup: { marketplace: WILDBERRIES, sellerId: "1" }) { productCount }
        }"#,
        json!({ "id": ids[0] }),
    )
    .await;
    assert_eq!(d["product"]["seller"]["productCount"], 3);
    assert_eq!(d["sellers"][0]["productCount"], 3);
}

/// What a product node shows in the pages below.
const NODE: &str = "id seller { name productCount } translations { name } prices { price } priceHistory(first: 3) { edges { node { price } } }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_and_seller_product_pages_run_the_same_statements_for_10_and_100_rows() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let session = insert_session(&app.db, &key, test_start()).await;
    for id in rich_catalog(&app, 111).await {
        insert_submission(&app.db, session.id, SubmissionStatus::Merged, Some(id)).await;
    }
    data(&app, &key, "{ __typename }", json!({})).await;

    let submissions = format!(
        "query($id: UUID!, $first: Int) {{ me {{ scrapeSession(id: $id) {{ submissions(first: $first) {{ edges {{ node {{ status product {{ {NODE} }} }} }} }} }} }} }}"
    );
    let sellers = format!(
        "query($first: Int) {{ sellers(lookup: {{ marketplace: OZON, sellerId: \"2\" }}) {{ products(first: $first) {{ edges {{ node {{ {NODE} }} }} }} }} }}"
    );
    // The seller has 37 products; the session has 111 merged ones.
    for (query, at, sizes) in [
        (submissions, "/me/scrapeSession/submissions", [10, 100]),
        (sellers, "/sellers/0/products", [10, 36]),
    ] {
        let mut counts = Vec::new();
        for first in sizes {
            let vars = json!({ "id": session.id, "first": first });
            let (statements, d) = statements_for(&app, &key, &query, vars).await;
            let rows = nodes(d.pointer(at).expect("connection"));
            assert_eq!(rows.len(), first, "{at}");
            counts.push(statements);
        }
        assert_eq!(
            counts[0], counts[1],
            "{at}: statements must not grow with the page"
        );
        // Key, session (twice: the field and the tenant check of its
        // submissions), total, page, quota (limit, charge), then one per
        // relation: products, sellers and their counts, translations, prices,
        // latest history.
        assert!(counts[1] <= 13, "{at}: {counts:?}");
    }
}
