//! Every child list of products declared in `query::product_lists` answers
//! the rows its table holds for each product, read with a page statement
//! (GraphQL `products`) and by the dataloaders (`nodes`) alike. A list
//! declared once is walked here without being named.

use std::collections::BTreeMap;

use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use vitrina::query::product_lists;

use crate::helpers::{TestApp, graphql};

/// Rows per product id, as GraphQL answered them.
fn counted(nodes: &[Value], field: &str) -> BTreeMap<String, usize> {
    nodes
        .iter()
        .map(|node| {
            let rows = node[field]
                .as_array()
                .unwrap_or_else(|| panic!("{field}: {node}"));
            (node["id"].as_str().unwrap().to_owned(), rows.len())
        })
        .collect()
}

#[tokio::test]
async fn every_declared_list_answers_its_tables_rows_on_both_read_paths() {
    let (app, key) = TestApp::demo(40, 7).await;
    let lists = product_lists::declared();
    assert!(lists.len() >= 3, "{lists:?}");
    for list in lists {
        let field = list.graphql_field;
        let backend = app.db.get_database_backend();
        let sql = format!(
            "SELECT product_id, COUNT(*) FROM {} GROUP BY product_id",
            list.table
        );
        let mut stored: BTreeMap<String, usize> = BTreeMap::new();
        for row in app
            .db
            .query_all_raw(Statement::from_string(backend, sql))
            .await
            .unwrap()
        {
            let id: uuid::Uuid = row.try_get_by_index(0).unwrap();
            let count: i64 = row.try_get_by_index(1).unwrap();
            stored.insert(id.to_string(), usize::try_from(count).unwrap());
        }
        assert!(
            !stored.is_empty(),
            "{}: the demo data holds no rows",
            list.name
        );

        let page = format!(
            "{{ products(first: 100) {{ nodes {{ id globalId {field} {{ __typename }} }} }} }}"
        );
        let page = graphql::data(&app, &key, &page, json!({})).await;
        let nodes = page["products"]["nodes"].as_array().unwrap().clone();
        let ids: Vec<&str> = nodes.iter().map(|n| n["id"].as_str().unwrap()).collect();
        assert_eq!(nodes.len(), 40, "the whole catalog on one page");
        let paged = counted(&nodes, field);
        let mut expected: BTreeMap<String, usize> =
            ids.iter().map(|id| (id.to_string(), 0)).collect();
        expected.extend(stored.clone());
        assert_eq!(paged, expected, "{}: the page statement", list.name);

        let global: Vec<String> = nodes
            .iter()
            .map(|n| {
                n["globalId"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_default()
            })
            .collect();
        let loaded = format!(
            "query($ids: [ID!]!) {{ nodes(ids: $ids) {{ ... on Product {{ id {field} {{ __typename }} }} }} }}"
        );
        let loaded = graphql::data(&app, &key, &loaded, json!({ "ids": global })).await;
        let loaded = counted(loaded["nodes"].as_array().unwrap(), field);
        assert_eq!(loaded, paged, "{}: the dataloaders", list.name);
    }
}
