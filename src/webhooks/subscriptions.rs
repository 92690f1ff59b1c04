//! Webhook subscriptions of an account: create, list, disable, and the
//! delivery log. Every function a caller on behalf of an account uses takes
//! that account, so another account's subscription is simply not found; the
//! few operator functions (for the CLI) say so in their name.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entity::{
    DeliveryStatus, PriceFilter, SubscriptionStatus, account, webhook_attempt, webhook_delivery,
    webhook_subscription,
};
use sea_orm::sea_query::{Expr, LockType};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, TransactionTrait,
};
use uuid::Uuid;

use super::outbox::{PRICE_CHANGED, SESSION_COMPLETED};
use super::signature::generate_secret;
use super::target::{TargetError, TargetPolicy};
use crate::query::{QueryError, check_text};

/// Active subscriptions an account may have at once.
pub const MAX_ACTIVE_PER_ACCOUNT: u64 = 5;

/// Longest target URL, in characters, as sent and as stored (parsed, which
/// may percent-encode it longer): every listing shows it and every delivery
/// sends to it.
pub const MAX_TARGET_URL: usize = 2048;

/// Deliveries the delivery log shows at most (the newest).
pub const DELIVERY_LOG_LIMIT: u64 = 100;

#[derive(Debug, thiserror::Error)]
pub enum SubscriptionError {
    /// The target URL is refused.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The target URL is longer than [`MAX_TARGET_URL`].
    #[error(
        "the url is {length} characters long{stored}; a webhook target URL is at most {MAX_TARGET_URL}"
    )]
    UrlTooLong {
        length: usize,
        /// Empty, or how it was measured when that was once parsed.
        stored: &'static str,
    },
    #[error(
        "an account may have at most {MAX_ACTIVE_PER_ACCOUNT} active webhook subscriptions; disable one first"
    )]
    LimitReached,
    #[error("no such webhook subscription")]
    NotFound,
    #[error("no such delivery of this webhook subscription")]
    DeliveryNotFound,
    #[error("the webhook subscription is disabled, for good; create a new one")]
    Disabled,
    #[error("the delivery is still pending; it can be redelivered once it has succeeded or failed")]
    DeliveryNotFinished,
    #[error(
        "this webhook subscription already has {limit} redeliveries waiting to be sent, the most it may have; redeliver again once some have finished"
    )]
    RedeliveryLimit { limit: u32 },
    /// The events or the filter asked for are not valid.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Database(#[from] DbErr),
}

/// One delivery with its attempts, oldest attempt first.
#[derive(Debug, Clone)]
pub struct DeliveryLog {
    pub delivery: webhook_delivery::Model,
    pub attempts: Vec<webhook_attempt::Model>,
}

/// The events a subscription receives.
#[derive(Debug, Clone, PartialEq)]
pub struct Interests {
    /// `scrape_session.completed`, of the account's own sessions.
    pub sessions: bool,
    /// `product.price_changed`, of the prices the filter picks (all when
    /// `None`), whoever uploaded them.
    pub prices: Option<PriceFilter>,
}

/// Most brands, and most product ids, one price filter may list.
pub const MAX_FILTER_BRANDS: usize = 100;
pub const MAX_FILTER_PRODUCTS: usize = 500;

impl Interests {
    /// The interests `events` names (the default when absent), with
    /// `filter` for price changes, checked.
    pub fn of(
        events: Option<&[String]>,
        filter: Option<PriceFilter>,
    ) -> Result<Interests, SubscriptionError> {
        let invalid = |why: String| Err(SubscriptionError::Invalid(why));
        let Some(events) = events else {
            return match filter {
                None => Ok(Interests::default()),
                Some(_) => invalid(format!(
                    "filter applies to {PRICE_CHANGED} events: list it in events"
                )),
            };
        };
        if events.is_empty() {
            return invalid("events must name at least one event".into());
        }
        if let Some(unknown) = events
            .iter()
            .find(|e| ![SESSION_COMPLETED, PRICE_CHANGED].contains(&e.as_str()))
        {
            return invalid(format!(
                "events has {unknown:?}; the events are {SESSION_COMPLETED} and {PRICE_CHANGED}"
            ));
        }
        let has = |event: &str| events.iter().any(|e| e == event);
        let prices = match (has(PRICE_CHANGED), filter) {
            (false, Some(_)) => {
                return invalid(format!(
                    "filter applies to {PRICE_CHANGED} events: list it in events"
                ));
            }
            (false, None) => None,
            (true, filter) => Some(checked(filter.unwrap_or_default())?),
        };
        Ok(Interests {
            sessions: has(SESSION_COMPLETED),
            prices,
        })
    }

    /// The events of `subscription`, by name.
    pub fn events_of(subscription: &webhook_subscription::Model) -> Vec<&'static str> {
        let events = [
            (subscription.session_events, SESSION_COMPLETED),
            (subscription.price_events, PRICE_CHANGED),
        ];
        events
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, name)| name)
            .collect()
    }
}

/// `filter` within the limits of a price filter.
fn checked(filter: PriceFilter) -> Result<PriceFilter, SubscriptionError> {
    let invalid = |why: String| Err(SubscriptionError::Invalid(why));
    if filter.brands.len() > MAX_FILTER_BRANDS {
        return invalid(format!(
            "filter.brands lists {}, more than the {MAX_FILTER_BRANDS} a filter may",
            filter.brands.len()
        ));
    }
    for brand in &filter.brands {
        match check_text("filter.brands", brand) {
            Err(QueryError::Invalid(why)) => return invalid(why),
            _ if brand.is_empty() => return invalid("filter.brands has an empty brand".into()),
            _ => {}
        }
    }
    if filter.product_ids.len() > MAX_FILTER_PRODUCTS {
        return invalid(format!(
            "filter.product_ids lists {}, more than the {MAX_FILTER_PRODUCTS} a filter may",
            filter.product_ids.len()
        ));
    }
    let least = filter.min_change_percent;
    if !least.is_finite() || least < 0.0 {
        return invalid(format!(
            "filter.min_change_percent must be a finite number of at least 0, not {least}"
        ));
    }
    Ok(filter)
}

impl Default for Interests {
    /// What every subscription received before it could choose.
    fn default() -> Self {
        Interests {
            sessions: true,
            prices: None,
        }
    }
}

/// Creates an active subscription to `interests` after checking its
/// target. The returned model holds the secret; callers show it once.
pub async fn create(
    db: &DatabaseConnection,
    account_id: Uuid,
    url: &str,
    interests: Interests,
    policy: TargetPolicy,
    now: DateTime<Utc>,
) -> Result<webhook_subscription::Model, SubscriptionError> {
    let sent = url.chars().count();
    if sent > MAX_TARGET_URL {
        return Err(SubscriptionError::UrlTooLong {
            length: sent,
            stored: "",
        });
    }
    let url = policy.check_target(url).await?.to_string();
    if url.len() > MAX_TARGET_URL {
        return Err(SubscriptionError::UrlTooLong {
            length: url.len(),
            stored: " once normalized",
        });
    }
    let subscription = webhook_subscription::Model {
        id: Uuid::new_v4(),
        account_id,
        target_url: url,
        secret: generate_secret(),
        previous_secret: None,
        previous_secret_expires_at: None,
        status: SubscriptionStatus::Active,
        consecutive_failures: 0,
        created_at: now,
        disabled_at: None,
        session_events: interests.sessions,
        price_events: interests.prices.is_some(),
        price_filter: interests.prices,
    };
    // Insert, then count with the new row included, and undo it past the cap.
    // The insert comes first so SQLite takes its write lock at once. On
    // PostgreSQL the account row lock makes concurrent creations count in
    // turn; NO KEY UPDATE, because the insert's foreign-key check already
    // holds KEY SHARE on that row, which a plain FOR UPDATE would deadlock on.
    let tx = db.begin().await?;
    webhook_subscription::Entity::insert(webhook_subscription::ActiveModel::from(
        subscription.clone(),
    ))
    .exec_without_returning(&tx)
    .await?;
    account::Entity::find_by_id(account_id)
        .lock(LockType::NoKeyUpdate)
        .one(&tx)
        .await?;
    if active_count(&tx, account_id).await? > MAX_ACTIVE_PER_ACCOUNT {
        tx.rollback().await?;
        return Err(SubscriptionError::LimitReached);
    }
    tx.commit().await?;
    Ok(subscription)
}

async fn active_count(conn: &impl ConnectionTrait, account_id: Uuid) -> Result<u64, DbErr> {
    use webhook_subscription::{Column, Entity};
    Entity::find()
        .filter(Column::AccountId.eq(account_id))
        .filter(Column::Status.eq(SubscriptionStatus::Active))
        .count(conn)
        .await
}

/// The account's subscriptions, oldest first, active and disabled.
pub async fn list(
    db: &impl ConnectionTrait,
    account_id: Uuid,
) -> Result<Vec<webhook_subscription::Model>, DbErr> {
    list_for_operator(db, Some(account_id)).await
}

/// One subscription of the account.
pub async fn find(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    id: Uuid,
) -> Result<webhook_subscription::Model, SubscriptionError> {
    use webhook_subscription::{Column, Entity};
    Entity::find_by_id(id)
        .filter(Column::AccountId.eq(account_id))
        .one(db)
        .await?
        .ok_or(SubscriptionError::NotFound)
}

/// One of the account's subscriptions that is active: a disabled one takes
/// no new deliveries.
pub async fn find_active(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    id: Uuid,
) -> Result<webhook_subscription::Model, SubscriptionError> {
    let subscription = find(db, account_id, id).await?;
    match subscription.status {
        SubscriptionStatus::Active => Ok(subscription),
        SubscriptionStatus::Disabled => Err(SubscriptionError::Disabled),
    }
}

/// The account a subscription belongs to, whichever it is (the operator's
/// CLI, which then acts as that account).
pub async fn owner_for_operator(
    db: &impl ConnectionTrait,
    id: Uuid,
) -> Result<Uuid, SubscriptionError> {
    webhook_subscription::Entity::find_by_id(id)
        .one(db)
        .await?
        .map(|s| s.account_id)
        .ok_or(SubscriptionError::NotFound)
}

/// Disables one of the account's subscriptions; its pending deliveries fail.
/// Disabling is final and idempotent: a disabled one keeps its first
/// `disabled_at`.
pub async fn disable(
    db: &DatabaseConnection,
    account_id: Uuid,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<webhook_subscription::Model, SubscriptionError> {
    find(db, account_id, id).await?;
    let tx = db.begin().await?;
    deactivate(&tx, id, now).await?;
    tx.commit().await?;
    find(db, account_id, id).await
}

/// The subscription's newest deliveries (at most [`DELIVERY_LOG_LIMIT`]),
/// newest first, each with its attempts.
pub async fn deliveries(
    db: &impl ConnectionTrait,
    account_id: Uuid,
    id: Uuid,
) -> Result<Vec<DeliveryLog>, SubscriptionError> {
    find(db, account_id, id).await?;
    let deliveries = webhook_delivery::Entity::find()
        .filter(webhook_delivery::Column::SubscriptionId.eq(id))
        .order_by_desc(webhook_delivery::Column::CreatedAt)
        .order_by_desc(webhook_delivery::Column::Id)
        .limit(DELIVERY_LOG_LIMIT)
        .all(db)
        .await?;
    let attempts = webhook_attempt::Entity::find()
        .filter(webhook_attempt::Column::DeliveryId.is_in(deliveries.iter().map(|d| d.id)))
        .order_by_asc(webhook_attempt::Column::Id)
        .all(db)
        .await?;
    let mut by_delivery: HashMap<Uuid, Vec<webhook_attempt::Model>> = HashMap::new();
    for attempt in attempts {
        by_delivery
            .entry(attempt.delivery_id)
            .or_default()
            .push(attempt);
    }
    Ok(deliveries
        .into_iter()
        .map(|delivery| DeliveryLog {
            attempts: by_delivery.remove(&delivery.id).unwrap_or_default(),
            delivery,
        })
        .collect())
}

/// Every subscription, or one account's, oldest first (the operator's CLI).
pub async fn list_for_operator(
    db: &impl ConnectionTrait,
    account_id: Option<Uuid>,
) -> Result<Vec<webhook_subscription::Model>, DbErr> {
    use webhook_subscription::{Column, Entity};
    let mut query = Entity::find();
    if let Some(account_id) = account_id {
        query = query.filter(Column::AccountId.eq(account_id));
    }
    query
        .order_by_asc(Column::CreatedAt)
        .order_by_asc(Column::Id)
        .all(db)
        .await
}

/// Disables a subscription of any account (the operator's CLI).
pub async fn disable_for_operator(
    db: &DatabaseConnection,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Disabling, SubscriptionError> {
    let owner = owner_for_operator(db, id).await?;
    let found = find(db, owner, id).await?;
    if found.status == SubscriptionStatus::Disabled {
        return Ok(Disabling::AlreadyDisabled(found));
    }
    disable(db, owner, id, now).await.map(Disabling::Disabled)
}

/// What disabling a subscription did.
#[derive(Debug)]
pub enum Disabling {
    Disabled(webhook_subscription::Model),
    /// It was disabled before, and stays as it was.
    AlreadyDisabled(webhook_subscription::Model),
}

/// Marks an active subscription disabled and fails its pending deliveries.
/// Does nothing to one already disabled. Run it inside a transaction.
pub(super) async fn deactivate(
    conn: &impl ConnectionTrait,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    use webhook_subscription::{Column, Entity};
    let changed = Entity::update_many()
        .col_expr(Column::Status, Expr::value(SubscriptionStatus::Disabled))
        .col_expr(Column::DisabledAt, Expr::value(Some(now)))
        .filter(Column::Id.eq(id))
        .filter(Column::Status.eq(SubscriptionStatus::Active))
        .exec(conn)
        .await?
        .rows_affected;
    if changed > 0 {
        fail_pending(conn, id, now).await?;
    }
    Ok(())
}

/// Fails the subscription's pending deliveries without sending them. One
/// with an attempt in flight is left to that attempt, whose outcome finishes
/// it (see `allowance.rs`).
pub(super) async fn fail_pending(
    conn: &impl ConnectionTrait,
    subscription_id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    use webhook_delivery::{Column, Entity};
    let never: Option<DateTime<Utc>> = None;
    Entity::update_many()
        .col_expr(Column::Status, Expr::value(DeliveryStatus::Failed))
        .col_expr(Column::NextAttemptAt, Expr::value(never))
        .col_expr(Column::LockedUntil, Expr::value(never))
        .col_expr(Column::FinishedAt, Expr::value(Some(now)))
        .filter(Column::SubscriptionId.eq(subscription_id))
        .filter(Column::Status.eq(DeliveryStatus::Pending))
        .filter(Column::InFlight.eq(false))
        .exec(conn)
        .await?;
    Ok(())
}
