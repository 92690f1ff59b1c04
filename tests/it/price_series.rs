//! `Product.priceSeries` (issue 29, item 4): buckets of UTC time computed by
//! the database, compared with buckets computed here from the stored
//! observations; the edges (a bucket's first instant, weeks from Monday,
//! months, one observation, no price in the currency, gaps, ties in time);
//! one statement for a page of products; the bucket limit. On both databases.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, NaiveDate, TimeDelta, TimeZone, Timelike, Utc};
use entity::{Marketplace, price_observation};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use uuid::Uuid;
use vitrina::config::{ListConfig, Settings};

use crate::fixtures::{self, insert_observation, insert_product, insert_seller, observation};
use crate::helpers::graphql::{data, demo_app, error_code, nodes};
use crate::helpers::{TestApp, iso};

const SERIES: &str = "query($id: UUID!, $currency: String!, $bucket: TimeBucket!,
        $from: DateTime, $to: DateTime) {
    product(id: $id) {
        priceSeries(currency: $currency, bucket: $bucket, from: $from, to: $to) {
            start count min max avg open close
        }
    }
}";

/// The first instant of `bucket` holding `t`, in UTC.
pub fn bucket_start(bucket: &str, t: DateTime<Utc>) -> DateTime<Utc> {
    let day = |d: NaiveDate| d.and_hms_opt(0, 0, 0).unwrap().and_utc();
    match bucket {
        "HOUR" => t
            .with_minute(0)
            .unwrap()
            .with_second(0)
            .unwrap()
            .with_nanosecond(0)
            .unwrap(),
        "DAY" => day(t.date_naive()),
        "WEEK" => day(t.date_naive() - TimeDelta::days(t.weekday().num_days_from_monday().into())),
        "MONTH" => day(t.date_naive().with_day(1).unwrap()),
        other => panic!("{other}"),
    }
}

/// The series of `rows` (one product's observations), computed here: per
/// bucket, in time order, `[start, count, min, max, avg, open, close]`.
fn expected(rows: &[price_observation::Model], currency: &str, bucket: &str) -> Vec<Value> {
    let mut buckets: BTreeMap<DateTime<Utc>, Vec<&price_observation::Model>> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.currency == currency) {
        buckets
            .entry(bucket_start(bucket, row.recorded_at))
            .or_default()
            .push(row);
    }
    buckets
        .into_iter()
        .map(|(start, mut rows)| {
            rows.sort_by_key(|r| (r.recorded_at, r.id));
            let prices: Vec<f64> = rows.iter().map(|r| r.price).collect();
            json!([
                iso(start),
                rows.len(),
                prices.iter().copied().fold(f64::INFINITY, f64::min),
                prices.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                prices.iter().sum::<f64>() / prices.len() as f64,
                prices[0],
                prices[prices.len() - 1],
            ])
        })
        .collect()
}

/// A series as answered, in the shape of [`expected`].
pub fn answered(points: &Value) -> Vec<Value> {
    points
        .as_array()
        .expect("points")
        .iter()
        .map(|p| {
            let start: DateTime<Utc> = p["start"].as_str().unwrap().parse().unwrap();
            json!([
                iso(start),
                p["count"],
                p["min"],
                p["max"],
                p["avg"],
                p["open"],
                p["close"]
            ])
        })
        .collect()
}

/// Whether two series agree, numbers to within rounding (means are summed
/// in another order here).
pub fn assert_same(got: &[Value], want: &[Value], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        for i in 0..7 {
            match (g[i].as_f64(), w[i].as_f64()) {
                (Some(a), Some(b)) => {
                    assert!(
                        (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                        "{what}: {g} vs {w}"
                    )
                }
                _ => assert_eq!(g[i], w[i], "{what}: {g} vs {w}"),
            }
        }
    }
}

async fn series_of(app: &TestApp, key: &str, id: Uuid, currency: &str, bucket: &str) -> Value {
    let vars = json!({ "id": id, "currency": currency, "bucket": bucket });
    data(app, key, SERIES, vars).await["product"]["priceSeries"].clone()
}

#[tokio::test]
async fn every_bucket_of_the_demo_products_matches_the_stored_observations() {
    let (app, key) = demo_app(12).await;
    let rows = price_observation::Entity::find()
        .all(&app.db)
        .await
        .unwrap();
    let mut by_product: BTreeMap<Uuid, Vec<price_observation::Model>> = BTreeMap::new();
    for row in rows {
        by_product.entry(row.product_id).or_default().push(row);
    }
    let mut compared = 0;
    for (id, rows) in &by_product {
        for currency in ["RUB", "KZT", "BYN"] {
            for bucket in ["HOUR", "DAY", "WEEK", "MONTH"] {
                let got = answered(&series_of(&app, &key, *id, currency, bucket).await);
                let want = expected(rows, currency, bucket);
                assert_same(&got, &want, &format!("{id} {currency} {bucket}"));
                compared += want.len();
            }
        }
    }
    assert!(
        compared > 100,
        "the demo has observations to bucket: {compared}"
    );
}

pub fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

#[tokio::test]
async fn the_edges_of_buckets_and_of_the_data() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let p = insert_product(&app.db, &shop, fixtures::product("p")).await;
    let other_variant = |price, t| fixtures::Observation {
        country_code: "kz",
        ..observation(price, t)
    };
    // Sunday 2026-03-01 23:59:59, then Monday 00:00:00: a new day and a
    // new week; two variants at one instant (ties by id); a gap of days;
    // one lone observation in April.
    let times = [
        (100.0, at(2026, 3, 1, 23, 59, 59)),
        (90.0, at(2026, 3, 2, 0, 0, 0)),
        (95.0, at(2026, 3, 2, 10, 30, 0)),
        (70.0, at(2026, 3, 9, 12, 0, 0)),
        (40.0, at(2026, 4, 15, 8, 0, 0)),
    ];
    for (price, t) in times {
        insert_observation(&app.db, p.id, observation(price, t)).await;
    }
    insert_observation(
        &app.db,
        p.id,
        other_variant(80.0, at(2026, 3, 2, 10, 30, 0)),
    )
    .await;
    let rows = price_observation::Entity::find()
        .filter(price_observation::Column::ProductId.eq(p.id))
        .all(&app.db)
        .await
        .unwrap();

    for bucket in ["HOUR", "DAY", "WEEK", "MONTH"] {
        let got = answered(&series_of(&app, &key, p.id, "RUB", bucket).await);
        assert_same(&got, &expected(&rows, "RUB", bucket), bucket);
    }
    let days = series_of(&app, &key, p.id, "RUB", "DAY").await;
    assert_eq!(
        answered(&days)[1],
        json!([
            "2026-03-02T00:00:00Z",
            3,
            80.0,
            95.0,
            265.0 / 3.0,
            90.0,
            80.0
        ]),
        "midnight opens the day; of two at one instant the later row closes it"
    );
    let weeks = answered(&series_of(&app, &key, p.id, "RUB", "WEEK").await);
    let starts: Vec<&Value> = weeks.iter().map(|w| &w[0]).collect();
    assert_eq!(
        starts,
        [
            "2026-02-23T00:00:00Z",
            "2026-03-02T00:00:00Z",
            "2026-03-09T00:00:00Z",
            "2026-04-13T00:00:00Z"
        ],
        "weeks from Monday, empty ones left out"
    );
    let months = answered(&series_of(&app, &key, p.id, "RUB", "MONTH").await);
    assert_eq!(
        months[1],
        json!(["2026-04-01T00:00:00Z", 1, 40.0, 40.0, 40.0, 40.0, 40.0])
    );
    assert_eq!(
        series_of(&app, &key, p.id, "KZT", "DAY").await,
        json!([]),
        "no price in KZT"
    );

    // `from` and `to` are inclusive.
    let vars = json!({ "id": p.id, "currency": "RUB", "bucket": "DAY",
                       "from": iso(at(2026, 3, 2, 0, 0, 0)), "to": iso(at(2026, 3, 9, 12, 0, 0)) });
    let ranged = data(&app, &key, SERIES, vars).await["product"]["priceSeries"].clone();
    let counts: Vec<&Value> = ranged
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["count"])
        .collect();
    assert_eq!(counts, [3, 1]);
    let backwards = json!({ "id": p.id, "currency": "RUB", "bucket": "DAY",
                            "from": iso(at(2026, 3, 3, 0, 0, 0)), "to": iso(at(2026, 3, 2, 0, 0, 0)) });
    assert_eq!(
        error_code(&app, &key, SERIES, backwards).await,
        "INVALID_PARAMETER"
    );
}

#[tokio::test]
async fn a_page_of_series_is_one_statement_and_a_long_series_is_refused() {
    let (app, key) = demo_app(20).await;
    let page = "{ products(first: 20) { edges { node { id
        priceSeries(currency: \"RUB\", bucket: DAY) { start count } } } } }";
    let from = app.statements();
    let listed = data(&app, &key, page, json!({})).await;
    assert_eq!(nodes(&listed["products"]).len(), 20);
    let reads = app.statements_reading(from, "price_observations");
    assert_eq!(reads.len(), 1, "{reads:#?}");

    let tight = TestApp::spawn_with_settings(Settings {
        lists: ListConfig {
            series_max_buckets: 2,
            ..ListConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let key = tight.key("acme").await;
    let shop = insert_seller(&tight.db, fixtures::seller(Marketplace::Ozon, "1")).await;
    let p = insert_product(&tight.db, &shop, fixtures::product("p")).await;
    let start = at(2026, 5, 1, 0, 0, 0);
    for day in 0..3 {
        insert_observation(
            &tight.db,
            p.id,
            observation(10.0, start + TimeDelta::days(day)),
        )
        .await;
    }
    let vars = json!({ "id": p.id, "currency": "RUB", "bucket": "DAY" });
    let (status, body) = crate::helpers::graphql::post(&tight, Some(&key), SERIES, vars).await;
    assert_eq!(status, 200);
    let message = body["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("VITRINA_SERIES_MAX_BUCKETS"), "{message}");
    assert_eq!(body["errors"][0]["extensions"]["code"], "INVALID_PARAMETER");
    let months = series_of(&tight, &key, p.id, "RUB", "MONTH").await;
    assert_eq!(months[0]["count"], 3, "a larger bucket holds them");
}
