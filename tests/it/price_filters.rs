//! The price filters of GraphQL `products` (issue 29, item 3): `currency`,
//! `priceMin`, `priceMax` (inclusive, against the lowest current price in
//! that currency) and `inStock`, each answer compared with one computed
//! here from the stored current prices; the kept lowest prices follow the
//! merge and plain SQL. On both databases.

use std::collections::{BTreeSet, HashMap};

use chrono::TimeDelta;
use entity::current_price;
use sea_orm::{ConnectionTrait, DbBackend, EntityTrait, Statement};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::graphql::{data, demo_app, error_code, nodes, post};
use crate::helpers::uploads::{item, send, with};
use crate::helpers::{TestApp, assert_plain_sentence, migrate_down_through};

const LISTED: &str = "query($filter: ProductFilterInput) {
    products(first: 500, filter: $filter) {
        totalCount totalCountIsExact edges { node { id } }
    }
}";

/// The ids `filter` lists, checked against its exact `totalCount`.
async fn listed(app: &TestApp, key: &str, filter: &Value) -> BTreeSet<Uuid> {
    let d = data(app, key, LISTED, json!({ "filter": filter })).await;
    let products = &d["products"];
    let ids: BTreeSet<Uuid> = nodes(products)
        .iter()
        .map(|n| n["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(products["totalCountIsExact"], true, "{filter}");
    assert_eq!(products["totalCount"], ids.len(), "{filter}");
    ids
}

/// A product's lowest price and whether any price is in stock, per
/// currency, from its current prices as stored.
type Lowest = HashMap<Uuid, HashMap<String, (f64, bool)>>;

/// The rule of `inStock`, written out again: a quantity above 0, or with
/// none known a known status other than `out_of_stock`.
fn in_stock(p: &current_price::Model) -> bool {
    match p.stock_quantity {
        Some(quantity) => quantity > 0,
        None => p
            .stock_status
            .as_deref()
            .is_some_and(|s| s != "out_of_stock"),
    }
}

async fn lowest(app: &TestApp) -> Lowest {
    let rows = current_price::Entity::find().all(&app.db).await.unwrap();
    let mut lowest: Lowest = HashMap::new();
    for p in rows {
        let entry = lowest
            .entry(p.product_id)
            .or_default()
            .entry(p.currency.clone())
            .or_insert((f64::INFINITY, false));
        entry.0 = entry.0.min(p.price);
        entry.1 |= in_stock(&p);
    }
    lowest
}

/// The products of `lowest` one of whose currencies passes `test`.
fn expected(lowest: &Lowest, test: impl Fn(&str, f64, bool) -> bool) -> BTreeSet<Uuid> {
    lowest
        .iter()
        .filter(|(_, by)| by.iter().any(|(c, &(price, stock))| test(c, price, stock)))
        .map(|(id, _)| *id)
        .collect()
}

#[tokio::test]
async fn each_price_filter_lists_the_products_its_rule_computes_from_the_stored_prices() {
    let (app, key) = demo_app(80).await;
    let lowest = lowest(&app).await;
    let mut rub: Vec<f64> = lowest
        .values()
        .filter_map(|by| by.get("RUB"))
        .map(|p| p.0)
        .collect();
    rub.sort_by(f64::total_cmp);
    assert!(rub.len() > 10, "the demo has products priced in RUB");
    let (low, high) = (rub[rub.len() / 4], rub[rub.len() * 3 / 4]);

    let in_rub = expected(&lowest, |c, _, _| c == "RUB");
    assert_eq!(
        listed(&app, &key, &json!({ "currency": "RUB" })).await,
        in_rub
    );
    let range = expected(&lowest, |c, p, _| c == "RUB" && (low..=high).contains(&p));
    let filter = json!({ "currency": "RUB", "priceMin": low, "priceMax": high });
    let found = listed(&app, &key, &filter).await;
    assert_eq!(found, range);
    assert!(!found.is_empty() && found.len() < in_rub.len(), "{filter}");
    let exactly = json!({ "currency": "RUB", "priceMin": low, "priceMax": low });
    assert!(
        !listed(&app, &key, &exactly).await.is_empty(),
        "both bounds are inclusive"
    );
    let above = expected(&lowest, |c, p, _| c == "RUB" && p >= high);
    let filter = json!({ "currency": "RUB", "priceMin": high });
    assert_eq!(listed(&app, &key, &filter).await, above);

    for stocked in [true, false] {
        let filter = json!({ "currency": "KZT", "inStock": stocked });
        let want = expected(&lowest, |c, _, s| c == "KZT" && s == stocked);
        assert_eq!(listed(&app, &key, &filter).await, want, "{filter}");
    }
    let somewhere = expected(&lowest, |_, _, s| s);
    let all = listed(&app, &key, &json!({})).await;
    assert_eq!(
        listed(&app, &key, &json!({ "inStock": true })).await,
        somewhere
    );
    let nowhere: BTreeSet<Uuid> = all.difference(&somewhere).copied().collect();
    assert!(!nowhere.is_empty() && !somewhere.is_empty());
    assert_eq!(
        listed(&app, &key, &json!({ "inStock": false })).await,
        nowhere,
        "no price in stock in any currency, or no price at all"
    );

    let ozon: BTreeSet<Uuid> = listed(&app, &key, &json!({ "marketplace": "OZON" })).await;
    let filter =
        json!({ "marketplace": "OZON", "currency": "RUB", "priceMax": high, "inStock": true });
    let want: BTreeSet<Uuid> = expected(&lowest, |c, p, s| c == "RUB" && p <= high && s)
        .intersection(&ozon)
        .copied()
        .collect();
    assert_eq!(
        listed(&app, &key, &filter).await,
        want,
        "with another filter"
    );
    assert!(
        listed(&app, &key, &json!({ "currency": "XYZ" }))
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_price_bound_without_a_currency_is_refused_naming_it() {
    let (app, key) = demo_app(3).await;
    for filter in [
        json!({ "priceMin": 1 }),
        json!({ "priceMax": 1, "inStock": true }),
    ] {
        let (status, body) = post(&app, Some(&key), LISTED, json!({ "filter": filter })).await;
        assert_eq!(status, 200);
        let message = body["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("currency"), "{message}");
        assert_plain_sentence(message);
        let code = error_code(&app, &key, LISTED, json!({ "filter": filter })).await;
        assert_eq!(code, "MISSING_PARAMETER");
    }
}

/// How many products have their lowest RUB price within `min..=max`.
async fn priced_in(app: &TestApp, key: &str, min: f64, max: f64) -> usize {
    let filter = json!({ "currency": "RUB", "priceMin": min, "priceMax": max });
    listed(app, key, &filter).await.len()
}

#[tokio::test]
async fn the_lowest_price_follows_every_write_of_the_current_prices() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let price = |country: &str, price: u32, quantity: u32| {
        json!({ "country_code": country, "user_auth_status": "anonymous", "price": price,
                "old_price": price, "currency": "RUB", "stock_quantity": quantity })
    };
    let two = with(
        item("1"),
        &["prices"],
        json!([price("ru", 1000, 5), price("by", 800, 0)]),
    );
    send(&app, &key, vec![two]).await;
    app.jobs().tick().await.unwrap();
    assert_eq!(
        priced_in(&app, &key, 800.0, 800.0).await,
        1,
        "the lower of two"
    );
    let stocked = json!({ "currency": "RUB", "inStock": true });
    assert_eq!(
        listed(&app, &key, &stocked).await.len(),
        1,
        "one of two in stock"
    );

    // The merge raises the lower price: the other becomes the lowest.
    app.clock.advance(TimeDelta::hours(1));
    let raised = with(item("1"), &["prices"], json!([price("by", 1100, 0)]));
    send(&app, &key, vec![raised]).await;
    app.jobs().tick().await.unwrap();
    assert_eq!(priced_in(&app, &key, 0.0, 999.0).await, 0);
    assert_eq!(priced_in(&app, &key, 1000.0, 1000.0).await, 1);

    // Out of stock everywhere, by the merge.
    app.clock.advance(TimeDelta::hours(1));
    let sold_out = with(item("1"), &["prices"], json!([price("ru", 1000, 0)]));
    send(&app, &key, vec![sold_out]).await;
    app.jobs().tick().await.unwrap();
    assert!(listed(&app, &key, &stocked).await.is_empty());
    let unstocked = json!({ "currency": "RUB", "inStock": false });
    assert_eq!(listed(&app, &key, &unstocked).await.len(), 1);

    // Plain SQL, past the merge: the database keeps them, not the code.
    app.db
        .execute_unprepared("UPDATE current_prices SET price = 10 WHERE country_code = 'by'")
        .await
        .unwrap();
    assert_eq!(priced_in(&app, &key, 10.0, 10.0).await, 1);
    app.db
        .execute_unprepared("DELETE FROM current_prices WHERE country_code = 'by'")
        .await
        .unwrap();
    assert_eq!(priced_in(&app, &key, 0.0, 999.0).await, 0);
    assert_eq!(priced_in(&app, &key, 1000.0, 1000.0).await, 1);
    app.db
        .execute_unprepared("DELETE FROM current_prices")
        .await
        .unwrap();
    assert!(
        listed(&app, &key, &json!({ "currency": "RUB" }))
            .await
            .is_empty()
    );
    assert_eq!(
        listed(&app, &key, &json!({ "inStock": false })).await.len(),
        1
    );
}

/// The definition of index `name`, as the database keeps it.
async fn index_definition(app: &TestApp, name: &str) -> String {
    let backend = app.db.get_database_backend();
    let sql = match backend {
        DbBackend::Postgres => {
            format!("SELECT indexdef FROM pg_indexes WHERE indexname = '{name}'")
        }
        _ => format!("SELECT sql FROM sqlite_master WHERE name = '{name}'"),
    };
    let row = app
        .db
        .query_one_raw(Statement::from_string(backend, sql))
        .await
        .unwrap();
    row.expect("the index")
        .try_get_by_index::<String>(0)
        .unwrap()
}

#[tokio::test]
async fn a_catalog_migrated_to_lowest_prices_has_them_filled_from_its_prices() {
    let (app, key) = demo_app(40).await;
    let covering = index_definition(&app, "products_newest_desc").await;
    assert!(covering.contains("name_search"), "{covering}");

    // Back to before the covering index: the index as it was.
    migrate_down_through(&app.db, "m20261201_000025_products_newest_covering").await;
    let plain = index_definition(&app, "products_newest_desc").await;
    assert!(!plain.contains("name_search"), "{plain}");
    // Up again as the service migrates (on SQLite in one transaction, on
    // one connection). Spread over the pool's connections, migration 32's
    // drop and rebuild of an index under the same name was refused as
    // "already exists".
    vitrina::db::migrate(&app.db).await.unwrap();
    assert_eq!(
        index_definition(&app, "products_newest_desc").await,
        covering
    );

    // Filled by the migration from the current prices there are.
    let want = expected(&lowest(&app).await, |c, _, s| c == "KZT" && s);
    assert!(!want.is_empty());
    let filter = json!({ "currency": "KZT", "inStock": true });
    assert_eq!(listed(&app, &key, &filter).await, want);
}
