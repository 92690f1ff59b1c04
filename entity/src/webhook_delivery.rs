//! The outbox: one row per event and subscription, written in the same
//! transaction as the state change that causes it.

use crate::DeliveryStatus;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_deliveries")]
pub struct Model {
    /// Sent as the delivery id header; the same on every attempt.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub subscription_id: Uuid,
    pub session_id: Uuid,
    pub event: String,
    /// The exact body bytes, sent unchanged on every attempt.
    #[sea_orm(column_type = "Text")]
    pub payload: String,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub next_attempt_at: Option<DateTimeUtc>,
    /// While a worker is sending it: when its claim runs out.
    pub locked_until: Option<DateTimeUtc>,
    /// An attempt is under way: it holds one of the subscription's attempts
    /// against the auto-disable threshold until its outcome is recorded.
    pub in_flight: bool,
    pub created_at: DateTimeUtc,
    pub finished_at: Option<DateTimeUtc>,
    /// A redelivery: the delivery whose event it sends again (which
    /// retention may have purged since). None for the event's own delivery.
    pub redelivery_of: Option<Uuid>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
