//! The daily data quota, kept in `quota_usage` so that every replica and every
//! restart sees the same count.
//!
//! A charge is one atomic upsert that only applies while the new total stays
//! within the limit: a request whose rows would pass the quota is refused
//! whole and charges nothing, even when replicas race.

use chrono::{DateTime, NaiveTime, Utc};
use entity::{account, quota_usage};
use sea_orm::sea_query::{Expr, OnConflict, Query};
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, ExprTrait};
use uuid::Uuid;

/// Quota state after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaCharge {
    pub limit: i64,
    pub remaining: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaOutcome {
    Charged(QuotaCharge),
    /// Refused; nothing was charged, so `remaining` is what is still left
    /// today. `retry_after` is seconds to the next UTC midnight.
    Exceeded {
        limit: i64,
        remaining: i64,
        retry_after: i64,
    },
}

/// The account's daily limit: its own setting, else the default.
async fn limit_of(db: &impl ConnectionTrait, account_id: Uuid, default: i64) -> Result<i64, DbErr> {
    let account = account::Entity::find_by_id(account_id).one(db).await?;
    Ok(account.and_then(|a| a.daily_quota).unwrap_or(default))
}

/// When the quota of `now`'s UTC day resets: the next UTC midnight.
pub fn resets_at(now: DateTime<Utc>) -> DateTime<Utc> {
    (now.date_naive() + chrono::Days::new(1))
        .and_time(NaiveTime::MIN)
        .and_utc()
}

fn seconds_to_midnight(now: DateTime<Utc>) -> i64 {
    Ord::max((resets_at(now) - now).num_seconds(), 1)
}

/// Where the account stands today, charging nothing.
pub async fn standing(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    default_limit: i64,
    now: DateTime<Utc>,
) -> Result<QuotaCharge, DbErr> {
    let limit = limit_of(db, account_id, default_limit).await?;
    let used = used_on(db, account_id, now.date_naive()).await?;
    Ok(QuotaCharge {
        limit,
        remaining: Ord::max(limit - used, 0),
    })
}

/// Rows the account has used on `day`.
async fn used_on(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    day: chrono::NaiveDate,
) -> Result<i64, DbErr> {
    Ok(quota_usage::Entity::find_by_id((account_id, day))
        .one(db)
        .await?
        .map_or(0, |u| u.rows_used))
}

/// Charges `rows` to the account's quota for the UTC day of `now`.
pub async fn charge(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    rows: i64,
    default_limit: i64,
    now: DateTime<Utc>,
) -> Result<QuotaOutcome, DbErr> {
    let limit = limit_of(db, account_id, default_limit).await?;
    let day = now.date_naive();
    let exceeded = async || -> Result<QuotaOutcome, DbErr> {
        crate::metrics::refused(crate::metrics::Limit::DailyQuota);
        Ok(QuotaOutcome::Exceeded {
            limit,
            remaining: Ord::max(limit - used_on(db, account_id, day).await?, 0),
            retry_after: seconds_to_midnight(now),
        })
    };
    if rows > limit {
        return exceeded().await;
    }
    let used = if rows == 0 {
        used_on(db, account_id, day).await?
    } else {
        let current = Expr::col((quota_usage::Entity, quota_usage::Column::RowsUsed));
        let upsert = Query::insert()
            .into_table(quota_usage::Entity)
            .columns([
                quota_usage::Column::AccountId,
                quota_usage::Column::Day,
                quota_usage::Column::RowsUsed,
            ])
            .values_panic([account_id.into(), day.into(), rows.into()])
            .on_conflict(
                OnConflict::columns([quota_usage::Column::AccountId, quota_usage::Column::Day])
                    .value(quota_usage::Column::RowsUsed, current.clone().add(rows))
                    .action_and_where(current.add(rows).lte(limit))
                    .to_owned(),
            )
            .returning_col(quota_usage::Column::RowsUsed)
            .to_owned();
        match db.query_one(&upsert).await? {
            Some(row) => row.try_get::<i64>("", "rows_used")?,
            None => return exceeded().await,
        }
    };
    Ok(QuotaOutcome::Charged(QuotaCharge {
        limit,
        remaining: Ord::max(limit - used, 0),
    }))
}
