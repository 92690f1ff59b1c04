//! A product's content in a language other than its default language.

use crate::StringList;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, serde::Deserialize)]
#[sea_orm(table_name = "product_translations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub product_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub language: String,
    pub name: String,
    pub category_path: StringList,
    pub attributes: Json,
    #[serde(deserialize_with = "crate::time::from_json")]
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
