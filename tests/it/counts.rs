//! Counts of products (`totalCount`, `totalCountIsExact`): a filter of
//! nothing but a marketplace, a trust status and a brand is answered
//! exactly from the counts the database keeps, whoever writes the products (the merge, the
//! seed, plain SQL), without reading a product; any other filter is exact
//! up to the count bound and says when it is not. On both databases.

use chrono::TimeDelta;
use std::collections::BTreeMap;

use entity::{Marketplace, TrustStatus, product};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect,
};
use serde_json::{Value, json};
use vitrina::config::{ListConfig, Settings};

use crate::helpers::TestApp;
use crate::helpers::cli::{stderr, vitrina};
use crate::helpers::graphql::data;
use crate::helpers::uploads::{item, send, with};

const COUNT: &str = "query($first: Int, $filter: ProductFilterInput) {
    products(first: $first, filter: $filter) { totalCount totalCountIsExact }
}";

/// `totalCount` and `totalCountIsExact` of `filter`: counted with a page
/// of one (in the page's statement) and with no page (alone); both agree.
pub(crate) async fn count(app: &TestApp, key: &str, filter: Value) -> (u64, bool) {
    let mut answers = Vec::new();
    for first in [0, 1] {
        let d = data(app, key, COUNT, json!({ "first": first, "filter": filter })).await;
        let total = &d["products"];
        answers.push((
            total["totalCount"].as_u64().expect("a count"),
            total["totalCountIsExact"].as_bool().expect("a flag"),
        ));
    }
    assert_eq!(answers[0], answers[1], "{filter}");
    answers[0]
}

/// The GraphQL name of an enum value.
fn graphql_name(wire: &str) -> String {
    wire.to_uppercase()
}

/// Every count the kept counts answer (the catalog, each marketplace, each
/// status, each pair) is exact and equal to the products' own count.
async fn assert_kept_counts_true(app: &TestApp, key: &str) {
    let marketplaces = std::iter::once(None).chain(Marketplace::ALL.iter().copied().map(Some));
    for marketplace in marketplaces {
        let statuses = std::iter::once(None).chain(TrustStatus::ALL.iter().copied().map(Some));
        for status in statuses {
            let mut select = product::Entity::find();
            let mut filter = json!({});
            if let Some(m) = marketplace {
                select = select.filter(product::Column::Marketplace.eq(m));
                filter["marketplace"] = json!(graphql_name(m.as_str()));
            }
            if let Some(s) = status {
                select = select.filter(product::Column::TrustStatus.eq(s));
                filter["trustStatus"] = json!(graphql_name(s.as_str()));
            }
            let products = select.count(&app.db).await.expect("count products");
            assert_eq!(
                count(app, key, filter.clone()).await,
                (products, true),
                "{filter}"
            );
        }
    }
}

/// Every count of a brand the kept counts answer (alone, with each
/// marketplace, with each trust status) is exact and equal to what the
/// products' own rows give, for the first `brands` brands by key and one
/// that no product has; each brand's counts in one request.
async fn assert_brand_counts_true(app: &TestApp, key: &str, brands: usize) {
    let rows: Vec<(Option<String>, Marketplace, TrustStatus)> = product::Entity::find()
        .select_only()
        .columns([
            product::Column::Brand,
            product::Column::Marketplace,
            product::Column::TrustStatus,
        ])
        .into_tuple()
        .all(&app.db)
        .await
        .expect("products");
    // Every product of a brand by its case-folded key, as the filter matches.
    let mut by_brand: BTreeMap<String, (String, Vec<(Marketplace, TrustStatus)>)> = BTreeMap::new();
    for (brand, marketplace, status) in rows.into_iter() {
        let Some(brand) = brand else { continue };
        let entry = by_brand
            .entry(brand.to_lowercase())
            .or_insert((brand, Vec::new()));
        entry.1.push((marketplace, status));
    }
    let checked = by_brand.into_values().take(brands);
    let nobody = ("Ни у кого".to_owned(), Vec::new());
    for (brand, products) in checked.chain([nobody]) {
        let mut query = String::from("query($brand: String) {\n");
        let mut expected = serde_json::Map::new();
        let mut add = |alias: String, condition: String, n: usize| {
            query += &format!(
                "{alias}: products(first: 0, filter: {{ brand: $brand {condition} }}) {{ totalCount totalCountIsExact }}\n"
            );
            expected.insert(alias, json!({ "totalCount": n, "totalCountIsExact": true }));
        };
        add("all".into(), String::new(), products.len());
        for m in Marketplace::ALL {
            let n = products.iter().filter(|(pm, _)| pm == m).count();
            add(
                format!("m_{}", m.as_str()),
                format!("marketplace: {}", graphql_name(m.as_str())),
                n,
            );
        }
        for s in TrustStatus::ALL {
            let n = products.iter().filter(|(_, ps)| ps == s).count();
            add(
                format!("s_{}", s.as_str()),
                format!("trustStatus: {}", graphql_name(s.as_str())),
                n,
            );
        }
        query += "}";
        let d = data(app, key, &query, json!({ "brand": brand.to_uppercase() })).await;
        assert_eq!(d, Value::Object(expected), "{brand}");
    }
}

async fn merge_all(app: &TestApp) {
    app.jobs().tick().await.expect("tick");
}

#[tokio::test]
async fn kept_counts_follow_new_products_and_trust_changes_through_the_merge() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    assert_eq!(count(&app, &key, json!({})).await, (0, true));

    let wildberries = with(item("9"), &["marketplace"], json!("wildberries"));
    send(
        &app,
        &key,
        vec![item("1"), item("2"), item("3"), wildberries],
    )
    .await;
    merge_all(&app).await;
    assert_eq!(count(&app, &key, json!({})).await, (4, true));
    assert_eq!(
        count(
            &app,
            &key,
            json!({ "marketplace": "OZON", "trustStatus": "UNVERIFIED" })
        )
        .await,
        (3, true)
    );
    assert_kept_counts_true(&app, &key).await;

    // A price far from the current one flags product 1; a second account
    // verifies product 2.
    app.clock.advance(TimeDelta::hours(1));
    let jump = with(
        item("1"),
        &["prices", "0"],
        json!({ "country_code": "ru", "user_auth_status": "anonymous", "price": 1600, "old_price": 2000, "currency": "RUB" }),
    );
    send(&app, &key, vec![jump]).await;
    let other = app.key("beta").await;
    send(&app, &other, vec![item("2")]).await;
    merge_all(&app).await;
    assert_eq!(
        count(&app, &key, json!({ "trustStatus": "FLAGGED" })).await,
        (1, true)
    );
    assert_eq!(
        count(&app, &key, json!({ "trustStatus": "VERIFIED" })).await,
        (1, true)
    );
    assert_kept_counts_true(&app, &key).await;
    assert_brand_counts_true(&app, &key, usize::MAX).await;

    // Product 3 changes its brand.
    app.clock.advance(TimeDelta::hours(1));
    send(
        &app,
        &key,
        vec![with(item("3"), &["brand"], json!("Tefal"))],
    )
    .await;
    merge_all(&app).await;
    assert_eq!(
        count(&app, &key, json!({ "brand": "tefal" })).await,
        (1, true)
    );
    assert_brand_counts_true(&app, &key, usize::MAX).await;

    delete_by_hand(&app, &key, "external_id = '3'", 3, usize::MAX).await;
}

#[tokio::test]
async fn kept_counts_are_true_after_vitrina_seed_and_read_no_product() {
    // Rows are deleted past the app below: uncached, each read runs.
    let app = TestApp::spawn_uncached().await;
    let out = vitrina(app.db_url(), &["seed", "--products", "6000", "--seed", "5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let key = app.key("acme").await;
    assert_eq!(count(&app, &key, json!({})).await, (6000, true));
    assert_kept_counts_true(&app, &key).await;
    assert_brand_counts_true(&app, &key, 20).await;

    let before = app.statements();
    let query = "{ products(first: 0, filter: { marketplace: OZON }) { totalCount }
        b: products(first: 0, filter: { brand: \"Redmond\" }) { totalCount } }";
    data(&app, &key, query, json!({})).await;
    let counting: Vec<String> = app
        .statement_texts(before)
        .into_iter()
        .filter(|s| s.contains("COUNT("))
        .collect();
    assert_eq!(
        counting,
        Vec::<String>::new(),
        "no statement counts products"
    );

    // The seed left the triggers keeping the counts as it found them.
    let one = "id IN (SELECT id FROM products LIMIT 1)";
    delete_by_hand(&app, &key, one, 5999, 20).await;
}

/// Deletes the products `which` selects by hand, in SQL: the database
/// keeps the counts, not the code. `left` products remain; the brand
/// counts are checked for at most `brands` brands.
async fn delete_by_hand(app: &TestApp, key: &str, which: &str, left: u64, brands: usize) {
    let delete = format!("DELETE FROM products WHERE {which}");
    app.db.execute_unprepared(&delete).await.expect("delete");
    assert_eq!(count(app, key, json!({})).await, (left, true));
    assert_kept_counts_true(app, key).await;
    assert_brand_counts_true(app, key, brands).await;
}

/// The app with counts bounded at `bound`.
async fn bounded(bound: u64) -> TestApp {
    TestApp::spawn_with_settings(Settings {
        lists: ListConfig {
            count_bound: bound,
            ..ListConfig::default()
        },
        ..Settings::default()
    })
    .await
}

#[tokio::test]
async fn other_filters_count_exactly_up_to_the_bound_and_say_when_more_match() {
    let app = bounded(3).await;
    let key = app.key("acme").await;
    let items = (1..=5).map(|i| item(&i.to_string())).collect();
    send(&app, &key, items).await;
    let other_brand = with(item("6"), &["brand"], json!("Tefal"));
    let other_brand = with(other_brand, &["name"], json!("Утюг 6"));
    send(&app, &key, vec![other_brand]).await;
    merge_all(&app).await;

    // Past the bound: the bound, not exact.
    assert_eq!(
        count(&app, &key, json!({ "category": "Чайники" })).await,
        (3, false)
    );
    assert_eq!(
        count(&app, &key, json!({ "nameContains": "чайник" })).await,
        (3, false)
    );
    // At or under it: exact.
    assert_eq!(
        count(&app, &key, json!({ "sellerCode": "RM-6" })).await,
        (1, true)
    );
    assert_eq!(
        count(&app, &key, json!({ "nameContains": "утюг" })).await,
        (1, true)
    );
    assert_eq!(
        count(&app, &key, json!({ "externalId": "4" })).await,
        (1, true)
    );
    // The kept counts know no bound.
    assert_eq!(count(&app, &key, json!({})).await, (6, true));
    assert_eq!(
        count(&app, &key, json!({ "marketplace": "OZON", "brand": "" })).await,
        (6, true)
    );
    assert_eq!(
        count(&app, &key, json!({ "brand": "redmond" })).await,
        (5, true)
    );
    assert_kept_counts_true(&app, &key).await;
    assert_brand_counts_true(&app, &key, usize::MAX).await;

    // A seller's products are counted up to the bound too, once for both
    // fields.
    let sellers = "{ sellers(lookup: { marketplace: OZON, sellerId: \"s-1\" }) {
        products(first: 1) { totalCount totalCountIsExact } } }";
    let d = data(&app, &key, sellers, json!({})).await;
    assert_eq!(
        d["sellers"][0]["products"],
        json!({ "totalCount": 3, "totalCountIsExact": false })
    );
}

#[tokio::test]
async fn exactly_the_bound_is_exact() {
    let app = bounded(5).await;
    let key = app.key("acme").await;
    let items = (1..=5).map(|i| item(&i.to_string())).collect();
    send(&app, &key, items).await;
    merge_all(&app).await;
    assert_eq!(
        count(&app, &key, json!({ "category": "Чайники" })).await,
        (5, true)
    );
}

#[tokio::test]
async fn a_count_of_a_category_alone_reads_its_index_rows_without_products() {
    let (app, key) = TestApp::demo(300, 5).await;
    let page = app.json_as(&key, "/v1/products?page_size=1").await;
    let category = page["data"][0]["category_path"][0]
        .as_str()
        .expect("a category")
        .to_owned();
    let from = app.statements();
    let (total, exact) = count(&app, &key, json!({ "category": category })).await;
    assert!(total >= 1 && exact, "{total} {exact}");
    let counts: Vec<String> = app
        .statements_with_values(from)
        .into_iter()
        .filter(|s| s.starts_with("SELECT COUNT(*)") && s.contains("product_categories"))
        .collect();
    assert!(!counts.is_empty(), "a bounded count of the category");
    for statement in counts {
        assert!(
            !statement.contains("\"products\""),
            "no product is read to count them: {statement}"
        );
    }
    let rest = app
        .json_as(
            &key,
            &format!("/v1/products?category={category}&page_size=100"),
        )
        .await;
    assert_eq!(rest["data"].as_array().unwrap().len() as u64, total);
}
