//! The full price and stock history of every product.

use crate::UserAuthStatus;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, serde::Deserialize)]
#[sea_orm(table_name = "price_observations")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub product_id: Uuid,
    pub country_code: String,
    pub region_code: Option<String>,
    pub user_auth_status: UserAuthStatus,
    #[sea_orm(column_type = "Double")]
    pub price: f64,
    #[sea_orm(column_type = "Double")]
    pub old_price: f64,
    pub currency: String,
    pub stock_status: Option<String>,
    pub stock_quantity: Option<i64>,
    #[serde(deserialize_with = "crate::time::from_json")]
    pub recorded_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
