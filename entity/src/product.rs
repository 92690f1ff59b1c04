//! Products, one row per marketplace + external_id, holding the
//! default-language content. Other languages live in `product_translations`.

use crate::{Marketplace, StringList, TrustStatus};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "products")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub marketplace: Marketplace,
    /// The marketplace's own SKU.
    pub external_id: String,
    /// Product page URL in normalized form.
    pub url: String,
    pub name: String,
    pub brand: String,
    /// `brand` lower-cased (Unicode), for exact case-insensitive matching.
    pub brand_key: String,
    pub category_path: StringList,
    pub attributes: Json,
    pub image_cover: String,
    pub image_gallery: StringList,
    pub video_cover: Option<String>,
    pub video_gallery: StringList,
    pub seller_ref: Uuid,
    /// The seller's own SKU for this product (`seller.code`); may be empty.
    pub seller_code: String,
    /// `seller_code` lower-cased, for substring matching.
    pub seller_code_key: String,
    /// Lower-cased names in every known language, separated by U+001F, for
    /// `name_contains` across translations with one indexed column.
    pub name_search: String,
    pub trust_status: TrustStatus,
    pub price_flagged: bool,
    pub stats: Option<Json>,
    pub first_seen_language: String,
    pub default_language: String,
    pub first_seen_at: DateTimeUtc,
    pub last_seen_at: DateTimeUtc,
    /// Bytes of the product's v1 JSON (`GET /v1/products/{id}`), measured by
    /// every merge that writes it; an upper bound for rows stored before the
    /// column (see the migration `m20261128_000019_product_stored_size`).
    /// Reads count it against an answer's size before they read the product.
    pub stored_size: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::seller::Entity",
        from = "Column::SellerRef",
        to = "super::seller::Column::Id"
    )]
    Seller,
    #[sea_orm(has_many = "super::product_category::Entity")]
    Categories,
}

impl Related<super::seller::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Seller.def()
    }
}

impl Related<super::product_category::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Categories.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
