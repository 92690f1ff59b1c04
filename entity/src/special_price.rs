//! Special (promotional) price ranges of a product per variant.

use crate::UserAuthStatus;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, serde::Deserialize)]
#[sea_orm(table_name = "special_prices")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub product_id: Uuid,
    pub country_code: String,
    /// Never null; the empty string when the price has no region.
    pub region_code: String,
    pub user_auth_status: UserAuthStatus,
    #[sea_orm(column_type = "Double")]
    pub min: f64,
    #[sea_orm(column_type = "Double")]
    pub max: f64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
