//! The accounts that keep a persisted query: each account's share of the
//! store is its rows here, evicted least recently used first among its own
//! (`graphql::persisted`). A text stays while any account owns it.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "persisted_query_owners")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub account_id: Uuid,
    /// The text's hash (`persisted_query::Model::hash`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub hash: String,
    /// When the account last registered or used it (refreshed at most once
    /// an interval).
    pub last_used_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
