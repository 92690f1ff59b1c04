//! The latest daily category and brand snapshots (`GET /categories`, `GET /brands`).
//!
//! Both lists are ordered by product_count desc, then by path / brand name
//! as Rust compares them (by bytes, element by element for a path): the
//! `Ord` of [`CategoryEntry`] and [`BrandEntry`]. The two backends would
//! collate Cyrillic and JSON paths differently, so SQL orders the rows by
//! product_count alone (then by id: the snapshot job stores each list in
//! its order), and the entries of one count are put in order here.
//!
//! A list is read within its caller's bounds ([`Bounds`]): at most so many
//! entries, each counted against the answer's byte budget before it is
//! taken, one row at a time; the read stops where the answer is full and
//! says the list was cut ([`Listed::truncated`]). It says so too when the
//! snapshot job cut the list (a row whose count is [`CUT`] follows it).
//! So however many entries a snapshot holds, a read holds at most its
//! budget of them, and reads at most one row more than its entries: a
//! list stored out of order and longer than that (a snapshot made before
//! these bounds) is cut among its entries of one count as they are stored,
//! until the next day's snapshot.

use std::cmp::Ordering;

use entity::{Marketplace, brand_snapshot, category_snapshot};
use futures_util::TryStreamExt;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, ExprTrait, QueryFilter, QueryOrder,
    QuerySelect, Select, StreamTrait,
};

use super::budget::ResponseBudget;
use super::leading::Leading;

/// The `product_count` of the row the snapshot job stores after a list it
/// cut (at its entries or its bytes, see `jobs::snapshots`): below every
/// count, it sorts after the list, and it is never shown.
pub const CUT: i64 = -1;

/// A category entry of the latest snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryEntry {
    pub category_path: Vec<String>,
    pub product_count: i64,
}

/// A brand entry of the latest snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrandEntry {
    pub brand: String,
    pub product_count: i64,
}

/// An entry with the count it is ordered by first.
trait Counted: Ord {
    fn product_count(&self) -> i64;
}

/// Makes `$entry` an entry of a list, ordered as the lists are:
/// product_count desc, then `$name`.
macro_rules! listed_entry {
    ($entry:ty, $name:ident) => {
        impl Counted for $entry {
            fn product_count(&self) -> i64 {
                self.product_count
            }
        }

        impl Ord for $entry {
            fn cmp(&self, other: &Self) -> Ordering {
                other
                    .product_count
                    .cmp(&self.product_count)
                    .then_with(|| self.$name.cmp(&other.$name))
            }
        }

        impl PartialOrd for $entry {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }
    };
}

listed_entry!(CategoryEntry, category_path);
listed_entry!(BrandEntry, brand);

/// How much of a list one answer takes.
pub struct Bounds<'a, T> {
    /// Entries at most (`VITRINA_SNAPSHOT_MAX_ENTRIES`).
    pub max_entries: u64,
    /// The answer's byte budget, which each entry taken is counted against.
    pub budget: &'a ResponseBudget,
    /// The bytes an entry takes in the answer.
    pub size_of: fn(&T) -> u64,
}

/// The start of a list an answer takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed<T> {
    pub entries: Vec<T>,
    /// More entries exist than `entries`: the answer's bounds, or the
    /// snapshot job's, cut the list.
    pub truncated: bool,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            entries: Vec::new(),
            truncated: false,
        }
    }
}

/// The day of the latest snapshot of table `E` in `scope`, if any.
async fn latest_day<E: EntityTrait>(
    db: &impl ConnectionTrait,
    date: E::Column,
    scope: Expr,
) -> Result<Option<chrono::NaiveDate>, DbErr> {
    let latest: Option<Option<chrono::NaiveDate>> = E::find()
        .select_only()
        .column_as(Expr::col(date).max(), "latest")
        .filter(scope)
        .into_tuple()
        .one(db)
        .await?;
    Ok(latest.flatten())
}

/// Categories of one marketplace from its latest snapshot.
pub async fn categories(
    db: &(impl ConnectionTrait + StreamTrait),
    marketplace: Marketplace,
    bounds: &Bounds<'_, CategoryEntry>,
) -> Result<Listed<CategoryEntry>, DbErr> {
    let scope = category_snapshot::Column::Marketplace.eq(marketplace);
    let date = category_snapshot::Column::SnapshotDate;
    let Some(day) = latest_day::<category_snapshot::Entity>(db, date, scope).await? else {
        return Ok(Listed::default());
    };
    let rows = category_snapshot::Entity::find()
        .filter(category_snapshot::Column::Marketplace.eq(marketplace))
        .filter(category_snapshot::Column::SnapshotDate.eq(day))
        .order_by_desc(category_snapshot::Column::ProductCount)
        .order_by_asc(category_snapshot::Column::Id);
    read(db, rows, bounds, |row| CategoryEntry {
        category_path: row.category_path.0,
        product_count: row.product_count,
    })
    .await
}

/// Brands of one marketplace, or across all marketplaces, from the latest snapshot.
pub async fn brands(
    db: &(impl ConnectionTrait + StreamTrait),
    marketplace: Option<Marketplace>,
    bounds: &Bounds<'_, BrandEntry>,
) -> Result<Listed<BrandEntry>, DbErr> {
    let scope = match marketplace {
        Some(m) => brand_snapshot::Column::Marketplace.eq(m),
        None => brand_snapshot::Column::Marketplace.is_null(),
    };
    let date = brand_snapshot::Column::SnapshotDate;
    let Some(day) = latest_day::<brand_snapshot::Entity>(db, date, scope.clone()).await? else {
        return Ok(Listed::default());
    };
    let rows = brand_snapshot::Entity::find()
        .filter(scope)
        .filter(brand_snapshot::Column::SnapshotDate.eq(day))
        .order_by_desc(brand_snapshot::Column::ProductCount)
        .order_by_asc(brand_snapshot::Column::Id);
    read(db, rows, bounds, |row| BrandEntry {
        brand: row.brand,
        product_count: row.product_count,
    })
    .await
}

/// Reads `rows` (ordered by product_count desc) as entries within
/// `bounds`: the entries of one count are gathered in a [`Leading`] set
/// within what is left of the bounds, and taken in order once the count
/// changes. At most one row more than the bounds is read.
async fn read<E, T>(
    db: &(impl ConnectionTrait + StreamTrait),
    rows: Select<E>,
    bounds: &Bounds<'_, T>,
    entry: fn(E::Model) -> T,
) -> Result<Listed<T>, DbErr>
where
    E: EntityTrait,
    T: Counted,
{
    let mut listed = Listed::default();
    let rows = rows.limit(super::one_past(bounds.max_entries));
    let mut rows = std::pin::pin!(rows.stream(db).await?);
    let mut group: Option<(i64, Leading<T>)> = None;
    while let Some(row) = rows.try_next().await? {
        let entry = entry(row);
        let count = entry.product_count();
        let next_count = group.as_ref().is_some_and(|(of, _)| *of != count);
        if next_count
            && let Some((_, leading)) = group.take()
            && !take(&mut listed, leading, bounds.budget)
        {
            return Ok(listed);
        }
        if count == CUT {
            listed.truncated = true;
            return Ok(listed);
        }
        let (_, leading) = group.get_or_insert_with(|| {
            let left = bounds.max_entries - listed.entries.len() as u64;
            (count, Leading::new(left, bounds.budget.remaining()))
        });
        let bytes = (bounds.size_of)(&entry);
        leading.offer(entry, bytes);
    }
    if let Some((_, leading)) = group {
        take(&mut listed, leading, bounds.budget);
    }
    Ok(listed)
}

/// Takes the entries `leading` kept into `listed`, each counted against
/// `budget`; whether the list may go on (nothing was left out).
fn take<T: Ord>(listed: &mut Listed<T>, leading: Leading<T>, budget: &ResponseBudget) -> bool {
    let (kept, cut) = leading.finish();
    for (entry, bytes) in kept {
        // Another part of the same answer may have spent the budget since.
        if !budget.take(bytes) {
            listed.truncated = true;
            return false;
        }
        listed.entries.push(entry);
    }
    listed.truncated |= cut;
    !cut
}
