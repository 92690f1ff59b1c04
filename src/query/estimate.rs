//! How many rows the tables that counts read hold, as the database itself
//! estimates them: one statement that scans no table, cheap enough to run
//! once a minute. The GraphQL prices of counts and substring filters grow
//! with these (`graphql::cost::scans`).
//! - PostgreSQL: the larger of the planner's estimate (`pg_class.reltuples`,
//!   kept by ANALYZE and autovacuum) and the statistics' live rows
//!   (`pg_stat_user_tables.n_live_tup`, kept as rows are written);
//! - SQLite: each table's largest `rowid`, read from the end of its b-tree:
//!   the rows inserted, deletions not subtracted (an estimate from above).

use entity::{account, price_observation, product, scrape_session, seller, submission};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, EntityName, Statement};

/// Estimated rows of each table a count may read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableRows {
    pub products: u64,
    pub sellers: u64,
    pub price_observations: u64,
    pub accounts: u64,
    pub scrape_sessions: u64,
    pub submissions: u64,
}

impl TableRows {
    /// The field that holds `table`'s rows.
    fn of_table(&mut self, table: &str) -> Option<&mut u64> {
        let tables = [
            (product::Entity.table_name(), &mut self.products),
            (seller::Entity.table_name(), &mut self.sellers),
            (
                price_observation::Entity.table_name(),
                &mut self.price_observations,
            ),
            (account::Entity.table_name(), &mut self.accounts),
            (
                scrape_session::Entity.table_name(),
                &mut self.scrape_sessions,
            ),
            (submission::Entity.table_name(), &mut self.submissions),
        ];
        tables
            .into_iter()
            .find_map(|(name, rows)| (name == table).then_some(rows))
    }

    fn tables() -> [&'static str; 6] {
        [
            product::Entity.table_name(),
            seller::Entity.table_name(),
            price_observation::Entity.table_name(),
            account::Entity.table_name(),
            scrape_session::Entity.table_name(),
            submission::Entity.table_name(),
        ]
    }
}

/// PostgreSQL's estimate of a table's rows (see the module), over
/// [`POSTGRES_TABLES`].
const POSTGRES_ESTIMATE: &str = "GREATEST(c.reltuples::bigint, COALESCE(s.n_live_tup, 0))::bigint";
/// The catalog rows a [`POSTGRES_ESTIMATE`] reads, per table.
const POSTGRES_TABLES: &str = "pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid";

/// PostgreSQL's estimate of `table`'s rows as a scalar subquery, for a
/// statement that needs it beside its own answer. `table` must be an
/// entity's own name, not input.
pub fn postgres_rows(table: &str) -> String {
    format!(
        "(SELECT {POSTGRES_ESTIMATE} FROM {POSTGRES_TABLES} WHERE c.oid = to_regclass('{table}'))"
    )
}

/// The estimated rows of every table of [`TableRows`], in one statement.
pub async fn table_rows(db: &impl ConnectionTrait) -> Result<TableRows, DbErr> {
    let backend = db.get_database_backend();
    // The table names are the entities' own, not input.
    let sql = match backend {
        DbBackend::Postgres => {
            let tables: Vec<String> = TableRows::tables()
                .iter()
                .map(|t| format!("to_regclass('{t}')"))
                .collect();
            format!(
                "SELECT c.relname::text AS name, {POSTGRES_ESTIMATE} AS estimate \
                 FROM {POSTGRES_TABLES} WHERE c.oid IN ({})",
                tables.join(", ")
            )
        }
        _ => TableRows::tables()
            .iter()
            .map(|t| format!("SELECT '{t}' AS name, COALESCE(MAX(rowid), 0) AS estimate FROM \"main\".\"{t}\""))
            .collect::<Vec<_>>()
            .join(" UNION ALL "),
    };
    let mut rows = TableRows::default();
    for row in db
        .query_all_raw(Statement::from_string(backend, sql))
        .await?
    {
        let name: String = row.try_get("", "name")?;
        let estimate: i64 = row.try_get("", "estimate")?;
        if let Some(field) = rows.of_table(&name) {
            // Negative only if PostgreSQL had neither analysed the table
            // (`reltuples` is -1) nor counted its rows.
            *field = u64::try_from(estimate).unwrap_or(0);
        }
    }
    Ok(rows)
}
