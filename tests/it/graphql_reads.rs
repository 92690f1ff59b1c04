//! What a GraphQL page reads: only the product columns and child-list
//! columns its query shows, and the row past the page only when the query
//! asks whether more follow.

use chrono::TimeDelta;
use entity::Marketplace;
use serde_json::{Value, json};

use crate::fixtures::{
    self, Observation, ProductSpec, insert_current_price, insert_observation, insert_product,
    insert_seller, observation, product,
};
use crate::helpers::graphql::{data, demo_app, nodes};
use crate::helpers::{TestApp, limits, test_start};

/// A page reads the JSON documents of its products (category path,
/// attributes, galleries, stats) only when its query shows them, and never
/// the search keys; asked through fragments and aliases, each is the one
/// REST shows.
#[tokio::test]
async fn a_page_reads_only_the_documents_its_query_shows() {
    let (app, key) = demo_app(60).await;
    let rest = app.json_as(&key, "/v1/products?page_size=100").await;
    let rest = rest["data"].as_array().unwrap();

    let from = app.statements();
    data(
        &app,
        &key,
        "{ products(first: 100) { nodes { id name } } }",
        json!({}),
    )
    .await;
    // Which columns a statement reads shows only in its text: here the
    // text is the point.
    let page = app.statement_reading(from, "products");
    let columns = &page[..page.find(" FROM ").unwrap()];
    for column in [
        "category_path",
        "attributes",
        "image_gallery",
        "video_gallery",
        "stats",
        "brand_key",
        "seller_code_key",
        "name_search",
    ] {
        let read = format!("\"products\".\"{column}\"");
        assert!(!columns.contains(&read), "{column} read: {columns}");
    }

    let shown = data(
        &app,
        &key,
        "query { products(first: 100) { edges { node { id ... on Product { categoryPath } ...Docs } } } }
         fragment Docs on Product { attrs: attributes imageGallery videoGallery stats }",
        json!({}),
    )
    .await;
    let shown = nodes(&shown["products"]);
    assert_eq!(shown.len(), rest.len());
    assert!(
        rest.iter().any(|p| p["stats"].is_object()),
        "stats to compare"
    );
    for (node, rest) in shown.iter().zip(rest) {
        assert_eq!(node["id"], rest["id"]);
        for (graphql, rest_name) in [
            ("categoryPath", "category_path"),
            ("attrs", "attributes"),
            ("imageGallery", "image_gallery"),
            ("videoGallery", "video_gallery"),
            ("stats", "stats"),
        ] {
            assert_eq!(
                node[graphql], rest[rest_name],
                "{graphql} of {}",
                rest["id"]
            );
        }
    }
}

/// The rows the page statement run since `from` reads at most: its own
/// (its last `LIMIT`), and its latest prices' (the first) when it reads them.
fn page_limits(app: &TestApp, from: usize) -> (u64, Option<u64>) {
    let mut limits = limits(&app.statement_reading(from, "products"));
    let outer = limits.pop().expect("page limit");
    (outer, limits.first().copied())
}

/// A connection reads the row past its page only when the query asks
/// whether more follow (`pageInfo { hasNextPage }`, or `hasPreviousPage`
/// with `last`): a dashboard that never pages reads just its rows. The
/// rows are the same either way, and the flags true where more follow.
#[tokio::test]
async fn a_page_reads_the_row_past_it_only_when_asked_whether_more_follow() {
    let (app, key) = demo_app(40).await;
    let query = |info: &str| {
        format!(
            "{{ products(first: 3) {{ {info} nodes {{ id \
             priceHistory(first: 2) {{ {info} nodes {{ price recordedAt }} }} }} }} }}"
        )
    };
    let from = app.statements();
    let bare = data(&app, &key, &query(""), json!({})).await;
    assert_eq!(page_limits(&app, from), (3, Some(2)));

    let from = app.statements();
    let asked = data(&app, &key, &query("pageInfo { hasNextPage }"), json!({})).await;
    assert_eq!(page_limits(&app, from), (4, Some(3)));
    let (bare, asked) = (&bare["products"]["nodes"], &asked["products"]);
    assert_eq!(
        asked["pageInfo"]["hasNextPage"], true,
        "40 products, 3 shown"
    );
    let asked_nodes = asked["nodes"].as_array().unwrap();
    assert_eq!(asked_nodes.len(), 3);
    for (shown, bare) in asked_nodes.iter().zip(bare.as_array().unwrap()) {
        assert_eq!(shown["id"], bare["id"]);
        let history = &shown["priceHistory"];
        assert_eq!(history["nodes"], bare["priceHistory"]["nodes"]);
        let path = format!(
            "/v1/products/{}/price-history",
            shown["id"].as_str().unwrap()
        );
        let total = app.json_as(&key, &path).await["meta"]["total"]
            .as_u64()
            .unwrap();
        assert_eq!(history["pageInfo"]["hasNextPage"], total > 2, "{path}");
    }

    // Two aliases of one list, one asking: one statement serves both.
    let from = app.statements();
    let mixed = data(
        &app,
        &key,
        "{ products(first: 3) { nodes { id
            plain: priceHistory(first: 2) { nodes { price recordedAt } }
            paged: priceHistory(first: 2) { pageInfo { hasNextPage } nodes { price recordedAt } } } } }",
        json!({}),
    )
    .await;
    let (_, inner) = page_limits(&app, from);
    assert_eq!(inner, Some(3));
    assert_eq!(app.statements() - from, 1, "the page");
    for (node, shown) in mixed["products"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(asked_nodes)
    {
        assert_eq!(node["plain"]["nodes"], shown["priceHistory"]["nodes"]);
        assert_eq!(node["paged"], shown["priceHistory"]);
    }

    // Backwards: `last` reads the row before its page only for hasPreviousPage.
    let last = |info: &str| format!("{{ products(last: 3) {{ {info} nodes {{ id }} }} }}");
    let from = app.statements();
    let bare = data(&app, &key, &last(""), json!({})).await;
    assert_eq!(page_limits(&app, from).0, 3);
    let asked = data(&app, &key, &last("pageInfo { hasPreviousPage }"), json!({})).await;
    assert_eq!(asked["products"]["pageInfo"]["hasPreviousPage"], true);
    assert_eq!(asked["products"]["nodes"], bare["products"]["nodes"]);
}

/// A seller's products, batched across sellers by their loader, read the
/// row past the page only when asked whether more follow, as other lists.
#[tokio::test]
async fn a_sellers_products_read_the_row_past_them_only_when_asked() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "9")).await;
    for (n, name) in ["a", "b", "c"].into_iter().enumerate() {
        let spec = ProductSpec {
            marketplace: Marketplace::Ozon,
            first_seen_at: test_start() - TimeDelta::days(n as i64),
            ..product(name)
        };
        insert_product(&app.db, &shop, spec).await;
    }
    let query = |first: u32, info: &str| {
        format!(
            "{{ sellers(lookup: {{ marketplace: OZON, sellerId: \"9\" }}) \
             {{ products(first: {first}) {{ {info} nodes {{ externalId }} }} }} }}"
        )
    };
    let mut shown = Vec::new();
    for (first, info, limit, more) in [
        (2, "", 2, None),
        (2, "pageInfo { hasNextPage }", 3, Some(true)),
        (3, "pageInfo { hasNextPage }", 4, Some(false)),
    ] {
        let from = app.statements();
        let d = data(&app, &key, &query(first, info), json!({})).await;
        let products = &d["sellers"][0]["products"];
        // The sellers' products are read together, at most `limit` each.
        let read = app.statements_reading(from, "products");
        let asked: Vec<u64> = read.iter().flat_map(|s| limits(s)).collect();
        assert_eq!(asked, [limit], "{read:#?}");
        assert_eq!(products["pageInfo"]["hasNextPage"].as_bool(), more);
        shown.push(products["nodes"].clone());
    }
    assert_eq!(
        shown[0],
        json!([{ "externalId": "a" }, { "externalId": "b" }])
    );
    assert_eq!(shown[1], shown[0]);
    assert_eq!(shown[2][2], json!({ "externalId": "c" }));
}

/// What a page statement reads of child table `table`: the aggregate of
/// its JSON column, up to the subquery of its rows.
fn child_list<'a>(page: &'a str, table: &str) -> &'a str {
    let end = page
        .find(&format!(" FROM (SELECT * FROM {table} WHERE"))
        .unwrap_or_else(|| panic!("{table} not read: {page}"));
    let start = page[..end].rfind("(SELECT json_").expect("aggregate");
    &page[start..end]
}

/// The columns of child row `t` a list reads, in the order first read.
fn list_columns(list: &str) -> Vec<&str> {
    let mut columns: Vec<&str> = Vec::new();
    for (at, _) in list.match_indices("t.") {
        let name = list[at + 2..]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or_default();
        if !columns.contains(&name) {
            columns.push(name);
        }
    }
    columns
}

/// A page reads the columns of its products' child lists (translations,
/// prices, special prices, latest price history) that its query shows, and
/// each list shows what the same list shows when asked for every field.
#[tokio::test]
async fn a_page_reads_only_the_child_columns_its_query_shows() {
    let (app, key) = demo_app(40).await;
    // Rows whose order needs columns the query below does not ask for: two
    // regions inserted out of order, and observations newest first by time
    // but not by id.
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "9")).await;
    let sorted = insert_product(&app.db, &shop, product("sorted")).await;
    for (region, price) in [("b", 2.0), ("a", 1.0)] {
        let at = Observation {
            region_code: Some(region),
            ..observation(price, test_start())
        };
        insert_current_price(&app.db, sorted.id, at).await;
    }
    for hours in [0, 1] {
        let at = test_start() - TimeDelta::hours(hours);
        insert_observation(&app.db, sorted.id, observation(10.0 - hours as f64, at)).await;
    }
    let some = "{ products(first: 100) { edges { node { id
        translations { name }
        prices { price }
        specialPrices { max }
        priceHistory(first: 3) { edges { node { price } } nodes { stockQuantity } } } } } }";
    let from = app.statements();
    let partial = data(&app, &key, some, json!({})).await;
    let page = app.statement_reading(from, "products");
    // Each list reads what it shows and what it is sorted by, nothing
    // else: no placeholders for the columns left out either. Which columns
    // a statement reads shows only in its text: here the text is the point.
    for (table, expected) in [
        ("product_translations", &["language", "name"][..]),
        (
            "current_prices",
            &[
                "id",
                "country_code",
                "region_code",
                "user_auth_status",
                "price",
            ][..],
        ),
        ("special_prices", &["id", "max"][..]),
        (
            "price_observations",
            &["id", "price", "stock_quantity", "recorded_at"][..],
        ),
    ] {
        let list = child_list(&page, table);
        assert_eq!(list_columns(list), expected, "{table}: {list}");
        for placeholder in ["0000", "1970", "'[]'", ", 0"] {
            assert!(!list.contains(placeholder), "{table}: {list}");
        }
    }
    // REST shows every column but the parent's id, which nothing reads.
    let from = app.statements();
    app.json_as(&key, "/v1/products?page_size=100").await;
    let page = app.statement_reading(from, "products");
    assert!(
        page.contains("t.attributes") && !page.contains("t.product_id"),
        "{page}"
    );

    let every = "{ products(first: 100) { edges { node { id
        translations { language name categoryPath attributes updatedAt }
        prices { countryCode regionCode userAuthStatus price oldPrice currency stockStatus stockQuantity recordedAt }
        specialPrices { countryCode regionCode userAuthStatus min max }
        priceHistory(first: 3) { edges { node { price stockQuantity recordedAt } } } } } } }";
    let full = data(&app, &key, every, json!({})).await;
    let (partial, full) = (nodes(&partial["products"]), nodes(&full["products"]));
    assert_eq!(partial.len(), full.len());
    let pick = |list: &Value, field: &str| -> Vec<Value> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|row| row[field].clone())
            .collect()
    };
    let mut stocked = 0;
    for (partial, full) in partial.iter().zip(&full) {
        assert_eq!(
            pick(&partial["translations"], "name"),
            pick(&full["translations"], "name")
        );
        assert_eq!(
            pick(&partial["prices"], "price"),
            pick(&full["prices"], "price")
        );
        assert_eq!(
            pick(&partial["specialPrices"], "max"),
            pick(&full["specialPrices"], "max")
        );
        let history = Value::Array(nodes(&full["priceHistory"]));
        let shown = Value::Array(nodes(&partial["priceHistory"]));
        assert_eq!(pick(&shown, "price"), pick(&history, "price"));
        let quantities = pick(&partial["priceHistory"]["nodes"], "stockQuantity");
        assert_eq!(quantities, pick(&history, "stockQuantity"));
        stocked += quantities.iter().filter(|q| q.is_number()).count();
    }
    assert!(stocked > 0, "stock quantities to compare");
}
