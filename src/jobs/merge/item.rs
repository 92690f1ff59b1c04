//! The scraped item: what the extension uploads for one product page, and the
//! rules that reject an item before it touches the catalog.

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use entity::{Marketplace, UserAuthStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::item_limits;

/// One product page as the scraper saw it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScrapedItem {
    pub marketplace: Marketplace,
    /// The marketplace's own SKU.
    pub external_id: String,
    /// Product page URL (absolute http or https).
    pub url: String,
    /// Language of `name`, `category_path` and `attributes` (e.g. `ru`, `en`, `kk`).
    pub language: String,
    pub name: String,
    #[serde(default)]
    pub brand: String,
    /// Root first; may be empty.
    #[serde(default)]
    pub category_path: Vec<String>,
    /// Free attributes; values are strings or booleans.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub attributes: Map<String, Value>,
    #[serde(default)]
    pub image_cover: String,
    #[serde(default)]
    pub image_gallery: Vec<String>,
    #[serde(default)]
    pub video_cover: Option<String>,
    #[serde(default)]
    pub video_gallery: Vec<String>,
    pub seller: ScrapedSeller,
    /// Prices seen, one per country / region / auth status.
    #[serde(default)]
    pub prices: Vec<ScrapedPrice>,
    #[serde(default)]
    pub special_price: Vec<ScrapedSpecialPrice>,
    /// Product statistics as the marketplace shows them.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub stats: Option<Value>,
    /// When the page was seen; defaults to the upload time.
    #[serde(default)]
    pub observed_at: Option<DateTime<Utc>>,
}

/// The seller shown on the page; fields beyond id, name and code are optional
/// and only overwrite what is stored when present.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScrapedSeller {
    /// The seller's id on the marketplace.
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// The seller's own SKU for this product.
    #[serde(default)]
    pub code: String,
    pub tin: Option<String>,
    pub psrn: Option<String>,
    pub address: Option<String>,
    pub url: Option<String>,
    pub rating: Option<f64>,
    pub reg_date: Option<NaiveDate>,
    pub items_sold: Option<i64>,
    pub reviews_count: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScrapedPrice {
    pub country_code: String,
    #[serde(default)]
    pub region_code: Option<String>,
    pub user_auth_status: UserAuthStatus,
    pub price: f64,
    /// The struck-through price; defaults to `price`.
    #[serde(default)]
    pub old_price: Option<f64>,
    pub currency: String,
    #[serde(default)]
    pub stock_status: Option<String>,
    #[serde(default)]
    pub stock_quantity: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScrapedSpecialPrice {
    pub country_code: String,
    /// Empty when the price has no region.
    #[serde(default)]
    pub region_code: String,
    pub user_auth_status: UserAuthStatus,
    pub min: f64,
    pub max: f64,
}

/// Observation times further ahead of the server clock than this are refused.
const MAX_CLOCK_SKEW: TimeDelta = TimeDelta::minutes(10);

fn is_language(code: &str) -> bool {
    (2..=3).contains(&code.len()) && code.chars().all(|c| c.is_ascii_lowercase())
}

fn is_web_url(raw: &str) -> bool {
    url::Url::parse(raw).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

impl ScrapedItem {
    /// Reads and validates a stored payload; `Err` is the rejection reason.
    ///
    /// Rejected: not a valid item (unknown marketplace or auth status, wrong
    /// types, missing fields); an empty external_id, name or seller id; a url
    /// that is not absolute http(s); a language that is not a 2-3 letter
    /// lowercase code; a negative or non-finite price, old price or special
    /// price, a special price whose min exceeds its max, an empty currency or
    /// country code; attribute values other than strings and booleans; an
    /// observation time more than 10 minutes in the future; a NUL in any
    /// string or key, a number outside the domain, or a text or list over
    /// its limit (`limits`).
    pub fn parse(mut payload: Value, now: DateTime<Utc>) -> Result<ScrapedItem, String> {
        item_limits::check_values(&mut payload).map_err(|v| v.to_string())?;
        let item =
            ScrapedItem::deserialize(payload).map_err(|e| format!("not a valid item: {e}"))?;
        item.validate(now)?;
        item.check_limits().map_err(|v| v.to_string())?;
        Ok(item)
    }

    fn validate(&self, now: DateTime<Utc>) -> Result<(), String> {
        let blank = |s: &str| s.trim().is_empty();
        if blank(&self.external_id) {
            return Err("external_id must not be empty".into());
        }
        if blank(&self.name) {
            return Err("name must not be empty".into());
        }
        if blank(&self.seller.id) {
            return Err("seller.id must not be empty".into());
        }
        if !is_web_url(&self.url) {
            return Err("url must be an absolute http(s) URL".into());
        }
        if !is_language(&self.language) {
            return Err("language must be a 2-3 letter lowercase code".into());
        }
        if self
            .attributes
            .values()
            .any(|v| !(v.is_string() || v.is_boolean()))
        {
            return Err("attribute values must be strings or booleans".into());
        }
        let amount = |x: f64| x.is_finite() && x >= 0.0;
        for p in &self.prices {
            if !amount(p.price) || !p.old_price.is_none_or(amount) {
                return Err("prices must be finite and not negative".into());
            }
            if blank(&p.currency) || blank(&p.country_code) {
                return Err("every price needs a currency and a country_code".into());
            }
        }
        for s in &self.special_price {
            if !amount(s.min) || !amount(s.max) || s.min > s.max || blank(&s.country_code) {
                return Err("special prices need a country_code and 0 <= min <= max".into());
            }
        }
        if self.observed_at.is_some_and(|t| t > now + MAX_CLOCK_SKEW) {
            return Err("observed_at is in the future".into());
        }
        Ok(())
    }
}
