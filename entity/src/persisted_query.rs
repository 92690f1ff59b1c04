//! GraphQL query texts kept by the hex SHA-256 of their text (Apollo's
//! automatic persisted queries), shared by every replica. A hash names one
//! text forever, so rows are never updated; the accounts that keep a text
//! are its owners (`persisted_query_owner`).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "persisted_queries")]
pub struct Model {
    /// Lower-case hex SHA-256 of `query`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub hash: String,
    #[sea_orm(column_type = "Text")]
    pub query: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
