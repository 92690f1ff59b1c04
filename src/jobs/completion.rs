//! Session completion (spec, States): when the last submission of a session
//! with at least one submission leaves pending/processing, the session
//! completes, once, and one `scrape_session.completed` delivery per active
//! subscription of its account is written to the outbox in the same
//! transaction.

use chrono::{DateTime, Utc};
use entity::{SessionStatus, scrape_session};
use sea_orm::sea_query::{Expr, LockType};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};

use crate::query::sessions;

/// Call inside the transaction that changed one of the session's submissions.
/// Returns whether this call completed the session.
pub async fn after_change(
    txn: &impl ConnectionTrait,
    session: &scrape_session::Model,
    public_url: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    // Lock the session row so that two workers finishing its last two
    // submissions at once see each other's result instead of both missing it.
    scrape_session::Entity::find_by_id(session.id)
        .lock(LockType::Update)
        .one(txn)
        .await?;
    let stats = sessions::stats(txn, &[session.id])
        .await?
        .remove(&session.id)
        .unwrap_or_default();
    let mut update = scrape_session::Entity::update_many()
        .col_expr(scrape_session::Column::UpdatedAt, Expr::val(now))
        .filter(scrape_session::Column::Id.eq(session.id));
    let completing = stats.status() == SessionStatus::Completed;
    if completing {
        update = update
            .col_expr(scrape_session::Column::CompletedAt, Expr::val(Some(now)))
            .filter(scrape_session::Column::CompletedAt.is_null());
    }
    let changed = update.exec(txn).await?.rows_affected == 1;
    if !(completing && changed) {
        return Ok(false);
    }
    crate::webhooks::outbox::enqueue_session_completed(
        txn,
        session.account_id,
        session.id,
        &stats,
        public_url,
        now,
    )
    .await?;
    Ok(true)
}
