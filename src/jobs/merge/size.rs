//! The per-product limit (`VITRINA_MAX_PRODUCT_KB`): how large a product's
//! v1 JSON (`GET /v1/products/{id}`) may grow. The catalog is shared, so
//! without it one tenant's uploads, each within the item limits, could make
//! one product tens of megabytes and every caller's plain page enormous.
//!
//! The merge measures the product it wrote as `GET /v1/products/{id}` reads
//! it, and keeps the size on the row (`products.stored_size`), which reads
//! count against an answer's budget before they read the product. A
//! submission that would take its product over the limit is rejected, its
//! writes rolled back with it, so the product stays as it was. An upload
//! refuses at once an item that would make a product over the limit alone.

use chrono::{DateTime, Utc};
use entity::{TrustStatus, product};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, StreamTrait};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::item::ScrapedItem;
use crate::query::QueryError;
use crate::query::budget::ResponseBudget;
use crate::query::products;
use crate::text;
use crate::views::size::json_len;
use crate::views::{self, PriceObservation, ProductSeller, SpecialPrice};

/// Measures product `id` as written and keeps its size on the row; the
/// reason to reject the submission when the product is now over
/// `max_bytes`.
pub async fn record(
    db: &(impl ConnectionTrait + StreamTrait),
    id: Uuid,
    max_bytes: u64,
) -> Result<Option<String>, DbErr> {
    for (id, size) in measure(db, &[id]).await? {
        if size > max_bytes {
            return Ok(Some(format!(
                "the product would take {size} bytes of JSON, over the per-product limit of \
                 {max_bytes} bytes (VITRINA_MAX_PRODUCT_KB)"
            )));
        }
        keep(db, id, size).await?;
    }
    Ok(None)
}

/// Measures the products `ids` as written and keeps their sizes: for
/// products written other than by the merge (the generated demo data).
pub async fn record_all(
    db: &(impl ConnectionTrait + StreamTrait),
    ids: &[Uuid],
) -> Result<(), DbErr> {
    for (id, size) in measure(db, ids).await? {
        keep(db, id, size).await?;
    }
    Ok(())
}

/// Bytes of the v1 JSON of each of the products `ids`, as stored.
async fn measure(
    db: &(impl ConnectionTrait + StreamTrait),
    ids: &[Uuid],
) -> Result<Vec<(Uuid, u64)>, DbErr> {
    let views = products::get_many(db, ids, &ResponseBudget::unlimited())
        .await
        .map_err(|e| match e {
            QueryError::Database(e) => e,
            _ => DbErr::Custom("products just written could not be read back".into()),
        })?;
    Ok(views
        .into_iter()
        .map(|view| (view.product.id, json_len(&views::Product::from(view))))
        .collect())
}

async fn keep(db: &impl ConnectionTrait, id: Uuid, size: u64) -> Result<(), DbErr> {
    product::Entity::update_many()
        .col_expr(
            product::Column::StoredSize,
            Expr::val(i64::try_from(size).unwrap_or(i64::MAX)),
        )
        .filter(product::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Refuses an uploaded item that would make a product over `max_bytes`
/// on its own; a value that does not read as an item is left to the merge,
/// which rejects it with a reason.
pub fn check_upload(raw: &Value, now: DateTime<Utc>, max_bytes: u64) -> Result<(), String> {
    let Ok(item) = ScrapedItem::deserialize(raw) else {
        return Ok(());
    };
    let size = json_len(&alone(&item, item.observed_at.unwrap_or(now)));
    if size <= max_bytes {
        return Ok(());
    }
    Err(format!(
        "would make a product of at least {size} bytes of JSON on its own, over the per-product \
         limit of {max_bytes} bytes (VITRINA_MAX_PRODUCT_KB)"
    ))
}

/// At most the product `item` makes on its own, observed `at`: what the
/// merge shows of it, its prices one per variant (the last wins, as the
/// merge records them), with the shortest values of what the merge may set
/// otherwise (the trust status and flag, the seller's stored name). So an
/// item refused here would be rejected by the merge.
fn alone(item: &ScrapedItem, at: DateTime<Utc>) -> views::Product {
    let prices = item.prices.iter().map(|p| PriceObservation {
        country_code: p.country_code.clone(),
        region_code: p.region_code.clone(),
        user_auth_status: p.user_auth_status,
        price: p.price,
        old_price: p.old_price.unwrap_or(p.price),
        currency: p.currency.clone(),
        stock_status: p.stock_status.clone(),
        stock_quantity: p.stock_quantity,
        recorded_at: at,
    });
    let special_prices = item.special_price.iter().map(|s| SpecialPrice {
        country_code: s.country_code.clone(),
        region_code: s.region_code.clone(),
        user_auth_status: s.user_auth_status,
        min: s.min,
        max: s.max,
    });
    views::Product {
        id: Uuid::nil(),
        marketplace: item.marketplace,
        external_id: item.external_id.clone(),
        url: text::normalize_url(&item.url),
        name: item.name.clone(),
        brand: item.brand.clone(),
        category_path: item.category_path.clone(),
        attributes: views::attributes(&Value::Object(item.attributes.clone())),
        image_cover: item.image_cover.clone(),
        image_gallery: item.image_gallery.clone(),
        video_cover: item.video_cover.clone(),
        video_gallery: item.video_gallery.clone(),
        seller: ProductSeller {
            id: item.seller.id.clone(),
            name: String::new(),
            code: item.seller.code.clone(),
        },
        trust_status: TrustStatus::Flagged,
        price_flagged: true,
        prices: last_of_each(prices, |p| {
            (
                p.country_code.clone(),
                p.region_code.clone(),
                p.user_auth_status,
            )
        }),
        special_price: last_of_each(special_prices, |s| {
            (
                s.country_code.clone(),
                s.region_code.clone(),
                s.user_auth_status,
            )
        }),
        stats: item.stats.clone(),
        first_seen_language: item.language.clone(),
        default_language: item.language.clone(),
        translations: Vec::new(),
        first_seen_at: at,
        last_seen_at: at,
    }
}

/// `rows` with only the last row of each variant, in the order they came.
fn last_of_each<T, K: PartialEq>(
    rows: impl IntoIterator<Item = T>,
    variant: impl Fn(&T) -> K,
) -> Vec<T> {
    let mut kept: Vec<T> = Vec::new();
    for row in rows {
        let key = variant(&row);
        kept.retain(|k| variant(k) != key);
        kept.push(row);
    }
    kept
}
