//! Daily brand counts, served by `/brands`: per marketplace, and across all
//! marketplaces (`marketplace` null).

use crate::Marketplace;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "brand_snapshots")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub snapshot_date: Date,
    pub marketplace: Option<Marketplace>,
    pub brand: String,
    pub product_count: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
