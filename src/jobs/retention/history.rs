//! Retention of the price history (`VITRINA_PRICE_HISTORY_RETENTION_DAYS`).
//!
//! An observation older than the cutoff is deleted once a newer observation
//! of the same variant (product, country, region and auth status: what a
//! current price is kept per), itself older than the cutoff, exists. So of
//! the history before the cutoff only the last observation of each variant
//! stays: the price in effect when the kept window begins. Nothing reads the
//! history for the current price (`current_prices` holds it), but the merge
//! writes an observation only when a price changes (a repeated price only
//! advances its current price's time), so a price unchanged for longer than
//! the period would otherwise have no history at all.
//!
//! The walk: the observations before the cutoff are visited in
//! (`recorded_at`, `id`) order (index `price_observations_age`), a batch at
//! a time, and one statement per batch deletes every older observation of
//! the visited rows' variants (index `price_observations_history`). The
//! walk remembers where it stopped: the next pass visits only what has aged
//! past the cutoff since, and that deletes what earlier passes kept as the
//! last of its variant. So a pass reads what aged out since the last one,
//! not the whole history. An observation written late with a time the walk
//! has passed is not visited itself; it goes with the next observation of
//! its variant to age out.

use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};
use entity::price_observation::{Column, Entity};
use sea_orm::sea_query::{
    Alias, Condition, Expr, JoinType, PostgresQueryBuilder, Query, SimpleExpr,
};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, ExprTrait, Order};

use super::Batches;
use crate::cache::versions::{DataVersions, Grains};

/// An observation's place in the walk: `recorded_at`, then `id`.
type Key = (DateTime<Utc>, i64);

/// Where the walk stopped: every observation up to this key was visited.
#[derive(Debug, Default)]
pub struct Walk {
    visited: Mutex<Option<Key>>,
}

/// Where a batch of the walk ends.
#[derive(Debug, Clone, Copy)]
enum End {
    /// At this observation, the batch's last.
    At(Key),
    /// At the cutoff: fewer than a batch of observations were left.
    Cutoff(DateTime<Utc>),
}

impl Walk {
    /// Walks on through the observations before `cutoff`, deleting those
    /// superseded before it, until the cutoff or the pass's last batch.
    pub(super) async fn purge(
        &self,
        db: &DatabaseConnection,
        versions: &DataVersions,
        cutoff: DateTime<Utc>,
        batches: &mut Batches,
    ) -> Result<u64, DbErr> {
        let mut deleted = 0;
        while batches.take() {
            let visited = *self.visited.lock().unwrap_or_else(PoisonError::into_inner);
            let end = match last_of_batch(db, visited, cutoff, batches.size).await? {
                Some(key) => End::At(key),
                None => End::Cutoff(cutoff),
            };
            let txn = crate::db::begin_write(db).await?;
            let rows = delete_superseded(&txn, visited, end, batches.size).await?;
            versions.commit(txn, Grains::CATALOG.when(rows > 0)).await?;
            deleted += rows;
            let reached = match end {
                End::At(key) => key,
                // Every observation before the cutoff was visited.
                End::Cutoff(at) => (at, i64::MIN),
            };
            let mut stored = self.visited.lock().unwrap_or_else(PoisonError::into_inner);
            *stored = Some(stored.map_or(reached, |was| was.max(reached)));
            if matches!(end, End::Cutoff(_)) {
                break;
            }
        }
        Ok(deleted)
    }
}

/// `table.column`.
fn col(table: &str, column: Column) -> Expr {
    Expr::col((Alias::new(table), column))
}

/// The walk's key of the observation `table`.
fn key_of(table: &str) -> SimpleExpr {
    Expr::tuple([col(table, Column::RecordedAt), col(table, Column::Id)])
}

fn key(k: Key) -> SimpleExpr {
    Expr::tuple([Expr::val(k.0), Expr::val(k.1)])
}

/// The last observation of the next batch of `size` after `visited`, when
/// that many are left before `cutoff`.
async fn last_of_batch(
    db: &DatabaseConnection,
    visited: Option<Key>,
    cutoff: DateTime<Utc>,
    size: u64,
) -> Result<Option<Key>, DbErr> {
    let mut next = Query::select();
    next.columns([Column::RecordedAt, Column::Id])
        .from_as(Entity, Alias::new("n"))
        .and_where(col("n", Column::RecordedAt).lt(cutoff));
    if let Some(visited) = visited {
        next.and_where(key_of("n").gt(key(visited)));
    }
    next.order_by(Column::RecordedAt, Order::Asc)
        .order_by(Column::Id, Order::Asc)
        .offset(size - 1)
        .limit(1);
    let Some(row) = db.query_one(&next).await? else {
        return Ok(None);
    };
    Ok(Some((row.try_get_by_index(0)?, row.try_get_by_index(1)?)))
}

/// Deletes, in one statement, every observation older than an observation
/// `n` of the same variant, `n` in the batch of at most `size` after
/// `visited` up to `end`.
async fn delete_superseded(
    db: &impl ConnectionTrait,
    visited: Option<Key>,
    end: End,
    size: u64,
) -> Result<u64, DbErr> {
    let (n, o) = ("n", "o");
    // The batch as a subquery with its LIMIT, which the bounds alone imply:
    // PostgreSQL estimates a range of (`recorded_at`, `id`) pairs by its
    // first column and took a 5,000-row batch for 130,000 rows at 1,000,000
    // products, then joined the whole table by hash (5-6 s a batch); with
    // the LIMIT it looks each row's variant up in the history index (a pass
    // of 22 batches: 76-86 s before, 2.2 s after).
    let mut batch = Query::select();
    batch
        .columns([
            Column::Id,
            Column::ProductId,
            Column::CountryCode,
            Column::UserAuthStatus,
            Column::RegionCode,
            Column::RecordedAt,
        ])
        .from(Entity);
    let own_key = || Expr::tuple([Expr::col(Column::RecordedAt), Expr::col(Column::Id)]);
    if let Some(visited) = visited {
        batch.and_where(own_key().gt(key(visited)));
    }
    batch
        .and_where(match end {
            End::At(last) => own_key().lte(key(last)),
            End::Cutoff(cutoff) => Expr::col(Column::RecordedAt).lt(cutoff),
        })
        .order_by(Column::RecordedAt, Order::Asc)
        .order_by(Column::Id, Order::Asc)
        .limit(size);
    let same_variant = Condition::all()
        .add(col(o, Column::ProductId).eq(col(n, Column::ProductId)))
        .add(col(o, Column::CountryCode).eq(col(n, Column::CountryCode)))
        .add(col(o, Column::UserAuthStatus).eq(col(n, Column::UserAuthStatus)))
        .add(
            Condition::any()
                .add(col(o, Column::RegionCode).eq(col(n, Column::RegionCode)))
                .add(
                    col(o, Column::RegionCode)
                        .is_null()
                        .and(col(n, Column::RegionCode).is_null()),
                ),
        )
        // The first bound alone lets the history index range over it.
        .add(col(o, Column::RecordedAt).lte(col(n, Column::RecordedAt)))
        .add(key_of(o).lt(key_of(n)));
    let mut superseded = Query::select();
    superseded
        .column((Alias::new(o), Column::Id))
        .from_subquery(batch, Alias::new(n))
        .join_as(JoinType::InnerJoin, Entity, Alias::new(o), same_variant);
    let delete = Query::delete()
        .from_table(Entity)
        .and_where(Expr::col(Column::Id).in_subquery(superseded))
        .to_owned();
    let done = match db.get_database_backend() {
        // With the bounds written in and run unprepared, PostgreSQL plans
        // the statement for them each time: a generic plan (which it may
        // switch to after five runs of a prepared statement) sees no bounds.
        DbBackend::Postgres => {
            db.execute_unprepared(&delete.to_string(PostgresQueryBuilder))
                .await?
        }
        // SQLite keeps times as text in the form its driver writes; a time
        // written into the statement takes another and compares wrongly,
        // so the bounds are bound.
        _ => db.execute(&delete).await?,
    };
    Ok(done.rows_affected())
}
