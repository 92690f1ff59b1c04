//! Accounts as an operator administers them (`vitrina accounts ...`):
//! created by name, listed with their keys counted, and given a daily
//! quota of their own. Requests read the quota from the account's row, so
//! a change applies to the next request on every replica.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entity::{account, api_key};
use sea_orm::sea_query::{Expr, Func, SimpleExpr};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::{find_account, find_or_create_account};
use crate::error::Error;

/// What `create` found.
pub enum Creation {
    Created(account::Model),
    /// An account of that name was there already.
    AlreadyExists(account::Model),
}

/// An account with its keys counted.
pub struct AccountListing {
    pub account: account::Model,
    pub keys: KeyCounts,
}

/// An account's keys by state: each is in exactly one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyCounts {
    /// Neither revoked nor expired: these authenticate.
    pub active: i64,
    /// Past their expiry, not revoked.
    pub expired: i64,
    pub revoked: i64,
}

/// What `set_daily_quota` did; `None` is the server's default.
pub enum QuotaChange {
    Changed {
        account: account::Model,
        from: Option<i64>,
    },
    /// The account had that quota already.
    Unchanged(account::Model),
}

/// Creates the account `name`, or says it exists.
pub async fn create(
    db: &impl ConnectionTrait,
    name: &str,
    now: DateTime<Utc>,
) -> Result<Creation, Error> {
    Ok(match find_or_create_account(db, name, now).await? {
        (account, true) => Creation::Created(account),
        (account, false) => Creation::AlreadyExists(account),
    })
}

/// The account `name`, or an error naming it.
pub async fn named(db: &impl ConnectionTrait, name: &str) -> Result<account::Model, Error> {
    find_account(db, name)
        .await?
        .ok_or_else(|| Error::Invalid(format!("no account named {:?}", name.trim())))
}

/// Every account, by name, with its keys counted as of `now`.
pub async fn list(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
) -> Result<Vec<AccountListing>, Error> {
    let accounts = account::Entity::find()
        .order_by_asc(account::Column::Name)
        .all(db)
        .await?;
    let counts = key_counts(db, None, now).await?;
    Ok(accounts
        .into_iter()
        .map(|account| {
            let keys = counts.get(&account.id).copied().unwrap_or_default();
            AccountListing { account, keys }
        })
        .collect())
}

/// The account `name` with its keys counted as of `now`.
pub async fn show(
    db: &impl ConnectionTrait,
    name: &str,
    now: DateTime<Utc>,
) -> Result<AccountListing, Error> {
    let account = named(db, name).await?;
    let counts = key_counts(db, Some(account.id), now).await?;
    let keys = counts.get(&account.id).copied().unwrap_or_default();
    Ok(AccountListing { account, keys })
}

/// Keys by account and state at `now`, of one account or of all, in one
/// statement however many there are.
async fn key_counts(
    db: &impl ConnectionTrait,
    account: Option<Uuid>,
    now: DateTime<Utc>,
) -> Result<HashMap<Uuid, KeyCounts>, Error> {
    use api_key::Column::{AccountId, ExpiresAt, RevokedAt};
    let unexpired = Condition::any()
        .add(ExpiresAt.is_null())
        .add(ExpiresAt.gt(now));
    let active = Condition::all().add(RevokedAt.is_null()).add(unexpired);
    let expired = Condition::all()
        .add(RevokedAt.is_null())
        .add(ExpiresAt.lte(now));
    let count =
        |when: Condition| -> SimpleExpr { Func::sum(Expr::case(when, 1).finally(0)).into() };
    let mut select = api_key::Entity::find()
        .select_only()
        .column(AccountId)
        .column_as(count(active), "active")
        .column_as(count(expired), "expired")
        .column_as(count(RevokedAt.is_not_null().into()), "revoked")
        .group_by(AccountId);
    if let Some(id) = account {
        select = select.filter(AccountId.eq(id));
    }
    let rows = select.into_tuple::<(Uuid, i64, i64, i64)>().all(db).await?;
    Ok(rows
        .into_iter()
        .map(|(id, active, expired, revoked)| {
            let keys = KeyCounts {
                active,
                expired,
                revoked,
            };
            (id, keys)
        })
        .collect())
}

/// Gives the account `name` its own daily quota, or (`None`) the server's
/// default again.
pub async fn set_daily_quota(
    db: &impl ConnectionTrait,
    name: &str,
    quota: Option<i64>,
) -> Result<QuotaChange, Error> {
    let account = named(db, name).await?;
    if account.daily_quota == quota {
        return Ok(QuotaChange::Unchanged(account));
    }
    let from = account.daily_quota;
    let mut changed: account::ActiveModel = account.into();
    changed.daily_quota = Set(quota);
    Ok(QuotaChange::Changed {
        account: changed.update(db).await?,
        from,
    })
}
