//! `productStats(filter, currency)` (issue 29, item 5): count, lowest,
//! highest, mean and median of the matching products' lowest current
//! prices in a currency, compared with the same computed here from the
//! stored products and current prices, for filters on the products, on
//! the prices, both and none; no price in the currency; the currency the
//! filter names must be the same. On both databases.

use std::collections::HashMap;

use entity::{Marketplace, current_price, product};
use sea_orm::EntityTrait;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::TestApp;
use crate::helpers::graphql::{data, demo_app, error_code};

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
    type Test = Box<dyn Fn(&product::Model, f64, bool) -> bool>;
    let brand_key = brand.to_lowercase();
    let cases: Vec<(Value, &str, Test)> = vec![
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
        let got = answered(&data(&app, &key, STATS, vars).await["productStats"]);
        assert_close(&got, &computed(prices), &format!("{filter} in {currency}"));
    }
    assert_eq!(parities, [true, true], "medians of odd and of even counts");
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
