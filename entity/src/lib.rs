//! Vitrina's sea-orm entities: one module per table, plus the enums and JSON
//! value types they share with the REST and GraphQL surfaces.
//!
//! Timestamps are `DateTime<Utc>` everywhere and are written with microsecond
//! precision (see [`time::db_now`]) so that SQLite and PostgreSQL round-trip
//! the same values.

pub mod enums;
pub mod time;
pub mod values;

pub mod account;
pub mod api_key;
pub mod brand_snapshot;
pub mod category_snapshot;
pub mod current_price;
pub mod lowest_price;
pub mod persisted_query;
pub mod persisted_query_owner;
pub mod price_observation;
pub mod product;
pub mod product_category;
pub mod product_translation;
pub mod quota_usage;
pub mod scrape_session;
pub mod seller;
pub mod special_price;
pub mod submission;
pub mod webhook_attempt;
pub mod webhook_delivery;
pub mod webhook_subscription;

pub use enums::{
    DeliveryStatus, Marketplace, SessionStatus, SubmissionStatus, SubscriptionStatus, TrustStatus,
    UserAuthStatus,
};
pub use values::{PriceFilter, StringList};
