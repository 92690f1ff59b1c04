//! GraphQL's catalog is REST v1's over the same data: every product filter
//! gives the same ids in the same order, and products, their sellers, price
//! history (with every filter), seller lookups, categories and brands are
//! the same objects.

use entity::{Marketplace, TrustStatus, seller};
use serde_json::{Value, json};

use crate::fixtures::{self, ProductSpec, insert_product, insert_seller, product, strings};
use crate::helpers::graphql::{as_rest, data, demo_app, input, nodes, with_shapes};
use crate::helpers::{TestApp, encoded, ids};

const PRODUCT_IDS: &str = r#"query($filter: ProductFilterInput, $first: Int) {
  products(filter: $filter, first: $first) { pageInfo { hasNextPage } edges { node { id } } }
}"#;

/// Ids from REST `/v1/products` and from GraphQL `products` for the same filter.
async fn product_ids_both_ways(
    app: &TestApp,
    key: &str,
    params: &[(&str, String)],
) -> (Vec<String>, Vec<String>) {
    let query = encoded(params);
    let rest = app
        .json_as(key, &format!("/v1/products?{query}&page_size=500"))
        .await;
    assert_eq!(
        rest["meta"]["has_more"], false,
        "{query}: one page holds all"
    );
    let rest_ids = ids(rest["data"].as_array().expect("data"));
    let graphql = data(
        app,
        key,
        PRODUCT_IDS,
        json!({ "filter": input(params), "first": 500 }),
    )
    .await;
    assert_eq!(graphql["products"]["pageInfo"]["hasNextPage"], false);
    (rest_ids, ids(&nodes(&graphql["products"])))
}

/// The demo dataset plus products for the edge cases the generator does not
/// make (Cyrillic brands, messy URLs, translated names).
async fn parity_app() -> (TestApp, String) {
    let (app, key) = demo_app(200).await;
    let shop = insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "7001")).await;
    for (external_id, brand, status) in [
        ("milk-1", "Простоквашино", TrustStatus::Verified),
        ("milk-2", "простоквашино", TrustStatus::Unverified),
        ("milk-3", "Простоквашино Плюс", TrustStatus::Verified),
    ] {
        insert_product(
            &app.db,
            &shop,
            ProductSpec {
                marketplace: Marketplace::Ozon,
                brand: brand.into(),
                trust_status: status,
                url: format!("https://www.ozon.ru/product/{external_id}/"),
                ..product(external_id)
            },
        )
        .await;
    }
    insert_product(
        &app.db,
        &shop,
        ProductSpec {
            marketplace: Marketplace::Ozon,
            name: "Чайник электрический".into(),
            category_path: strings(&["Бытовая техника", "Чайники"]),
            translations: vec![(
                "en".into(),
                "Electric Kettle".into(),
                strings(&["Home Appliances", "Kettles"]),
            )],
            ..product("kettle")
        },
    )
    .await;
    (app, key)
}

/// A demo product with an English translation and a three-level category.
async fn translated_product(app: &TestApp, key: &str) -> Value {
    let all = app.json_as(key, "/v1/products?page_size=500").await;
    all["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|p| {
            p["category_path"].as_array().map(Vec::len) == Some(3)
                && p["translations"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["language"] == "en"))
        })
        .expect("a translated product in the demo data")
        .clone()
}

fn messy_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("absolute URL");
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    format!(
        "{}://{}/{path}/?utm_source=newsletter&b=2#reviews",
        scheme.to_uppercase(),
        host.to_uppercase()
    )
}

#[tokio::test]
async fn every_product_filter_gives_the_same_ids_in_the_same_order_as_rest() {
    let (app, key) = parity_app().await;
    let p = translated_product(&app, &key).await;
    let text = |v: &Value| v.as_str().expect("a string").to_owned();
    let en = p["translations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["language"] == "en")
        .unwrap()
        .clone();
    let marketplace = text(&p["marketplace"]);
    let code = text(&p["seller"]["code"]);
    let code_part: String = code
        .chars()
        .skip(1)
        .take(5)
        .collect::<String>()
        .to_lowercase();
    let en_word = text(&en["name"])
        .split_whitespace()
        .next()
        .unwrap()
        .to_uppercase();
    let cases: Vec<Vec<(&str, String)>> = vec![
        vec![],
        vec![("marketplace", "ozon".into())],
        vec![("marketplace", "yandex_market".into())],
        vec![("seller_id", text(&p["seller"]["id"]))],
        vec![
            ("seller_id", text(&p["seller"]["id"])),
            ("marketplace", marketplace.clone()),
        ],
        vec![("seller_code", code.clone())],
        vec![("seller_code_contains", code_part)],
        vec![("external_id", text(&p["external_id"]))],
        vec![
            ("external_id", text(&p["external_id"])),
            ("marketplace", marketplace.clone()),
        ],
        vec![("url", messy_url(&text(&p["url"])))],
        vec![(
            "url",
            "HTTPS://WWW.OZON.RU/product/milk-1/?utm=1#top".into(),
        )],
        vec![("category", text(&p["category_path"][1]))],
        vec![("category", text(&p["category_path"][0]).to_uppercase())],
        vec![("category", text(&en["category_path"][2]).to_lowercase())],
        vec![("category", "kettles".into())],
        vec![("brand", "ПРОСТОКВАШИНО".into())],
        vec![("brand", text(&p["brand"]).to_lowercase())],
        vec![("name_contains", en_word)],
        vec![("name_contains", "ELECTRIC kettle".into())],
        vec![("name_contains", "ЧАЙНИК".into())],
        vec![("trust_status", "verified".into())],
        vec![("trust_status", "flagged".into())],
        vec![("trust_status", "unverified".into())],
        vec![
            ("brand", text(&p["brand"])),
            ("trust_status", text(&p["trust_status"])),
            ("marketplace", marketplace.clone()),
        ],
        vec![
            ("brand", "простоквашино".into()),
            ("trust_status", "verified".into()),
        ],
    ];
    for params in cases {
        let (rest, graphql) = product_ids_both_ways(&app, &key, &params).await;
        assert!(!rest.is_empty(), "{params:?} matches something");
        assert_eq!(graphql, rest, "{params:?}");
    }
    let (rest, graphql) =
        product_ids_both_ways(&app, &key, &[("brand", "Простокваш".into())]).await;
    assert_eq!((rest.len(), graphql.len()), (0, 0), "no substring brands");
}

#[tokio::test]
async fn products_are_the_same_objects_as_on_rest() {
    let (app, key) = parity_app().await;
    let query = with_shapes(
        "query($filter: ProductFilterInput) { products(filter: $filter, first: 100) { edges { node { ...RestProduct } } } }",
    );
    for params in [
        vec![],
        vec![("brand", "ПРОСТОКВАШИНО".to_owned())],
        vec![("name_contains", "kettle".to_owned())],
    ] {
        let rest = app
            .json_as(
                &key,
                &format!("/v1/products?{}&page_size=100", encoded(&params)),
            )
            .await;
        let graphql = data(&app, &key, &query, json!({ "filter": input(&params) })).await;
        assert!(!rest["data"].as_array().unwrap().is_empty());
        assert_eq!(
            as_rest(Value::Array(nodes(&graphql["products"]))),
            rest["data"],
            "{params:?}"
        );
    }
    let one = translated_product(&app, &key).await;
    let id = one["id"].as_str().unwrap();
    let by_id = data(
        &app,
        &key,
        &with_shapes("query($id: UUID!) { product(id: $id) { ...RestProduct } }"),
        json!({ "id": id }),
    )
    .await;
    let rest = app.json_as(&key, &format!("/v1/products/{id}")).await;
    assert_eq!(as_rest(by_id["product"].clone()), rest["data"]);
}

/// A product's seller, read with its page, is the seller REST's lookup
/// finds, field for field; asked for one stat, it is that stat.
#[tokio::test]
async fn a_products_seller_is_the_seller_the_lookup_finds() {
    let (app, key) = demo_app(30).await;
    let full = data(
        &app,
        &key,
        &with_shapes(
            "{ products(first: 30) { edges { node { marketplace seller { ...RestSeller } } } } }",
        ),
        json!({}),
    )
    .await;
    let one = data(
        &app,
        &key,
        "{ products(first: 30) { edges { node { seller { stats { regDate } } } } } }",
        json!({}),
    )
    .await;
    let (full, one) = (nodes(&full["products"]), nodes(&one["products"]));
    assert_eq!(full.len(), 30);
    let mut dated = 0;
    for (node, one) in full.iter().zip(&one) {
        let seller = as_rest(node["seller"].clone());
        let path = format!(
            "/v1/sellers?marketplace={}&seller_id={}",
            seller["marketplace"].as_str().unwrap(),
            seller["seller_id"].as_str().unwrap()
        );
        let found = app.json_as(&key, &path).await;
        assert_eq!(found["data"][0], seller, "{path}");
        assert_eq!(
            one["seller"]["stats"]["regDate"],
            seller["stats"]["reg_date"]
        );
        dated += usize::from(one["seller"]["stats"]["regDate"].is_string());
    }
    assert!(dated > 0, "registration dates to compare");
}

const PRICE_HISTORY: &str = r#"query($id: UUID!, $filter: PriceHistoryFilterInput) {
  priceHistory(productId: $id, filter: $filter, first: 100) {
    totalCount pageInfo { hasNextPage } edges { node { ...RestPrice } }
  }
  product(id: $id) {
    priceHistory(filter: $filter, first: 100) { totalCount edges { node { ...RestPrice } } }
  }
}"#;

#[tokio::test]
async fn price_history_is_the_same_as_rest_with_every_filter() {
    let (app, key) = demo_app(40).await;
    let products = app.json_as(&key, "/v1/products?page_size=100").await;
    // The product with the most price variants: the filters have something to split.
    let p = products["data"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|p| p["prices"].as_array().map(Vec::len))
        .unwrap();
    let id = p["id"].as_str().unwrap();
    let full = app
        .json_as(
            &key,
            &format!("/v1/products/{id}/price-history?page_size=500"),
        )
        .await;
    let times: Vec<&str> = full["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["recorded_at"].as_str().unwrap())
        .collect();
    assert!(times.len() >= 6, "enough history to filter");
    let country = p["prices"][0]["country_code"].as_str().unwrap();
    let (newer, older) = (times[1].to_owned(), times[times.len() - 2].to_owned());
    let cases: Vec<Vec<(&str, String)>> = vec![
        vec![],
        vec![("country_code", country.to_uppercase())],
        vec![("country_code", country.to_lowercase())],
        vec![("user_auth_status", "anonymous".into())],
        vec![("from", older.clone())],
        vec![("to", newer.clone())],
        vec![("from", older.clone()), ("to", newer.clone())],
        vec![
            ("from", older),
            ("to", newer),
            ("country_code", country.to_uppercase()),
        ],
    ];
    let query = with_shapes(PRICE_HISTORY);
    for params in cases {
        let rest = app
            .json_as(
                &key,
                &format!(
                    "/v1/products/{id}/price-history?{}&page_size=100",
                    encoded(&params)
                ),
            )
            .await;
        // Without any filter GraphQL takes its batched path; with `{}` its keyset path.
        let filters = if params.is_empty() {
            vec![Value::Null, json!({})]
        } else {
            vec![input(&params)]
        };
        for filter in filters {
            let graphql = data(&app, &key, &query, json!({ "id": id, "filter": filter })).await;
            for connection in [
                &graphql["priceHistory"],
                &graphql["product"]["priceHistory"],
            ] {
                assert_eq!(
                    as_rest(Value::Array(nodes(connection))),
                    rest["data"],
                    "{params:?} {filter}"
                );
                assert_eq!(connection["totalCount"], rest["meta"]["total"]);
            }
        }
    }
}

#[tokio::test]
async fn sellers_are_the_same_as_rest_for_every_lookup() {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    for (marketplace, id, products) in [
        (Marketplace::Wildberries, "b", 1),
        (Marketplace::Ozon, "z", 3),
        (Marketplace::YandexMarket, "y", 0),
        (Marketplace::Ozon, "a", 2),
        (Marketplace::Megamarket, "m", 4),
    ] {
        let shop = insert_seller(
            &app.db,
            seller::Model {
                tin: "7701234567".into(),
                url: vitrina::text::url_key(&format!("https://Shop.example/Store-{id}")),
                ..fixtures::seller(marketplace, id)
            },
        )
        .await;
        for n in 0..products {
            insert_product(&app.db, &shop, product(&format!("{id}-{n}"))).await;
        }
    }
    insert_seller(&app.db, fixtures::seller(Marketplace::Ozon, "other")).await;
    let query = with_shapes(
        "query($lookup: SellerLookupInput!) { sellers(lookup: $lookup) { ...RestSeller } }",
    );
    let cases: Vec<Vec<(&str, String)>> = vec![
        vec![("tin", "7701234567".into())],
        vec![("psrn", "1027700000000".into())],
        vec![("url", "HTTPS://SHOP.EXAMPLE/Store-z/?utm=1#x".into())],
        vec![("marketplace", "ozon".into()), ("seller_id", "a".into())],
        vec![("tin", "7701234567".into()), ("marketplace", "ozon".into())],
        vec![("tin", "0000000000".into())],
    ];
    for params in cases {
        let rest = app
            .json_as(&key, &format!("/v1/sellers?{}", encoded(&params)))
            .await;
        let graphql = data(&app, &key, &query, json!({ "lookup": input(&params) })).await;
        assert_eq!(
            as_rest(graphql["sellers"].clone()),
            rest["data"],
            "{params:?}"
        );
    }
    let by_tin = app.json_as(&key, "/v1/sellers?tin=7701234567").await;
    let order: Vec<(&str, &str)> = by_tin["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["marketplace"].as_str().unwrap(),
                s["seller_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("megamarket", "m"),
            ("ozon", "a"),
            ("ozon", "z"),
            ("wildberries", "b"),
            ("yandex_market", "y")
        ],
        "several marketplaces, by marketplace then seller id"
    );
}

#[tokio::test]
async fn categories_and_brands_are_the_same_as_rest() {
    let (app, key) = demo_app(120).await;
    for marketplace in ["wildberries", "ozon", "yandex_market", "megamarket"] {
        let rest = app
            .json_as(&key, &format!("/v1/categories?marketplace={marketplace}"))
            .await;
        let graphql = data(
            &app,
            &key,
            "query($m: Marketplace!) { categories(marketplace: $m) { category_path: categoryPath product_count: productCount } }",
            json!({ "m": marketplace.to_uppercase() }),
        )
        .await;
        assert!(
            !rest["data"].as_array().unwrap().is_empty(),
            "{marketplace}"
        );
        assert_eq!(graphql["categories"], rest["data"], "{marketplace}");
    }
    let brands =
        "query($m: Marketplace) { brands(marketplace: $m) { brand product_count: productCount } }";
    for marketplace in [None, Some("ozon"), Some("megamarket")] {
        let rest = match marketplace {
            Some(m) => {
                app.json_as(&key, &format!("/v1/brands?marketplace={m}"))
                    .await
            }
            None => app.json_as(&key, "/v1/brands").await,
        };
        let graphql = data(
            &app,
            &key,
            brands,
            json!({ "m": marketplace.map(str::to_uppercase) }),
        )
        .await;
        assert!(!rest["data"].as_array().unwrap().is_empty());
        assert_eq!(graphql["brands"], rest["data"], "{marketplace:?}");
    }
}
