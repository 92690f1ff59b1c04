//! `category_price_levels` keyed by each lowest price's marketplace, trust
//! status and stock too, as `price_levels` is, so that `productStats` of a
//! category with any of those is a sum of level rows as well, instead of
//! an aggregate of every price of the category on the marketplace: 301 ms
//! for a category and a marketplace at 1,000,000 products (bench/README.md).
//! The table is made again in the new shape and filled while the old one
//! still answers reads (writers wait); its triggers also follow a change
//! of those columns on `lowest_prices` (which migration 32's triggers copy
//! there from the product). A table migration 33 filled while writers
//! wrote, which could miss their pairs, is counted afresh.

use sea_orm_migration::prelude::*;

use crate::m20261208_000033_category_price_levels::{self as category_levels, Shape};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        category_levels::rebuild(manager, Shape::ByPriceColumns).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        category_levels::rebuild(manager, Shape::ByCurrency).await
    }
}
