//! PostgreSQL plans a repeated page statement once per connection. The
//! page's limits are written into its text (`query::literal_limits`): as
//! parameters, a generic plan assumed they keep a tenth of the rows, looked
//! costlier than planning each run for its values, and every request was
//! planned again once a filter held ten times a page.

use sea_orm::{ConnectionTrait, DbBackend, Statement};
use vitrina::query::Page;
use vitrina::query::budget::ResponseBudget;
use vitrina::query::products::{self, ProductFilter};

use crate::helpers::TestApp;

/// Runs of one page after which PostgreSQL has chosen between a generic
/// plan and planning each run (it plans the first five for their values).
const RUNS: usize = 10;

#[tokio::test]
async fn a_repeated_page_is_planned_once() {
    let (app, _) = TestApp::demo(3_000, 42).await;
    if app.db.get_database_backend() != DbBackend::Postgres {
        return; // SQLite plans a statement when it is prepared, once.
    }
    // One connection, so that the plans read below are the page's.
    let mut config = app.database_config();
    config.db_max_connections = Some(1);
    let db = vitrina::db::connect(&config).await.unwrap();
    let page = Page {
        page: 1,
        page_size: 5,
    };
    for _ in 0..RUNS {
        let (rows, more) = products::list(
            &db,
            &ProductFilter::default(),
            page,
            &ResponseBudget::unlimited(),
        )
        .await
        .unwrap();
        assert_eq!((rows.len(), more), (5, true));
    }
    let plans = db
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements \
             WHERE statement LIKE 'SELECT \"products\".\"id\"%'",
        ))
        .await
        .unwrap()
        .expect("the page statement is prepared");
    let generic = plans.try_get_by_index::<i64>(0).unwrap();
    let custom = plans.try_get_by_index::<i64>(1).unwrap();
    assert_eq!(
        generic + custom,
        RUNS as i64,
        "one prepared statement ran every page"
    );
    assert!(
        custom < RUNS as i64,
        "planned for its values on each run ({custom} of {RUNS})"
    );
}
