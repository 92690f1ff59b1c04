//! Per product and currency, the lowest of the product's current prices in
//! that currency and whether any of them is in stock. Triggers on
//! `current_prices` keep it (see the migration `m20261202_000026_lowest_prices`);
//! nothing writes it directly. Triggers on it keep `price_levels`.

use sea_orm::entity::prelude::*;

use crate::{Marketplace, TrustStatus};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "lowest_prices")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub product_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub currency: String,
    #[sea_orm(column_type = "Double")]
    pub price: f64,
    pub in_stock: bool,
    /// The product's marketplace and trust status, copied from it (see the
    /// migration `m20261207_000032_price_levels`).
    pub marketplace: Marketplace,
    pub trust_status: TrustStatus,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::product::Entity",
        from = "Column::ProductId",
        to = "super::product::Column::Id"
    )]
    Product,
}

impl ActiveModelBehavior for ActiveModel {}
