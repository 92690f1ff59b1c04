//! The latest daily category and brand snapshots (`GET /categories`, `GET /brands`).
//!
//! Both lists are ordered by product_count desc, then by path / brand name.
//! They are small, so they are sorted here rather than in SQL, where the two
//! backends would collate Cyrillic and JSON paths differently.

use entity::{Marketplace, brand_snapshot, category_snapshot};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, ExprTrait, QueryFilter, QuerySelect,
};

/// A category entry of the latest snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryEntry {
    pub category_path: Vec<String>,
    pub product_count: i64,
}

/// A brand entry of the latest snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct BrandEntry {
    pub brand: String,
    pub product_count: i64,
}

/// Categories of one marketplace from its latest snapshot.
pub async fn categories(
    db: &impl ConnectionTrait,
    marketplace: Marketplace,
) -> Result<Vec<CategoryEntry>, DbErr> {
    let latest: Option<chrono::NaiveDate> = category_snapshot::Entity::find()
        .select_only()
        .column_as(
            Expr::col(category_snapshot::Column::SnapshotDate).max(),
            "latest",
        )
        .filter(category_snapshot::Column::Marketplace.eq(marketplace))
        .into_tuple()
        .one(db)
        .await?
        .flatten();
    let Some(day) = latest else {
        return Ok(Vec::new());
    };
    let mut entries: Vec<CategoryEntry> = category_snapshot::Entity::find()
        .filter(category_snapshot::Column::Marketplace.eq(marketplace))
        .filter(category_snapshot::Column::SnapshotDate.eq(day))
        .all(db)
        .await?
        .into_iter()
        .map(|row| CategoryEntry {
            category_path: row.category_path.0,
            product_count: row.product_count,
        })
        .collect();
    entries.sort_by(|a, b| {
        b.product_count
            .cmp(&a.product_count)
            .then_with(|| a.category_path.cmp(&b.category_path))
    });
    Ok(entries)
}

/// Brands of one marketplace, or across all marketplaces, from the latest snapshot.
pub async fn brands(
    db: &impl ConnectionTrait,
    marketplace: Option<Marketplace>,
) -> Result<Vec<BrandEntry>, DbErr> {
    let scope = match marketplace {
        Some(m) => brand_snapshot::Column::Marketplace.eq(m),
        None => brand_snapshot::Column::Marketplace.is_null(),
    };
    let latest: Option<chrono::NaiveDate> = brand_snapshot::Entity::find()
        .select_only()
        .column_as(
            Expr::col(brand_snapshot::Column::SnapshotDate).max(),
            "latest",
        )
        .filter(scope.clone())
        .into_tuple()
        .one(db)
        .await?
        .flatten();
    let Some(day) = latest else {
        return Ok(Vec::new());
    };
    let mut entries: Vec<BrandEntry> = brand_snapshot::Entity::find()
        .filter(scope)
        .filter(brand_snapshot::Column::SnapshotDate.eq(day))
        .all(db)
        .await?
        .into_iter()
        .map(|row| BrandEntry {
            brand: row.brand,
            product_count: row.product_count,
        })
        .collect();
    entries.sort_by(|a, b| {
        b.product_count
            .cmp(&a.product_count)
            .then_with(|| a.brand.cmp(&b.brand))
    });
    Ok(entries)
}
