//! One scraped item of a session, as submitted, and where it stands.

use crate::SubmissionStatus;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "submissions")]
pub struct Model {
    /// Increasing with submission order.
    #[sea_orm(primary_key)]
    pub id: i64,
    pub session_id: Uuid,
    pub status: SubmissionStatus,
    /// The raw item exactly as the scraper sent it.
    pub payload: Json,
    /// The product it was merged into.
    pub product_id: Option<Uuid>,
    /// Why it was rejected or flagged.
    pub reason: Option<String>,
    /// While `processing`: when the claiming worker's lease runs out.
    pub lease_expires_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// The `attempts` column: how many times a merge of this submission began.
/// The merge pass alone reads and writes it, so it is kept out of `Model`;
/// whatever else inserts submissions (uploads, the seed, tests) gets the
/// database's default, 0.
#[derive(Copy, Clone, Debug, DeriveIden)]
pub struct Attempts;
