//! Writes one valid item into the catalog, inside the caller's transaction.
//!
//! Rules (also in docs/architecture.md, "How a merge flows"):
//! - A product is identified by marketplace + external_id; a seller by
//!   marketplace + seller id. Both are created on first sight.
//! - Newest observation wins: product-level fields (url, brand, images,
//!   videos, seller, seller code, stats) and the default-language content are
//!   only overwritten by an item observed no earlier than the product's
//!   `last_seen_at`; older items still add price history.
//! - Languages: `first_seen_language` is the language of the first item and
//!   never changes. The default language is `ru` (the marketplaces' own) once
//!   the product has been seen in Russian, else the first-seen language; when a
//!   Russian item arrives for a product whose default is another language, the
//!   Russian content becomes the default and the old default moves to the
//!   translations. Items in other languages upsert their translation. A
//!   product keeps at most `item_limits::TRANSLATIONS` languages besides its
//!   default one: an item that would add one more is rejected, unless it is
//!   Russian (the old default then moves to the translations, one more).
//! - Prices: each price updates the current price of its variant (country,
//!   region, auth status) and appends a history observation, unless it repeats
//!   the current values (price, old price, currency, stock) exactly, in which
//!   case only the current price's time advances.
//! - Flags: a price more than 50% above or below the variant's current price,
//!   or an old price below the price, flags the item; the product gets
//!   `price_flagged` and trust `flagged`. A later clean item clears
//!   `price_flagged` and returns a flagged product to `unverified`; a product
//!   merged from sessions of two or more accounts becomes `verified`.
//! - Size: the product as written is measured (`size.rs`); an item that
//!   takes it over the per-product limit is rejected, its writes rolled back.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use entity::{
    StringList, SubmissionStatus, TrustStatus, current_price, price_observation, product,
    product_category, product_translation, scrape_session, seller, special_price, submission,
};
use sea_orm::sea_query::{Expr, OnConflict, Query};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbErr,
    EntityTrait, ExprTrait, IntoActiveModel, NotSet, PaginatorTrait, QueryFilter, QuerySelect,
    StreamTrait, sea_query::LockType,
};
use serde_json::Value;
use uuid::Uuid;

use super::item::{ScrapedItem, ScrapedPrice};
use super::price_moves::Lowest;
use super::{item_limits, size};
use crate::query::movers::PriceMove;
use crate::text::{self, SearchKeys};

/// The language the marketplaces publish in; it becomes the default once seen.
pub const PRIMARY_LANGUAGE: &str = "ru";
/// A price this far from the current one (as a ratio) flags the item.
const PRICE_JUMP: f64 = 1.5;

/// What merging an item did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Merged(Uuid),
    /// Merged, but looks wrong; the reason is kept on the submission.
    Flagged(Uuid, String),
    /// Not merged, for this reason; whatever it wrote is to be rolled back.
    Rejected(String),
}

/// Merges `item` (observed at `observed_at`) from a session of `account_id`,
/// keeping its product within `max_product_bytes` of JSON. With what it
/// did, the moves of the product's lowest prices it made (none when it is
/// rejected, or the product is new).
pub async fn apply(
    db: &(impl ConnectionTrait + StreamTrait),
    item: &ScrapedItem,
    account_id: Uuid,
    observed_at: DateTime<Utc>,
    max_product_bytes: u64,
) -> Result<(Outcome, Vec<PriceMove>), DbErr> {
    let seller = upsert_seller(db, item, observed_at).await?;
    let (mut product, created) = find_or_create_product(db, item, seller.id, observed_at).await?;
    let newest = created || observed_at >= product.last_seen_at;
    if !created
        && let Some(reason) = merge_content(db, &mut product, item, observed_at, newest).await?
    {
        return Ok((Outcome::Rejected(reason), vec![]));
    }
    let watched = !created && !item.prices.is_empty();
    let before = match watched {
        true => Lowest::of(db, product.id).await?,
        false => Lowest::none(),
    };
    if newest {
        product.url = text::normalize_url(&item.url);
        product.brand = item.brand.clone();
        product.image_cover = item.image_cover.clone();
        product.image_gallery = StringList(item.image_gallery.clone());
        product.video_cover = item.video_cover.clone();
        product.video_gallery = StringList(item.video_gallery.clone());
        product.seller_ref = seller.id;
        product.seller_code = item.seller.code.clone();
        product.stats = item.stats.clone().or(product.stats.take());
        product.last_seen_at = observed_at;
    }
    let mut flag = None;
    for price in &item.prices {
        if let Some(reason) = record_price(db, product.id, price, observed_at).await? {
            flag.get_or_insert(reason);
        }
    }
    let moves = match watched {
        true => before.moves_to(&Lowest::of(db, product.id).await?, product.id, observed_at),
        false => vec![],
    };
    replace_special_prices(db, product.id, item).await?;
    reindex(db, &mut product).await?;

    match &flag {
        Some(_) => {
            product.price_flagged = true;
            product.trust_status = TrustStatus::Flagged;
        }
        None => {
            product.price_flagged = false;
            if product.trust_status == TrustStatus::Flagged {
                product.trust_status = TrustStatus::Unverified;
            }
            if product.trust_status == TrustStatus::Unverified
                && contributing_accounts(db, product.id, account_id).await? >= 2
            {
                product.trust_status = TrustStatus::Verified;
            }
        }
    }
    let id = product.id;
    product.into_active_model().reset_all().update(db).await?;
    if let Some(reason) = size::record(db, id, max_product_bytes).await? {
        return Ok((Outcome::Rejected(reason), vec![]));
    }
    let outcome = match flag {
        Some(reason) => Outcome::Flagged(id, reason),
        None => Outcome::Merged(id),
    };
    Ok((outcome, moves))
}

async fn upsert_seller(
    db: &impl ConnectionTrait,
    item: &ScrapedItem,
    at: DateTime<Utc>,
) -> Result<seller::Model, DbErr> {
    let s = &item.seller;
    let fresh = seller::ActiveModel {
        id: Set(Uuid::new_v4()),
        marketplace: Set(item.marketplace),
        seller_id: Set(s.id.clone()),
        name: Set(s.name.clone()),
        tin: Set(s.tin.clone().unwrap_or_default()),
        psrn: Set(s.psrn.clone().unwrap_or_default()),
        address: Set(s.address.clone().unwrap_or_default()),
        url: Set(s.url.as_deref().and_then(text::url_key)),
        rating: Set(s.rating.unwrap_or_default()),
        reg_date: Set(s.reg_date),
        items_sold: Set(s.items_sold.unwrap_or_default()),
        reviews_count: Set(s.reviews_count.unwrap_or_default()),
        first_seen_at: Set(at),
        last_seen_at: Set(at),
    };
    seller::Entity::insert(fresh)
        .on_conflict(
            OnConflict::columns([seller::Column::Marketplace, seller::Column::SellerId])
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    let found = seller::Entity::find()
        .filter(seller::Column::Marketplace.eq(item.marketplace))
        .filter(seller::Column::SellerId.eq(s.id.as_str()))
        .lock(LockType::Update)
        .one(db)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("seller".into()))?;
    if at < found.last_seen_at {
        return Ok(found);
    }
    let mut row = found.into_active_model();
    if !s.name.is_empty() {
        row.name = Set(s.name.clone());
    }
    let set_text = |field: &mut sea_orm::ActiveValue<String>, value: &Option<String>| {
        if let Some(v) = value.as_ref().filter(|v| !v.is_empty()) {
            *field = Set(v.clone());
        }
    };
    set_text(&mut row.tin, &s.tin);
    set_text(&mut row.psrn, &s.psrn);
    set_text(&mut row.address, &s.address);
    if let Some(url) = s.url.as_deref().and_then(text::url_key) {
        row.url = Set(Some(url));
    }
    if let Some(v) = s.rating {
        row.rating = Set(v);
    }
    if s.reg_date.is_some() {
        row.reg_date = Set(s.reg_date);
    }
    if let Some(v) = s.items_sold {
        row.items_sold = Set(v);
    }
    if let Some(v) = s.reviews_count {
        row.reviews_count = Set(v);
    }
    row.last_seen_at = Set(at);
    row.update(db).await
}

/// The product row, locked for this transaction, and whether it was created now.
async fn find_or_create_product(
    db: &impl ConnectionTrait,
    item: &ScrapedItem,
    seller_ref: Uuid,
    at: DateTime<Utc>,
) -> Result<(product::Model, bool), DbErr> {
    let keys = SearchKeys::of(
        &item.brand,
        &item.seller.code,
        [(item.name.as_str(), item.category_path.as_slice())],
    );
    let fresh = product::Model {
        id: Uuid::new_v4(),
        marketplace: item.marketplace,
        external_id: item.external_id.clone(),
        url: text::normalize_url(&item.url),
        name: item.name.clone(),
        brand: item.brand.clone(),
        brand_key: keys.brand_key,
        category_path: StringList(item.category_path.clone()),
        attributes: Value::Object(item.attributes.clone()),
        image_cover: item.image_cover.clone(),
        image_gallery: StringList(item.image_gallery.clone()),
        video_cover: item.video_cover.clone(),
        video_gallery: StringList(item.video_gallery.clone()),
        seller_ref,
        seller_code: item.seller.code.clone(),
        seller_code_key: keys.seller_code_key,
        name_search: keys.name_search,
        trust_status: TrustStatus::Unverified,
        price_flagged: false,
        stats: item.stats.clone(),
        first_seen_language: item.language.clone(),
        default_language: item.language.clone(),
        first_seen_at: at,
        last_seen_at: at,
        // Measured once the merge has written it.
        stored_size: 0,
    };
    let id = fresh.id;
    product::Entity::insert(fresh.into_active_model().reset_all())
        .on_conflict(
            OnConflict::columns([product::Column::Marketplace, product::Column::ExternalId])
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    let found = product::Entity::find()
        .filter(product::Column::Marketplace.eq(item.marketplace))
        .filter(product::Column::ExternalId.eq(item.external_id.as_str()))
        .lock(LockType::Update)
        .one(db)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("product".into()))?;
    let created = found.id == id;
    Ok((found, created))
}

/// Applies the item's language content to an existing product; the reason
/// when the item is refused: a language the product lacks, once it has
/// `item_limits::TRANSLATIONS` translations (every merge reindexes every
/// language of its product, so their number is bounded). Russian is never
/// refused: it becomes the default, moving the old one among the
/// translations, which may then hold one more.
async fn merge_content(
    db: &impl ConnectionTrait,
    product: &mut product::Model,
    item: &ScrapedItem,
    at: DateTime<Utc>,
    newest: bool,
) -> Result<Option<String>, DbErr> {
    let language = item.language.as_str();
    if language == product.default_language {
        if newest {
            set_main(product, item);
        }
        return Ok(None);
    }
    if language == PRIMARY_LANGUAGE {
        // Russian arrives for a product known so far in another language:
        // the old default content becomes a translation.
        let old = product_translation::Model {
            product_id: product.id,
            language: product.default_language.clone(),
            name: product.name.clone(),
            category_path: product.category_path.clone(),
            attributes: product.attributes.clone(),
            updated_at: product.last_seen_at,
        };
        upsert_translation(db, old).await?;
        product_translation::Entity::delete_by_id((product.id, PRIMARY_LANGUAGE.to_owned()))
            .exec(db)
            .await?;
        product.default_language = PRIMARY_LANGUAGE.to_owned();
        set_main(product, item);
        return Ok(None);
    }
    let existing = product_translation::Entity::find_by_id((product.id, language.to_owned()))
        .one(db)
        .await?;
    if existing.is_none() {
        let translations = product_translation::Entity::find()
            .filter(product_translation::Column::ProductId.eq(product.id))
            .count(db)
            .await?;
        if translations >= item_limits::TRANSLATIONS as u64 {
            return Ok(Some(format!(
                "language {language} would be one more than the {} translations a product keeps",
                item_limits::TRANSLATIONS
            )));
        }
    }
    if existing.is_none_or(|t| t.updated_at <= at) {
        let translation = product_translation::Model {
            product_id: product.id,
            language: language.to_owned(),
            name: item.name.clone(),
            category_path: StringList(item.category_path.clone()),
            attributes: Value::Object(item.attributes.clone()),
            updated_at: at,
        };
        upsert_translation(db, translation).await?;
    }
    Ok(None)
}

fn set_main(product: &mut product::Model, item: &ScrapedItem) {
    product.name = item.name.clone();
    product.category_path = StringList(item.category_path.clone());
    product.attributes = Value::Object(item.attributes.clone());
}

async fn upsert_translation(
    db: &impl ConnectionTrait,
    t: product_translation::Model,
) -> Result<(), DbErr> {
    product_translation::Entity::insert(t.into_active_model().reset_all())
        .on_conflict(
            OnConflict::columns([
                product_translation::Column::ProductId,
                product_translation::Column::Language,
            ])
            .update_columns([
                product_translation::Column::Name,
                product_translation::Column::CategoryPath,
                product_translation::Column::Attributes,
                product_translation::Column::UpdatedAt,
            ])
            .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// Recomputes every search key (columns and category index rows) from the
/// product as merged so far and all its translations.
async fn reindex(db: &impl ConnectionTrait, product: &mut product::Model) -> Result<(), DbErr> {
    let translations = product_translation::Entity::find()
        .filter(product_translation::Column::ProductId.eq(product.id))
        .all(db)
        .await?;
    let languages = std::iter::once((product.name.as_str(), product.category_path.0.as_slice()))
        .chain(
            translations
                .iter()
                .map(|t| (t.name.as_str(), t.category_path.0.as_slice())),
        );
    let mut keys = SearchKeys::of(&product.brand, &product.seller_code, languages);
    // Only the category rows that changed are written: the database moves
    // the product's lowest prices between the kept category levels for
    // each row added or taken away (migration 33).
    let held = product_category::Entity::find()
        .filter(product_category::Column::ProductId.eq(product.id))
        .all(db)
        .await?;
    let stale: Vec<String> = held
        .into_iter()
        .filter(|row| {
            let kept = row.first_seen_at == product.first_seen_at
                && keys.category_keys.remove(&row.category_key);
            !kept
        })
        .map(|row| row.category_key)
        .collect();
    if !stale.is_empty() {
        product_category::Entity::delete_many()
            .filter(product_category::Column::ProductId.eq(product.id))
            .filter(product_category::Column::CategoryKey.is_in(stale))
            .exec(db)
            .await?;
    }
    let rows = keys.category_rows(product.id, product.first_seen_at);
    product.brand_key = keys.brand_key;
    product.seller_code_key = keys.seller_code_key;
    product.name_search = keys.name_search;
    crate::db::insert_batched(db, rows).await
}

fn variant(
    product_id: Uuid,
    country: &str,
    region: &Option<String>,
    auth: entity::UserAuthStatus,
) -> Condition {
    let region = match region {
        Some(r) => current_price::Column::RegionCode.eq(r.as_str()),
        None => current_price::Column::RegionCode.is_null(),
    };
    Condition::all()
        .add(current_price::Column::ProductId.eq(product_id))
        .add(current_price::Column::CountryCode.eq(country))
        .add(current_price::Column::UserAuthStatus.eq(auth))
        .add(region)
}

/// Why the price `p` (with `old_price`) is flagged against the variant's
/// `current` one, if it is: a jump past [`PRICE_JUMP`] wins over an old
/// price below the price.
fn price_flag(
    p: &ScrapedPrice,
    old_price: f64,
    current: Option<&current_price::Model>,
) -> Option<String> {
    if let Some(c) = current.filter(|c| c.price > 0.0)
        && (p.price > c.price * PRICE_JUMP || p.price < c.price / PRICE_JUMP)
    {
        return Some(format!(
            "price {} differs from the current price {} by more than 50%",
            p.price, c.price
        ));
    }
    (old_price < p.price).then(|| format!("old_price {old_price} is below price {}", p.price))
}

/// The row of price `p` of product `product_id`, seen `at`, for `$table`:
/// the history and the current prices hold the same columns.
macro_rules! price_row {
    ($table:ident, $product_id:expr, $p:expr, $old_price:expr, $at:expr) => {
        $table::ActiveModel {
            id: NotSet,
            product_id: Set($product_id),
            country_code: Set($p.country_code.clone()),
            region_code: Set($p.region_code.clone()),
            user_auth_status: Set($p.user_auth_status),
            price: Set($p.price),
            old_price: Set($old_price),
            currency: Set($p.currency.clone()),
            stock_status: Set($p.stock_status.clone()),
            stock_quantity: Set($p.stock_quantity),
            recorded_at: Set($at),
        }
    };
}

/// Updates the variant's current price and history; returns a flag reason.
async fn record_price(
    db: &impl ConnectionTrait,
    product_id: Uuid,
    p: &ScrapedPrice,
    at: DateTime<Utc>,
) -> Result<Option<String>, DbErr> {
    let old_price = p.old_price.unwrap_or(p.price);
    let current = current_price::Entity::find()
        .filter(variant(
            product_id,
            &p.country_code,
            &p.region_code,
            p.user_auth_status,
        ))
        .one(db)
        .await?;
    let flag = price_flag(p, old_price, current.as_ref());
    let repeats = current.as_ref().is_some_and(|c| {
        c.price == p.price
            && c.old_price == old_price
            && c.currency == p.currency
            && c.stock_status == p.stock_status
            && c.stock_quantity == p.stock_quantity
    });
    if !repeats {
        price_row!(price_observation, product_id, p, old_price, at)
            .insert(db)
            .await?;
    }
    match current {
        Some(c) if c.recorded_at > at => {}
        Some(c) => {
            let mut row = price_row!(current_price, product_id, p, old_price, at);
            row.id = Set(c.id);
            row.update(db).await?;
        }
        None => {
            price_row!(current_price, product_id, p, old_price, at)
                .insert(db)
                .await?;
        }
    }
    Ok(flag)
}

/// The item's special prices replace those of the same variants.
async fn replace_special_prices(
    db: &impl ConnectionTrait,
    product_id: Uuid,
    item: &ScrapedItem,
) -> Result<(), DbErr> {
    for s in &item.special_price {
        special_price::Entity::delete_many()
            .filter(special_price::Column::ProductId.eq(product_id))
            .filter(special_price::Column::CountryCode.eq(s.country_code.as_str()))
            .filter(special_price::Column::RegionCode.eq(s.region_code.as_str()))
            .filter(special_price::Column::UserAuthStatus.eq(s.user_auth_status))
            .exec(db)
            .await?;
        special_price::ActiveModel {
            id: NotSet,
            product_id: Set(product_id),
            country_code: Set(s.country_code.clone()),
            region_code: Set(s.region_code.clone()),
            user_auth_status: Set(s.user_auth_status),
            min: Set(s.min),
            max: Set(s.max),
        }
        .insert(db)
        .await?;
    }
    Ok(())
}

/// Distinct accounts whose merged submissions fed this product, counting the
/// current one.
async fn contributing_accounts(
    db: &impl ConnectionTrait,
    product_id: Uuid,
    current: Uuid,
) -> Result<usize, DbErr> {
    let query = Query::select()
        .distinct()
        .column((scrape_session::Entity, scrape_session::Column::AccountId))
        .from(submission::Entity)
        .inner_join(
            scrape_session::Entity,
            Expr::col((scrape_session::Entity, scrape_session::Column::Id))
                .equals((submission::Entity, submission::Column::SessionId)),
        )
        .and_where(Expr::col((submission::Entity, submission::Column::ProductId)).eq(product_id))
        .and_where(
            Expr::col((submission::Entity, submission::Column::Status))
                .eq(SubmissionStatus::Merged.as_str()),
        )
        .to_owned();
    let mut accounts: BTreeSet<Uuid> = BTreeSet::from([current]);
    for row in db.query_all(&query).await? {
        accounts.insert(row.try_get_by_index::<Uuid>(0)?);
    }
    Ok(accounts.len())
}
