//! The limits of what one scraped item may store, in one table. They are
//! enforced at upload (`400 invalid_body` naming the field) and again by the
//! merge pass (a stored submission over a limit is rejected with the same
//! words), so no value reaches a column that cannot take it and one item can
//! never fail the batch it is merged with.
//!
//! Texts are measured in bytes of UTF-8, as indexes hold them. A PostgreSQL
//! btree entry holds at most 2704 bytes, every column of a composite index
//! counting, and case folding (`text::fold`) makes a text up to 1.5 times
//! longer (`İ`, 2 bytes, folds to 3). The indexed texts are kept far below
//! that with their folded twins:
//! - `external_id` (unique with the marketplace), `seller.id` (unique with the
//!   marketplace, and alone), `seller.code` (btree, and folded under a trigram
//!   index), `brand` (folded into `brand_key`, with two more columns),
//!   `seller.tin`, `seller.psrn`;
//! - every `category_path` level: each folded level is a `product_categories`
//!   key, in its primary key and its list index;
//! - `url` and `seller.url`, measured as sent and once normalized (as
//!   stored), since percent-encoding can triple a URL;
//! - a price's `country_code` and `region_code`: the special prices' unique
//!   variant index;
//! - `language`: the 2-3 letter rule of `ScrapedItem::parse`; and a product
//!   keeps a bounded number of languages, each folded into its `name_search`
//!   and category keys.
//!
//! Texts no index holds (names, addresses, attribute values, media URLs), and
//! the lists, are bounded generously so that one item cannot carry megabytes.
//! NUL (U+0000) is refused in every string and key: PostgreSQL stores it in
//! neither text nor jsonb.
//!
//! Numbers, wherever they stand in an item (prices, seller figures, `stats`,
//! `attributes`, fields the item does not know), are finite and at most
//! [`MAX_NUMBER`] either side of zero; negative zero is written as 0, which
//! is all PostgreSQL's jsonb keeps of it. Every such number is exact in a
//! double, reads back the same from SQLite's text and PostgreSQL's jsonb
//! (which prints numbers without an exponent, 309 digits for the largest
//! double), fits the integer columns, and reaches a JavaScript client
//! unchanged. Tiny numbers, subnormal ones included, are kept as they are:
//! both databases read them back exactly.

use std::fmt::{self, Display, Write};

use serde::Deserialize;
use serde_json::{Number, Value};

use super::item::ScrapedItem;
use crate::text;

/// `external_id`, bytes.
pub const EXTERNAL_ID: usize = 512;
/// `url` and `seller.url`, bytes, as sent and once normalized.
pub const URL: usize = 2048;
/// `name`, bytes.
pub const NAME: usize = 2048;
/// `brand`, bytes.
pub const BRAND: usize = 512;
/// Levels of `category_path`.
pub const CATEGORY_LEVELS: usize = 32;
/// One level of `category_path`, bytes.
pub const CATEGORY_LEVEL: usize = 512;
/// Entries of `attributes`.
pub const ATTRIBUTES: usize = 256;
/// An `attributes` key, bytes.
pub const ATTRIBUTE_KEY: usize = 256;
/// An `attributes` string value, bytes.
pub const ATTRIBUTE_VALUE: usize = 4096;
/// `image_cover`, `video_cover` and each gallery entry, bytes.
pub const MEDIA_URL: usize = 2048;
/// Entries of `image_gallery`, and of `video_gallery`.
pub const GALLERY: usize = 100;
/// `seller.id`, bytes.
pub const SELLER_ID: usize = 512;
/// `seller.name`, bytes.
pub const SELLER_NAME: usize = 1024;
/// `seller.code`, bytes.
pub const SELLER_CODE: usize = 512;
/// `seller.tin` and `seller.psrn`, bytes.
pub const SELLER_REGISTRATION: usize = 64;
/// `seller.address`, bytes.
pub const SELLER_ADDRESS: usize = 2048;
/// Entries of `prices`, and of `special_price`.
pub const PRICES: usize = 500;
/// A price's `country_code`, bytes.
pub const COUNTRY_CODE: usize = 16;
/// A price's `region_code`, bytes.
pub const REGION_CODE: usize = 256;
/// A price's `currency`, bytes.
pub const CURRENCY: usize = 16;
/// A price's `stock_status`, bytes.
pub const STOCK_STATUS: usize = 64;
/// `stats`, bytes of its JSON.
pub const STATS: usize = 16 * 1024;
/// The largest magnitude of any number in an item: 2^53 - 1, the largest
/// integer every JSON reader (JavaScript's `Number`) holds exactly. Far
/// above any price, count or rating a marketplace shows.
pub const MAX_NUMBER: u64 = (1 << 53) - 1;
/// Languages one product keeps besides its default one. Checked by the
/// merge alone: an upload does not know the product's languages.
pub const TRANSLATIONS: usize = 32;

/// A value over its limit, or holding a NUL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where, as a path inside the item (`category_path[2]`, `seller.id`).
    pub field: String,
    /// What is wrong, with the limit and the measured value.
    pub problem: String,
}

impl Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.field, self.problem)
    }
}

/// What an upload checks of each item before storing it: every string and
/// number storable ([`check_values`]) and, when the item reads as an item,
/// every limit. Other mistakes are left to the merge pass, which rejects that
/// item alone with a reason.
pub fn check_upload(raw: &mut Value) -> Result<(), Violation> {
    check_values(raw)?;
    match ScrapedItem::deserialize(&*raw) {
        Ok(item) => item.check_limits(),
        Err(_) => Ok(()),
    }
}

/// Refuses the first string or object key holding a NUL and the first
/// number outside the domain (see the module comment), naming where; writes
/// negative zero as 0.
pub fn check_values(raw: &mut Value) -> Result<(), Violation> {
    walk(raw, &mut String::new())
}

fn walk(value: &mut Value, path: &mut String) -> Result<(), Violation> {
    let nul = |path: &str, what: &str| Violation {
        field: path.to_owned(),
        problem: format!("{what} a NUL character (U+0000)"),
    };
    match value {
        Value::String(s) if s.contains('\0') => Err(nul(path, "contains")),
        Value::Number(n) => {
            if !in_domain(n) {
                return Err(out_of_domain(path, n));
            }
            if n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()) {
                *value = Value::from(0.0);
            }
            Ok(())
        }
        Value::Array(values) => {
            let parent = path.len();
            for (i, value) in values.iter_mut().enumerate() {
                let _ = write!(path, "[{i}]");
                walk(value, path)?;
                path.truncate(parent);
            }
            Ok(())
        }
        Value::Object(entries) => {
            let parent = path.len();
            for (key, value) in entries.iter_mut() {
                push_key(path, key);
                if key.contains('\0') {
                    return Err(nul(path, "is a key containing"));
                }
                walk(value, path)?;
                path.truncate(parent);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn in_domain(n: &Number) -> bool {
    if let Some(u) = n.as_u64() {
        return u <= MAX_NUMBER;
    }
    if let Some(i) = n.as_i64() {
        return i.unsigned_abs() <= MAX_NUMBER;
    }
    n.as_f64()
        .is_some_and(|f| f.is_finite() && f.abs() <= MAX_NUMBER as f64)
}

/// `field` holds `shown`, a number outside the domain.
pub fn out_of_domain(field: impl Display, shown: impl Display) -> Violation {
    Violation {
        field: field.to_string(),
        problem: format!(
            "is {shown}, outside the numbers an item may hold \
             (finite, from -{MAX_NUMBER} to {MAX_NUMBER})"
        ),
    }
}

/// `parent.key`, the key's control characters escaped.
fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.extend(key.escape_debug());
}

fn text(field: impl Display, value: &str, max: usize) -> Result<(), Violation> {
    if value.len() <= max {
        return Ok(());
    }
    Err(Violation {
        field: field.to_string(),
        problem: format!("is longer than {max} bytes (it has {})", value.len()),
    })
}

fn optional(field: impl Display, value: Option<&str>, max: usize) -> Result<(), Violation> {
    value.map_or(Ok(()), |v| text(field, v, max))
}

fn count(field: impl Display, len: usize, max: usize) -> Result<(), Violation> {
    if len <= max {
        return Ok(());
    }
    Err(Violation {
        field: field.to_string(),
        problem: format!("has more than {max} entries (it has {len})"),
    })
}

/// A URL is stored normalized, which may lengthen it.
fn url(field: impl Display, value: &str) -> Result<(), Violation> {
    text(&field, value, URL)?;
    let stored = text::normalize_url(value).len();
    if stored <= URL {
        return Ok(());
    }
    Err(Violation {
        field: field.to_string(),
        problem: format!("is longer than {URL} bytes once normalized (it has {stored})"),
    })
}

fn media(field: &str, cover: Option<&str>, gallery: &[String]) -> Result<(), Violation> {
    optional(format_args!("{field}_cover"), cover, MEDIA_URL)?;
    count(format_args!("{field}_gallery"), gallery.len(), GALLERY)?;
    for (i, entry) in gallery.iter().enumerate() {
        text(format_args!("{field}_gallery[{i}]"), entry, MEDIA_URL)?;
    }
    Ok(())
}

impl ScrapedItem {
    /// Checks every text and list against its limit (the table above).
    pub fn check_limits(&self) -> Result<(), Violation> {
        text("external_id", &self.external_id, EXTERNAL_ID)?;
        url("url", &self.url)?;
        text("name", &self.name, NAME)?;
        text("brand", &self.brand, BRAND)?;
        count("category_path", self.category_path.len(), CATEGORY_LEVELS)?;
        for (i, level) in self.category_path.iter().enumerate() {
            text(format_args!("category_path[{i}]"), level, CATEGORY_LEVEL)?;
        }
        count("attributes", self.attributes.len(), ATTRIBUTES)?;
        for (key, value) in &self.attributes {
            if key.len() > ATTRIBUTE_KEY {
                return Err(Violation {
                    field: "attributes".into(),
                    problem: format!(
                        "has a key longer than {ATTRIBUTE_KEY} bytes (it has {})",
                        key.len()
                    ),
                });
            }
            if let Value::String(value) = value {
                let mut field = "attributes".to_owned();
                push_key(&mut field, key);
                text(field, value, ATTRIBUTE_VALUE)?;
            }
        }
        media("image", Some(&self.image_cover), &self.image_gallery)?;
        media("video", self.video_cover.as_deref(), &self.video_gallery)?;
        self.check_seller()?;
        self.check_prices()?;
        let stats = self
            .stats
            .as_ref()
            .and_then(|s| serde_json::to_vec(s).ok())
            .map_or(0, |json| json.len());
        if stats > STATS {
            return Err(Violation {
                field: "stats".into(),
                problem: format!("is longer than {STATS} bytes of JSON (it has {stats})"),
            });
        }
        Ok(())
    }

    fn check_seller(&self) -> Result<(), Violation> {
        let s = &self.seller;
        text("seller.id", &s.id, SELLER_ID)?;
        text("seller.name", &s.name, SELLER_NAME)?;
        text("seller.code", &s.code, SELLER_CODE)?;
        optional("seller.tin", s.tin.as_deref(), SELLER_REGISTRATION)?;
        optional("seller.psrn", s.psrn.as_deref(), SELLER_REGISTRATION)?;
        optional("seller.address", s.address.as_deref(), SELLER_ADDRESS)?;
        s.url.as_deref().map_or(Ok(()), |u| url("seller.url", u))
    }

    fn check_prices(&self) -> Result<(), Violation> {
        count("prices", self.prices.len(), PRICES)?;
        for (i, p) in self.prices.iter().enumerate() {
            let field = |name: &str| format!("prices[{i}].{name}");
            text(field("country_code"), &p.country_code, COUNTRY_CODE)?;
            optional(field("region_code"), p.region_code.as_deref(), REGION_CODE)?;
            text(field("currency"), &p.currency, CURRENCY)?;
            optional(
                field("stock_status"),
                p.stock_status.as_deref(),
                STOCK_STATUS,
            )?;
        }
        count("special_price", self.special_price.len(), PRICES)?;
        for (i, s) in self.special_price.iter().enumerate() {
            let field = |name: &str| format!("special_price[{i}].{name}");
            text(field("country_code"), &s.country_code, COUNTRY_CODE)?;
            text(field("region_code"), &s.region_code, REGION_CODE)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_cursor_of_the_longest_name_written_the_longest_way_is_accepted() {
        use crate::query::QueryError;
        use crate::query::keyset::{Key, MAX_CURSOR_LEN};
        use crate::query::product_order::{
            OrderDirection, ProductKey, ProductOrder, ProductOrderField, Sorted,
        };
        let order = ProductOrder {
            field: ProductOrderField::Name,
            direction: OrderDirection::Desc,
        };
        // A control character is the longest a byte of JSON text gets.
        let name = Sorted::Text("\u{1}".repeat(NAME));
        let key = ProductKey::Ordered(order, name, uuid::Uuid::max());
        let encoded = key.encode();
        assert!(encoded.len() > 4 * 6 * NAME / 3, "{}", encoded.len());
        assert!(ProductKey::decode("after", &encoded).is_ok());
        let longer = "A".repeat(MAX_CURSOR_LEN + 1);
        match ProductKey::decode("after", &longer) {
            Err(QueryError::Invalid(message)) => assert!(message.contains("at most"), "{message}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_nul_is_found_in_nested_values_and_keys_with_its_path() {
        let nested = json!({ "stats": { "reviews": [1, { "text": "a\u{0}" }] } });
        assert_eq!(
            check_values(&mut nested.clone()).unwrap_err().to_string(),
            "stats.reviews[1].text contains a NUL character (U+0000)"
        );
        let key = json!({ "attributes": { "a\u{0}b": true } });
        assert_eq!(
            check_values(&mut key.clone()).unwrap_err().field,
            "attributes.a\\0b",
            "the key is named with its NUL escaped"
        );
        assert!(check_values(&mut json!({ "name": "ok", "list": ["x"] })).is_ok());
    }

    #[test]
    fn a_normalized_url_is_measured_as_stored() {
        // Each Cyrillic letter (2 bytes) is stored percent-encoded (6 bytes).
        let raw = format!("https://ozon.ru/{}", "я".repeat(400));
        assert!(raw.len() <= URL);
        let refused = url("url", &raw).unwrap_err();
        assert!(refused.problem.contains("once normalized"), "{refused}");
    }
}
