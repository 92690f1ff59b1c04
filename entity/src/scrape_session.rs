//! One scraper call (a page or a bulk run). Its status and stats are never
//! stored: they are computed from its submissions.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "scrape_sessions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub account_id: Uuid,
    pub api_key_id: Uuid,
    pub source_type: String,
    pub intent: String,
    pub url_count: i64,
    /// The upload's `Idempotency-Key`, unique per account.
    pub idempotency_key: Option<String>,
    /// Hex SHA-256 of the upload's raw body, to tell a retry from another
    /// upload under the same key; NULL for sessions stored before it was
    /// kept.
    pub request_fingerprint: Option<String>,
    /// When the completion webhook was enqueued; guards against completing twice.
    pub completed_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
