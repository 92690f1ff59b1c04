//! Accounts as an operator administers them (`vitrina accounts ...`):
//! created by name, listed with their keys counted, and given a daily
//! quota of their own. Requests read the quota from the account's row, so
//! a change applies to the next request on every replica.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entity::{account, api_key};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::{ensure_account, find_account};
use crate::error::Error;

/// What `create` found.
pub enum Creation {
    Created(account::Model),
    /// An account of that name was there already.
    AlreadyExists(account::Model),
}

/// An account with how many of its keys are live and revoked.
pub struct AccountListing {
    pub account: account::Model,
    pub active_keys: i64,
    pub revoked_keys: i64,
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
    if let Some(found) = find_account(db, name).await? {
        return Ok(Creation::AlreadyExists(found));
    }
    Ok(Creation::Created(ensure_account(db, name, now).await?))
}

/// The account `name`, or an error naming it.
pub async fn named(db: &impl ConnectionTrait, name: &str) -> Result<account::Model, Error> {
    find_account(db, name)
        .await?
        .ok_or_else(|| Error::Invalid(format!("no account named {:?}", name.trim())))
}

/// Every account, by name, with its keys counted.
pub async fn list(db: &impl ConnectionTrait) -> Result<Vec<AccountListing>, Error> {
    let accounts = account::Entity::find()
        .order_by_asc(account::Column::Name)
        .all(db)
        .await?;
    let counts = key_counts(db, None).await?;
    Ok(accounts
        .into_iter()
        .map(|account| {
            let (active, all) = counts.get(&account.id).copied().unwrap_or((0, 0));
            AccountListing {
                account,
                active_keys: active,
                revoked_keys: all - active,
            }
        })
        .collect())
}

/// The account `name` with its keys counted.
pub async fn show(db: &impl ConnectionTrait, name: &str) -> Result<AccountListing, Error> {
    let account = named(db, name).await?;
    let counts = key_counts(db, Some(account.id)).await?;
    let (active, all) = counts.get(&account.id).copied().unwrap_or((0, 0));
    Ok(AccountListing {
        account,
        active_keys: active,
        revoked_keys: all - active,
    })
}

/// Live and all keys by account, of one account or of all, in one
/// statement however many there are.
async fn key_counts(
    db: &impl ConnectionTrait,
    account: Option<Uuid>,
) -> Result<HashMap<Uuid, (i64, i64)>, Error> {
    let mut select = api_key::Entity::find()
        .select_only()
        .column(api_key::Column::AccountId)
        .column_as(
            Expr::cust("SUM(CASE WHEN revoked_at IS NULL THEN 1 ELSE 0 END)"),
            "active",
        )
        .column_as(api_key::Column::Id.count(), "keys")
        .group_by(api_key::Column::AccountId);
    if let Some(id) = account {
        select = select.filter(api_key::Column::AccountId.eq(id));
    }
    let rows = select.into_tuple::<(Uuid, i64, i64)>().all(db).await?;
    Ok(rows
        .into_iter()
        .map(|(id, active, all)| (id, (active, all)))
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
