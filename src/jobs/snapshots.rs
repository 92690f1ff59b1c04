//! Daily category and brand snapshots served by `/categories` and `/brands`.
//!
//! A snapshot is computed from the products as they are at that moment and
//! replaces any earlier snapshot of the same day. Categories are counted per
//! marketplace by default-language path (the empty path is an entry of its
//! own); brands per marketplace and across all marketplaces, one entry per
//! case-folded brand, shown in its smallest spelling (by bytes).
//!
//! The products hold as many distinct paths and brands as uploads bring,
//! and one tenant can bring ever new ones, so each list is bounded: it
//! keeps its start in the lists' order (`query::snapshots`), at most
//! `VITRINA_SNAPSHOT_MAX_ENTRIES` entries and no more than one answer of
//! `VITRINA_MAX_RESPONSE_MB` holds as REST writes it, followed by a row
//! counted [`CUT`] when entries were left out. Each list comes from a
//! grouped statement of its own, whose rows are read one at a time into a
//! [`Leading`] set: the job holds the start of each list and one row,
//! never every distinct path. All the lists are read before any is
//! written, and written in one short transaction (see [`compute_within`]).
//! The rows of a list are written in its order, so their ids follow it.

use crate::cache::versions::{DataVersions, Grains};
use chrono::{DateTime, NaiveDate, Utc};
use entity::{Marketplace, StringList, brand_snapshot, category_snapshot, product};
use futures_util::{Stream, TryStreamExt};
use sea_orm::sea_query::{Expr, SimpleExpr};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, ExprTrait,
    QueryFilter, QuerySelect, Select, StreamTrait,
};

use crate::config::Settings;
use crate::db::{begin_write, insert_batched};
use crate::query::leading::Leading;
use crate::query::snapshots::{BrandEntry, CUT, CategoryEntry};
use crate::views::{BrandItem, CategoryItem, list_envelope_len};

/// How much of each list a snapshot keeps.
#[derive(Debug, Clone, Copy)]
pub struct Kept {
    /// Entries at most (`VITRINA_SNAPSHOT_MAX_ENTRIES`).
    pub max_entries: u64,
    /// Bytes of one answer (`VITRINA_MAX_RESPONSE_MB`): entries that would
    /// not fit in it are never shown, so they are not kept.
    pub answer_bytes: u64,
}

impl Kept {
    pub fn of(settings: &Settings) -> Self {
        Kept {
            max_entries: settings.lists.snapshot_max_entries,
            answer_bytes: settings.sizes.max_response_bytes(),
        }
    }

    /// A list's start within these bounds.
    fn leading<T: Ord>(&self) -> Leading<T> {
        let entries_bytes = self.answer_bytes.saturating_sub(list_envelope_len());
        Leading::new(self.max_entries, entries_bytes)
    }
}

/// Computes the snapshots of `day` from the current products and writes
/// them in one transaction, keeping of each list what the default settings
/// keep (the demo data's snapshot).
pub async fn compute(db: &DatabaseConnection, day: NaiveDate) -> Result<(), DbErr> {
    // Other processes learn of it from the database (`cache/versions.rs`).
    let versions = DataVersions::new(true);
    compute_within(db, day, Kept::of(&Settings::default()), &versions).await
}

/// Computes the snapshots of `day` from the current products and writes
/// them in one transaction, keeping of each list what `kept` allows.
///
/// Every list is read before the transaction begins. SQLite has one writer
/// at a time, and the lists of a large catalog take seconds to read (12 to
/// 15 s at 1,000,000 products): read inside the transaction, after its
/// first delete, they held the write lock all that time, and every upload,
/// merge and quota charge waited for it, failing after
/// `VITRINA_DB_WAIT_MS`. The lists read are kept until the write: their
/// starts only, one answer for each marketplace and brand scope.
#[tracing::instrument(skip_all, fields(%day))]
pub async fn compute_within(
    db: &DatabaseConnection,
    day: NaiveDate,
    kept: Kept,
    versions: &DataVersions,
) -> Result<(), DbErr> {
    let mut category_rows = Vec::new();
    for &marketplace in Marketplace::ALL {
        let list = categories(db, marketplace, kept).await?;
        category_rows.extend(with_cut(list, |entry| category_snapshot::ActiveModel {
            snapshot_date: sea_orm::Set(day),
            marketplace: sea_orm::Set(marketplace),
            category_path: sea_orm::Set(StringList(entry.category_path)),
            product_count: sea_orm::Set(entry.product_count),
            ..Default::default()
        }));
    }
    let mut brand_rows = Vec::new();
    let scopes = Marketplace::ALL.iter().copied().map(Some).chain([None]);
    for marketplace in scopes {
        let list = brands(db, marketplace, kept).await?;
        brand_rows.extend(with_cut(list, |entry| brand_snapshot::ActiveModel {
            snapshot_date: sea_orm::Set(day),
            marketplace: sea_orm::Set(marketplace),
            brand: sea_orm::Set(entry.brand),
            product_count: sea_orm::Set(entry.product_count),
            ..Default::default()
        }));
    }

    let txn = begin_write(db).await?;
    category_snapshot::Entity::delete_many()
        .filter(category_snapshot::Column::SnapshotDate.eq(day))
        .exec(&txn)
        .await?;
    brand_snapshot::Entity::delete_many()
        .filter(brand_snapshot::Column::SnapshotDate.eq(day))
        .exec(&txn)
        .await?;
    insert_batched(&txn, category_rows).await?;
    insert_batched(&txn, brand_rows).await?;
    versions.commit(txn, Grains::CATALOG).await
}

/// The start of the category list of `marketplace`: one row per path.
async fn categories(
    db: &(impl ConnectionTrait + StreamTrait),
    marketplace: Marketplace,
    kept: Kept,
) -> Result<Leading<CategoryEntry>, DbErr> {
    let rows = product::Entity::find()
        .select_only()
        .column(product::Column::CategoryPath)
        .column_as(Expr::col(product::Column::Id).count(), "n")
        .filter(product::Column::Marketplace.eq(marketplace))
        .group_by(product::Column::CategoryPath)
        .into_tuple::<(StringList, i64)>()
        .stream(db)
        .await?
        .map_ok(|(path, product_count)| CategoryEntry {
            category_path: path.0,
            product_count,
        });
    leading(rows, kept, CategoryItem::listed_len).await
}

/// The start of the brand list of `marketplace`, or of all marketplaces:
/// one row per case-folded brand.
async fn brands(
    db: &(impl ConnectionTrait + StreamTrait),
    marketplace: Option<Marketplace>,
    kept: Kept,
) -> Result<Leading<BrandEntry>, DbErr> {
    let mut select: Select<product::Entity> = product::Entity::find()
        .select_only()
        .column_as(
            smallest_spelling(ConnectionTrait::get_database_backend(db)),
            "brand",
        )
        .column_as(Expr::col(product::Column::Id).count(), "n")
        .group_by(product::Column::BrandKey);
    if let Some(marketplace) = marketplace {
        select = select.filter(product::Column::Marketplace.eq(marketplace));
    }
    let rows = select
        .into_tuple::<(String, i64)>()
        .stream(db)
        .await?
        .map_ok(|(brand, product_count)| BrandEntry {
            brand,
            product_count,
        });
    leading(rows, kept, BrandItem::listed_len).await
}

/// A brand's smallest spelling, by bytes as the lists' order compares
/// brands: PostgreSQL compares text by its collation unless told `C`.
fn smallest_spelling(backend: DbBackend) -> SimpleExpr {
    match backend {
        DbBackend::Postgres => Expr::cust(r#"MIN("brand" COLLATE "C")"#),
        _ => Expr::col(product::Column::Brand).min(),
    }
}

/// The start of the list `rows` make, read one row at a time.
async fn leading<T: Ord>(
    rows: impl Stream<Item = Result<T, DbErr>>,
    kept: Kept,
    size_of: fn(&T) -> u64,
) -> Result<Leading<T>, DbErr> {
    let mut rows = std::pin::pin!(rows);
    let mut leading = kept.leading();
    while let Some(entry) = rows.try_next().await? {
        let bytes = size_of(&entry);
        leading.offer(entry, bytes);
    }
    Ok(leading)
}

/// The rows of a list's start, in order, and when entries were left out,
/// the row counted [`CUT`] after them (of an empty path or brand).
fn with_cut<T: Ord + CutMarker, A>(list: Leading<T>, row: impl Fn(T) -> A) -> Vec<A> {
    let (entries, cut) = list.finish();
    let marker = cut.then(T::cut_marker);
    entries
        .into_iter()
        .map(|(entry, _)| entry)
        .chain(marker)
        .map(row)
        .collect()
}

/// The entry stored after a list that was cut.
trait CutMarker {
    fn cut_marker() -> Self;
}

impl CutMarker for CategoryEntry {
    fn cut_marker() -> Self {
        CategoryEntry {
            category_path: Vec::new(),
            product_count: CUT,
        }
    }
}

impl CutMarker for BrandEntry {
    fn cut_marker() -> Self {
        BrandEntry {
            brand: String::new(),
            product_count: CUT,
        }
    }
}

/// Computes today's snapshots (UTC) unless they exist; returns whether it did.
/// Run at start and on every scheduler tick, this makes one snapshot a day.
pub async fn ensure_today(
    db: &DatabaseConnection,
    now: DateTime<Utc>,
    kept: Kept,
    versions: &DataVersions,
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
    compute_within(db, day, kept, versions).await?;
    Ok(true)
}
