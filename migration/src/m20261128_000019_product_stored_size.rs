//! `products.stored_size`: the bytes of a product's v1 JSON (`GET
//! /v1/products/{id}`), so that a read knows how large the products it is
//! about to read are before it reads them, and the merge can keep each
//! product within the per-product limit.
//!
//! The service measures the JSON itself on every merge that writes a
//! product. Rows already stored are given an upper bound here, computed by
//! the database from the lengths of what the JSON shows: each text as the
//! database itself escapes it as a JSON string (as long as serde_json's
//! escapes, or longer), each JSON document as its stored text (PostgreSQL
//! writes `jsonb` with spaces that serde_json leaves out), the seller's id
//! and name, every current price, special price and translation, and a
//! generous allowance for names, numbers, booleans and timestamps. Over an
//! exact measure it errs only upwards, so no answer is larger than the
//! sizes say; the next merge of the product measures it exactly.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

const TABLE: &str = "products";
const COLUMN: &str = "stored_size";

/// A product's JSON besides its texts, documents and lists: its 23 keys
/// and their punctuation (about 330 bytes), the seller object's keys, the
/// id, marketplace, trust status, flag, two timestamps (at most 40 bytes
/// each) and the three lists' brackets (about 200 bytes).
const PRODUCT: u64 = 1024;
/// A current price besides its texts: ten keys, two numbers (at most 24
/// bytes each as serde_json writes them), a quantity (20), an auth status
/// (15), a timestamp (40) and a separating comma: about 260 bytes.
const PRICE: u64 = 320;
/// A special price besides its texts: five keys, two numbers, an auth
/// status and a comma: about 130 bytes.
const SPECIAL_PRICE: u64 = 192;
/// A translation besides its texts and documents: five keys, a timestamp
/// and a comma: about 110 bytes.
const TRANSLATION: u64 = 160;

/// Bytes of `expr`, a text, written as a JSON string; NULL stays NULL.
fn text(backend: DbBackend, expr: &str) -> String {
    match backend {
        DbBackend::Postgres => format!("octet_length(to_json({expr})::text)"),
        _ => format!("length(CAST(json_quote({expr}) AS BLOB))"),
    }
}

/// Bytes of `expr`, a JSON document, as stored; NULL stays NULL.
fn document(backend: DbBackend, expr: &str) -> String {
    match backend {
        DbBackend::Postgres => format!("octet_length({expr}::text)"),
        _ => format!("length(CAST({expr} AS BLOB))"),
    }
}

/// `null`, written for a value that is NULL.
fn or_null(bytes: String) -> String {
    format!("COALESCE({bytes}, 4)")
}

/// The sum of `per_row` over the rows of `table` that belong to the product.
fn rows(table: &str, per_row: String) -> String {
    format!(
        "COALESCE((SELECT SUM({per_row}) FROM {table} WHERE {table}.product_id = products.id), 0)"
    )
}

/// The upper bound of every product's v1 JSON, as a SQL expression over
/// a row of `products`.
fn bound(backend: DbBackend) -> String {
    let t = |expr: &str| text(backend, expr);
    let d = |expr: &str| document(backend, expr);
    let product = [
        t("products.external_id"),
        t("products.url"),
        t("products.name"),
        t("products.brand"),
        d("products.category_path"),
        d("products.attributes"),
        t("products.image_cover"),
        d("products.image_gallery"),
        or_null(t("products.video_cover")),
        d("products.video_gallery"),
        or_null(d("products.stats")),
        t("products.seller_code"),
        t("products.first_seen_language"),
        t("products.default_language"),
    ];
    let seller = format!(
        "COALESCE((SELECT {} + {} FROM sellers WHERE sellers.id = products.seller_ref), 4)",
        t("sellers.seller_id"),
        t("sellers.name")
    );
    let prices = rows(
        "current_prices",
        [
            PRICE.to_string(),
            t("current_prices.country_code"),
            or_null(t("current_prices.region_code")),
            t("current_prices.currency"),
            or_null(t("current_prices.stock_status")),
        ]
        .join(" + "),
    );
    let special_prices = rows(
        "special_prices",
        [
            SPECIAL_PRICE.to_string(),
            t("special_prices.country_code"),
            t("special_prices.region_code"),
        ]
        .join(" + "),
    );
    let translations = rows(
        "product_translations",
        [
            TRANSLATION.to_string(),
            t("product_translations.language"),
            t("product_translations.name"),
            d("product_translations.category_path"),
            d("product_translations.attributes"),
        ]
        .join(" + "),
    );
    let mut terms = vec![PRODUCT.to_string()];
    terms.extend(product);
    terms.extend([seller, prices, special_prices, translations]);
    terms.join(" + ")
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TABLE)
                    .add_column(ColumnDef::new(COLUMN).big_integer().not_null().default(0))
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        let backend = db.get_database_backend();
        db.execute_unprepared(&format!("UPDATE {TABLE} SET {COLUMN} = {}", bound(backend)))
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(TABLE).drop_column(COLUMN).to_owned())
            .await
    }
}
