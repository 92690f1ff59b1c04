//! REST v1: `/products`, `/products/{id}`, `/products/{id}/price-history`.

use chrono::TimeDelta;
use entity::{Marketplace, TrustStatus, UserAuthStatus, seller};
use serde_json::Value;

use crate::fixtures::{
    self, Observation, ProductSpec, insert_product, insert_seller, product, strings,
};
use crate::helpers::{TestApp, test_start};

struct World {
    app: TestApp,
    key: String,
    seller: seller::Model,
}

async fn world() -> World {
    let app = TestApp::spawn().await;
    let key = app.key("acme").await;
    let seller = insert_seller(&app.db, fixtures::seller(Marketplace::Wildberries, "100")).await;
    World { app, key, seller }
}

impl World {
    async fn add(&self, spec: ProductSpec) -> entity::product::Model {
        insert_product(&self.app.db, &self.seller, spec).await
    }

    /// Adds the products of `specs`, in order.
    async fn add_all(&self, specs: impl IntoIterator<Item = ProductSpec>) {
        for spec in specs {
            self.add(spec).await;
        }
    }

    /// External ids of the products `/v1/products?<query>` returns, in order.
    async fn ids(&self, query: &str) -> Vec<String> {
        let body = self
            .app
            .json_as(&self.key, &format!("/v1/products?{query}"))
            .await;
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["external_id"].as_str().unwrap().to_owned())
            .collect()
    }

    async fn error(&self, path: &str) -> (u16, Value) {
        let response = self.app.get_as(&self.key, path).await;
        (response.status().as_u16(), response.json().await.unwrap())
    }
}

fn named(external_id: &str, name: &str) -> ProductSpec {
    ProductSpec {
        name: name.into(),
        ..product(external_id)
    }
}

#[tokio::test]
async fn products_are_newest_first_with_has_more_and_no_total() {
    let w = world().await;
    for (i, id) in ["a", "b", "c"].iter().enumerate() {
        w.add(ProductSpec {
            first_seen_at: test_start() - TimeDelta::days(i as i64),
            ..product(id)
        })
        .await;
    }
    let body = w.app.json_as(&w.key, "/v1/products?page_size=2").await;
    assert_eq!(
        body["meta"],
        serde_json::json!({ "has_more": true, "page": 1, "page_size": 2 })
    );
    assert_eq!(w.ids("page_size=2").await, ["a", "b"]);
    assert_eq!(w.ids("page_size=2&page=2").await, ["c"]);
    let last = w
        .app
        .json_as(&w.key, "/v1/products?page_size=2&page=2")
        .await;
    assert_eq!(last["meta"]["has_more"], false);
}

#[tokio::test]
async fn a_later_page_of_a_filtered_list_continues_its_first_page() {
    let w = world().await;
    for i in 0..7 {
        w.add(ProductSpec {
            brand: if i % 2 == 0 { "Acme" } else { "Other" }.into(),
            first_seen_at: test_start() - TimeDelta::hours(i),
            ..product(&format!("p{i}"))
        })
        .await;
    }
    assert_eq!(
        w.ids("brand=acme&page_size=4").await,
        ["p0", "p2", "p4", "p6"]
    );
    assert_eq!(w.ids("brand=acme&page_size=2&page=2").await, ["p4", "p6"]);
    assert_eq!(w.ids("brand=acme&page_size=3&page=2").await, ["p6"]);
    assert!(w.ids("brand=acme&page_size=4&page=2").await.is_empty());
}

#[tokio::test]
async fn products_with_the_same_first_seen_at_page_without_gaps_or_repeats() {
    let w = world().await;
    for id in ["p1", "p2", "p3", "p4", "p5"] {
        w.add(product(id)).await;
    }
    let mut seen = Vec::new();
    for page in 1..=3 {
        seen.extend(w.ids(&format!("page_size=2&page={page}")).await);
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (5, 5), "{seen:?}");
}

#[tokio::test]
async fn paging_values_out_of_rule_fall_back_to_defaults() {
    let w = world().await;
    w.add(product("a")).await;
    for query in [
        "",
        "page=0&page_size=0",
        "page=abc&page_size=xyz",
        "page=-3&page_size=501",
        "page=1.5&page_size=2.5",
    ] {
        let body = w
            .app
            .json_as(&w.key, &format!("/v1/products?{query}"))
            .await;
        assert_eq!(body["meta"]["page"], 1, "{query}");
        assert_eq!(body["meta"]["page_size"], 100, "{query}");
    }
    let body = w
        .app
        .json_as(&w.key, "/v1/products?page_size=500&page=3")
        .await;
    assert_eq!(
        (
            body["meta"]["page"].as_u64(),
            body["meta"]["page_size"].as_u64()
        ),
        (Some(3), Some(500))
    );
}

#[tokio::test]
async fn marketplace_filter_and_unknown_marketplace() {
    let w = world().await;
    let ozon = insert_seller(&w.app.db, fixtures::seller(Marketplace::Ozon, "200")).await;
    w.add(product("wb")).await;
    insert_product(
        &w.app.db,
        &ozon,
        ProductSpec {
            marketplace: Marketplace::Ozon,
            ..product("oz")
        },
    )
    .await;
    assert_eq!(w.ids("marketplace=ozon").await, ["oz"]);
    let (status, body) = w.error("/v1/products?marketplace=amazon").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_parameter"))
    );
}

#[tokio::test]
async fn seller_id_filter_matches_the_marketplace_seller_id_and_pairs_with_marketplace() {
    let w = world().await;
    let ozon_same_id = insert_seller(&w.app.db, fixtures::seller(Marketplace::Ozon, "100")).await;
    let other = insert_seller(&w.app.db, fixtures::seller(Marketplace::Wildberries, "999")).await;
    w.add(product("wb-100")).await;
    insert_product(
        &w.app.db,
        &ozon_same_id,
        ProductSpec {
            marketplace: Marketplace::Ozon,
            ..product("oz-100")
        },
    )
    .await;
    insert_product(&w.app.db, &other, product("wb-999")).await;
    let mut alone = w.ids("seller_id=100").await;
    alone.sort();
    assert_eq!(
        alone,
        ["oz-100", "wb-100"],
        "alone it is not unique across marketplaces"
    );
    assert_eq!(w.ids("seller_id=100&marketplace=ozon").await, ["oz-100"]);
}

#[tokio::test]
async fn seller_code_is_exact_and_seller_code_contains_is_a_case_insensitive_substring() {
    let w = world().await;
    w.add_all([
        ProductSpec {
            seller_code: "ABC-123".into(),
            ..product("a")
        },
        ProductSpec {
            seller_code: "ABC-1234".into(),
            ..product("b")
        },
        ProductSpec {
            seller_code: "Код-Ж5".into(),
            ..product("c")
        },
    ])
    .await;
    assert_eq!(w.ids("seller_code=ABC-123").await, ["a"]);
    assert!(w.ids("seller_code=abc-123").await.is_empty(), "exact match");
    let mut found = w.ids("seller_code_contains=bc-12").await;
    found.sort();
    assert_eq!(found, ["a", "b"]);
    assert_eq!(
        w.ids("seller_code_contains=%D0%BA%D0%BE%D0%B4-%D0%B6")
            .await,
        ["c"],
        "код-ж, Cyrillic case-folded"
    );
    assert!(
        w.ids("seller_code_contains=%25").await.is_empty(),
        "% is a literal, not a wildcard"
    );
}

#[tokio::test]
async fn contains_filters_refuse_values_over_200_characters() {
    let w = world().await;
    let long = "я".repeat(201);
    for name in ["name_contains", "seller_code_contains"] {
        let (status, body) = w.error(&format!("/v1/products?{name}={long}")).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("invalid_parameter")),
            "{name}"
        );
    }
    let ok = w
        .app
        .get_as(
            &w.key,
            &format!("/v1/products?name_contains={}", "я".repeat(200)),
        )
        .await;
    assert_eq!(ok.status(), 200, "200 characters (400 bytes) are allowed");
}

#[tokio::test]
async fn external_id_with_marketplace_identifies_one_product() {
    let w = world().await;
    let ozon = insert_seller(&w.app.db, fixtures::seller(Marketplace::Ozon, "200")).await;
    w.add(product("777")).await;
    insert_product(
        &w.app.db,
        &ozon,
        ProductSpec {
            marketplace: Marketplace::Ozon,
            ..product("777")
        },
    )
    .await;
    let body = w
        .app
        .json_as(&w.key, "/v1/products?external_id=777&marketplace=ozon")
        .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1);
    assert_eq!(body["data"][0]["marketplace"], "ozon");
    assert_eq!(w.ids("external_id=777").await.len(), 2);
}

#[tokio::test]
async fn url_filter_ignores_query_fragment_host_case_and_trailing_slash() {
    let w = world().await;
    w.add(ProductSpec {
        url: "https://www.ozon.ru/product/kettle-42/".into(),
        ..product("k")
    })
    .await;
    w.add(product("other")).await;
    let messy = "HTTPS://WWW.OZON.RU/product/kettle-42/%3Futm_source%3Dx%23reviews";
    assert_eq!(w.ids(&format!("url={messy}")).await, ["k"]);
    assert_eq!(
        w.ids("url=https://www.ozon.ru/product/kettle-42").await,
        ["k"]
    );
    assert!(
        w.ids("url=https://www.ozon.ru/product/KETTLE-42")
            .await
            .is_empty(),
        "the path keeps its case"
    );
}

#[tokio::test]
async fn category_matches_any_level_case_insensitively_in_any_language() {
    let w = world().await;
    w.add_all([
        ProductSpec {
            category_path: strings(&["Электроника", "Аудиотехника", "Наушники"]),
            translations: vec![(
                "en".into(),
                "Headphones X".into(),
                strings(&["Electronics", "Audio", "Headphones"]),
            )],
            ..product("h")
        },
        ProductSpec {
            category_path: strings(&["Обувь", "Кроссовки"]),
            ..product("s")
        },
        ProductSpec {
            category_path: vec![],
            ..product("none")
        },
    ])
    .await;
    for category in [
        "Электроника",
        "аудиотехника",
        "НАУШНИКИ",
        "headphones",
        "Audio",
    ] {
        assert_eq!(
            w.ids(&format!("category={category}")).await,
            ["h"],
            "{category}"
        );
    }
    assert!(
        w.ids("category=Науш").await.is_empty(),
        "whole names only, not substrings"
    );
}

#[tokio::test]
async fn brand_is_exact_and_case_insensitive_for_cyrillic_too() {
    let w = world().await;
    w.add_all([
        ProductSpec {
            brand: "Простоквашино".into(),
            ..product("milk")
        },
        ProductSpec {
            brand: "Простоквашино Плюс".into(),
            ..product("plus")
        },
        ProductSpec {
            brand: "Samsung".into(),
            ..product("phone")
        },
    ])
    .await;
    assert_eq!(w.ids("brand=ПРОСТОКВАШИНО").await, ["milk"]);
    assert_eq!(w.ids("brand=samsung").await, ["phone"]);
    assert!(
        w.ids("brand=Простокваш").await.is_empty(),
        "not a substring match"
    );
}

#[tokio::test]
async fn name_contains_is_case_insensitive_across_translations() {
    let w = world().await;
    w.add(named("kettle", "Чайник электрический Redmond")).await;
    w.add(ProductSpec {
        translations: vec![
            ("kk".into(), "Электр шәйнегі".into(), vec![]),
            ("en".into(), "Electric Kettle".into(), vec![]),
        ],
        ..named("kettle-2", "Электроприбор для воды")
    })
    .await;
    w.add(named("pan", "Сковорода")).await;
    assert_eq!(w.ids("name_contains=ЧАЙНИК").await, ["kettle"]);
    assert_eq!(
        w.ids("name_contains=kettle").await,
        ["kettle-2"],
        "English translation"
    );
    assert_eq!(
        w.ids("name_contains=ШӘЙНЕГІ").await,
        ["kettle-2"],
        "Kazakh translation"
    );
    let mut both = w.ids("name_contains=электр").await;
    both.sort();
    assert_eq!(both, ["kettle", "kettle-2"]);
    assert!(
        w.ids("name_contains=_").await.is_empty(),
        "_ is a literal, not a wildcard"
    );
}

#[tokio::test]
async fn trust_status_filters_and_omitting_it_returns_every_status() {
    let w = world().await;
    for (id, status) in [
        ("u", TrustStatus::Unverified),
        ("v", TrustStatus::Verified),
        ("f", TrustStatus::Flagged),
    ] {
        w.add(ProductSpec {
            trust_status: status,
            ..product(id)
        })
        .await;
    }
    assert_eq!(w.ids("trust_status=verified").await, ["v"]);
    assert_eq!(w.ids("").await.len(), 3);
    let (status, body) = w.error("/v1/products?trust_status=trusted").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_parameter"))
    );
}

#[tokio::test]
async fn filters_combine_with_and() {
    let w = world().await;
    w.add_all([
        ProductSpec {
            brand: "Acme".into(),
            trust_status: TrustStatus::Verified,
            ..product("both")
        },
        ProductSpec {
            brand: "Acme".into(),
            ..product("brand-only")
        },
        ProductSpec {
            brand: "Other".into(),
            trust_status: TrustStatus::Verified,
            ..product("status-only")
        },
    ])
    .await;
    assert_eq!(w.ids("brand=acme&trust_status=verified").await, ["both"]);
}

#[tokio::test]
async fn product_by_id_has_every_field_with_documented_nulls() {
    let w = world().await;
    let p = w
        .add(ProductSpec {
            seller_code: "SKU-1".into(),
            ..product("full")
        })
        .await;
    let at = test_start() - TimeDelta::hours(1);
    fixtures::insert_current_price(&w.app.db, p.id, fixtures::observation(100.0, at)).await;
    fixtures::insert_special_price(&w.app.db, p.id, "").await;
    let body = w
        .app
        .json_as(&w.key, &format!("/v1/products/{}", p.id))
        .await;
    let data = &body["data"];
    let keys: Vec<&str> = data
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = vec![
        "id",
        "marketplace",
        "external_id",
        "url",
        "name",
        "brand",
        "category_path",
        "attributes",
        "image_cover",
        "image_gallery",
        "video_cover",
        "video_gallery",
        "seller",
        "trust_status",
        "price_flagged",
        "prices",
        "special_price",
        "stats",
        "first_seen_language",
        "default_language",
        "translations",
        "first_seen_at",
        "last_seen_at",
    ];
    expected.sort();
    let mut keys = keys;
    keys.sort();
    assert_eq!(keys, expected);
    assert_eq!(body.as_object().unwrap().len(), 1, "only `data`");
    assert!(data["video_cover"].is_null());
    assert!(data["stats"].is_null());
    assert_eq!(
        data["seller"],
        serde_json::json!({ "id": "100", "name": "Seller 100", "code": "SKU-1" })
    );
    assert_eq!(
        data["prices"][0]["region_code"],
        Value::Null,
        "null region in prices"
    );
    assert_eq!(
        data["special_price"][0]["region_code"], "",
        "empty string region in special_price"
    );
    assert_eq!(data["attributes"]["original"], true);
    assert!(data["first_seen_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        data["prices"][0]["recorded_at"],
        at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
    );
}

#[tokio::test]
async fn unknown_and_malformed_product_ids() {
    let w = world().await;
    let (status, body) = w
        .error(&format!("/v1/products/{}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let (status, body) = w.error("/v1/products/not-a-uuid").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_parameter"))
    );
    let (status, _) = w
        .error(&format!(
            "/v1/products/{}/price-history",
            uuid::Uuid::new_v4()
        ))
        .await;
    assert_eq!(status, 404);
}

fn at(hours_ago: i64) -> chrono::DateTime<chrono::Utc> {
    test_start() - TimeDelta::hours(hours_ago)
}

async fn history(w: &World, id: uuid::Uuid, query: &str) -> (Vec<f64>, Value) {
    let body = w
        .app
        .json_as(&w.key, &format!("/v1/products/{id}/price-history?{query}"))
        .await;
    let prices = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["price"].as_f64().unwrap())
        .collect();
    (prices, body["meta"].clone())
}

#[tokio::test]
async fn price_history_is_newest_first_with_total_and_filters() {
    let w = world().await;
    let p = w.add(product("h")).await;
    let db = &w.app.db;
    fixtures::insert_observation(db, p.id, fixtures::observation(1.0, at(30))).await;
    fixtures::insert_observation(db, p.id, fixtures::observation(2.0, at(20))).await;
    fixtures::insert_observation(
        db,
        p.id,
        Observation {
            country_code: "KZ",
            ..fixtures::observation(3.0, at(10))
        },
    )
    .await;
    fixtures::insert_observation(
        db,
        p.id,
        Observation {
            region_code: Some("msk"),
            user_auth_status: UserAuthStatus::Authenticated,
            ..fixtures::observation(4.0, at(5))
        },
    )
    .await;

    let (prices, meta) = history(&w, p.id, "").await;
    assert_eq!(prices, [4.0, 3.0, 2.0, 1.0]);
    assert_eq!(
        meta,
        serde_json::json!({ "total": 4, "page": 1, "page_size": 100 })
    );
    assert_eq!(
        history(&w, p.id, "country_code=kz").await.0,
        [3.0],
        "case-insensitive"
    );
    assert_eq!(
        history(&w, p.id, "country_code=RU").await.0,
        [4.0, 2.0, 1.0]
    );
    assert_eq!(history(&w, p.id, "region_code=msk").await.0, [4.0]);
    assert_eq!(
        history(&w, p.id, "user_auth_status=authenticated").await.0,
        [4.0]
    );
    let (page, meta) = history(&w, p.id, "page_size=2&page=2").await;
    assert_eq!((page, meta["total"].as_u64()), (vec![2.0, 1.0], Some(4)));
}

#[tokio::test]
async fn price_history_range_is_inclusive_and_from_after_to_is_refused() {
    let w = world().await;
    let p = w.add(product("h")).await;
    for (price, hours) in [(1.0, 30), (2.0, 20), (3.0, 10)] {
        fixtures::insert_observation(&w.app.db, p.id, fixtures::observation(price, at(hours)))
            .await;
    }
    let iso =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let query = format!("from={}&to={}", iso(at(20)), iso(at(10)));
    assert_eq!(history(&w, p.id, &query).await.0, [3.0, 2.0]);
    let offset = at(20)
        .with_timezone(&chrono::FixedOffset::east_opt(3 * 3600).unwrap())
        .to_rfc3339();
    assert_eq!(
        history(&w, p.id, &format!("from={}", offset.replace('+', "%2B")))
            .await
            .0,
        [3.0, 2.0],
        "offsets are honoured"
    );

    // `from` after `to`, a date-time that does not parse, an unknown status.
    let refused = [
        format!("from={}&to={}", iso(at(10)), iso(at(20))),
        "from=yesterday".into(),
        "user_auth_status=guest".into(),
    ];
    for query in refused {
        let (status, body) = w
            .error(&format!("/v1/products/{}/price-history?{query}", p.id))
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("invalid_parameter")),
            "{query}: {body}"
        );
    }
    // A valid date-time past year 9999 in UTC: SQLite would order it before
    // today's (`+10000-...`), so the range would be wrong, not refused.
    for bound in ["to", "from"] {
        let (status, body) = w
            .error(&format!(
                "/v1/products/{}/price-history?{bound}=9999-12-31T23:59:59-01:00",
                p.id
            ))
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("invalid_parameter")),
            "{body}"
        );
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(bound)
        );
    }
}
