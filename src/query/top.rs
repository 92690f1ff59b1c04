//! "The first N rows of each parent" in one statement, for dataloaders that
//! batch a child list over many parents (a product's latest prices, a
//! seller's newest products). Uses `ROW_NUMBER()`, which SQLite and
//! PostgreSQL both support.

use sea_orm::{
    ConnectionTrait, DbBackend, DbErr, EntityTrait, FromQueryResult, Iden, Statement, Value,
};

/// Rows of `E` whose `parent` column is one of `parents`, at most `n` per
/// parent, in the order `order_by` (a fixed SQL ORDER BY list of the
/// entity's own columns, e.g. `"recorded_at DESC, id DESC"`).
pub async fn first_n_per_parent<E>(
    db: &impl ConnectionTrait,
    parent: E::Column,
    parents: &[Value],
    order_by: &'static str,
    n: u64,
) -> Result<Vec<E::Model>, DbErr>
where
    E: EntityTrait,
    E::Model: FromQueryResult,
{
    if parents.is_empty() || n == 0 {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let placeholders: Vec<String> = (1..=parents.len())
        .map(|i| match backend {
            DbBackend::Postgres => format!("${i}"),
            _ => "?".to_owned(),
        })
        .collect();
    let table = E::default().table_name().to_owned();
    let parent = parent.to_string();
    let sql = format!(
        "SELECT * FROM (SELECT t.*, ROW_NUMBER() OVER (PARTITION BY {parent} ORDER BY {order_by}) AS row_in_parent \
         FROM {table} t WHERE {parent} IN ({})) ranked WHERE row_in_parent <= {n} ORDER BY {parent}, row_in_parent",
        placeholders.join(", ")
    );
    E::Model::find_by_statement(Statement::from_sql_and_values(
        backend,
        sql,
        parents.to_vec(),
    ))
    .all(db)
    .await
}
