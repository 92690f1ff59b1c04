//! What reads that scan rows cost, in complexity points, costed before a
//! request runs with the rest of its complexity (async-graphql's, checked
//! after validation). A page reads its own rows through an index, and its
//! page size costs it; a count reads at most the rows it counts, and a
//! substring filter may read every product to find a page's rows (a rare
//! substring finds none after reading them all). Those are costed by the
//! rows they may read:
//! - a count of products (`totalCount` of a products list) whose filter
//!   has nothing but a marketplace, a trust status and a brand sums a
//!   few kept counts (`query::counts`): [`KEPT_COUNT`] points, whatever the catalog;
//! - any other count of products stops past the count bound
//!   (`VITRINA_COUNT_BOUND`): 1 point plus one per [`ROWS_PER_POINT`]
//!   products of the bound;
//! - a substring filter (`nameContains`, `sellerCodeContains`) reads each
//!   product's text, not an index entry, and may read the whole catalog
//!   before it finds a page's rows or the bound's: [`SUBSTRING_WEIGHT`]
//!   points per [`ROWS_PER_POINT`] products of the catalog (at least
//!   [`SCAN_FLOOR`] of them, at most [`SCAN_CEILING`]), once per list that
//!   has one (its page and its count). Past the ceiling the per-account
//!   database-time budget (`limits::db_time`) charges what a scan really
//!   took, so a substring search stays accepted in a catalog of any size
//!   and no account can loop it for more than its share;
//! - a price filter (`currency`, `priceMin`, `priceMax`, `inStock`) tests
//!   each product it walks by one index entry of `lowest_prices`, and a
//!   narrow range may walk the whole catalog for a page: one point per
//!   [`ROWS_PER_POINT`] products of the catalog (between the same floor
//!   and ceiling), once per list that has one;
//! - `productStats` whose filter has nothing but a marketplace, a trust
//!   status, stock and a category reads the kept price levels (`query::stats`):
//!   [`KEPT_STATS`] points, whatever the catalog;
//! - a trend (`priceIndex`, `priceMovers`) reads the history of every
//!   product its filter matches, which may be the whole catalog's: one
//!   point per [`ROWS_PER_POINT`] price observations (between the same
//!   floor and ceiling), with a walk of the products' lowest prices;
//! - a count of one parent's rows through the index on the parent (a
//!   seller's products, a product's price history, an account's sessions, a
//!   session's submissions): 1 point, plus one per [`ROWS_PER_POINT`] rows a
//!   parent has on average.
//!
//! The rows are the database's own estimates (`query::estimate`), read
//! again at most once a [`REFRESH_EVERY`] by a request being costed
//! ([`CostBook`]). async-graphql costs fields in plain functions with no
//! state, so the costs reach them through a task-local that
//! `analysis::Validated` sets around each validation ([`with_costs`]).

use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sea_orm::DatabaseConnection;

use crate::config::DEFAULT_COUNT_BOUND;
use crate::graphql::schema::relay_connection::{COUNTED, MOST, page_cost};
use crate::query::estimate::{self, TableRows};
use crate::query::products::ProductFilter;
use crate::query::{counts, stats};

/// Rows a count reads for one complexity point.
pub const ROWS_PER_POINT: u64 = 1_000;
/// A count answered from the kept counts: a sum of a few rows, the work of
/// a page of one.
pub const KEPT_COUNT: usize = 1;
/// `productStats` answered from the kept price levels: a sum of at most a
/// few thousand level rows, and four walks within one level each (4% of
/// the prices, a few thousand index entries at 1,000,000 products).
pub const KEPT_STATS: usize = 10;
/// The fewest thousands of products a substring filter is costed for,
/// whatever the catalog holds, so that many of them never come cheap.
pub const SCAN_FLOOR: usize = 100;
/// The most thousands of products a substring filter is costed for: with
/// the default complexity limit (10,000) a search of a million products
/// and its count still fit in one request.
pub const SCAN_CEILING: usize = 500;
/// How much more a substring filter costs than an index walk of the same
/// rows: SQLite counts 20,000 products through an index in 0.2 ms and
/// reads their names for a substring in 12-16 ms.
pub const SUBSTRING_WEIGHT: usize = 10;
/// How long the table estimates are used before they are read again.
pub const REFRESH_EVERY: Duration = Duration::from_secs(60);
/// How long a request waits for them: with the pool busy, it goes on with
/// the costs in force rather than wait for a connection.
pub const READ_WITHIN: Duration = Duration::from_millis(100);

/// The costs of the reads that scan, from the rows of the tables they read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanCosts {
    /// A count of the products matching a filter that the kept counts do
    /// not answer: at most the count bound.
    pub bounded_count: usize,
    /// A substring filter over the products.
    pub substring: usize,
    /// A price filter over the products.
    pub price_filter: usize,
    /// A walk of the price history of many products (trends).
    pub history_walk: usize,
    /// A count of one seller's products.
    pub seller_products: usize,
    /// A count of one product's price observations.
    pub product_history: usize,
    /// A count of one account's sessions.
    pub account_sessions: usize,
    /// A count of one session's submissions.
    pub session_submissions: usize,
}

impl ScanCosts {
    /// The costs of reads over tables of `rows`, counts stopping past
    /// `count_bound`.
    pub fn of(rows: &TableRows, count_bound: u64) -> ScanCosts {
        let points = |rows: u64| usize::try_from(rows / ROWS_PER_POINT).unwrap_or(usize::MAX);
        let per_parent = |rows: u64, parents: u64| 1 + points(rows / parents.max(1));
        ScanCosts {
            bounded_count: 1 + points(count_bound),
            substring: points(rows.products)
                .clamp(SCAN_FLOOR, SCAN_CEILING)
                .saturating_mul(SUBSTRING_WEIGHT),
            price_filter: points(rows.products).clamp(SCAN_FLOOR, SCAN_CEILING),
            history_walk: points(rows.price_observations).clamp(SCAN_FLOOR, SCAN_CEILING),
            seller_products: per_parent(rows.products, rows.sellers),
            product_history: per_parent(rows.price_observations, rows.products),
            account_sessions: per_parent(rows.scrape_sessions, rows.accounts),
            session_submissions: per_parent(rows.submissions, rows.scrape_sessions),
        }
    }
}

tokio::task_local! {
    /// The costs of the request being validated.
    static SCAN_COSTS: ScanCosts;
}

/// Runs `validation` with `costs` for the complexity functions below.
pub async fn with_costs<F: Future>(costs: ScanCosts, validation: F) -> F::Output {
    SCAN_COSTS.scope(costs, validation).await
}

/// The costs set by [`with_costs`]; outside it (a schema that only executes
/// what was costed before), those of an empty catalog and the default bound.
pub fn current() -> ScanCosts {
    SCAN_COSTS
        .try_with(|costs| *costs)
        .unwrap_or_else(|_| ScanCosts::of(&TableRows::default(), DEFAULT_COUNT_BOUND))
}

/// The complexity of a whole request, whose fields add up to `complexity`:
/// a `totalCount` outside any list that costs it (none is, in this
/// schema) is costed as the dearest count of products.
pub fn settle(complexity: usize, costs: &ScanCosts) -> usize {
    let (counts, fields) = (complexity / COUNTED, complexity % COUNTED);
    fields.saturating_add(counts.saturating_mul(costs.bounded_count))
}

/// What a count of the products matching `filter` costs.
fn count_of(filter: &Option<ProductFilter>, costs: &ScanCosts) -> usize {
    match filter.as_ref().is_none_or(counts::is_kept) {
        true => KEPT_COUNT,
        false => costs.bounded_count,
    }
}

/// What a products filter's scans cost: a substring's, a price filter's.
fn scans_of(filter: &Option<ProductFilter>, costs: &ScanCosts) -> usize {
    let Some(filter) = filter else { return 0 };
    let substring = match filter.has_substring() {
        true => costs.substring,
        false => 0,
    };
    let price = match filter.has_price() {
        true => costs.price_filter,
        false => 0,
    };
    substring.saturating_add(price)
}

// The complexity of each field that scans, as its `#[graphql(complexity)]`
// computes it from its arguments and the sum of its fields' (`child`).

/// A list's page with `count` for each `totalCount` asked, and `always`
/// for what it reads whatever is asked.
fn page_with(
    first: Option<i32>,
    last: Option<i32>,
    child: usize,
    count: usize,
    always: usize,
) -> usize {
    page_cost(first, last, child, count)
        .saturating_add(always)
        .min(MOST)
}

/// `products(filter)`: its page, each count of the products, and its
/// filter's scans.
pub fn products(
    filter: &Option<ProductFilter>,
    first: Option<i32>,
    last: Option<i32>,
    child: usize,
) -> usize {
    let costs = current();
    let scans = scans_of(filter, &costs);
    page_with(first, last, child, count_of(filter, &costs), scans)
}

/// A seller's `products`: its page and each count of them (a seller's
/// products are not among the kept counts).
pub fn seller_products(first: Option<i32>, last: Option<i32>, child: usize) -> usize {
    page_with(first, last, child, current().bounded_count, 0)
}

/// A session's `products` and `submissions`: the page, and the count of
/// the session's submissions it runs (which is its `totalCount`).
pub fn submissions(first: Option<i32>, last: Option<i32>, child: usize) -> usize {
    page_with(first, last, child, 0, current().session_submissions)
}

/// `scrapeSessions`: its page and the count of the account's sessions it runs.
pub fn scrape_sessions(first: Option<i32>, last: Option<i32>, child: usize) -> usize {
    page_with(first, last, child, 0, current().account_sessions)
}

/// A `priceHistory`: its page and each count of the product's observations.
pub fn price_history(first: Option<i32>, last: Option<i32>, child: usize) -> usize {
    page_with(first, last, child, current().product_history, 0)
}

/// A product's `priceSeries`: it reads the product's history in range,
/// costed as a count of it, and the fields of a point.
pub fn price_series(child: usize) -> usize {
    current().product_history.saturating_add(child).min(MOST)
}

/// `productStats(filter)`: with no condition but a marketplace, a trust
/// status, stock and a category, [`KEPT_STATS`] (`query::stats` reads the kept price
/// levels); else its filter's scans, and two walks of the matching
/// products' lowest prices (the aggregates, then the median's).
pub fn product_stats(filter: &Option<ProductFilter>) -> usize {
    if stats::from_kept_levels(filter.as_ref().unwrap_or(&ProductFilter::default())) {
        return KEPT_STATS;
    }
    let costs = current();
    scans_of(filter, &costs)
        .saturating_add(costs.price_filter.saturating_mul(2))
        .min(MOST)
}

/// `priceIndex(filter)` and `priceMovers(filter)`: its filter's scans, a
/// walk of the matching products' lowest prices, and one of their history
/// (as much as the whole catalog's), and the fields of what it returns.
pub fn price_trend(filter: &Option<ProductFilter>, child: usize) -> usize {
    let costs = current();
    scans_of(filter, &costs)
        .saturating_add(costs.price_filter)
        .saturating_add(costs.history_walk)
        .saturating_add(child)
        .min(MOST)
}

/// `priceMovers(filter)`: a trend, and the fields of each of its `first`
/// movers (10 when not given).
pub fn price_movers(filter: &Option<ProductFilter>, first: Option<i32>, child: usize) -> usize {
    let movers = usize::try_from(first.unwrap_or(crate::graphql::schema::trends::DEFAULT_MOVERS))
        .unwrap_or(0);
    price_trend(filter, child.saturating_mul(movers))
}

/// A seller's `productCount`.
pub fn seller_product_count() -> usize {
    current().seller_products
}

/// `sellers(lookup)`: the sellers found, whose products it counts.
pub fn sellers(child: usize) -> usize {
    child
        .saturating_add(1)
        .saturating_add(current().seller_products)
        .min(MOST)
}

/// The costs in force, and the table estimates they come from, read
/// again once they are [`REFRESH_EVERY`] old.
pub struct CostBook {
    db: DatabaseConnection,
    count_bound: u64,
    book: Mutex<Book>,
}

struct Book {
    costs: ScanCosts,
    /// Changes whenever the costs do, so a cost costed before can be told
    /// from one costed at today's costs (`request/parsed.rs`).
    generation: u64,
    /// When the estimates were last read (or tried); `None` before.
    read_at: Option<Instant>,
    /// A request is reading them now: others use the costs as they are.
    reading: bool,
}

impl CostBook {
    pub fn new(db: DatabaseConnection, count_bound: u64) -> Self {
        CostBook {
            db,
            count_bound,
            book: Mutex::new(Book {
                costs: ScanCosts::of(&TableRows::default(), count_bound),
                generation: 0,
                read_at: None,
                reading: false,
            }),
        }
    }

    /// The costs in force and their generation.
    pub fn current(&self) -> (ScanCosts, u64) {
        let book = self.lock();
        (book.costs, book.generation)
    }

    /// Reads the estimates again when they are due, within [`READ_WITHIN`];
    /// one request at a time does, the others go on with the costs in
    /// force. A failure is logged, and the costs stay until the next time
    /// they are due.
    pub async fn refresh_if_due(&self) {
        {
            let mut book = self.lock();
            let due = book.read_at.is_none_or(|at| at.elapsed() >= REFRESH_EVERY);
            if !due || book.reading {
                return;
            }
            book.reading = true;
        }
        // Also when this request is dropped while it reads.
        let _reading = Reading(self);
        let read = tokio::time::timeout(READ_WITHIN, estimate::table_rows(&self.db)).await;
        let mut book = self.lock();
        book.read_at = Some(Instant::now());
        match read {
            Ok(Ok(rows)) => {
                let costs = ScanCosts::of(&rows, self.count_bound);
                if costs != book.costs {
                    book.costs = costs;
                    book.generation += 1;
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the table estimates that scan costs come from were not read")
            }
            Err(_) => tracing::warn!(
                within_ms = READ_WITHIN.as_millis(),
                "the table estimates that scan costs come from were not read in time"
            ),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        // The book holds whole values: a poisoned lock still holds them.
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A request reading the estimates; when it ends, others may again.
struct Reading<'a>(&'a CostBook);

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.lock().reading = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_count_costs_its_bound_whatever_the_catalog_and_a_substring_grows_to_a_ceiling() {
        let of_catalog = |products| {
            let rows = TableRows {
                products,
                ..TableRows::default()
            };
            ScanCosts::of(&rows, 10_000)
        };
        let small = of_catalog(20_000);
        assert_eq!(small.bounded_count, 1 + 10);
        assert_eq!(small.substring, SCAN_FLOOR * SUBSTRING_WEIGHT);
        assert_eq!(small.price_filter, SCAN_FLOOR);
        assert_eq!(of_catalog(300_000).substring, 300 * SUBSTRING_WEIGHT);
        assert_eq!(of_catalog(300_000).price_filter, 300);
        let large = of_catalog(1_000_000);
        assert_eq!(large.bounded_count, 1 + 10);
        assert_eq!(large.substring, SCAN_CEILING * SUBSTRING_WEIGHT);
        assert_eq!(large.price_filter, SCAN_CEILING);
        assert_eq!(of_catalog(10_000_000).substring, large.substring);
        let tight = ScanCosts::of(&TableRows::default(), 50);
        assert_eq!(tight.bounded_count, 1);
    }

    #[test]
    fn a_count_the_kept_counts_answer_costs_the_same_whatever_its_marketplace_status_and_brand() {
        let costs = ScanCosts::of(&TableRows::default(), 10_000);
        let kept = ProductFilter {
            marketplace: Some(entity::Marketplace::Ozon),
            trust_status: Some(entity::TrustStatus::Verified),
            brand: Some(String::new()),
            ..ProductFilter::default()
        };
        assert_eq!(count_of(&None, &costs), KEPT_COUNT);
        assert_eq!(count_of(&Some(kept), &costs), KEPT_COUNT);
        let branded = ProductFilter {
            brand: Some("Acme".into()),
            marketplace: Some(entity::Marketplace::Ozon),
            ..ProductFilter::default()
        };
        assert_eq!(count_of(&Some(branded), &costs), KEPT_COUNT);
        let coded = ProductFilter {
            seller_code: Some("A-1".into()),
            ..ProductFilter::default()
        };
        assert_eq!(count_of(&Some(coded), &costs), costs.bounded_count);
    }

    #[test]
    fn a_parents_count_grows_with_the_rows_a_parent_has_on_average() {
        let rows = TableRows {
            products: 1_000_000,
            sellers: 100,
            price_observations: 11_000_000,
            accounts: 0,
            scrape_sessions: 5_000,
            submissions: 500_000,
        };
        let costs = ScanCosts::of(&rows, 10_000);
        assert_eq!(costs.seller_products, 1 + 10);
        assert_eq!(costs.product_history, 1);
        assert_eq!(costs.account_sessions, 1 + 5);
        assert_eq!(costs.session_submissions, 1);
    }

    #[tokio::test]
    async fn the_costs_reach_the_complexity_functions_only_inside_with_costs() {
        let rows = TableRows {
            products: 5_000_000,
            ..TableRows::default()
        };
        let large = ScanCosts::of(&rows, 10_000);
        assert_eq!(with_costs(large, async { current() }).await, large);
        assert_eq!(
            current(),
            ScanCosts::of(&TableRows::default(), DEFAULT_COUNT_BOUND)
        );
    }
}
