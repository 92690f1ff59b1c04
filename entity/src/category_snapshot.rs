//! Daily per-marketplace category counts, served by `/categories`.

use crate::{Marketplace, StringList};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "category_snapshots")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub snapshot_date: Date,
    pub marketplace: Marketplace,
    pub category_path: StringList,
    pub product_count: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
