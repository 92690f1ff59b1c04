//! The output shapes REST v1 and GraphQL share. REST serialises them as the
//! v1 JSON, field for field as the specification documents them; GraphQL
//! returns the same types wherever its objects have the same shape (prices,
//! translations, seller statistics, catalog entries), with the `DateTime`
//! scalar they need. Every shape forbids unknown fields in the OpenAPI
//! document, so the contract test catches a field added or dropped by accident.

pub mod size;
mod timestamp;

use std::collections::BTreeMap;

use async_graphql::SimpleObject;
use chrono::{DateTime, NaiveDate, Utc};
use entity::{Marketplace, SessionStatus, SubmissionStatus, TrustStatus, UserAuthStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::query::Page;
use crate::query::children::{ShownAs, Shows};
use crate::query::products::ProductView;
use crate::query::sellers::SellerView;
use crate::query::sessions::{SessionEntry, SessionStats, SessionView};
use crate::query::snapshots::{BrandEntry, CategoryEntry};

pub use timestamp::Timestamp;

/// A value of a product attribute: text or a flag.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum AttributeValue {
    Text(String),
    Flag(bool),
}

/// Free key/value attributes; values are strings or booleans.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
pub struct Attributes(BTreeMap<String, AttributeValue>);

async_graphql::scalar!(
    Attributes,
    "Attributes",
    "Free key/value attributes; values are strings or booleans."
);

/// Attributes from their stored JSON (numbers, if any, become text).
pub fn attributes(value: &Value) -> Attributes {
    let Some(object) = value.as_object() else {
        return Attributes::default();
    };
    Attributes(
        object
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::Bool(b) => AttributeValue::Flag(*b),
                    Value::String(s) => AttributeValue::Text(s.clone()),
                    other => AttributeValue::Text(other.to_string()),
                };
                (k.clone(), v)
            })
            .collect(),
    )
}

/// The seller as shown inside a product.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProductSeller {
    /// The seller's id on the marketplace.
    pub id: String,
    pub name: String,
    /// The seller's own SKU for this product.
    pub code: String,
}

/// One price observation (current prices and price history).
#[derive(Debug, Clone, Serialize, ToSchema, SimpleObject)]
#[serde(deny_unknown_fields)]
#[graphql(complex)]
pub struct PriceObservation {
    /// Country-market variant (marketplace country-domain code).
    pub country_code: String,
    /// Region or warehouse; marketplace-native code.
    #[schema(required = true)]
    pub region_code: Option<String>,
    /// `anonymous` (guest) or `authenticated` (logged-in shopper).
    pub user_auth_status: UserAuthStatus,
    /// Price in the currency.
    pub price: f64,
    /// Previous / struck-through price.
    pub old_price: f64,
    /// Currency code.
    pub currency: String,
    /// Stock status as the marketplace shows it (`in_stock`, `low_stock`, `out_of_stock`), when known.
    #[schema(required = true)]
    pub stock_status: Option<String>,
    /// Units in stock, when known.
    #[schema(required = true)]
    pub stock_quantity: Option<i64>,
    #[graphql(skip)]
    pub recorded_at: DateTime<Utc>,
}

#[async_graphql::ComplexObject]
impl PriceObservation {
    /// Observation time.
    async fn recorded_at(&self) -> Timestamp {
        self.recorded_at.into()
    }
}

/// A price of child table `$entity` (current prices, the price history),
/// which hold the same columns.
macro_rules! price_observation_from {
    ($entity:ident) => {
        impl From<entity::$entity::Model> for PriceObservation {
            fn from(p: entity::$entity::Model) -> Self {
                PriceObservation {
                    country_code: p.country_code,
                    region_code: p.region_code,
                    user_auth_status: p.user_auth_status,
                    price: p.price,
                    old_price: p.old_price,
                    currency: p.currency,
                    stock_status: p.stock_status,
                    stock_quantity: p.stock_quantity,
                    recorded_at: p.recorded_at,
                }
            }
        }

        impl ShownAs for entity::$entity::Entity {
            type View = PriceObservation;
        }

        impl Shows<entity::$entity::Entity> for PriceObservation {
            const FIELDS: &'static [(&'static str, &'static [entity::$entity::Column])] = {
                use entity::$entity::Column::*;
                &[
                    ("countryCode", &[CountryCode]),
                    ("regionCode", &[RegionCode]),
                    ("userAuthStatus", &[UserAuthStatus]),
                    ("price", &[Price]),
                    ("oldPrice", &[OldPrice]),
                    ("currency", &[Currency]),
                    ("stockStatus", &[StockStatus]),
                    ("stockQuantity", &[StockQuantity]),
                    ("recordedAt", &[RecordedAt]),
                ]
            };
        }
    };
}
price_observation_from!(current_price);
price_observation_from!(price_observation);

/// A special (promotional) price range of one variant.
#[derive(Debug, Clone, Serialize, ToSchema, SimpleObject)]
#[serde(deny_unknown_fields)]
pub struct SpecialPrice {
    /// Country-market variant (marketplace country-domain code).
    pub country_code: String,
    /// May be the empty string.
    pub region_code: String,
    /// `anonymous` (guest) or `authenticated` (logged-in shopper).
    pub user_auth_status: UserAuthStatus,
    /// Lowest special price.
    pub min: f64,
    /// Highest special price.
    pub max: f64,
}

/// A product's content in a known language other than its default.
#[derive(Debug, Clone, Serialize, ToSchema, SimpleObject)]
#[serde(deny_unknown_fields)]
#[graphql(complex)]
pub struct Translation {
    /// Language code.
    pub language: String,
    /// Name in this language.
    pub name: String,
    /// Category hierarchy, root first, in this language.
    pub category_path: Vec<String>,
    /// Attributes in this language.
    pub attributes: Attributes,
    #[graphql(skip)]
    pub updated_at: DateTime<Utc>,
}

#[async_graphql::ComplexObject]
impl Translation {
    /// When this translation was last seen.
    async fn updated_at(&self) -> Timestamp {
        self.updated_at.into()
    }
}

impl ShownAs for entity::special_price::Entity {
    type View = SpecialPrice;
}

impl Shows<entity::special_price::Entity> for SpecialPrice {
    const FIELDS: &'static [(&'static str, &'static [entity::special_price::Column])] = {
        use entity::special_price::Column::*;
        &[
            ("countryCode", &[CountryCode]),
            ("regionCode", &[RegionCode]),
            ("userAuthStatus", &[UserAuthStatus]),
            ("min", &[Min]),
            ("max", &[Max]),
        ]
    };
}

impl From<entity::special_price::Model> for SpecialPrice {
    fn from(s: entity::special_price::Model) -> Self {
        SpecialPrice {
            country_code: s.country_code,
            region_code: s.region_code,
            user_auth_status: s.user_auth_status,
            min: s.min,
            max: s.max,
        }
    }
}

impl ShownAs for entity::product_translation::Entity {
    type View = Translation;
}

impl Shows<entity::product_translation::Entity> for Translation {
    const FIELDS: &'static [(&'static str, &'static [entity::product_translation::Column])] = {
        use entity::product_translation::Column::*;
        &[
            ("language", &[Language]),
            ("name", &[Name]),
            ("categoryPath", &[CategoryPath]),
            ("attributes", &[Attributes]),
            ("updatedAt", &[UpdatedAt]),
        ]
    };
}

impl From<entity::product_translation::Model> for Translation {
    fn from(t: entity::product_translation::Model) -> Self {
        Translation {
            language: t.language,
            name: t.name,
            category_path: t.category_path.0,
            attributes: attributes(&t.attributes),
            updated_at: t.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Product {
    /// Internal identifier; not a marketplace SKU.
    pub id: Uuid,
    pub marketplace: Marketplace,
    /// The marketplace's own SKU; unique only together with marketplace.
    pub external_id: String,
    pub url: String,
    /// Name in the default language.
    pub name: String,
    pub brand: String,
    /// Category hierarchy, root first, in the default language.
    pub category_path: Vec<String>,
    pub attributes: Attributes,
    pub image_cover: String,
    pub image_gallery: Vec<String>,
    #[schema(required = true)]
    pub video_cover: Option<String>,
    pub video_gallery: Vec<String>,
    pub seller: ProductSeller,
    pub trust_status: TrustStatus,
    pub price_flagged: bool,
    /// Current price observations.
    pub prices: Vec<PriceObservation>,
    pub special_price: Vec<SpecialPrice>,
    /// Free-form statistics object, when known.
    #[schema(required = true, value_type = Option<std::collections::HashMap<String, Value>>)]
    pub stats: Option<Value>,
    pub first_seen_language: String,
    /// Language of name and category_path.
    pub default_language: String,
    /// Known-language translations.
    pub translations: Vec<Translation>,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
}

impl From<ProductView> for Product {
    fn from(view: ProductView) -> Self {
        let ProductView {
            product: p,
            seller,
            lists,
        } = view;
        let (seller_id, seller_name) = seller.map(|s| (s.seller_id, s.name)).unwrap_or_default();
        Product {
            id: p.id,
            marketplace: p.marketplace,
            external_id: p.external_id,
            url: p.url,
            name: p.name,
            brand: p.brand,
            category_path: p.category_path.0,
            attributes: attributes(&p.attributes),
            image_cover: p.image_cover,
            image_gallery: p.image_gallery.0,
            video_cover: p.video_cover,
            video_gallery: p.video_gallery.0,
            seller: ProductSeller {
                id: seller_id,
                name: seller_name,
                code: p.seller_code,
            },
            trust_status: p.trust_status,
            price_flagged: p.price_flagged,
            prices: lists.prices.into_iter().map(Into::into).collect(),
            special_price: lists.special_prices.into_iter().map(Into::into).collect(),
            stats: p.stats,
            first_seen_language: p.first_seen_language,
            default_language: p.default_language,
            translations: lists.translations.into_iter().map(Into::into).collect(),
            first_seen_at: p.first_seen_at,
            last_seen_at: p.last_seen_at,
        }
    }
}

/// A seller's statistics as the marketplace shows them.
#[derive(Debug, Clone, Serialize, ToSchema, SimpleObject)]
#[serde(deny_unknown_fields)]
#[graphql(complex)]
pub struct SellerStats {
    /// Rating as the marketplace shows it.
    pub rating: f64,
    /// YYYY-MM-DD; null when the marketplace does not show it.
    #[schema(required = true)]
    #[graphql(skip)]
    pub reg_date: Option<NaiveDate>,
    /// Items sold.
    pub items_sold: i64,
    /// Reviews received.
    pub reviews_count: i64,
}

#[async_graphql::ComplexObject]
impl SellerStats {
    /// Registration date, YYYY-MM-DD; null when the marketplace does not show it.
    async fn reg_date(&self) -> Option<String> {
        self.reg_date.map(|d| d.format("%Y-%m-%d").to_string())
    }
}

/// A seller record of `GET /sellers`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Seller {
    pub marketplace: Marketplace,
    /// Id on the marketplace.
    pub seller_id: String,
    pub name: String,
    /// Tax identification number.
    pub tin: String,
    /// State registration number.
    pub psrn: String,
    pub address: String,
    /// Storefront URL.
    pub url: String,
    pub stats: SellerStats,
    pub product_count: i64,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
}

impl From<SellerView> for Seller {
    fn from(view: SellerView) -> Self {
        let s = view.seller;
        Seller {
            marketplace: s.marketplace,
            seller_id: s.seller_id,
            name: s.name,
            tin: s.tin,
            psrn: s.psrn,
            address: s.address,
            // A seller without a URL (NULL) shows an empty one, as its
            // unknown tin, psrn and address.
            url: s.url.unwrap_or_default(),
            stats: SellerStats {
                rating: s.rating,
                reg_date: s.reg_date,
                items_sold: s.items_sold,
                reviews_count: s.reviews_count,
            },
            product_count: view.product_count,
            first_seen_at: s.first_seen_at,
            last_seen_at: s.last_seen_at,
        }
    }
}

/// A category path and its product count, from the latest daily snapshot.
#[derive(Debug, Clone, Serialize, ToSchema, SimpleObject)]
#[serde(deny_unknown_fields)]
#[graphql(name = "CategoryEntry")]
pub struct CategoryItem {
    /// Root first; an entry with an empty path exists.
    pub category_path: Vec<String>,
    /// Products in this category path.
    pub product_count: i64,
}

impl From<CategoryEntry> for CategoryItem {
    fn from(e: CategoryEntry) -> Self {
        CategoryItem {
            category_path: e.category_path,
            product_count: e.product_count,
        }
    }
}

/// A brand and its product count, from the latest daily snapshot.
#[derive(Debug, Clone, Serialize, ToSchema, SimpleObject)]
#[serde(deny_unknown_fields)]
#[graphql(name = "BrandEntry")]
pub struct BrandItem {
    /// Brand name.
    pub brand: String,
    /// Products of this brand.
    pub product_count: i64,
}

impl From<BrandEntry> for BrandItem {
    fn from(e: BrandEntry) -> Self {
        BrandItem {
            brand: e.brand,
            product_count: e.product_count,
        }
    }
}

// The sizes of the snapshot lists as REST v1 writes them: the snapshot job
// keeps, and every read takes, only the entries that fit in one answer,
// counted the same way.

impl CategoryItem {
    /// Bytes `entry` adds to a `GET /categories` answer: its JSON and the
    /// comma after it.
    pub fn listed_len(entry: &CategoryEntry) -> u64 {
        size::json_len(&CategoryItem::from(entry.clone())) + 1
    }
}

impl BrandItem {
    /// Bytes `entry` adds to a `GET /brands` answer: its JSON and the comma
    /// after it.
    pub fn listed_len(entry: &BrandEntry) -> u64 {
        size::json_len(&BrandItem::from(entry.clone())) + 1
    }
}

/// Bytes of a `GET /categories` or `GET /brands` answer besides its
/// entries: `{"data":[]}`.
pub fn list_envelope_len() -> u64 {
    size::json_len(&CategoryList { data: Vec::new() })
}

/// What the scraper said about the call.
#[derive(Debug, Clone, Serialize, ToSchema, SimpleObject)]
#[serde(deny_unknown_fields)]
pub struct SessionMetadata {
    /// `page` (one product page) or `bulk` (a run over many pages).
    pub source_type: String,
    /// `catalog_import` or `price_monitoring`.
    pub intent: String,
    /// URLs the scraper visited.
    pub url_count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScrapeSession {
    pub id: Uuid,
    pub status: SessionStatus,
    pub stats: SessionStats,
    pub metadata: SessionMetadata,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<SessionView> for ScrapeSession {
    fn from(view: SessionView) -> Self {
        let s = view.session;
        ScrapeSession {
            id: s.id,
            status: view.stats.status(),
            stats: view.stats,
            metadata: SessionMetadata {
                source_type: s.source_type,
                intent: s.intent,
                url_count: s.url_count,
            },
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

/// One submission of a session; `product` is null until it is merged.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionProduct {
    pub submission_status: SubmissionStatus,
    #[schema(required = true)]
    pub product: Option<Product>,
}

impl From<SessionEntry> for SessionProduct {
    fn from(e: SessionEntry) -> Self {
        SessionProduct {
            submission_status: e.submission.status,
            product: e.product.map(Into::into),
        }
    }
}

/// `meta` of `GET /products`: no total (removed 2026-09-05), `has_more` instead.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HasMoreMeta {
    pub has_more: bool,
    pub page: u64,
    pub page_size: u64,
}

/// `meta` of the other paginated lists.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TotalMeta {
    pub total: u64,
    pub page: u64,
    pub page_size: u64,
}

impl HasMoreMeta {
    pub fn of(has_more: bool, page: Page) -> Self {
        HasMoreMeta {
            has_more,
            page: page.page,
            page_size: page.page_size,
        }
    }
}

impl TotalMeta {
    pub fn of(total: u64, page: Page) -> Self {
        TotalMeta {
            total,
            page: page.page,
            page_size: page.page_size,
        }
    }
}

/// Where the caller stands against one of its limits.
#[derive(Debug, Clone, Serialize, ToSchema, SimpleObject)]
#[serde(deny_unknown_fields)]
#[graphql(complex)]
pub struct Allowance {
    /// The most the limit allows in its window.
    pub limit: i64,
    /// What is left of it now.
    pub remaining: i64,
    /// When the window ends and `remaining` is back to `limit`.
    #[graphql(skip)]
    pub reset_at: DateTime<Utc>,
}

#[async_graphql::ComplexObject]
impl Allowance {
    /// When the window ends and `remaining` is back to `limit`.
    async fn reset_at(&self) -> Timestamp {
        self.reset_at.into()
    }
}

/// `data` of `GET /rate_limit`: both limits, read without counting.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Standing {
    /// Requests this minute (every endpoint).
    pub rate_limit: Allowance,
    /// Rows with a product today (metered endpoints and fields).
    pub quota: Allowance,
}

/// Declares a response envelope: `{data: ...}` or `{data: ..., meta: ...}`.
/// Concrete types (not generics) so each gets its own named schema.
macro_rules! envelope {
    ($(#[$doc:meta])* $name:ident { data: $data:ty $(, meta: $meta:ty)? }) => {
        $(#[$doc])*
        #[derive(Debug, Serialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            pub data: $data,
            $(pub meta: $meta,)?
        }
    };
}

pub(crate) use envelope;

envelope!(
    /// `GET /products`
    ProductPage { data: Vec<Product>, meta: HasMoreMeta }
);
envelope!(
    /// `GET /products/{id}`
    ProductEnvelope { data: Product }
);
envelope!(
    /// `GET /products/{id}/price-history`
    PriceHistoryPage { data: Vec<PriceObservation>, meta: TotalMeta }
);
envelope!(
    /// `GET /sellers`
    SellerList { data: Vec<Seller> }
);
envelope!(
    /// `GET /categories`
    CategoryList { data: Vec<CategoryItem> }
);
envelope!(
    /// `GET /brands`
    BrandList { data: Vec<BrandItem> }
);
envelope!(
    /// `GET /me/scrapes`
    SessionPage { data: Vec<ScrapeSession>, meta: TotalMeta }
);
envelope!(
    /// `GET /me/scrapes/{id}`
    SessionEnvelope { data: ScrapeSession }
);
envelope!(
    /// `GET /me/scrapes/{id}/products`
    SessionProductPage { data: Vec<SessionProduct>, meta: TotalMeta }
);
envelope!(
    /// `GET /rate_limit`
    StandingEnvelope { data: Standing }
);

#[cfg(test)]
mod tests {
    use entity::{current_price, price_observation, product_translation, special_price};

    use super::*;
    use crate::query::children::every_column_shown;

    /// A column no field declares would be read by no query, and answered
    /// as a placeholder even when every field is asked.
    #[test]
    fn every_child_column_is_shown_by_a_field_or_orders_the_rows() {
        use current_price::Column as Current;
        use price_observation::Column as History;
        use product_translation::Column as Translated;
        use special_price::Column as Special;
        every_column_shown::<PriceObservation, current_price::Entity>(
            Current::ProductId,
            &[Current::Id],
        );
        every_column_shown::<PriceObservation, price_observation::Entity>(
            History::ProductId,
            &[History::Id],
        );
        every_column_shown::<SpecialPrice, special_price::Entity>(
            Special::ProductId,
            &[Special::Id],
        );
        every_column_shown::<Translation, product_translation::Entity>(Translated::ProductId, &[]);
    }

    /// What the snapshot lists count for an answer is at least what it
    /// takes, written.
    #[test]
    fn a_list_answer_takes_no_more_than_its_entries_counted() {
        let paths = [vec![], vec!["Дом".to_owned(), "\"\\\u{1}".to_owned()]];
        let entries: Vec<CategoryEntry> = paths
            .into_iter()
            .map(|category_path| CategoryEntry {
                category_path,
                product_count: 7,
            })
            .collect();
        let counted: u64 =
            list_envelope_len() + entries.iter().map(CategoryItem::listed_len).sum::<u64>();
        let data = entries.into_iter().map(CategoryItem::from).collect();
        let written = serde_json::to_vec(&CategoryList { data }).unwrap().len() as u64;
        assert_eq!(counted, written + 1, "one comma fewer than entries");

        let brand = BrandEntry {
            brand: "Чайник \"Vitrina\"".into(),
            product_count: 1,
        };
        let counted = list_envelope_len() + BrandItem::listed_len(&brand);
        let one = BrandList {
            data: vec![brand.into()],
        };
        assert_eq!(counted, serde_json::to_vec(&one).unwrap().len() as u64 + 1);
    }
}
