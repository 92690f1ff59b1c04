//! Deep pages of `GET /v1/products` (issue 28, item 3): a page walks the
//! rows before it in an index holding their order and id alone, then reads
//! its own rows and their children; past the window of rows page numbers
//! reach (`VITRINA_PRODUCTS_PAGE_WINDOW`) a page is refused, pointing to
//! the GraphQL cursors.

use std::collections::{BTreeMap, BTreeSet};

use sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait};
use serde_json::Value;
use vitrina::config::{Limits, ListConfig, Settings};
use vitrina::seed::{DEMO_ACCOUNT, SeedOptions};

use crate::counts::count;
use crate::helpers::{TestApp, assert_plain_sentence, ids, test_limits, uncached};

const SEED: u64 = 28;
const PRODUCTS: u64 = 300;
const SIZE: u64 = 10;

/// Filters whose order an index holds, with the index a page walks. The
/// list's own index carries the texts a substring tests; a part too short
/// for the trigram index (one letter here) is tested there, entry by entry.
const INDEXED: &[(&str, &str)] = &[
    ("", "products_newest_desc"),
    ("name_contains=о", "products_newest_desc"),
    ("seller_code_contains=1", "products_newest_desc"),
    ("marketplace=ozon", "products_marketplace_newest"),
    ("trust_status=verified", "products_trust_newest"),
    ("category=электроника", "product_categories_newest"),
];

/// The demo catalog with these list settings. The database-time budget is
/// off: these tests walk many deep pages on one key, with a clock that
/// never drains its balance, and are not about the budget.
async fn demo(lists: ListConfig) -> (TestApp, String) {
    // The plans of requests are read: uncached, each one runs.
    let app = TestApp::spawn_with_settings(uncached(Settings {
        lists,
        limits: Limits {
            db_time_per_minute_ms: 0,
            ..test_limits()
        },
        ..Settings::default()
    }))
    .await;
    let options = SeedOptions {
        demo: true,
        products: PRODUCTS,
        seed: SEED,
    };
    vitrina::seed::seed(&app.db, &options).await.expect("seed");
    let key = app.key(DEMO_ACCOUNT).await;
    (app, key)
}

/// The ids of every product matching `filter`, in one page.
async fn all_ids(app: &TestApp, key: &str, filter: &str) -> Vec<String> {
    let page = app
        .json_as(key, &format!("/v1/products?{filter}&page_size=500"))
        .await;
    assert_eq!(page["meta"]["has_more"], false, "{filter}");
    ids(page["data"].as_array().unwrap())
}

#[tokio::test]
async fn a_deep_page_walks_an_index_alone_and_reads_only_its_own_rows() {
    let (app, key) = demo(ListConfig::default()).await;
    let backend = app.db.get_database_backend();
    if backend == DbBackend::Postgres {
        // As autovacuum leaves a table: its pages all-visible, so an index
        // alone can answer.
        app.db
            .execute_unprepared("VACUUM ANALYZE products, product_categories")
            .await
            .unwrap();
    }
    for &(filter, index) in INDEXED {
        let matching = all_ids(&app, &key, filter).await.len() as u64;
        let page = matching / SIZE / 2 + 1;
        assert!(page >= 3, "{filter}: {matching} products make a deep page");
        let from = app.statements();
        let path = format!("/v1/products?{filter}&page={page}&page_size={SIZE}");
        let shown = app.json_as(&key, &path).await;
        assert_eq!(shown["data"].as_array().unwrap().len() as u64, SIZE);
        let statement = app.statement_reading(from, "products");
        let skip = (page - 1) * SIZE;
        match backend {
            DbBackend::Postgres => check_postgres(&app, &statement, index, skip).await,
            _ => check_sqlite(&app, &statement, index).await,
        }
    }
}

/// PostgreSQL runs the page (`EXPLAIN ANALYZE`, sequential scans priced
/// out as on a large table): an index-only scan of `index` reads the
/// `skip` rows and the page's; every other scan, the children's
/// subqueries included, runs at most once per row of the page.
async fn check_postgres(app: &TestApp, statement: &str, index: &str, skip: u64) {
    let plan = json_plan(
        app,
        "ANALYZE, ",
        statement,
        "SET LOCAL enable_seqscan = off",
    )
    .await;
    let nodes = plan_nodes(&plan);
    let walk: Vec<&Value> = nodes
        .iter()
        .filter(|n| n["Node Type"] == "Index Only Scan" && n["Index Name"] == index)
        .copied()
        .collect();
    assert_eq!(walk.len(), 1, "one walk of {index}: {plan:#}");
    let walked = walk[0]["Actual Rows"].as_u64().unwrap();
    assert!(walked > skip, "the walk reads the rows skipped: {plan:#}");
    for node in nodes.iter().filter(|n| !std::ptr::eq(**n, walk[0])) {
        let loops = node["Actual Loops"].as_u64().unwrap();
        assert!(
            loops <= SIZE + 1,
            "{} runs {loops} times, more than once per row of the page: {plan:#}",
            node["Node Type"]
        );
        if matches!(
            node["Relation Name"].as_str(),
            Some("products" | "product_categories")
        ) {
            let rows = node["Actual Rows"].as_u64().unwrap() * loops;
            assert!(
                rows <= SIZE + 1,
                "{rows} rows of the list read again: {plan:#}"
            );
        }
    }
}

/// PostgreSQL's plan of `statement` as JSON (`EXPLAIN ({options}FORMAT
/// JSON)`), after `setting`.
async fn json_plan(app: &TestApp, options: &str, statement: &str, setting: &str) -> Value {
    let explained = format!("EXPLAIN ({options}FORMAT JSON) {statement}");
    let plan = explain(app, &explained, setting).await;
    serde_json::from_str(&plan[0]).unwrap()
}

/// Every node of a PostgreSQL JSON plan, from its top.
fn plan_nodes(plan: &Value) -> Vec<&Value> {
    let mut nodes = Vec::new();
    flatten(&plan[0]["Plan"], &mut nodes);
    nodes
}

/// Every node of a PostgreSQL JSON plan.
fn flatten<'a>(node: &'a Value, into: &mut Vec<&'a Value>) {
    into.push(node);
    for child in node["Plans"].as_array().into_iter().flatten() {
        flatten(child, into);
    }
}

/// SQLite's plan: the ids subquery walks a covering index of `index`,
/// the page's rows are looked up by id, and the children's subqueries are
/// the outer statement's, run per row it reads.
async fn check_sqlite(app: &TestApp, statement: &str, index: &str) {
    let rows = explain(app, &format!("EXPLAIN QUERY PLAN {statement}"), "SELECT 1").await;
    let lines: Vec<(i64, i64, String)> = rows
        .iter()
        .map(|r| {
            let mut parts = r.splitn(3, '|');
            let mut number = || parts.next().unwrap().parse::<i64>().unwrap();
            (number(), number(), parts.next().unwrap().to_owned())
        })
        .collect();
    let plan = rows.join("\n");
    let ancestors = |mut id: i64| {
        let mut found = Vec::new();
        while let Some((_, parent, detail)) = lines.iter().find(|(i, _, _)| *i == id) {
            found.push(detail.clone());
            id = *parent;
        }
        found
    };
    let walks: Vec<&(i64, i64, String)> = lines
        .iter()
        .filter(|(_, _, d)| d.contains(&format!("USING COVERING INDEX {index}")))
        .collect();
    assert_eq!(walks.len(), 1, "one walk of {index}:\n{plan}");
    assert!(
        ancestors(walks[0].0)
            .iter()
            .any(|d| d.starts_with("LIST SUBQUERY")),
        "the walk is the ids subquery:\n{plan}"
    );
    let outer = lines
        .iter()
        .find(|(_, parent, _)| *parent == 0)
        .map(|(_, _, d)| d.as_str());
    assert!(
        outer
            .is_some_and(|d| d.starts_with("SEARCH products USING INDEX") && d.ends_with("(id=?)")),
        "the page's rows are read by id:\n{plan}"
    );
    for (id, _, detail) in &lines {
        if detail.starts_with("CORRELATED SCALAR SUBQUERY") {
            assert!(
                !ancestors(*id)
                    .iter()
                    .any(|d| d.starts_with("LIST SUBQUERY")),
                "children are read for the page's rows:\n{plan}"
            );
        }
    }
}

/// The rows of `explain` (PostgreSQL: its one column; SQLite: `id|parent|detail`),
/// after `setting` in the same transaction.
async fn explain(app: &TestApp, explain: &str, setting: &str) -> Vec<String> {
    let backend = app.db.get_database_backend();
    let txn = app.db.begin().await.unwrap();
    txn.execute_unprepared(setting).await.unwrap();
    let rows = txn
        .query_all_raw(Statement::from_string(backend, explain))
        .await
        .unwrap();
    txn.rollback().await.unwrap();
    rows.iter()
        .map(|row| match backend {
            DbBackend::Postgres => row
                .try_get_by_index::<Value>(0)
                .map(|v| v.to_string())
                .unwrap(),
            _ => format!(
                "{}|{}|{}",
                row.try_get_by_index::<i64>(0).unwrap(),
                row.try_get_by_index::<i64>(1).unwrap(),
                row.try_get_by_index::<String>(3).unwrap()
            ),
        })
        .collect()
}

#[tokio::test]
async fn deep_pages_are_the_list_cut_in_pages() {
    let (app, key) = demo(ListConfig::default()).await;
    for filter in INDEXED
        .iter()
        .map(|(filter, _)| *filter)
        .chain(["name_contains=a", "marketplace=ozon&brand=samsung"])
    {
        let whole = all_ids(&app, &key, filter).await;
        let mut paged = Vec::new();
        for page in 1.. {
            let path = format!("/v1/products?{filter}&page={page}&page_size=7");
            let shown = app.json_as(&key, &path).await;
            paged.extend(ids(shown["data"].as_array().unwrap()));
            let more = shown["meta"]["has_more"].as_bool().unwrap();
            assert_eq!(more, paged.len() < whole.len(), "{path}");
            if !more {
                break;
            }
        }
        assert_eq!(paged, whole, "{filter}");
    }
}

#[tokio::test]
async fn a_page_past_the_window_is_refused_naming_the_limit_and_the_cursors() {
    let (app, key) = demo(ListConfig {
        products_page_window: 500,
        ..ListConfig::default()
    })
    .await;
    for path in [
        "page=5&page_size=100",
        "page=1&page_size=500",
        "page=0&page_size=100",
        "page=abc&page_size=999",
        "page=50&page_size=10&brand=no-such-brand",
    ] {
        app.json_as(&key, &format!("/v1/products?{path}")).await;
    }
    for path in [
        "page=6&page_size=100",
        "page=2&page_size=500",
        "page=51&page_size=10&brand=no-such-brand",
        "page=18446744073709551615",
    ] {
        let response = app.get_as(&key, &format!("/v1/products?{path}")).await;
        assert_eq!(response.status(), 422, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "page_too_deep", "{path}");
        let message = body["error"]["message"].as_str().unwrap();
        assert_plain_sentence(message);
        for named in [
            "500",
            "VITRINA_PRODUCTS_PAGE_WINDOW",
            "products(first:, after:)",
        ] {
            assert!(message.contains(named), "{named} in {message}");
        }
    }

    for path in [
        "page=6&page_size=100&name_contains=о",
        "page=2&page_size=500&marketplace=ozon&trust_status=verified",
    ] {
        let (status, message) = refusal(&app, &key, &format!("/v1/products?{path}")).await;
        assert_eq!(status, 422, "{path}");
        assert!(
            message.contains("VITRINA_PRODUCTS_PAGE_WINDOW"),
            "{message}"
        );
    }

    let doc: Value = app.get("/v1/openapi.json").await.json().await.unwrap();
    let list = &doc["paths"]["/products"]["get"];
    let refusal = list["responses"]["422"]["description"].as_str().unwrap();
    assert!(refusal.contains("page_too_deep"), "{refusal}");
    assert!(
        list["description"].as_str().is_some_and(|d| {
            d.contains("VITRINA_PRODUCTS_PAGE_WINDOW")
                && d.contains("VITRINA_PRODUCTS_TESTED_PAGE_WINDOW")
        }),
        "{list:#}"
    );
}

/// A name part that few products hold is looked up on PostgreSQL in the
/// index that narrows it (`products_name_search_trgm` for three letters
/// or digits in a row, `products_name_pairs` for two), the probe of the
/// newest products having found it rare; a common one walks the list,
/// hidden from both, as does a part no index narrows (PostgreSQL would
/// read every entry of the index). Seen in the plan of the count with
/// only bitmap scans allowed, the indexes' kind, so an index is used
/// wherever the filter lets it. On both databases the answers are the
/// products that hold the part.
#[tokio::test]
async fn a_rare_name_part_is_looked_up_in_its_index_and_a_common_one_walks() {
    let (app, key) = demo(ListConfig::default()).await;
    let names = product_names(&app, "products").await;
    let holding = |part: &str| -> Vec<String> {
        let mut ids: Vec<String> = names
            .iter()
            .filter(|(_, name)| name.contains(part))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    };
    let (pairs, trigram) = ("products_name_pairs", "products_name_search_trgm");
    let mut parts = vec![("о".to_owned(), None), ("a-b".to_owned(), None)];
    for (length, index, absent) in [(2, pairs, "qz"), (3, trigram, "qzx")] {
        let held = runs_held(&names, length);
        let (common, most) = held.iter().max_by_key(|(_, n)| **n).unwrap();
        assert!(*most as u64 >= PRODUCTS / 3, "{common} is held by {most}");
        let (rare, _) = held.iter().find(|(_, n)| **n <= 3).unwrap();
        assert!(!held.contains_key(absent));
        parts.push((common.clone(), None));
        parts.push((rare.clone(), Some(index)));
        parts.push((absent.to_owned(), Some(index)));
        // What clients send: any case, and LIKE's wildcards as plain text.
        let upper = rare.to_uppercase();
        if vitrina::text::fold(&upper) == *rare {
            parts.push((upper, Some(index)));
        }
        parts.push((format!("{rare}%_"), Some(index)));
    }
    let query = "query($part: String) { products(first: 1, filter: { nameContains: $part }) { totalCount } }";
    for (part, index) in parts {
        let from = app.statements();
        let escaped = part.replace('%', "%25");
        let path = format!("/v1/products?name_contains={escaped}&page_size=500");
        let page = app.json_as(&key, &path).await;
        let mut listed = ids(page["data"].as_array().unwrap());
        listed.sort();
        let held = holding(&vitrina::text::fold(&part));
        assert_eq!(listed, held, "{part}");
        let body = serde_json::json!({ "query": query, "variables": { "part": part } });
        let answer: Value = app
            .post_as(&key, "/graphql", &body)
            .await
            .json()
            .await
            .unwrap();
        let total = &answer["data"]["products"]["totalCount"];
        assert_eq!(total, held.len(), "{part}: {answer}");
        if app.db.get_database_backend() != DbBackend::Postgres {
            continue;
        }
        let count = app
            .statements_reading(from, "products")
            .into_iter()
            .rfind(|s| s.contains("COUNT"))
            .expect("a count statement");
        let plan = explain(
            &app,
            &format!("EXPLAIN (FORMAT JSON) {count}"),
            BITMAPS_ONLY,
        )
        .await
        .join("\n");
        for name in [pairs, trigram] {
            assert_eq!(plan.contains(name), index == Some(name), "{part}: {plan}");
        }
    }
}

/// A part the probe looks up in its index is read there first and its
/// products then sorted. Ordered by the list's own columns, the planner
/// could walk the list's index instead, testing each product, when it
/// believes the part spread evenly: for a part only older products hold,
/// nearly the whole catalog (3.2-3.5 s at 1,000,000 products). Here it is
/// pushed that way (sorts priced out): on PostgreSQL every page still
/// reads the part's index, and never tests it on the list's. On both databases, pages
/// by cursor and by number give the part's products in the list's order.
#[tokio::test]
async fn a_part_looked_up_in_its_index_is_read_there_before_it_is_sorted() {
    let (app, key) = demo(ListConfig::default()).await;
    let postgres = app.db.get_database_backend() == DbBackend::Postgres;
    let names = product_names(&app, "products").await;
    let newest_first = all_ids(&app, &key, "").await;
    let query = "query($part: String, $after: String) { products(first: 1, after: $after, \
                 filter: { nameContains: $part }) { edges { cursor node { id } } } }";
    let (pairs, trigram) = ("products_name_pairs", "products_name_search_trgm");
    for (length, index) in [(2, pairs), (3, trigram)] {
        let held = runs_held(&names, length);
        let (part, _) = held.iter().find(|(_, n)| (2..=3).contains(*n)).unwrap();
        let holding: Vec<String> = newest_first
            .iter()
            .filter(|id| {
                names
                    .iter()
                    .any(|(i, n)| i == *id && n.contains(part.as_str()))
            })
            .cloned()
            .collect();
        // Each page's statement, by cursor and by number, and its product.
        let (mut pages, mut listed) = (Vec::new(), Vec::new());
        let mut after = Value::Null;
        for number in 1..=holding.len() + 1 {
            let from = app.statements();
            let variables = serde_json::json!({ "part": part, "after": after });
            let body = serde_json::json!({ "query": query, "variables": variables });
            let answer: Value = app
                .post_as(&key, "/graphql", &body)
                .await
                .json()
                .await
                .unwrap();
            pages.push(app.statements_reading(from, "products").pop().unwrap());
            let edges = answer["data"]["products"]["edges"].as_array().unwrap();
            let from = app.statements();
            let path = format!("/v1/products?name_contains={part}&page={number}&page_size=1");
            let page = app.json_as(&key, &path).await;
            pages.push(app.statements_reading(from, "products").pop().unwrap());
            let by_number = ids(page["data"].as_array().unwrap());
            let by_cursor: Vec<String> = edges
                .iter()
                .map(|e| e["node"]["id"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(by_cursor, by_number, "{part}, page {number}");
            let Some(edge) = edges.first() else { break };
            after = edge["cursor"].clone();
            listed.extend(by_cursor);
        }
        assert_eq!(listed, holding, "{part}");
        if !postgres {
            continue;
        }
        for statement in pages {
            let sorts_priced_out = "SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off";
            let plan = json_plan(&app, "", &statement, sorts_priced_out).await;
            let nodes = plan_nodes(&plan);
            let reading = |name: &str| -> Vec<&Value> {
                nodes
                    .iter()
                    .filter(|n| n["Index Name"] == name)
                    .copied()
                    .collect()
            };
            assert_eq!(reading(index).len(), 1, "{part}: {plan:#}");
            // The list's index may order the page's own rows, never test the part.
            let walks = reading("products_newest_desc")
                .into_iter()
                .filter(|n| n["Filter"].as_str().is_some_and(|f| f.contains("~~")))
                .count();
            assert_eq!(walks, 0, "{part}: {plan:#}");
        }
    }
}

/// A name part, alone or with a marketplace, whose exact count would read
/// more entries than `VITRINA_COUNT_MAX_READS` is estimated on PostgreSQL
/// from a sample of the catalog's pages: with half of them sampled, the
/// share of the sampled products meeting the marketplace that hold the
/// part, times the products meeting it. Not exact. A rare part, the part
/// with a brand, and every count on SQLite are exact. Both with the page
/// and alone.
#[tokio::test]
async fn a_name_part_too_costly_to_count_is_estimated_from_a_sample() {
    let lists = ListConfig {
        count_max_reads: 100,
        count_sample: PRODUCTS / 2,
        ..ListConfig::default()
    };
    let (app, key) = demo(lists).await;
    let postgres = app.db.get_database_backend() == DbBackend::Postgres;
    if postgres {
        // The sample's share follows the catalog's estimated size.
        app.db.execute_unprepared("ANALYZE products").await.unwrap();
    }
    let names = product_names(&app, "products").await;
    let held = runs_held(&names, 3);
    let (common, _) = held.iter().max_by_key(|(_, n)| **n).unwrap();
    let (rare, few) = held.iter().find(|(_, n)| **n <= 3).unwrap();
    // The count of `common` among the products `condition` keeps: on
    // PostgreSQL estimated from half the pages, elsewhere exact.
    let expected = async |condition: &str| {
        let products = product_names(&app, &format!("products WHERE {condition}")).await;
        let holding = |names: &[(String, String)]| {
            let holding = names
                .iter()
                .filter(|(_, name)| name.contains(common.as_str()));
            holding.count() as u64
        };
        if !postgres {
            return (holding(&products), true);
        }
        let sample = format!("products TABLESAMPLE SYSTEM (50) REPEATABLE (0) WHERE {condition}");
        let sampled = product_names(&app, &sample).await;
        let (found, all) = (holding(&sampled), holding(&products));
        assert!(found > 0 && found < all, "{found} of {all} ({condition})");
        let share = found as f64 * products.len() as f64 / sampled.len() as f64;
        (share.round() as u64, false)
    };
    let total = |filter| count(&app, &key, filter);
    let alone = serde_json::json!({ "nameContains": common });
    assert_eq!(total(alone).await, expected("true").await, "{common}");
    let filter = serde_json::json!({ "nameContains": rare });
    assert_eq!(total(filter).await, (*few as u64, true), "{rare}");
    // With a marketplace holding a tenth of the catalog or more, estimated
    // too.
    let ozon = product_names(&app, "products WHERE marketplace = 'ozon'").await;
    assert!(ozon.len() as u64 * 10 >= PRODUCTS, "{} in ozon", ozon.len());
    let in_ozon = serde_json::json!({ "nameContains": common, "marketplace": "OZON" });
    assert_eq!(total(in_ozon).await, expected("marketplace = 'ozon'").await);
    // With a brand, which may hold few of the catalog: exact.
    let backend = app.db.get_database_backend();
    let sql = format!(
        "SELECT brand_key FROM products WHERE name_search LIKE '%{common}%' \
         GROUP BY brand_key ORDER BY COUNT(*) DESC, brand_key LIMIT 1"
    );
    let row = app.db.query_one_raw(Statement::from_string(backend, sql));
    let brand: String = row.await.unwrap().unwrap().try_get_by_index(0).unwrap();
    let filter = serde_json::json!({ "nameContains": common, "brand": brand });
    let exact = product_names(&app, &format!("products WHERE brand_key = '{brand}'")).await;
    let exact = exact
        .iter()
        .filter(|(_, name)| name.contains(common.as_str()));
    assert_eq!(total(filter).await, (exact.count() as u64, true), "{brand}");
}

/// Only bitmap scans allowed, the name indexes' kind.
const BITMAPS_ONLY: &str = "SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; \
                            SET LOCAL enable_indexonlyscan = off";

/// The runs of `length` letters or digits the names hold, with how many
/// products hold each.
fn runs_held(names: &[(String, String)], length: usize) -> BTreeMap<String, usize> {
    let mut held: BTreeMap<String, usize> = BTreeMap::new();
    for (_, name) in names {
        let chars: Vec<char> = name.chars().collect();
        let runs: BTreeSet<String> = chars
            .windows(length)
            .filter(|run| run.iter().all(|c| c.is_alphanumeric()))
            .map(|run| run.iter().collect())
            .collect();
        for run in runs {
            *held.entry(run).or_default() += 1;
        }
    }
    held
}

/// Every product's id and folded names (`name_search`), read from the table.
async fn product_names(app: &TestApp, table: &str) -> Vec<(String, String)> {
    let backend = app.db.get_database_backend();
    let sql = format!("SELECT id, name_search FROM {table}");
    let rows = app
        .db
        .query_all_raw(Statement::from_string(backend, sql))
        .await
        .unwrap();
    rows.iter()
        .map(|row| {
            let id: uuid::Uuid = row.try_get_by_index(0).unwrap();
            (id.to_string(), row.try_get_by_index(1).unwrap())
        })
        .collect()
}

/// A page whose filter tests each row it walks (a substring, or two of
/// marketplace, trust status and category) reaches fewer rows
/// (`VITRINA_PRODUCTS_TESTED_PAGE_WINDOW`); a filter one index orders keeps
/// the whole window.
#[tokio::test]
async fn a_list_tested_row_by_row_is_paged_within_its_own_window() {
    let (app, key) = demo(ListConfig {
        products_page_window: 1000,
        products_tested_page_window: 500,
        ..ListConfig::default()
    })
    .await;
    let tested = [
        "name_contains=о",
        "seller_code_contains=1",
        "marketplace=ozon&trust_status=verified",
        "category=электроника&marketplace=ozon",
        "category=электроника&trust_status=verified",
    ];
    for filter in tested {
        let within = format!("/v1/products?{filter}&page=5&page_size=100");
        assert_eq!(app.get_as(&key, &within).await.status(), 200, "{within}");
        let past = format!("/v1/products?{filter}&page=6&page_size=100");
        let (status, message) = refusal(&app, &key, &past).await;
        assert_eq!(status, 422, "{past}");
        assert_plain_sentence(&message);
        for named in [
            "500",
            "VITRINA_PRODUCTS_TESTED_PAGE_WINDOW",
            "products(first:, after:)",
        ] {
            assert!(message.contains(named), "{named} in {message}");
        }
    }
    let ordered = INDEXED
        .iter()
        .map(|(filter, _)| *filter)
        .filter(|filter| !filter.contains("_contains"))
        .chain(["brand=samsung&marketplace=ozon"]);
    for filter in ordered {
        let path = format!("/v1/products?{filter}&page=10&page_size=100");
        assert_eq!(app.get_as(&key, &path).await.status(), 200, "{path}");
    }
}

/// The status and error message of a GET.
async fn refusal(app: &TestApp, key: &str, path: &str) -> (u16, String) {
    let response = app.get_as(key, path).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    (status, message.to_owned())
}

/// PostgreSQL's JIT compilation is off for the service's sessions: it
/// starts at a plan's estimated cost, which grows with the tables, and at
/// 1,000,000 products it compiled a page of 100 products on each request
/// (30-44 ms of a statement that runs in 10 ms). Here a page is run priced
/// as if the catalog were that large (`jit_above_cost` 0): on the service's
/// connection it is not compiled; turned on, it would be.
#[tokio::test]
async fn a_page_priced_as_on_a_large_catalog_is_not_compiled() {
    let (app, key) = demo(ListConfig::default()).await;
    if app.db.get_database_backend() != DbBackend::Postgres {
        return; // SQLite compiles nothing.
    }
    let from = app.statements();
    app.json_as(&key, &format!("/v1/products?page_size={SIZE}"))
        .await;
    let statement = app.statement_reading(from, "products");
    let compiled = |setting: &'static str| {
        let (app, statement) = (&app, &statement);
        async move {
            let plan = json_plan(app, "ANALYZE, ", statement, setting).await;
            plan[0].get("JIT").is_some()
        }
    };
    assert!(!compiled("SET LOCAL jit_above_cost = 0").await);

    let available: bool = postgres_value(&app.db, "SELECT pg_jit_available()").await;
    if available {
        assert!(compiled("SET LOCAL jit_above_cost = 0; SET LOCAL jit = on").await);
    }
}

/// PostgreSQL starts no parallel workers for the service's statements by
/// default: a page walk that stops after a page of rows is estimated as a
/// walk of the whole index when the planner underrates its filter, and at
/// 1,000,000 products a page of 100 by a common name part started two
/// workers, more than twice the walk's own time. Here starting workers is
/// priced at nothing, so any plan that could use them would: on the
/// service's connection the page has none; allowed two, it has a gather.
/// `VITRINA_DB_PARALLEL_WORKERS` gives a connection that many.
#[tokio::test]
async fn a_page_starts_no_parallel_workers() {
    let (app, key) = demo(ListConfig::default()).await;
    if app.db.get_database_backend() != DbBackend::Postgres {
        return; // SQLite runs each statement on its own connection's thread.
    }
    let from = app.statements();
    app.json_as(&key, &format!("/v1/products?page_size={SIZE}"))
        .await;
    let statement = app.statement_reading(from, "products");
    let free = "SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0; \
                SET LOCAL min_parallel_index_scan_size = 0; \
                SET LOCAL min_parallel_table_scan_size = 0";
    let gathers = |setting: String| {
        let (app, statement) = (&app, &statement);
        async move {
            let plan = json_plan(app, "", statement, &setting).await;
            plan_nodes(&plan)
                .iter()
                .filter(|node| node["Node Type"].as_str().unwrap().starts_with("Gather"))
                .count()
        }
    };
    assert_eq!(gathers(free.to_owned()).await, 0);
    let allowed = format!("{free}; SET LOCAL max_parallel_workers_per_gather = 2");
    assert!(gathers(allowed).await > 0);

    let mut config = app.database_config();
    config.db_parallel_workers = 2;
    let configured = vitrina::db::connect(&config).await.unwrap();
    let workers: String = postgres_value(
        &configured,
        "SELECT current_setting('max_parallel_workers_per_gather')",
    )
    .await;
    assert_eq!(workers, "2");
}

/// The one value `sql` answers on PostgreSQL.
async fn postgres_value<T: sea_orm::TryGetable>(db: &impl ConnectionTrait, sql: &str) -> T {
    db.query_one_raw(Statement::from_string(DbBackend::Postgres, sql))
        .await
        .unwrap()
        .expect("one row")
        .try_get_by_index::<T>(0)
        .unwrap()
}
