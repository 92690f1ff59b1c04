//! Webhook subscriptions of an account.

use crate::{PriceFilter, SubscriptionStatus};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_subscriptions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub account_id: Uuid,
    pub target_url: String,
    /// The HMAC signing secret. Kept as is because every delivery is signed with it.
    pub secret: String,
    /// The secret a rotation replaced, kept as is for the same reason: until
    /// `previous_secret_expires_at` deliveries carry its signature too.
    pub previous_secret: Option<String>,
    pub previous_secret_expires_at: Option<DateTimeUtc>,
    pub status: SubscriptionStatus,
    pub consecutive_failures: i32,
    pub created_at: DateTimeUtc,
    pub disabled_at: Option<DateTimeUtc>,
    /// Receives `scrape_session.completed`.
    pub session_events: bool,
    /// Receives `product.price_changed`, of the prices `price_filter` picks.
    pub price_events: bool,
    pub price_filter: Option<PriceFilter>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
