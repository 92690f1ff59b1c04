//! `priceIndex` and `priceMovers` (issue 29, items 5 and 6), compared with
//! what is computed here from the stored observations and current prices:
//! the index per bucket over a filter's products, each product weighing
//! the same; the movers' price then (each variant's at `since`, or its
//! first after it) against the lowest current one, biggest first; the
//! edges (a variant first seen after `since`, no price in the currency,
//! no move) and the limits. On both databases.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, TimeDelta, Utc};
use entity::{Marketplace, UserAuthStatus, price_observation, product, product_category};
use sea_orm::EntityTrait;
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::config::{ListConfig, Settings};

use crate::fixtures::{
    self, Observation, insert_current_price, insert_observation, insert_product, insert_seller,
    observation,
};
use crate::helpers::graphql::{data, demo_app, error_code};
use crate::helpers::{TestApp, iso};
use crate::price_series::{answered, assert_same, at, bucket_start};
use crate::product_orders::lowest_in;

const INDEX: &str = "query($filter: ProductFilterInput, $currency: String!,
        $bucket: TimeBucket!, $from: DateTime, $to: DateTime) {
    priceIndex(filter: $filter, currency: $currency, bucket: $bucket, from: $from, to: $to) {
        start count min max avg open close
    }
}";

const MOVERS: &str = "query($filter: ProductFilterInput, $currency: String!,
        $since: DateTime!, $direction: MoveDirection!, $first: Int) {
    priceMovers(filter: $filter, currency: $currency, since: $since,
                direction: $direction, first: $first) {
        product { id name }
        before after changePercent changedAt
    }
}";

async fn observations(app: &TestApp) -> Vec<price_observation::Model> {
    price_observation::Entity::find()
        .all(&app.db)
        .await
        .unwrap()
}

/// The index of `products` computed here, in the shape of
/// `price_series::answered`.
fn expected_index(
    rows: &[price_observation::Model],
    products: &[Uuid],
    currency: &str,
    bucket: &str,
) -> Vec<Value> {
    // Per bucket, per product: its observations in time order.
    let mut buckets: BTreeMap<DateTime<Utc>, BTreeMap<Uuid, Vec<&price_observation::Model>>> =
        BTreeMap::new();
    for row in rows {
        if row.currency == currency && products.contains(&row.product_id) {
            buckets
                .entry(bucket_start(bucket, row.recorded_at))
                .or_default()
                .entry(row.product_id)
                .or_default()
                .push(row);
        }
    }
    let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    buckets
        .into_iter()
        .map(|(start, per_product)| {
            let (mut means, mut opens, mut closes) = (vec![], vec![], vec![]);
            let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
            for mut rows in per_product.into_values() {
                rows.sort_by_key(|r| (r.recorded_at, r.id));
                let prices: Vec<f64> = rows.iter().map(|r| r.price).collect();
                means.push(mean(&prices));
                opens.push(prices[0]);
                closes.push(prices[prices.len() - 1]);
                low = prices.iter().copied().fold(low, f64::min);
                high = prices.iter().copied().fold(high, f64::max);
            }
            json!([
                iso(start),
                means.len(),
                low,
                high,
                mean(&means),
                mean(&opens),
                mean(&closes)
            ])
        })
        .collect()
}

#[tokio::test]
async fn the_index_matches_the_one_computed_from_the_stored_observations() {
    let (app, key) = demo_app(40).await;
    let rows = observations(&app).await;
    let products = product::Entity::find().all(&app.db).await.unwrap();
    let mut compared = 0;
    for currency in ["RUB", "KZT"] {
        let priced = lowest_in(&app, currency).await;
        let marketplaces = [
            (None, json!(null)),
            (Some(Marketplace::Ozon), json!("OZON")),
            (Some(Marketplace::Wildberries), json!("WILDBERRIES")),
        ];
        for (marketplace, named) in marketplaces {
            let matched: Vec<Uuid> = products
                .iter()
                .filter(|p| marketplace.is_none_or(|m| p.marketplace == m))
                .filter(|p| priced.contains_key(&p.id))
                .map(|p| p.id)
                .collect();
            let filter = json!({ "marketplace": named });
            for bucket in ["DAY", "WEEK", "MONTH"] {
                let vars = json!({ "filter": filter, "currency": currency, "bucket": bucket });
                let got = answered(&data(&app, &key, INDEX, vars).await["priceIndex"]);
                let want = expected_index(&rows, &matched, currency, bucket);
                assert_same(&got, &want, &format!("{currency} {marketplace:?} {bucket}"));
                compared += want.len();
            }
        }
    }
    assert!(compared > 50, "the demo has buckets to compare: {compared}");

    // A category, which joins its index rows: its most common one.
    let rows_of_categories = product_category::Entity::find().all(&app.db).await.unwrap();
    let mut sizes: HashMap<&str, usize> = HashMap::new();
    for row in &rows_of_categories {
        *sizes.entry(&row.category_key).or_default() += 1;
    }
    let (category, _) = sizes.iter().max_by_key(|(k, n)| (**n, *k)).unwrap();
    let priced = lowest_in(&app, "RUB").await;
    let matched: Vec<Uuid> = rows_of_categories
        .iter()
        .filter(|r| r.category_key == *category && priced.contains_key(&r.product_id))
        .map(|r| r.product_id)
        .collect();
    let vars = json!({ "filter": { "category": category }, "currency": "RUB", "bucket": "WEEK" });
    let got = answered(&data(&app, &key, INDEX, vars).await["priceIndex"]);
    let want = expected_index(&rows, &matched, "RUB", "WEEK");
    assert!(!want.is_empty());
    assert_same(&got, &want, category);
}

/// One product's price at `since` in `currency`: per variant its last
/// observation at or before `since`, else its first after; the lowest.
/// With the last observation after `since`, when there is one.
fn then(
    rows: &[&price_observation::Model],
    since: DateTime<Utc>,
) -> Option<(f64, Option<DateTime<Utc>>)> {
    let mut variants: HashMap<_, Vec<&price_observation::Model>> = HashMap::new();
    for row in rows {
        let variant = (&row.country_code, &row.region_code, row.user_auth_status);
        variants.entry(variant).or_default().push(row);
    }
    let before = variants
        .into_values()
        .map(|mut rows| {
            rows.sort_by_key(|r| (r.recorded_at, r.id));
            match rows.iter().rev().find(|r| r.recorded_at <= since) {
                Some(last) => last.price,
                None => rows[0].price,
            }
        })
        .reduce(f64::min)?;
    let changed = rows
        .iter()
        .map(|r| r.recorded_at)
        .filter(|t| *t > since)
        .max();
    Some((before, changed))
}

/// The movers computed here: `[id, before, after, change, changedAt]`,
/// biggest first.
fn expected_movers(
    rows: &[price_observation::Model],
    current: &HashMap<Uuid, f64>,
    since: DateTime<Utc>,
    drop: bool,
) -> Vec<Value> {
    let mut by_product: HashMap<Uuid, Vec<&price_observation::Model>> = HashMap::new();
    for row in rows.iter().filter(|r| r.currency == "RUB") {
        by_product.entry(row.product_id).or_default().push(row);
    }
    let mut moves: Vec<(f64, Uuid, Value)> = vec![];
    for (id, after) in current {
        let Some((before, Some(changed))) = by_product.get(id).and_then(|r| then(r, since)) else {
            continue;
        };
        let change = (after - before) * 100.0 / before;
        if before > 0.0
            && (if drop {
                *after < before
            } else {
                *after > before
            })
        {
            let row = json!([id, before, after, change, iso(changed)]);
            moves.push((change, *id, row));
        }
    }
    moves.sort_by(|a, b| {
        let by_size = if drop {
            a.0.total_cmp(&b.0)
        } else {
            b.0.total_cmp(&a.0)
        };
        by_size.then(a.1.cmp(&b.1))
    });
    moves.into_iter().map(|(_, _, row)| row).collect()
}

/// Movers as answered, in the shape of [`expected_movers`].
fn answered_movers(moves: &Value) -> Vec<Value> {
    let moves = moves.as_array().expect("moves");
    moves
        .iter()
        .map(|m| {
            let changed: DateTime<Utc> = m["changedAt"].as_str().unwrap().parse().unwrap();
            json!([
                m["product"]["id"],
                m["before"],
                m["after"],
                m["changePercent"],
                iso(changed)
            ])
        })
        .collect()
}

fn assert_same_moves(got: &[Value], want: &[Value], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:#?} vs {want:#?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(
            (&g[0], &g[1], &g[2], &g[4]),
            (&w[0], &w[1], &w[2], &w[4]),
            "{what}"
        );
        let (a, b) = (g[3].as_f64().unwrap(), w[3].as_f64().unwrap());
        assert!(
            (a - b).abs() <= 1e-9 * b.abs().max(1.0),
            "{what}: {g} vs {w}"
        );
    }
}

#[tokio::test]
async fn movers_match_those_computed_from_the_stored_history() {
    let (app, key) = demo_app(40).await;
    let rows = observations(&app).await;
    let current = lowest_in(&app, "RUB").await;
    let mut times: Vec<DateTime<Utc>> = rows.iter().map(|r| r.recorded_at).collect();
    times.sort();
    let mut seen = [0, 0];
    for since in [
        times[times.len() / 3],
        times[times.len() / 2],
        times[0] - TimeDelta::days(1),
    ] {
        for (i, direction) in ["DROP", "RISE"].into_iter().enumerate() {
            let want = expected_movers(&rows, &current, since, direction == "DROP");
            let vars = json!({ "currency": "RUB", "since": iso(since),
                               "direction": direction, "first": 100 });
            let got = answered_movers(&data(&app, &key, MOVERS, vars).await["priceMovers"]);
            assert_same_moves(&got, &want, &format!("{direction} since {since}"));
            seen[i] += want.len();

            // `first` keeps the biggest.
            let vars = json!({ "currency": "RUB", "since": iso(since), "direction": direction });
            let got = answered_movers(&data(&app, &key, MOVERS, vars).await["priceMovers"]);
            assert_eq!(got.len(), want.len().min(10));
            assert_same_moves(&got, &want[..got.len()], "the default first");
        }
    }
    assert!(
        seen[0] > 0 && seen[1] > 0,
        "the demo has drops and rises: {seen:?}"
    );

    // Within a category (a join): its products' moves alone.
    let members = product_category::Entity::find().all(&app.db).await.unwrap();
    let category = members[0].category_key.clone();
    let within: HashMap<Uuid, f64> = members
        .iter()
        .filter(|r| r.category_key == category)
        .filter_map(|r| Some((r.product_id, *current.get(&r.product_id)?)))
        .collect();
    let since = times[0] - TimeDelta::days(1);
    let want = expected_movers(&rows, &within, since, true);
    let vars = json!({ "filter": { "category": category }, "currency": "RUB",
                       "since": iso(since), "direction": "DROP", "first": 100 });
    let got = answered_movers(&data(&app, &key, MOVERS, vars).await["priceMovers"]);
    assert_same_moves(&got, &want, &category);
}

#[tokio::test]
async fn the_edges_of_moves_and_of_the_index() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let since = at(2026, 6, 1, 0, 0, 0);
    let day = TimeDelta::days(1);
    let authenticated = |price, t| Observation {
        user_auth_status: UserAuthStatus::Authenticated,
        ..observation(price, t)
    };
    let record = |id: Uuid, o: Observation| {
        let db = app.db.clone();
        async move { insert_observation(&db, id, o).await }
    };

    // Fell from 100 to 80; its authenticated variant, first seen after
    // `since` at 70 and then 90, counts from its first price: the price
    // then is 70 and now 80, a rise.
    let a = insert_product(&app.db, &shop, fixtures::product("a")).await;
    record(a.id, observation(100.0, since - day)).await;
    record(a.id, observation(80.0, since + day)).await;
    record(a.id, authenticated(70.0, since + day)).await;
    record(a.id, authenticated(90.0, since + day * 2)).await;
    insert_current_price(&app.db, a.id, observation(80.0, since + day)).await;
    insert_current_price(&app.db, a.id, authenticated(90.0, since + day * 2)).await;
    // Fell from 200 to 150, observed exactly at `since` first (inclusive).
    let b = insert_product(&app.db, &shop, fixtures::product("b")).await;
    record(b.id, observation(200.0, since)).await;
    record(b.id, observation(150.0, since + day * 3)).await;
    insert_current_price(&app.db, b.id, observation(150.0, since + day * 3)).await;
    // Unchanged since: no move either way.
    let c = insert_product(&app.db, &shop, fixtures::product("c")).await;
    record(c.id, observation(50.0, since - day)).await;
    insert_current_price(&app.db, c.id, observation(50.0, since - day)).await;
    // Only history, no current price: not among the products priced now.
    let d = insert_product(&app.db, &shop, fixtures::product("d")).await;
    record(d.id, observation(10.0, since - day)).await;
    record(d.id, observation(1.0, since + day)).await;

    let movers = |direction: &str| {
        let vars = json!({ "currency": "RUB", "since": iso(since), "direction": direction });
        let app = &app;
        let key = key.clone();
        async move { data(app, &key, MOVERS, vars).await["priceMovers"].clone() }
    };
    let drops = movers("DROP").await;
    let ids: Vec<&Value> = drops
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["product"]["id"])
        .collect();
    assert_eq!(ids, [&json!(b.id)], "{drops}");
    assert_eq!(drops[0]["before"], 200.0);
    assert_eq!(drops[0]["after"], 150.0);
    assert_eq!(drops[0]["changePercent"], -25.0);
    assert_eq!(drops[0]["changedAt"], iso(since + day * 3));
    let rises = movers("RISE").await;
    assert_eq!(rises.as_array().unwrap().len(), 1, "{rises}");
    assert_eq!(rises[0]["product"]["id"], json!(a.id));
    assert_eq!(rises[0]["before"], 70.0);
    assert_eq!(rises[0]["after"], 80.0);
    assert_eq!(rises[0]["changedAt"], iso(since + day * 2));
    let vars = json!({ "currency": "KZT", "since": iso(since), "direction": "DROP" });
    assert_eq!(
        data(&app, &key, MOVERS, vars).await["priceMovers"],
        json!([])
    );

    // The index counts the products priced now; a day with none is left out.
    let vars = json!({ "currency": "RUB", "bucket": "DAY", "from": iso(since) });
    let index = answered(&data(&app, &key, INDEX, vars).await["priceIndex"]);
    assert_eq!(
        index,
        [
            json!([iso(since), 1, 200.0, 200.0, 200.0, 200.0, 200.0]),
            json!([iso(since + day), 1, 70.0, 80.0, 75.0, 80.0, 70.0]),
            json!([iso(since + day * 2), 1, 90.0, 90.0, 90.0, 90.0, 90.0]),
            json!([iso(since + day * 3), 1, 150.0, 150.0, 150.0, 150.0, 150.0]),
        ],
        "product d has no current price; of a's two rows at one instant the later closes"
    );
    let vars = json!({ "currency": "KZT", "bucket": "DAY" });
    assert_eq!(data(&app, &key, INDEX, vars).await["priceIndex"], json!([]));

    // Refusals: another currency in the filter, too many movers.
    let mismatched = json!({ "filter": { "currency": "KZT" }, "currency": "RUB",
                             "since": iso(since), "direction": "DROP" });
    assert_eq!(
        error_code(&app, &key, MOVERS, mismatched).await,
        "INVALID_PARAMETER"
    );
    let vars = json!({ "filter": { "currency": "KZT" }, "currency": "RUB", "bucket": "DAY" });
    assert_eq!(
        error_code(&app, &key, INDEX, vars).await,
        "INVALID_PARAMETER"
    );
    for first in [-1, 101] {
        let vars = json!({ "currency": "RUB", "since": iso(since), "direction": "DROP",
                           "first": first });
        assert_eq!(
            error_code(&app, &key, MOVERS, vars).await,
            "INVALID_PARAMETER"
        );
    }
}

#[tokio::test]
async fn an_index_of_more_buckets_and_more_movers_than_the_limits_are_refused() {
    let tight = TestApp::spawn_with_settings(Settings {
        lists: ListConfig {
            series_max_buckets: 2,
            movers_max: 2,
            ..ListConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = tight.key("acme").await;
    let shop = insert_seller(&tight.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let start = at(2026, 5, 1, 0, 0, 0);
    for (n, name) in ["p", "q", "r"].into_iter().enumerate() {
        let p = insert_product(&tight.db, &shop, fixtures::product(name)).await;
        let t = start + TimeDelta::days(n as i64);
        insert_observation(&tight.db, p.id, observation(10.0, t)).await;
        insert_current_price(&tight.db, p.id, observation(10.0, t)).await;
    }
    let vars = json!({ "currency": "RUB", "bucket": "DAY" });
    let (status, body) = crate::helpers::graphql::post(&tight, Some(&key), INDEX, vars).await;
    assert_eq!(status, 200);
    let message = body["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("VITRINA_SERIES_MAX_BUCKETS"), "{message}");
    let vars = json!({ "currency": "RUB", "bucket": "MONTH" });
    let months = data(&tight, &key, INDEX, vars).await["priceIndex"].clone();
    assert_eq!(months[0]["count"], 3, "a larger bucket holds them");

    for (first, refused) in [(2, false), (3, true)] {
        let vars = json!({ "currency": "RUB", "since": iso(start), "direction": "DROP",
                           "first": first });
        let (_, body) = crate::helpers::graphql::post(&tight, Some(&key), MOVERS, vars).await;
        let message = body["errors"][0]["message"].as_str().unwrap_or_default();
        assert_eq!(message.contains("VITRINA_MOVERS_MAX"), refused, "{body}");
    }
}
