//! JSON-backed column types.

use sea_orm::FromJsonQueryResult;
use serde::{Deserialize, Serialize};

/// A JSON array of strings (category paths, image and video galleries).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, FromJsonQueryResult)]
#[serde(transparent)]
pub struct StringList(pub Vec<String>);

impl From<Vec<String>> for StringList {
    fn from(v: Vec<String>) -> Self {
        StringList(v)
    }
}

/// Which price changes a webhook subscription receives: those of products
/// of any of `brands` (compared folded, as the products filter compares
/// them), any of `product_ids` and any of `marketplaces` (an empty list
/// does not narrow), by at least `min_change_percent` either way.
#[derive(
    Debug, Clone, Default, PartialEq, Serialize, Deserialize, FromJsonQueryResult, utoipa::ToSchema,
)]
pub struct PriceFilter {
    #[serde(default)]
    pub brands: Vec<String>,
    #[serde(default)]
    pub product_ids: Vec<uuid::Uuid>,
    #[serde(default)]
    pub marketplaces: Vec<crate::Marketplace>,
    #[serde(default)]
    pub min_change_percent: f64,
}
