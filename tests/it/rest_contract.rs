//! REST v1 as a contract: real responses of every endpoint validate against
//! the generated OpenAPI document; a page costs a constant number of SQL
//! statements; every product filter is index-backed on PostgreSQL.

use entity::{Marketplace, scrape_session};
use sea_orm::{
    ConnectionTrait, DbBackend, EntityTrait, QuerySelect, QueryTrait, Statement, TransactionTrait,
};
use serde_json::{Value, json};
use vitrina::query::products::ProductFilter;

use crate::helpers::TestApp;
use crate::helpers::openapi::validate_operation;

/// This file's demo data: the same seed in every test.
const DEMO_SEED: u64 = 11;

/// Asserts `body` matches what `doc` says `GET template` answers with `status`.
fn validate(doc: &Value, template: &str, status: u16, body: &Value) {
    validate_operation(doc, "get", template, status, body);
}

#[tokio::test]
async fn every_endpoint_answers_as_the_openapi_document_says() {
    let (app, key) = TestApp::demo(60, DEMO_SEED).await;
    let doc: Value = app.get("/v1/openapi.json").await.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(
        doc["components"]["securitySchemes"]["bearerAuth"]["scheme"],
        "bearer"
    );

    let products = app.json_as(&key, "/v1/products?page_size=20").await;
    let product = &products["data"][0];
    let id = product["id"].as_str().unwrap();
    let tin = {
        let seller: Value = app
            .json_as(
                &key,
                &format!(
                    "/v1/sellers?marketplace={}&seller_id={}",
                    product["marketplace"].as_str().unwrap(),
                    product["seller"]["id"].as_str().unwrap()
                ),
            )
            .await;
        seller["data"][0]["tin"].as_str().unwrap().to_owned()
    };
    let sessions = scrape_session::Entity::find().all(&app.db).await.unwrap();
    let session = sessions
        .iter()
        .find(|s| s.url_count == 6 && s.intent == "price_monitoring")
        .expect("the demo session with pending items")
        .id;

    let calls: Vec<(&str, String)> = vec![
        (
            "/products",
            "/v1/products?page_size=20&brand=samsung".into(),
        ),
        ("/products", "/v1/products?page_size=20".into()),
        ("/products/{id}", format!("/v1/products/{id}")),
        (
            "/products/{id}/price-history",
            format!("/v1/products/{id}/price-history"),
        ),
        ("/sellers", format!("/v1/sellers?tin={tin}")),
        ("/categories", "/v1/categories?marketplace=ozon".into()),
        ("/brands", "/v1/brands".into()),
        ("/brands", "/v1/brands?marketplace=wildberries".into()),
        ("/me/scrapes", "/v1/me/scrapes".into()),
        ("/me/scrapes/{id}", format!("/v1/me/scrapes/{session}")),
        (
            "/me/scrapes/{id}/products",
            format!("/v1/me/scrapes/{session}/products"),
        ),
        ("/rate_limit", "/v1/rate_limit".into()),
    ];
    // Every endpoint is called: one whose answer is not written within the
    // response size limit is refused 500 (`http::sized`), and fails here.
    let documented: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
    for template in &documented {
        assert!(
            calls.iter().any(|(called, _)| called == template),
            "{template} is not called"
        );
    }
    for (template, path) in calls {
        let body = app.json_as(&key, &path).await;
        validate(&doc, template, 200, &body);
    }
    let entries = app
        .json_as(&key, &format!("/v1/me/scrapes/{session}/products"))
        .await;
    let products: Vec<bool> = entries["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["product"].is_null())
        .collect();
    assert!(
        products.contains(&true) && products.contains(&false),
        "null and non-null products both checked"
    );

    let errors: Vec<(&str, u16, String, Option<&str>)> = vec![
        (
            "/categories",
            400,
            "/v1/categories".into(),
            Some(key.as_str()),
        ),
        (
            "/products",
            400,
            "/v1/products?marketplace=nope".into(),
            Some(key.as_str()),
        ),
        ("/products", 401, "/v1/products".into(), None),
        (
            "/products/{id}",
            404,
            format!("/v1/products/{}", uuid::Uuid::new_v4()),
            Some(key.as_str()),
        ),
        (
            "/me/scrapes/{id}",
            404,
            format!("/v1/me/scrapes/{}", uuid::Uuid::new_v4()),
            Some(key.as_str()),
        ),
    ];
    for (template, status, path, key) in errors {
        let response = match key {
            Some(key) => app.get_as(key, &path).await,
            None => app.get(&path).await,
        };
        assert_eq!(response.status().as_u16(), status, "{path}");
        validate(&doc, template, status, &response.json().await.unwrap());
    }
}

#[tokio::test]
async fn the_document_describes_every_endpoint_of_the_spec() {
    let app = TestApp::spawn().await;
    let doc: Value = app.get("/v1/openapi.json").await.json().await.unwrap();
    let paths: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
    for path in [
        "/products",
        "/products/{id}",
        "/products/{id}/price-history",
        "/sellers",
        "/categories",
        "/brands",
        "/me/scrapes",
        "/me/scrapes/{id}",
        "/me/scrapes/{id}/products",
    ] {
        assert!(
            paths.iter().any(|p| *p == path),
            "{path} missing from {paths:?}"
        );
        assert_eq!(
            doc["paths"][path]["get"]["security"][0]["bearerAuth"],
            json!([]),
            "{path} needs bearerAuth"
        );
    }
    let params: Vec<&str> = doc["paths"]["/products"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in [
        "marketplace",
        "seller_id",
        "seller_code",
        "seller_code_contains",
        "external_id",
        "url",
        "category",
        "brand",
        "name_contains",
        "trust_status",
        "page",
        "page_size",
    ] {
        assert!(params.contains(&name), "/products documents {name}");
    }
}

/// Statements the app runs for one request (after a warm-up request, so the
/// key's last-used stamp is not counted).
async fn statements_for(app: &TestApp, key: &str, path: &str) -> usize {
    app.json_as(key, path).await;
    let before = app.statements();
    let body = app.json_as(key, path).await;
    assert!(!body["data"].as_array().unwrap().is_empty());
    app.statements() - before
}

#[tokio::test]
async fn a_page_of_100_products_costs_the_same_statements_as_a_page_of_1() {
    let (app, key) = TestApp::demo_uncached(150, DEMO_SEED).await;
    let one = statements_for(&app, &key, "/v1/products?page_size=1").await;
    let hundred = statements_for(&app, &key, "/v1/products?page_size=100").await;
    assert_eq!(one, hundred);
    assert_eq!(
        hundred, 1,
        "the products with everything they show (key lookups are not counted)"
    );

    let session = scrape_session::Entity::find()
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.url_count == 6 && s.intent == "catalog_import")
        .unwrap()
        .id;
    let one = statements_for(
        &app,
        &key,
        &format!("/v1/me/scrapes/{session}/products?page_size=1"),
    )
    .await;
    let all = statements_for(
        &app,
        &key,
        &format!("/v1/me/scrapes/{session}/products?page_size=100"),
    )
    .await;
    assert_eq!(one, all, "session products: constant statements");
}

#[tokio::test]
async fn every_product_filter_is_index_backed_on_postgresql() {
    let (app, _) = TestApp::demo(300, DEMO_SEED).await;
    if app.db.get_database_backend() != DbBackend::Postgres {
        eprintln!("note: the EXPLAIN check runs on PostgreSQL only");
        return;
    }
    let some = |s: &str| Some(s.to_owned());
    let filters = [
        ProductFilter {
            marketplace: Some(Marketplace::Ozon),
            ..Default::default()
        },
        ProductFilter {
            seller_id: some("123456"),
            marketplace: Some(Marketplace::Ozon),
            ..Default::default()
        },
        ProductFilter {
            seller_code: some("SAM-12345"),
            ..Default::default()
        },
        ProductFilter {
            seller_code_contains: some("12345"),
            ..Default::default()
        },
        ProductFilter {
            external_id: some("123456789"),
            marketplace: Some(Marketplace::Ozon),
            ..Default::default()
        },
        ProductFilter {
            url: some("https://www.ozon.ru/product/1"),
            ..Default::default()
        },
        ProductFilter {
            category: some("Смартфоны"),
            ..Default::default()
        },
        ProductFilter {
            brand: some("Samsung"),
            ..Default::default()
        },
        ProductFilter {
            name_contains: some("смартфон"),
            ..Default::default()
        },
        ProductFilter {
            trust_status: Some(entity::TrustStatus::Flagged),
            ..Default::default()
        },
        ProductFilter::default(),
    ];
    for filter in filters {
        let plan = plan_of(&app, &filter).await;
        assert!(!plan.contains("Seq Scan on products"), "{filter:?}\n{plan}");
    }
    // Newest first is the order of an index: no sort on top of it (a deep
    // page would otherwise sort every row it skips).
    let plan = plan_of(&app, &ProductFilter::default()).await;
    assert!(!plan.contains("Sort"), "{plan}");
}

#[tokio::test]
async fn a_category_page_comes_from_its_index_in_list_order_on_both_stores() {
    let (app, key) = TestApp::demo(300, DEMO_SEED).await;
    let filter = ProductFilter {
        category: Some("Смартфоны".into()),
        ..Default::default()
    };
    let query = filter
        .select()
        .limit(21)
        .build(app.db.get_database_backend());
    let plan = match app.db.get_database_backend() {
        // Sorting priced out: a plan that still sorts has no index giving the order.
        DbBackend::Postgres => explain(&app, "EXPLAIN", query, "SET LOCAL enable_sort = off").await,
        _ => explain(&app, "EXPLAIN QUERY PLAN", query, "SELECT 1").await,
    };
    assert!(plan.contains("product_categories_newest"), "{plan}");
    assert!(!plan.contains("Sort") && !plan.contains("B-TREE"), "{plan}");

    // The same order as the products' own: newest first, ties by id.
    let page = app
        .json_as(&key, "/v1/products?category=смартфоны&page_size=500")
        .await;
    let seen: Vec<(String, String)> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["first_seen_at"].as_str().unwrap().to_owned(),
                p["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(seen.len() > 1, "{page}");
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted);

    // Deeper pages skip over the category's index too: page after page of
    // 3 rows is the one long page, cut in threes.
    let mut paged = Vec::new();
    for n in 1.. {
        let page = app
            .json_as(
                &key,
                &format!("/v1/products?category=смартфоны&page_size=3&page={n}"),
            )
            .await;
        let rows = page["data"].as_array().unwrap();
        paged.extend(rows.iter().map(|p| p["id"].as_str().unwrap().to_owned()));
        if rows.len() < 3 {
            break;
        }
    }
    let ids: Vec<String> = seen.into_iter().map(|(_, id)| id).collect();
    assert_eq!(paged, ids);
}

/// The plan of `query` under `explain`, after `setting` in the same transaction.
async fn explain(app: &TestApp, explain: &str, query: Statement, setting: &str) -> String {
    let backend = app.db.get_database_backend();
    let statement = Statement::from_sql_and_values(
        backend,
        format!("{explain} {}", query.sql),
        query.values.map(|v| v.0).unwrap_or_default(),
    );
    let txn = app.db.begin().await.unwrap();
    txn.execute_unprepared(setting).await.unwrap();
    let column = match backend {
        DbBackend::Postgres => 0,
        _ => 3, // EXPLAIN QUERY PLAN: id, parent, notused, detail
    };
    let plan: Vec<String> = txn
        .query_all_raw(statement)
        .await
        .unwrap()
        .iter()
        .map(|row| row.try_get_by_index::<String>(column).unwrap())
        .collect();
    txn.rollback().await.unwrap();
    plan.join("\n")
}

/// The PostgreSQL plan of a page of `filter`, sequential scans priced out
/// (a plan still scanning products has no index to use).
async fn plan_of(app: &TestApp, filter: &ProductFilter) -> String {
    let query = filter.select().limit(101).build(DbBackend::Postgres);
    explain(app, "EXPLAIN", query, "SET LOCAL enable_seqscan = off").await
}

#[tokio::test]
async fn every_operation_has_its_own_id_naming_its_verb_and_noun() {
    let app = TestApp::spawn().await;
    for path in ["/v1/openapi.json", "/extension/v1/openapi.json"] {
        let doc: Value = app.get(path).await.json().await.unwrap();
        let mut ids: Vec<&str> = doc["paths"]
            .as_object()
            .expect("paths")
            .values()
            .flat_map(|item| item.as_object().expect("a path item").values())
            .map(|operation| operation["operationId"].as_str().expect("an operationId"))
            .collect();
        assert!(!ids.is_empty(), "{path}");
        // What client generators name their methods after: a verb, then the
        // noun in camelCase (`listProducts`), never a bare handler name.
        for id in &ids {
            let verb = [
                "list",
                "get",
                "create",
                "disable",
                "upload",
                "rotate",
                "redeliver",
                "test",
            ]
            .into_iter()
            .find(|verb| id.starts_with(verb));
            let noun = verb.map(|verb| &id[verb.len()..]);
            assert!(
                noun.is_some_and(|noun| noun.starts_with(|c: char| c.is_ascii_uppercase())
                    && noun.chars().all(|c| c.is_ascii_alphanumeric())),
                "{path}: {id}"
            );
        }
        let count = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), count, "{path}: an operationId is used twice");
    }
}

#[tokio::test]
async fn the_checked_in_openapi_documents_are_the_served_ones() {
    let app = TestApp::spawn().await;
    for (path, api) in [
        ("/v1/openapi.json", "rest"),
        ("/extension/v1/openapi.json", "extension"),
    ] {
        let served = app.get(path).await.text().await.unwrap();
        let file = format!("{api}-v1.json");
        let checked_in = format!("{}/openapi/{file}", env!("CARGO_MANIFEST_DIR"));
        let checked_in = std::fs::read_to_string(checked_in).expect("openapi/ at the repo root");
        // Not assert_eq: a stale document would print twice in full.
        assert!(
            checked_in == format!("{served}\n"),
            "openapi/{file} is stale: run `cargo run -- openapi {api} --out openapi/{file}`"
        );
    }
}
