//! How a name part (`name_contains`) is found on PostgreSQL: through an
//! index, or by testing each entry of the list's own order as it walks.
//!
//! The walk stops once it has found the rows it needs: cheap for a common
//! part, but a part few products hold walks the whole list before it can
//! answer (`name_contains=qz`, 473-506 ms at 1,000,000 products). An index
//! finds a part's products at a cost that follows how many hold it:
//! `products_name_search_trgm` for a part with three letters or digits in
//! a row, `products_name_pairs` (migration 31) for one with two. For a
//! common part that is more than the walk (`lite 5`, 1.9% of products:
//! 173 ms for page 10 through the index, against 39 ms walking), and the
//! planner's estimates cannot tell a rare part from a common one (it
//! estimated 100 rows for `lite 5`, which 18,718 products hold, and took
//! the index). So a probe does: it tests the [`PROBED`]
//! newest entries of the list (an index-only walk of a few milliseconds),
//! and the part is looked up in its index when that reads less than the
//! walk would ([`Found::index_is_cheaper`]), else hidden from the indexes.
//! Looked up, its products are found in the index before they are sorted,
//! whatever the planner estimates (the order is written so that no index
//! yields it): a part only older products hold, which the probe never
//! finds, would otherwise be walked through nearly the whole list.
//!
//! A count that reads too much either way (a part a few percent of
//! products hold, counted to the bound) is estimated from a sample
//! instead, when the part's only other conditions are a marketplace and a
//! trust status keeping a tenth of the catalog or more
//! ([`Probed::counting`]).
//!
//! A part with no two letters or digits in a row is always walked: no
//! index narrows it. SQLite has no such index and always walks.

use std::borrow::Cow;

use entity::product;
use sea_orm::sea_query::{Alias, Asterisk, Expr, ExprTrait, Query, SelectStatement};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, EntityName};

use super::counts::{self, CountLimits, Counting, TOTAL};
use super::products::ProductFilter;
use super::{contains, contains_pattern, estimate, hidden, order};
use crate::text;

/// How many of the newest products a probe tests.
const PROBED: u64 = 5_000;
/// The probe stops counting here (a tenth of what it tests): a part that
/// common is walked whatever the page.
const FOUND_CAP: u64 = PROBED / 10;
/// The column of the probe's answer holding the catalog's size, as the
/// database estimates it ([`estimate::postgres_rows`]).
const ESTIMATED: &str = "estimated_products";
/// The column of the probe's answer holding how many products meet the
/// filter's marketplace, trust status and brand, as the counts kept say
/// ([`counts::kept`]).
const NARROWED: &str = "narrowed_products";

/// The longest run of letters or digits in a folded part: what the
/// trigram indexes can narrow it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// Three or more in a row: the trigram indexes narrow by it.
    Trigram,
    /// Two: only the pairs index (names, PostgreSQL) narrows by it.
    Pair,
    /// One or none: no index narrows by it.
    Letter,
}

impl Run {
    /// What finding one product through the index that narrows the part
    /// costs, in entries of the walk; `None` when no index does. Measured
    /// in one run at 1,000,000 products, counting 10,001 products: the walk
    /// 0.44-0.65 us an entry, the trigram index 4.0 us a product, the pairs
    /// index 15.3 us (each reads the product's row and tests the part
    /// again there, the pairs index on the name written twice).
    fn index_cost(self) -> Option<u128> {
        match self {
            Run::Trigram => Some(8),
            Run::Pair => Some(30),
            Run::Letter => None,
        }
    }
}

/// How a filter's name part is found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NameLookup {
    /// Not probed (SQLite, or a filter read whole for figures): a part with
    /// a trigram is left to the planner, any other is walked.
    #[default]
    Unprobed,
    /// Tested on each entry the walk passes, hidden from every index.
    Walk,
    /// Looked up in the index that narrows it (trigrams, or pairs).
    Index,
}

/// The [`Run`] of `folded`.
pub fn run(folded: &str) -> Run {
    let longest = folded
        .split(|c: char| !c.is_alphanumeric())
        .map(|word| word.chars().take(3).count())
        .max()
        .unwrap_or(0);
    match longest {
        0 | 1 => Run::Letter,
        2 => Run::Pair,
        _ => Run::Trigram,
    }
}

/// A filter whose name part has been probed: what the probe found.
#[derive(Debug)]
pub struct Probed<'f> {
    filter: &'f ProductFilter,
    /// `None` when nothing was probed (SQLite, no name part, or none an
    /// index narrows).
    found: Option<Found>,
}

/// What a probe found.
#[derive(Debug, Clone, Copy)]
struct Found {
    /// How many of the entries tested held the part.
    held: u64,
    /// The catalog's size, as the database last estimated it.
    products: u64,
    /// How many products meet the filter's marketplace, trust status and
    /// brand (all of them when it has none).
    narrowed: u64,
    /// What one product found through the part's index costs (see
    /// [`Run::index_cost`]).
    index_cost: u128,
}

impl<'f> Probed<'f> {
    /// The filter for a statement that reads `need` matching products (or
    /// counts up to `need`): its name part marked to be looked up in its
    /// index or walked, whichever the probe found cheaper for that need.
    pub fn reading(&self, need: u64) -> Cow<'f, ProductFilter> {
        let Some(found) = self.found else {
            return Cow::Borrowed(self.filter);
        };
        let name_lookup = match found.index_is_cheaper(need) {
            true => NameLookup::Index,
            false => NameLookup::Walk,
        };
        Cow::Owned(ProductFilter {
            name_lookup,
            ..self.filter.clone()
        })
    }

    /// How the filter's products are counted within `limits`: exactly up to
    /// the bound, its part found the cheaper way, unless that reads more
    /// than `limits.max_reads` entries, a sample may estimate the filter
    /// ([`counts::may_sample`]), its other conditions keep at least
    /// [`counts::SAMPLED_SHARE`] of the catalog and the sample reads fewer
    /// products than the catalog holds; then estimated from that sample.
    pub fn counting(&self, limits: CountLimits) -> Counting {
        let need = limits.bound.saturating_add(1);
        match self.found {
            Some(found)
                if found.reads(need) > u128::from(limits.max_reads)
                    && limits.sample < found.products
                    && found.narrowed.saturating_mul(counts::SAMPLED_SHARE) >= found.products
                    && counts::may_sample(self.filter) =>
            {
                Counting::sampled(self.filter, limits.sample, found.products, found.narrowed)
            }
            _ => Counting::of(&self.reading(need), limits.bound),
        }
    }
}

/// Probes `filter`'s name part on PostgreSQL when an index could narrow it
/// and nothing has chosen its lookup yet.
pub async fn probe<'f>(
    db: &impl ConnectionTrait,
    filter: &'f ProductFilter,
) -> Result<Probed<'f>, DbErr> {
    let part = filter.name_contains.as_deref().unwrap_or_default();
    let postgres = db.get_database_backend() == DbBackend::Postgres;
    let unprobed = filter.name_lookup == NameLookup::Unprobed;
    let index_cost = run(&text::fold(part)).index_cost();
    let (true, true, Some(index_cost)) = (unprobed, postgres, index_cost) else {
        return Ok(Probed {
            filter,
            found: None,
        });
    };
    let row = db.query_one(&probe_statement(filter, part)).await?;
    let row = row.ok_or_else(|| DbErr::RecordNotFound("the probe's answer".into()))?;
    let held = counts::counted(&row)?;
    let column = |name| Ok::<_, DbErr>(u64::try_from(row.try_get::<i64>("", name)?).unwrap_or(0));
    // An estimate may lag the table; the catalog holds at least those found.
    let (products, narrowed) = (column(ESTIMATED)?, column(NARROWED)?);
    Ok(Probed {
        filter,
        found: Some(Found {
            held,
            products: Ord::max(products, held),
            narrowed,
            index_cost,
        }),
    })
}

/// The name holds `part`, tested as `lookup` says: unprobed, as every
/// substring is ([`contains`]).
pub(super) fn name_holds(part: &str, lookup: NameLookup) -> Expr {
    let column = product::Column::NameSearch;
    let folded = text::fold(part);
    match (lookup, run(&folded)) {
        (NameLookup::Walk, _) => hidden(column, contains_pattern(&folded)),
        (NameLookup::Index, Run::Pair) => in_pairs(&folded),
        _ => contains(column, part),
    }
}

impl Found {
    /// Whether the part's index finds its products for less than a walk
    /// finds `need` of them. A part the probe never found is looked up: the
    /// index finds next to nothing.
    fn index_is_cheaper(&self, need: u64) -> bool {
        self.held == 0 || self.index_reads() < self.walk_reads(need)
    }

    /// What finding `need` products costs the cheaper way, in entries of
    /// the walk.
    fn reads(&self, need: u64) -> u128 {
        Ord::min(self.index_reads(), self.walk_reads(need))
    }

    /// The entries a walk passes to find `need` products: of the `probed`
    /// entries tested, `held` held the part, so about
    /// `need × probed / held`, and at most the catalog.
    fn walk_reads(&self, need: u64) -> u128 {
        let products = u128::from(self.products);
        match self.held {
            0 => products,
            held => Ord::min(
                u128::from(need) * self.probed() / u128::from(held),
                products,
            ),
        }
    }

    /// What the index costs, in entries of the walk: it finds about
    /// `held × products / probed` products, each costing `index_cost`.
    fn index_reads(&self) -> u128 {
        u128::from(self.held) * u128::from(self.products) * self.index_cost / self.probed()
    }

    /// How many entries the probe tested.
    fn probed(&self) -> u128 {
        u128::from(self.products.clamp(1, PROBED))
    }
}

/// How many of the [`PROBED`] newest products hold `part` in their name,
/// counted up to [`FOUND_CAP`], the catalog's estimated size, and how
/// many products meet `filter`'s marketplace, trust status and brand.
fn probe_statement(filter: &ProductFilter, part: &str) -> SelectStatement {
    let (columns, direction) = order::keyset::<product::Entity>();
    let mut newest = Query::select();
    newest
        .column(product::Column::NameSearch)
        .from(product::Entity);
    for column in columns {
        newest.order_by(column, direction.clone());
    }
    newest.limit(PROBED);
    // Named as the table, so that the part's test reads this column.
    let mut hits = Query::select();
    hits.expr(Expr::val(1))
        .from_subquery(newest, product::Entity)
        .and_where(hidden(
            product::Column::NameSearch,
            contains_pattern(&text::fold(part)),
        ))
        .limit(FOUND_CAP);
    let estimated = estimate::postgres_rows(product::Entity.table_name());
    Query::select()
        .expr_as(Expr::col(Asterisk).count(), Alias::new(TOTAL))
        .expr_as(Expr::cust(estimated), Alias::new(ESTIMATED))
        .expr_as(counts::kept(filter), Alias::new(NARROWED))
        .from_subquery(hits, Alias::new("hits"))
        .to_owned()
}

/// The name holds `folded` (a [`Run::Pair`]), tested through
/// `products_name_pairs`: the name with each character written twice holds
/// the part written so. That test is exact: written twice, a character
/// can only begin a match at its first copy, or the part repeats one
/// character and the name holds it anyway.
fn in_pairs(folded: &str) -> Expr {
    let doubled: String = folded.chars().flat_map(|c| [c, c]).collect();
    Expr::cust(migration::NAME_PAIRS).like(contains_pattern(&doubled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_letters_and_digits_are_measured_as_the_trigram_indexes_see_them() {
        assert_eq!(run(""), Run::Letter);
        assert_eq!(run("о"), Run::Letter);
        assert_eq!(run("a-b c"), Run::Letter);
        assert_eq!(run("x1"), Run::Pair);
        assert_eq!(run("ab-cd"), Run::Pair);
        assert_eq!(run("чай"), Run::Trigram);
        assert_eq!(run("x-lite"), Run::Trigram);
    }

    #[test]
    fn the_index_is_chosen_for_a_part_few_products_hold_and_the_walk_for_a_common_one() {
        let found = |held, products, run: Run| Found {
            held,
            products,
            narrowed: products,
            index_cost: run.index_cost().unwrap(),
        };
        let million = 1_000_000;
        // Never found in the probe: the index finds next to nothing.
        assert!(found(0, million, Run::Pair).index_is_cheaper(101));
        // 1.9% of products (`x1`): the walk to page 10 passes ~53,000
        // entries, the index finds 19,000 products.
        assert!(!found(95, million, Run::Pair).index_is_cheaper(1_001));
        // 0.06%: the walk would pass ~170,000 entries, the index finds ~600.
        assert!(found(3, million, Run::Pair).index_is_cheaper(101));
        // A count reads more than a page, and the trigram index costs less
        // a product than the pairs index.
        assert!(!found(95, million, Run::Trigram).index_is_cheaper(21));
        assert!(found(95, million, Run::Trigram).index_is_cheaper(10_001));
        assert!(!found(95, million, Run::Pair).index_is_cheaper(10_001));
        // A small catalog, probed whole: the walk is at most the catalog.
        assert!(!found(150, 300, Run::Pair).index_is_cheaper(501));
        assert!(found(3, 300, Run::Pair).index_is_cheaper(1));
        assert_eq!(Run::Letter.index_cost(), None);
    }

    #[test]
    fn a_count_is_sampled_only_when_its_other_conditions_keep_a_tenth_of_the_catalog() {
        let filter = ProductFilter {
            name_contains: Some("x1".into()),
            marketplace: Some(entity::Marketplace::Ozon),
            ..ProductFilter::default()
        };
        let limits = CountLimits {
            bound: 10_000,
            max_reads: 100_000,
            sample: 20_000,
        };
        // `x1`, 1.9%: its exact count reads ~526,000 entries.
        let estimated = |narrowed| {
            let found = Found {
                held: 95,
                products: 1_000_000,
                narrowed,
                index_cost: Run::Pair.index_cost().unwrap(),
            };
            let probed = Probed {
                filter: &filter,
                found: Some(found),
            };
            !probed.counting(limits).total(1).exact
        };
        assert!(estimated(250_000));
        assert!(estimated(100_000));
        assert!(!estimated(99_999));
    }

    #[test]
    fn a_count_reads_the_cheaper_way() {
        let found = |held, run: Run| Found {
            held,
            products: 1_000_000,
            narrowed: 1_000_000,
            index_cost: run.index_cost().unwrap(),
        };
        let need = 10_001;
        // `x1`, 1.9%: ~526,000 entries walked, or 570,000 through pairs.
        assert_eq!(found(95, Run::Pair).reads(need), 526_368);
        // 0.06%: ~600 products through the index, each 30 entries.
        assert_eq!(found(3, Run::Pair).reads(need), 18_000);
        // Held by a tenth or more: the walk finds the bound in ten times it.
        assert_eq!(found(FOUND_CAP, Run::Trigram).reads(need), 100_010);
        // Never found: the index finds next to nothing.
        assert_eq!(found(0, Run::Trigram).reads(need), 0);
    }
}
