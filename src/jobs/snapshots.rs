//! Daily category and brand snapshots served by `/categories` and `/brands`.
//!
//! A snapshot is computed from the products as they are at that moment and
//! replaces any earlier snapshot of the same day. Categories are counted per
//! marketplace by default-language path (the empty path is an entry of its
//! own); brands per marketplace and across all marketplaces, one entry per
//! case-folded brand.

use crate::db::insert_batched;
use chrono::{DateTime, NaiveDate, Utc};
use entity::{Marketplace, StringList, brand_snapshot, category_snapshot, product};
use sea_orm::{
    ColumnTrait, DbErr, EntityTrait, ExprTrait, QueryFilter, QuerySelect, TransactionSession,
    TransactionTrait, sea_query::Expr,
};

/// Computes the snapshots of `day` from the current products, in one transaction.
#[tracing::instrument(skip_all, fields(%day))]
pub async fn compute(db: &impl TransactionTrait, day: NaiveDate) -> Result<(), DbErr> {
    let txn = db.begin().await?;
    category_snapshot::Entity::delete_many()
        .filter(category_snapshot::Column::SnapshotDate.eq(day))
        .exec(&txn)
        .await?;
    brand_snapshot::Entity::delete_many()
        .filter(brand_snapshot::Column::SnapshotDate.eq(day))
        .exec(&txn)
        .await?;

    let categories: Vec<(Marketplace, StringList, i64)> = product::Entity::find()
        .select_only()
        .column(product::Column::Marketplace)
        .column(product::Column::CategoryPath)
        .column_as(Expr::col(product::Column::Id).count(), "n")
        .group_by(product::Column::Marketplace)
        .group_by(product::Column::CategoryPath)
        .into_tuple()
        .all(&txn)
        .await?;
    let rows = categories
        .into_iter()
        .map(
            |(marketplace, category_path, product_count)| category_snapshot::ActiveModel {
                snapshot_date: sea_orm::Set(day),
                marketplace: sea_orm::Set(marketplace),
                category_path: sea_orm::Set(category_path),
                product_count: sea_orm::Set(product_count),
                ..Default::default()
            },
        );
    insert_batched(&txn, rows.collect()).await?;

    let brands: Vec<(Marketplace, String, String, i64)> = product::Entity::find()
        .select_only()
        .column(product::Column::Marketplace)
        .column(product::Column::BrandKey)
        .column_as(Expr::col(product::Column::Brand).min(), "brand")
        .column_as(Expr::col(product::Column::Id).count(), "n")
        .group_by(product::Column::Marketplace)
        .group_by(product::Column::BrandKey)
        .into_tuple()
        .all(&txn)
        .await?;
    let mut across: std::collections::BTreeMap<String, (String, i64)> = Default::default();
    for (_, key, brand, n) in &brands {
        // The display name across marketplaces: the smallest spelling seen.
        let entry = across
            .entry(key.clone())
            .or_insert_with(|| (brand.clone(), 0));
        if *brand < entry.0 {
            entry.0 = brand.clone();
        }
        entry.1 += n;
    }
    let per_marketplace = brands
        .into_iter()
        .map(|(marketplace, _, brand, n)| (Some(marketplace), brand, n));
    let all = across.into_values().map(|(brand, n)| (None, brand, n));
    let rows = per_marketplace
        .chain(all)
        .map(
            |(marketplace, brand, product_count)| brand_snapshot::ActiveModel {
                snapshot_date: sea_orm::Set(day),
                marketplace: sea_orm::Set(marketplace),
                brand: sea_orm::Set(brand),
                product_count: sea_orm::Set(product_count),
                ..Default::default()
            },
        );
    insert_batched(&txn, rows.collect()).await?;
    txn.commit().await
}

/// Computes today's snapshots (UTC) unless they exist; returns whether it did.
/// Run at start and on every scheduler tick, this makes one snapshot a day.
pub async fn ensure_today(
    db: &sea_orm::DatabaseConnection,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    use sea_orm::PaginatorTrait;
    let day = now.date_naive();
    let has = |n: u64| n > 0;
    let categories = category_snapshot::Entity::find()
        .filter(category_snapshot::Column::SnapshotDate.eq(day))
        .count(db)
        .await?;
    let brands = brand_snapshot::Entity::find()
        .filter(brand_snapshot::Column::SnapshotDate.eq(day))
        .count(db)
        .await?;
    if has(categories) || has(brands) {
        return Ok(false);
    }
    compute(db, day).await?;
    Ok(true)
}
