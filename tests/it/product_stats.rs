//! `productStats(filter, currency)` (issue 29, item 5): count, lowest,
//! highest, mean and median of the matching products' lowest current
//! prices in a currency, compared with the same computed here from the
//! stored products and current prices, for filters on the products, on
//! the prices, both and none; no price in the currency; the currency the
//! filter names must be the same; the kept price levels that answer the
//! broad filters stay true through every write. On both databases.

use std::collections::{BTreeMap, HashMap};

use std::collections::HashSet;

use entity::{Marketplace, TrustStatus, current_price, product, product_category};
use sea_orm::{ConnectionTrait, EntityTrait, Statement, TransactionTrait};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::TestApp;
use crate::helpers::graphql::{data, demo_app, error_code, post};
use crate::helpers::uploads::{item, send, with};

const STATS: &str = "query($filter: ProductFilterInput, $currency: String!) {
    productStats(filter: $filter, currency: $currency) {
        count priceMin priceMax priceAvg priceMedian
    }
}";

/// Each product's lowest current price per currency, and whether any of
/// them is in stock there.
async fn lowest(app: &TestApp) -> HashMap<(Uuid, String), (f64, bool)> {
    let mut lowest: HashMap<(Uuid, String), (f64, bool)> = HashMap::new();
    for p in current_price::Entity::find().all(&app.db).await.unwrap() {
        let stocked = match p.stock_quantity {
            Some(quantity) => quantity > 0,
            None => p
                .stock_status
                .as_deref()
                .is_some_and(|s| s != "out_of_stock"),
        };
        let entry = lowest
            .entry((p.product_id, p.currency.clone()))
            .or_insert((f64::INFINITY, false));
        entry.0 = entry.0.min(p.price);
        entry.1 |= stocked;
    }
    lowest
}

/// `[count, min, max, avg, median]` of `prices`, as the API writes them.
fn computed(mut prices: Vec<f64>) -> Value {
    prices.sort_by(f64::total_cmp);
    let n = prices.len();
    if n == 0 {
        return json!([0, null, null, null, null]);
    }
    let median = match n % 2 {
        1 => prices[n / 2],
        _ => (prices[n / 2 - 1] + prices[n / 2]) / 2.0,
    };
    let avg = prices.iter().sum::<f64>() / n as f64;
    json!([n, prices[0], prices[n - 1], avg, median])
}

fn answered(stats: &Value) -> Value {
    json!([
        stats["count"],
        stats["priceMin"],
        stats["priceMax"],
        stats["priceAvg"],
        stats["priceMedian"]
    ])
}

fn assert_close(got: &Value, want: &Value, what: &str) {
    for i in 0..5 {
        match (got[i].as_f64(), want[i].as_f64()) {
            (Some(a), Some(b)) => assert!(
                (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                "{what}: {got} vs {want}"
            ),
            _ => assert_eq!(got[i], want[i], "{what}: {got} vs {want}"),
        }
    }
}

/// Which of a product's lowest prices a filter keeps: the product, the
/// price, whether it is in stock.
type Test = Box<dyn Fn(&product::Model, f64, bool) -> bool>;

/// Checks each case's statistics (filter, currency, the products and
/// prices it keeps) against those computed here from `products` and
/// `lowest`; returns which parities of non-empty counts were seen.
async fn assert_cases(
    app: &TestApp,
    key: &str,
    products: &[product::Model],
    lowest: &HashMap<(Uuid, String), (f64, bool)>,
    cases: Vec<(Value, &str, Test)>,
) -> [bool; 2] {
    let mut parities = [false; 2];
    for (filter, currency, test) in cases {
        let prices: Vec<f64> = products
            .iter()
            .filter_map(|p| {
                let &(price, stocked) = lowest.get(&(p.id, currency.to_owned()))?;
                test(p, price, stocked).then_some(price)
            })
            .collect();
        if !prices.is_empty() {
            parities[prices.len() % 2] = true;
        }
        let vars = json!({ "filter": filter, "currency": currency });
        let got = answered(&data(app, key, STATS, vars).await["productStats"]);
        assert_close(&got, &computed(prices), &format!("{filter} in {currency}"));
    }
    parities
}

#[tokio::test]
async fn statistics_match_those_computed_from_the_stored_prices() {
    let (app, key) = demo_app(70).await;
    let products = product::Entity::find().all(&app.db).await.unwrap();
    let lowest = lowest(&app).await;
    let brand = products[0].brand.clone();
    let rub: Vec<f64> = lowest
        .iter()
        .filter(|((_, c), _)| c == "RUB")
        .map(|(_, p)| p.0)
        .collect();
    let mut sorted = rub.clone();
    sorted.sort_by(f64::total_cmp);
    let (low, high) = (sorted[sorted.len() / 5], sorted[sorted.len() * 4 / 5]);

    // Two products priced in RUB: an even count.
    let pair: Vec<Uuid> = products
        .iter()
        .filter(|p| lowest.contains_key(&(p.id, "RUB".to_owned())))
        .take(2)
        .map(|p| p.id)
        .collect();
    let brand_key = brand.to_lowercase();
    // The most common category, read from `lowest_prices` beside its index
    // rows, alone and with the product columns those rows carry; with a
    // brand, joined to the products.
    let (category, members) = largest_category(&app).await;
    let priced_members = members
        .iter()
        .filter(|id| lowest.contains_key(&(**id, "RUB".to_owned())))
        .count();
    assert!(priced_members > 2, "a category with prices to aggregate");
    let in_category = move |p: &product::Model| members.contains(&p.id);
    let (in_category_2, in_category_3) = (in_category.clone(), in_category.clone());
    let category_brand = products
        .iter()
        .find(|p| in_category(p))
        .map(|p| p.brand.clone())
        .unwrap();
    let category_brand_key = category_brand.to_lowercase();
    let cases: Vec<(Value, &str, Test)> = vec![
        (
            json!({ "category": category.to_uppercase() }),
            "RUB",
            Box::new(move |p, _, _| in_category(p)),
        ),
        (
            json!({ "category": category, "marketplace": "OZON", "trustStatus": "VERIFIED", "inStock": true }),
            "RUB",
            Box::new(move |p, _, stocked| {
                stocked
                    && in_category_2(p)
                    && p.marketplace == Marketplace::Ozon
                    && p.trust_status == TrustStatus::Verified
            }),
        ),
        (
            json!({ "category": category, "brand": category_brand }),
            "KZT",
            Box::new(move |p, _, _| {
                in_category_3(p) && p.brand.to_lowercase() == category_brand_key
            }),
        ),
        (json!({}), "RUB", Box::new(|_, _, _| true)),
        (json!({}), "KZT", Box::new(|_, _, _| true)),
        (
            json!({ "marketplace": "OZON" }),
            "RUB",
            Box::new(|p, _, _| p.marketplace == Marketplace::Ozon),
        ),
        (
            json!({ "brand": brand.to_uppercase() }),
            "RUB",
            Box::new(move |p, _, _| p.brand.to_lowercase() == brand_key),
        ),
        (
            json!({ "priceMin": low, "priceMax": high }),
            "RUB",
            Box::new(move |_, price, _| (low..=high).contains(&price)),
        ),
        (
            json!({ "currency": "BYN", "inStock": true, "marketplace": "WILDBERRIES" }),
            "BYN",
            Box::new(|p, _, stocked| stocked && p.marketplace == Marketplace::Wildberries),
        ),
        (json!({}), "XYZ", Box::new(|_, _, _| true)),
        (
            json!({ "ids": pair }),
            "RUB",
            Box::new(move |p, _, _| pair.contains(&p.id)),
        ),
    ];
    let parities = assert_cases(&app, &key, &products, &lowest, cases).await;
    assert_eq!(parities, [true, true], "medians of odd and of even counts");
}

/// The category key most products hold, and those products.
async fn largest_category(app: &TestApp) -> (String, HashSet<Uuid>) {
    let rows = product_category::Entity::find().all(&app.db).await.unwrap();
    let mut members: BTreeMap<String, HashSet<Uuid>> = BTreeMap::new();
    for row in rows {
        members
            .entry(row.category_key)
            .or_default()
            .insert(row.product_id);
    }
    members
        .into_iter()
        .max_by_key(|(_, ids)| ids.len())
        .expect("the demo has categories")
}

#[tokio::test]
async fn the_filter_may_name_only_the_same_currency() {
    let (app, key) = demo_app(5).await;
    let vars = json!({ "filter": { "currency": "KZT" }, "currency": "RUB" });
    assert_eq!(
        error_code(&app, &key, STATS, vars).await,
        "INVALID_PARAMETER"
    );
    let vars = json!({ "filter": { "currency": "RUB" }, "currency": "RUB" });
    data(&app, &key, STATS, vars).await;
}

/// The filters the kept price levels answer, each with the products and
/// prices it keeps.
fn level_cases() -> Vec<(Value, &'static str, Test)> {
    vec![
        (json!({}), "RUB", Box::new(|_, _, _| true)),
        (json!({}), "KZT", Box::new(|_, _, _| true)),
        (
            json!({ "marketplace": "OZON" }),
            "RUB",
            Box::new(|p, _, _| p.marketplace == Marketplace::Ozon),
        ),
        (
            json!({ "trustStatus": "VERIFIED", "inStock": true }),
            "RUB",
            Box::new(|p, _, stocked| stocked && p.trust_status == TrustStatus::Verified),
        ),
        (
            json!({ "marketplace": "WILDBERRIES", "inStock": false }),
            "RUB",
            Box::new(|p, _, stocked| !stocked && p.marketplace == Marketplace::Wildberries),
        ),
    ]
}

/// A level row's key past its category: currency, marketplace, trust
/// status, in stock, level.
type LevelKey = (String, String, String, bool, i32);
/// Level rows by category key (empty for `price_levels`) and
/// [`LevelKey`]: `(count, sum)`.
type Levels = BTreeMap<(String, LevelKey), (i64, f64)>;

/// The kept `price_levels` rows that count anything, against the same
/// computed here from the current prices, the products and the level
/// bounds.
async fn assert_levels_true(app: &TestApp, step: &str) {
    let bounds = Bounds::read(app).await;
    let mut want = Levels::new();
    for (_, keyed) in priced_keys(app, &bounds).await {
        for (key, price) in keyed {
            let level = key.4;
            bounds.count(want.entry((String::new(), key)).or_default(), level, price);
        }
    }
    let got = kept_levels(app, "price_levels", "''").await;
    assert_same_levels(&got, &want, step);
}

/// The kept `category_price_levels` rows that count anything, against the
/// same computed here from the category rows, the current prices, the
/// products and the level bounds.
async fn assert_category_levels_true(app: &TestApp, step: &str) {
    let bounds = Bounds::read(app).await;
    let priced = priced_keys(app, &bounds).await;
    let mut want = Levels::new();
    for row in product_category::Entity::find().all(&app.db).await.unwrap() {
        for (key, price) in priced.get(&row.product_id).into_iter().flatten() {
            let entry = want.entry((row.category_key.clone(), key.clone()));
            bounds.count(entry.or_default(), key.4, *price);
        }
    }
    let got = kept_levels(app, "category_price_levels", "category_key").await;
    assert_same_levels(&got, &want, &format!("{step} (categories)"));
}

/// Each product's lowest prices with the [`LevelKey`] each counts under,
/// computed from the current prices and the products.
async fn priced_keys(app: &TestApp, bounds: &Bounds) -> HashMap<Uuid, Vec<(LevelKey, f64)>> {
    let products = products_by_id(app).await;
    let mut priced: HashMap<Uuid, Vec<(LevelKey, f64)>> = HashMap::new();
    for ((id, currency), (price, stocked)) in lowest(app).await {
        let p = &products[&id];
        let key = (
            currency,
            p.marketplace.as_str().to_owned(),
            p.trust_status.as_str().to_owned(),
            stocked,
            bounds.level_of(price),
        );
        priced.entry(id).or_default().push((key, price));
    }
    priced
}

/// The rows of the level table `table` that count anything, keyed by
/// `category` (a column or a constant).
async fn kept_levels(app: &TestApp, table: &str, category: &str) -> Levels {
    let sql = format!(
        "SELECT {category} AS category_key, currency, marketplace, trust_status, in_stock, \
         level, n, total FROM {table} WHERE n <> 0"
    );
    let mut kept = Levels::new();
    for row in rows(app, &sql).await.unwrap() {
        let get = |column: &str| row.try_get::<String>("", column).unwrap();
        let key = (
            get("currency"),
            get("marketplace"),
            get("trust_status"),
            row.try_get("", "in_stock").unwrap(),
            row.try_get("", "level").unwrap(),
        );
        let counted = (
            row.try_get("", "n").unwrap(),
            row.try_get("", "total").unwrap(),
        );
        kept.insert((get("category_key"), key), counted);
    }
    kept
}

async fn products_by_id(app: &TestApp) -> HashMap<Uuid, product::Model> {
    product::Entity::find()
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.id, p))
        .collect()
}

async fn rows(app: &TestApp, sql: &str) -> Result<Vec<sea_orm::QueryResult>, sea_orm::DbErr> {
    let backend = app.db.get_database_backend();
    app.db
        .query_all_raw(Statement::from_string(backend, sql.to_owned()))
        .await
}

/// The price levels' lower bounds, as the database keeps them.
struct Bounds(Vec<(f64, i32)>);

impl Bounds {
    async fn read(app: &TestApp) -> Bounds {
        let mut bounds: Vec<(f64, i32)> = Vec::new();
        for row in rows(app, "SELECT level, low FROM price_level_bounds")
            .await
            .unwrap()
        {
            bounds.push((
                row.try_get("", "low").unwrap(),
                row.try_get("", "level").unwrap(),
            ));
        }
        bounds.sort_by(|a, b| a.0.total_cmp(&b.0));
        Bounds(bounds)
    }

    fn level_of(&self, price: f64) -> i32 {
        self.0[self.0.partition_point(|(low, _)| *low <= price) - 1].1
    }

    /// Adds `price` of `level` to a level's count and sum; the two
    /// unbounded levels keep no sum.
    fn count(&self, into: &mut (i64, f64), level: i32, price: f64) {
        let summed = (0..migration::LAST_PRICE_LEVEL).contains(&level);
        into.0 += 1;
        into.1 += if summed { price } else { 0.0 };
    }
}

fn assert_same_levels<K: Ord + std::fmt::Debug>(
    got: &BTreeMap<K, (i64, f64)>,
    want: &BTreeMap<K, (i64, f64)>,
    step: &str,
) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{step}: the kept levels"
    );
    for (key, (n, total)) in want {
        let (kept_n, kept_total) = got[key];
        assert_eq!(kept_n, *n, "{step}: count of {key:?}");
        assert!(
            (kept_total - total).abs() <= 1e-6 * total.abs().max(1.0),
            "{step}: sum of {key:?}: {kept_total} vs {total}"
        );
    }
}

/// After `step`, the kept levels and every statistic they answer are true.
async fn assert_all_true(app: &TestApp, key: &str, step: &str) {
    assert_levels_true(app, step).await;
    assert_category_levels_true(app, step).await;
    let products = product::Entity::find().all(&app.db).await.unwrap();
    let lowest = lowest(app).await;
    let mut cases = level_cases();
    let (category, members) = largest_category(app).await;
    let also = members.clone();
    cases.push((
        json!({ "category": category }),
        "RUB",
        Box::new(move |p, _, _| members.contains(&p.id)),
    ));
    cases.push((
        json!({ "category": category, "marketplace": "OZON", "trustStatus": "VERIFIED", "inStock": true }),
        "RUB",
        Box::new(move |p, _, stocked| {
            stocked
                && also.contains(&p.id)
                && p.marketplace == Marketplace::Ozon
                && p.trust_status == TrustStatus::Verified
        }),
    ));
    assert_cases(app, key, &products, &lowest, cases).await;
}

#[tokio::test]
async fn kept_price_levels_follow_every_write_whoever_makes_it() {
    // Some writes are made past the app: uncached, each read runs.
    let (app, key) = TestApp::demo_uncached(40, 7).await;
    assert_all_true(&app, &key, "seeded").await;

    // Through the API: a new product, then a known one seen again cheaper.
    send(&app, &key, vec![item("lv-1")]).await;
    app.jobs().tick().await.expect("merge");
    assert_all_true(&app, &key, "new product merged").await;
    let cheaper = with(item("lv-1"), &["prices", "0", "price"], json!(10));
    send(&app, &key, vec![cheaper]).await;
    app.jobs().tick().await.expect("merge");
    assert_all_true(&app, &key, "price lowered by a merge").await;
    // Moved to another category by a merge: its rows there alone, and its
    // price with them.
    let moved = with(
        item("lv-1"),
        &["category_path"],
        json!(["Бытовая техника", "Кофеварки"]),
    );
    send(&app, &key, vec![moved]).await;
    app.jobs().tick().await.expect("merge");
    assert_all_true(&app, &key, "moved to another category by a merge").await;
    let listed = |category: &'static str| {
        let (app, key) = (&app, &key);
        async move {
            let query = "query($c: String!) { products(first: 100, filter: { category: $c }) {
                nodes { externalId } } }";
            let d = data(app, key, query, json!({ "c": category })).await;
            let ids = d["products"]["nodes"].as_array().unwrap().iter();
            ids.map(|n| n["externalId"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(listed("Кофеварки").await, ["lv-1"]);
    assert!(!listed("Чайники").await.contains(&"lv-1".to_owned()));
    assert!(listed("бытовая техника").await.contains(&"lv-1".to_owned()));
    let stats = json!({ "filter": { "category": "Кофеварки" }, "currency": "RUB" });
    let got = answered(&data(&app, &key, STATS, stats).await["productStats"]);
    assert_close(
        &got,
        &computed(vec![1000.0]),
        "the moved product's category",
    );

    // By hand, in SQL: the database keeps the levels, not the code. Prices
    // exactly on a level's bound, below the first bound, above the last;
    // stock lost; prices crowded into one level; products' trust status
    // and marketplace; a price and products deleted.
    let by_hand = [
        "UPDATE current_prices SET price = (SELECT low FROM price_level_bounds WHERE level = 300) \
            WHERE id IN (SELECT id FROM current_prices WHERE currency = 'RUB' ORDER BY id LIMIT 3)",
        "UPDATE current_prices SET price = 0.001 \
            WHERE id IN (SELECT id FROM current_prices WHERE currency = 'RUB' ORDER BY id DESC LIMIT 1)",
        "UPDATE current_prices SET price = 1e13 \
            WHERE id IN (SELECT id FROM current_prices WHERE currency = 'KZT' ORDER BY id LIMIT 2)",
        "UPDATE current_prices SET stock_quantity = 0, stock_status = 'out_of_stock' \
            WHERE id IN (SELECT id FROM current_prices WHERE currency = 'RUB' ORDER BY price LIMIT 5)",
        // Every RUB price into one level (1,000 to 1,009, ties among them):
        // each statistic is read inside it, from either end.
        "UPDATE current_prices SET price = 1000 + CAST(price AS INTEGER) % 10 \
            WHERE currency = 'RUB' AND price > 1",
        "UPDATE products SET trust_status = 'verified' \
            WHERE id IN (SELECT id FROM products WHERE trust_status <> 'verified' ORDER BY id LIMIT 4)",
        "UPDATE products SET marketplace = 'ozon' \
            WHERE id IN (SELECT id FROM products WHERE marketplace <> 'ozon' ORDER BY id DESC LIMIT 4)",
        "DELETE FROM current_prices \
            WHERE id IN (SELECT id FROM current_prices WHERE currency = 'RUB' ORDER BY price DESC LIMIT 2)",
        "DELETE FROM products WHERE id IN (SELECT id FROM products ORDER BY id LIMIT 5)",
        // Category rows taken away, moved to another key and product, and
        // added.
        "DELETE FROM product_categories WHERE product_id IN \
            (SELECT id FROM products ORDER BY id DESC LIMIT 3)",
        "UPDATE product_categories SET category_key = 'moved by hand' \
            WHERE product_id = (SELECT id FROM products ORDER BY id LIMIT 1) \
            AND category_key = (SELECT MIN(category_key) FROM product_categories \
                WHERE product_id = (SELECT id FROM products ORDER BY id LIMIT 1))",
        "UPDATE product_categories SET product_id = (SELECT id FROM products ORDER BY id DESC LIMIT 1) \
            WHERE category_key = 'moved by hand'",
        "INSERT INTO product_categories (product_id, category_key, first_seen_at) \
            SELECT id, 'added by hand', first_seen_at FROM products ORDER BY id LIMIT 4",
    ];
    for sql in by_hand {
        app.db.execute_unprepared(sql).await.expect(sql);
        assert_all_true(&app, &key, sql).await;
    }

    // Prices no merge writes, at the ends of a double: their levels count
    // them without summing them, so no sum overflows and every later
    // write to those levels still goes in.
    for sql in [
        "UPDATE current_prices SET price = -1.7976931348623157e308 \
            WHERE id IN (SELECT id FROM current_prices WHERE currency = 'KZT' ORDER BY id LIMIT 3)",
        "UPDATE current_prices SET price = 1.7976931348623157e308 \
            WHERE id IN (SELECT id FROM current_prices WHERE currency = 'BYN' ORDER BY id LIMIT 3)",
    ] {
        app.db.execute_unprepared(sql).await.expect(sql);
        assert_levels_true(&app, sql).await;
        assert_category_levels_true(&app, sql).await;
    }
    // Filled again in bulk, as a seed fills them, with prices on many
    // levels' bounds as well: the fill finds each price's level as the
    // triggers do.
    let on_bounds = "UPDATE current_prices SET price = (SELECT low FROM price_level_bounds \
        WHERE level = current_prices.id % 832 - 1) WHERE currency = 'RUB'";
    app.db.execute_unprepared(on_bounds).await.expect(on_bounds);
    let txn = app.db.begin().await.unwrap();
    for sql in migration::kept_tables_backfill(app.db.get_database_backend()) {
        txn.execute_unprepared(&sql).await.expect(&sql);
    }
    txn.commit().await.unwrap();
    assert_levels_true(&app, "filled in bulk").await;
    assert_category_levels_true(&app, "filled in bulk").await;

    let gone = "DELETE FROM current_prices WHERE price < 0 OR price > 1e300";
    app.db.execute_unprepared(gone).await.expect(gone);
    assert_all_true(&app, &key, gone).await;
}

/// A filter the kept levels answer costs what it reads there, whatever the
/// catalog; any other is costed as two walks of its lowest prices.
#[tokio::test]
async fn statistics_from_the_kept_levels_cost_a_few_points() {
    let (app, key) = demo_app(5).await;
    let mut costs = Vec::new();
    for filter in [
        json!({}),
        json!({ "marketplace": "OZON", "trustStatus": "VERIFIED", "inStock": true }),
        json!({ "brand": "Redmond" }),
        json!({ "priceMin": 1 }),
        json!({ "category": "Чайники" }),
        json!({ "category": "Чайники", "marketplace": "OZON", "inStock": false }),
    ] {
        let vars = json!({ "filter": filter, "currency": "RUB" });
        let (status, body) = post(&app, Some(&key), STATS, vars).await;
        assert_eq!(status, 200, "{body}");
        costs.push(
            body["extensions"]["cost"]["complexity"]
                .as_u64()
                .expect("cost"),
        );
    }
    assert_eq!(costs[0], costs[1], "{costs:?}");
    assert_eq!(
        [costs[0], costs[0]],
        [costs[4], costs[5]],
        "a category, with a marketplace and stock too, reads its kept levels: {costs:?}"
    );
    assert!(costs[0] <= 20, "{costs:?}");
    // Two walks of the lowest prices, at the floor of 100 points each.
    assert!(costs[2] >= 200 && costs[3] >= 200, "{costs:?}");
}
