//! Per product and currency, the lowest of the product's current prices in
//! that currency and whether any of them is in stock. Triggers on
//! `current_prices` keep it (see the migration `m20261202_000026_lowest_prices`);
//! nothing writes it directly.

use sea_orm::entity::prelude::*;

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
