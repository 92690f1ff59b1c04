//! The orders of GraphQL `products(orderBy:)` (issue 29, item 2): each
//! field both ways, paged forwards and backwards by cursors, gives the
//! order computed here from the stored rows; a deep page walks the order's
//! index instead of sorting the catalog; `PRICE` needs a currency, and a
//! cursor of one order is refused by another. On both databases.

use std::cmp::Ordering;
use std::collections::HashMap;

use entity::{current_price, product};
use sea_orm::{ConnectionTrait, DbBackend, EntityTrait, Statement, TransactionTrait};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::TestApp;
use crate::helpers::graphql::{data, demo_app, error_code, nodes};
use crate::helpers::uploads::{item, send, with};

const PAGE: &str = "query($filter: ProductFilterInput, $order: ProductOrder,
        $first: Int, $after: String, $last: Int, $before: String) {
    products(filter: $filter, orderBy: $order, first: $first, after: $after,
             last: $last, before: $before) {
        totalCount
        edges { cursor node { id } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
}";

const SIZE: usize = 7;

/// Every product of `order` (and `filter`), paged forwards with `first`
/// and `after`, then backwards with `last` and `before`: both ways the same list.
async fn paged(app: &TestApp, key: &str, order: &Value, filter: &Value) -> Vec<Uuid> {
    let ids = |page: &Value| -> Vec<Uuid> {
        nodes(page)
            .iter()
            .map(|n| n["id"].as_str().unwrap().parse().unwrap())
            .collect()
    };
    let (mut forward, mut after) = (Vec::new(), Value::Null);
    loop {
        let vars = json!({ "filter": filter, "order": order, "first": SIZE, "after": after });
        let page = data(app, key, PAGE, vars).await["products"].clone();
        forward.extend(ids(&page));
        if page["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = page["pageInfo"]["endCursor"].clone();
    }
    let (mut backward, mut before) = (Vec::new(), Value::Null);
    loop {
        let vars = json!({ "filter": filter, "order": order, "last": SIZE, "before": before });
        let page = data(app, key, PAGE, vars).await["products"].clone();
        let mut chunk = ids(&page);
        chunk.extend(backward);
        backward = chunk;
        if page["pageInfo"]["hasPreviousPage"] != true {
            break;
        }
        before = page["pageInfo"]["startCursor"].clone();
    }
    assert_eq!(forward, backward, "{order}: forwards and backwards");
    forward
}

/// Each product's lowest current price in `currency`, from the stored rows.
pub async fn lowest_in(app: &TestApp, currency: &str) -> HashMap<Uuid, f64> {
    let mut lowest: HashMap<Uuid, f64> = HashMap::new();
    for p in current_price::Entity::find().all(&app.db).await.unwrap() {
        if p.currency == currency {
            let entry = lowest.entry(p.product_id).or_insert(f64::INFINITY);
            *entry = entry.min(p.price);
        }
    }
    lowest
}

/// The product ids in the database's own order of `column` (text orders by
/// its collation, which Rust's byte order need not match), ties by id.
async fn by_column(app: &TestApp, column: &str, direction: &str) -> Vec<Uuid> {
    let sql = format!("SELECT id FROM products ORDER BY {column} {direction}, id {direction}");
    let backend = app.db.get_database_backend();
    app.db
        .query_all_raw(Statement::from_string(backend, sql))
        .await
        .unwrap()
        .iter()
        .map(|row| row.try_get::<Uuid>("", "id").unwrap())
        .collect()
}

#[tokio::test]
async fn every_order_pages_both_ways_through_the_order_of_the_stored_rows() {
    let (app, key) = demo_app(45).await;
    let products = product::Entity::find().all(&app.db).await.unwrap();
    for direction in ["ASC", "DESC"] {
        let flip = |o: Ordering| if direction == "DESC" { o.reverse() } else { o };
        for field in ["FIRST_SEEN", "LAST_SEEN"] {
            let by = |p: &product::Model| match field {
                "FIRST_SEEN" => p.first_seen_at,
                _ => p.last_seen_at,
            };
            let mut want: Vec<&product::Model> = products.iter().collect();
            want.sort_by(|a, b| flip(by(a).cmp(&by(b)).then(a.id.cmp(&b.id))));
            let want: Vec<Uuid> = want.iter().map(|p| p.id).collect();
            let order = json!({ "field": field, "direction": direction });
            assert_eq!(paged(&app, &key, &order, &json!({})).await, want, "{order}");
        }
        let order = json!({ "field": "NAME", "direction": direction });
        assert_eq!(
            paged(&app, &key, &order, &json!({})).await,
            by_column(&app, "name", direction).await,
            "{order}"
        );

        let lowest = lowest_in(&app, "RUB").await;
        let mut want: Vec<(f64, Uuid)> = lowest.iter().map(|(id, p)| (*p, *id)).collect();
        want.sort_by(|a, b| flip(a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))));
        let want: Vec<Uuid> = want.into_iter().map(|(_, id)| id).collect();
        assert!(want.len() > 2 * SIZE, "several pages priced in RUB");
        let order = json!({ "field": "PRICE", "direction": direction });
        let filter = json!({ "currency": "RUB" });
        assert_eq!(paged(&app, &key, &order, &filter).await, want, "{order}");

        // With a price range too: the same order, cut to the range.
        let (low, high) = (want.len() / 4, want.len() * 3 / 4);
        let (low, high) = (lowest[&want[low]], lowest[&want[high]]);
        let (low, high) = (low.min(high), low.max(high));
        let filter = json!({ "currency": "RUB", "priceMin": low, "priceMax": high });
        let ranged: Vec<Uuid> = want
            .iter()
            .filter(|id| (low..=high).contains(&lowest[*id]))
            .copied()
            .collect();
        assert_eq!(paged(&app, &key, &order, &filter).await, ranged, "{filter}");
    }
}

#[tokio::test]
async fn price_needs_a_currency_and_a_cursor_pages_only_its_own_order() {
    let (app, key) = demo_app(10).await;
    let price = json!({ "field": "PRICE", "direction": "ASC" });
    let code = error_code(&app, &key, PAGE, json!({ "order": price, "first": 2 })).await;
    assert_eq!(code, "MISSING_PARAMETER");

    let by_name = json!({ "field": "NAME", "direction": "ASC" });
    let vars = json!({ "order": by_name, "first": 2 });
    let page = data(&app, &key, PAGE, vars).await["products"].clone();
    let cursor = page["pageInfo"]["endCursor"].clone();
    let named_desc = json!({ "field": "NAME", "direction": "DESC" });
    for other in [
        json!(null),
        named_desc,
        json!({ "field": "LAST_SEEN", "direction": "ASC" }),
    ] {
        let vars = json!({ "order": other, "first": 2, "after": cursor });
        let code = error_code(&app, &key, PAGE, vars).await;
        assert_eq!(code, "INVALID_PARAMETER", "{other}");
    }
    let vars = json!({ "order": by_name, "first": 2, "after": cursor });
    data(&app, &key, PAGE, vars).await;

    // A cursor of the default order, as lists gave before orders existed,
    // still pages it, and no other.
    let newest = data(&app, &key, PAGE, json!({ "first": 2 })).await["products"].clone();
    let cursor = newest["pageInfo"]["endCursor"].clone();
    let explicit = json!({ "field": "FIRST_SEEN", "direction": "DESC" });
    let vars = json!({ "order": explicit, "first": 2, "after": cursor });
    let next = data(&app, &key, PAGE, vars).await["products"].clone();
    assert_eq!(nodes(&next).len(), 2);
    let vars = json!({ "order": by_name, "first": 2, "after": cursor });
    assert_eq!(
        error_code(&app, &key, PAGE, vars).await,
        "INVALID_PARAMETER"
    );
}

#[tokio::test]
async fn names_of_the_longest_kind_page_by_cursors() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    // The longest name the merge takes (2,048 bytes), of the character JSON
    // writes longest (six bytes, `\u0001`): its cursor is far longer than
    // any other text argument.
    let items: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|last| {
            let name = format!("{}{last}", "\u{1}".repeat(2047));
            with(item(last), &["name"], json!(name))
        })
        .collect();
    send(&app, &key, items).await;
    app.jobs().tick().await.expect("merge");
    let want = by_column(&app, "name", "ASC").await;
    assert_eq!(want.len(), 3);
    let order = json!({ "field": "NAME", "direction": "ASC" });
    let (mut walked, mut after) = (Vec::new(), Value::Null);
    for _ in &want {
        let vars = json!({ "order": order, "first": 1, "after": after });
        let page = data(&app, &key, PAGE, vars).await["products"].clone();
        let node = &nodes(&page)[0];
        walked.push(node["id"].as_str().unwrap().parse::<Uuid>().unwrap());
        after = page["pageInfo"]["endCursor"].clone();
        assert!(after.as_str().unwrap().len() > 16_000);
    }
    assert_eq!(walked, want);
}

/// Each order and the index a page of it walks.
const WALKS: [(&str, &str); 4] = [
    ("FIRST_SEEN", "products_newest_desc"),
    ("LAST_SEEN", "products_last_seen"),
    ("NAME", "products_by_name"),
    ("PRICE", "lowest_prices_by_price"),
];

#[tokio::test]
async fn a_page_after_a_cursor_walks_the_index_of_its_order_without_sorting() {
    let (app, key) = demo_app(40).await;
    let backend = app.db.get_database_backend();
    if backend == DbBackend::Postgres {
        app.db
            .execute_unprepared("ANALYZE products, lowest_prices")
            .await
            .unwrap();
    }
    for direction in ["ASC", "DESC"] {
        for (field, index) in WALKS {
            let order = json!({ "field": field, "direction": direction });
            let filter = json!({ "currency": "RUB" });
            let vars = json!({ "order": order, "filter": filter, "first": 3 });
            let first = data(&app, &key, PAGE, vars).await["products"].clone();
            let after = first["pageInfo"]["endCursor"].clone();
            let from = app.statements();
            let vars = json!({ "order": order, "filter": filter, "first": 3, "after": after });
            data(&app, &key, PAGE, vars).await;
            let statement = app
                .statements_reading(from, "products")
                .into_iter()
                .find(|s| s.contains("LIMIT"))
                .expect("the page statement");
            let plan = plan(&app, &statement).await;
            assert!(plan.contains(index), "{order} walks {index}:\n{plan}");
            assert!(
                !plan.contains("Sort") && !plan.contains("TEMP B-TREE"),
                "{order} sorts:\n{plan}"
            );
        }
    }
}

/// The plan of `statement`, as text; sequential scans priced out on
/// PostgreSQL, as on a catalog of millions.
async fn plan(app: &TestApp, statement: &str) -> String {
    let backend = app.db.get_database_backend();
    let (setting, explain, column) = match backend {
        DbBackend::Postgres => ("SET LOCAL enable_seqscan = off", "EXPLAIN", 0),
        _ => ("SELECT 1", "EXPLAIN QUERY PLAN", 3),
    };
    let txn = app.db.begin().await.unwrap();
    txn.execute_unprepared(setting).await.unwrap();
    let sql = format!("{explain} {statement}");
    let rows = txn
        .query_all_raw(Statement::from_string(backend, sql))
        .await
        .unwrap();
    txn.rollback().await.unwrap();
    rows.iter()
        .map(|row| row.try_get_by_index::<String>(column).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}
