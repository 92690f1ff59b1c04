//! API keys. Only the SHA-256 hash of a key is stored; the key itself is shown once.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "api_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub account_id: Uuid,
    /// Lowercase hex SHA-256 of the whole key.
    #[sea_orm(unique)]
    pub key_hash: String,
    /// The first characters of the key, enough to recognise it in a list.
    pub prefix: String,
    pub created_at: DateTimeUtc,
    pub revoked_at: Option<DateTimeUtc>,
    pub last_used_at: Option<DateTimeUtc>,
    /// What the key may do: space-separated scope names (`read upload
    /// webhooks`); `None` for a key made before keys had scopes, which may
    /// do everything.
    pub scopes: Option<String>,
    /// When the key stops authenticating; `None` never.
    pub expires_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::account::Entity",
        from = "Column::AccountId",
        to = "super::account::Column::Id"
    )]
    Account,
}

impl Related<super::account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
