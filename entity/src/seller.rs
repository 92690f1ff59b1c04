//! Sellers, one row per marketplace + marketplace seller id.

use crate::Marketplace;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "sellers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub marketplace: Marketplace,
    /// The seller's id on the marketplace.
    pub seller_id: String,
    pub name: String,
    /// Tax identification number; empty when not known.
    pub tin: String,
    /// State registration number; empty when not known.
    pub psrn: String,
    pub address: String,
    /// Storefront URL in normalized form; NULL when not known (never
    /// empty), so that no lookup matches it.
    pub url: Option<String>,
    #[sea_orm(column_type = "Double")]
    pub rating: f64,
    pub reg_date: Option<Date>,
    pub items_sold: i64,
    pub reviews_count: i64,
    pub first_seen_at: DateTimeUtc,
    pub last_seen_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::product::Entity")]
    Product,
}

impl Related<super::product::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Product.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
