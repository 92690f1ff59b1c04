//! "The first N rows of each parent" in one statement, for dataloaders that
//! batch a child list over many parents (a product's latest prices, a
//! seller's newest products). Both backends read each parent's first rows
//! from its index with a `LIMIT`, instead of numbering every row of every
//! parent with `ROW_NUMBER()`: PostgreSQL with a `LATERAL` join over the
//! parents as one array parameter, SQLite (no `LATERAL`, no arrays) with a
//! correlated subquery over a `VALUES` list.

use sea_orm::{ConnectionTrait, DbBackend, DbErr, FromQueryResult, Iden, Statement, Value};
use uuid::Uuid;

use super::order::{self, Ordered};

/// Rows of `E` whose `parent` column is one of `parents` (distinct), at most `n` per
/// parent, grouped by parent and in the entity's order within it, as `M`
/// from the columns `picked` (`t.*` for the whole row). The entity has a
/// unique `id` column.
pub async fn first_n_per_parent<E, M>(
    db: &impl ConnectionTrait,
    parent: E::Column,
    parents: &[Uuid],
    n: u64,
    picked: &str,
) -> Result<Vec<M>, DbErr>
where
    E: Ordered,
    M: FromQueryResult,
{
    if parents.is_empty() || n == 0 {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let table = E::default().table_name().to_owned();
    let parent = parent.to_string();
    let order_by = order::sql::<E>();
    let (sql, values) = match backend {
        DbBackend::Postgres => (
            // 100 products' latest prices: 1.7 ms with ROW_NUMBER(), 0.5 ms here.
            format!(
                "SELECT {picked} FROM unnest($1::uuid[]) AS parents(parent_id) CROSS JOIN LATERAL \
                 (SELECT * FROM {table} WHERE {parent} = parents.parent_id ORDER BY {order_by} LIMIT {n}) t \
                 ORDER BY t.{parent}, {order_by}"
            ),
            vec![Value::from(parents.to_vec())],
        ),
        _ => (
            format!(
                "WITH parents(parent_id) AS (VALUES {}) \
                 SELECT {picked} FROM parents, {table} t WHERE t.id IN \
                 (SELECT id FROM {table} WHERE {parent} = parents.parent_id ORDER BY {order_by} LIMIT {n}) \
                 ORDER BY t.{parent}, {order_by}",
                vec!["(?)"; parents.len()].join(", ")
            ),
            parents.iter().map(|id| Value::from(*id)).collect(),
        ),
    };
    M::find_by_statement(Statement::from_sql_and_values(backend, sql, values))
        .all(db)
        .await
}
