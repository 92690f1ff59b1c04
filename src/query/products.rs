//! Products: the filters of `GET /products`, lookups by id, and the batched
//! loading of everything a product shows (seller, prices, special prices,
//! translations) with a constant number of statements per page. Every read
//! of products counts them against the answer's byte budget as they arrive
//! ([`ResponseBudget`]).

use std::collections::HashMap;

use entity::{
    Marketplace, TrustStatus, lowest_price, price_observation, product, product_category, seller,
};
use futures_util::TryStreamExt;
use sea_orm::sea_query::{Expr, Func, Query, SelectStatement};
use sea_orm::{
    ColumnTrait, ColumnType, Condition, ConnectionTrait, DbBackend, DbErr, EntityTrait, ExprTrait,
    FromQueryResult, IdenStatic, Iterable, JoinType, QueryFilter, QueryOrder, QuerySelect,
    QueryTrait, RelationTrait, Select, StreamTrait,
};
use uuid::Uuid;

use super::budget::ResponseBudget;
use super::children::{Columns, List};
use super::counts::{self, CountLimits, TOTAL, Total};
use super::keyset::{Slice, Window};
use super::order;
use super::product_lists::{Asked, Lists, PARENT, Read, Statements};
use super::product_order::{OrderDirection, ProductKey, ProductOrder, ProductOrderField};
use super::{
    MAX_CONTAINS_LEN, Page, QueryError, check_length, check_text, check_texts, check_url, contains,
    name_parts::{self, NameLookup},
};
use crate::text;

/// The filters of products (REST `GET /v1/products`, GraphQL `products`),
/// combined with AND. Empty strings count as absent.
#[derive(Debug, Clone, Default, async_graphql::InputObject)]
#[graphql(name = "ProductFilterInput")]
pub struct ProductFilter {
    /// One of the four marketplaces.
    pub marketplace: Option<Marketplace>,
    /// Seller's id on the marketplace; alone it is not unique across marketplaces.
    pub seller_id: Option<String>,
    /// Seller's or brand's own SKU; exact match.
    pub seller_code: Option<String>,
    /// Case-insensitive substring of the seller code (at most 200 characters).
    pub seller_code_contains: Option<String>,
    /// Marketplace SKU; unique only with marketplace.
    pub external_id: Option<String>,
    /// Product page URL; query string and fragment are ignored. One that is
    /// nothing without them (`?x`, `#`, `http://`) is refused.
    pub url: Option<String>,
    /// Equal (case-insensitive) to any level of the category path, in any known language.
    pub category: Option<String>,
    /// Exact, case-insensitive brand.
    pub brand: Option<String>,
    /// Case-insensitive substring of the name in any known language (at most 200 characters).
    pub name_contains: Option<String>,
    /// Only products of this trust status; all when omitted.
    pub trust_status: Option<TrustStatus>,
    /// Only these products (a watch-list), at most 500 ids; GraphQL only.
    pub ids: Option<Vec<Uuid>>,
    /// Only products with a current price in this currency, written as the
    /// marketplaces write it (`RUB`, `KZT`, `BYN`); `priceMin`, `priceMax`
    /// and `inStock` then look at the prices in it alone. GraphQL only.
    pub currency: Option<String>,
    /// Only products whose lowest current price in `currency` is at least
    /// this (inclusive); needs `currency`. GraphQL only.
    pub price_min: Option<f64>,
    /// Only products whose lowest current price in `currency` is at most
    /// this (inclusive); needs `currency`. GraphQL only.
    pub price_max: Option<f64>,
    /// Only products with (`true`) or without (`false`) a current price in
    /// stock, in `currency` when given. A price is in stock when its stock
    /// quantity is above 0, or, with no quantity known, when its stock
    /// status is known and not `out_of_stock`. GraphQL only.
    pub in_stock: Option<bool>,
    /// How `name_contains` is found, which the query layer chooses by a
    /// probe ([`name_parts::probe`]); the answer is the same either way.
    #[graphql(skip)]
    pub name_lookup: NameLookup,
}

/// Most ids one products filter may list.
pub const MAX_FILTER_IDS: usize = 500;

pub(super) fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

impl ProductFilter {
    /// The text filters, by their parameter names. Destructured whole, so
    /// a new field cannot be left out of the checks and counts that use it.
    pub(super) fn texts(&self) -> [(&'static str, &Option<String>); 9] {
        let ProductFilter {
            marketplace: _,
            seller_id,
            seller_code,
            seller_code_contains,
            external_id,
            url,
            category,
            brand,
            name_contains,
            trust_status: _,
            ids: _,
            currency,
            price_min: _,
            price_max: _,
            in_stock: _,
            name_lookup: _,
        } = self;
        [
            ("seller_id", seller_id),
            ("seller_code", seller_code),
            ("seller_code_contains", seller_code_contains),
            ("external_id", external_id),
            ("url", url),
            ("category", category),
            ("brand", brand),
            ("name_contains", name_contains),
            ("currency", currency),
        ]
    }

    /// Whether a filter on the products' current prices is given.
    pub fn has_price(&self) -> bool {
        given(&self.currency).is_some()
            || self.price_min.is_some()
            || self.price_max.is_some()
            || self.in_stock.is_some()
    }

    /// Whether a substring filter is given: it reads the products' texts.
    pub fn has_substring(&self) -> bool {
        given(&self.name_contains).is_some() || given(&self.seller_code_contains).is_some()
    }

    /// Checks every text against the rule of text parameters
    /// ([`check_text`](super::check_text)), the `*_contains` length limit
    /// and the number of ids.
    pub fn validate(&self) -> Result<(), QueryError> {
        check_texts(&self.texts())?;
        check_url("url", &self.url)?;
        for (name, value) in [
            ("seller_code_contains", &self.seller_code_contains),
            ("name_contains", &self.name_contains),
        ] {
            if let Some(value) = value {
                check_length(name, value, MAX_CONTAINS_LEN)?;
            }
        }
        let bounds = [("priceMin", self.price_min), ("priceMax", self.price_max)];
        for (name, bound) in bounds {
            match bound {
                Some(value) if !value.is_finite() => {
                    return Err(QueryError::Invalid(format!(
                        "{name} must be a finite number"
                    )));
                }
                Some(_) if given(&self.currency).is_none() => {
                    return Err(QueryError::Missing(format!(
                        "{name} compares the lowest price in one currency: pass currency too"
                    )));
                }
                _ => {}
            }
        }
        match &self.ids {
            Some(ids) if ids.len() > MAX_FILTER_IDS => Err(QueryError::Invalid(format!(
                "ids lists {} products, more than the {MAX_FILTER_IDS} one filter may name",
                ids.len()
            ))),
            _ => Ok(()),
        }
    }

    /// This filter narrowed to products with a current price in `currency`,
    /// validated, for the figures of one currency (statistics, an index,
    /// movers). A filter that names a currency must name this one.
    pub fn priced_in(&self, currency: &str) -> Result<ProductFilter, QueryError> {
        check_text("currency", currency)?;
        if let Some(other) = given(&self.currency)
            && other != currency
        {
            return Err(QueryError::Invalid(format!(
                "filter.currency is {other} and currency {currency}: the figures are of one currency"
            )));
        }
        let filter = ProductFilter {
            currency: Some(currency.to_owned()),
            ..self.clone()
        };
        filter.validate()?;
        Ok(filter)
    }

    /// Whether a page of this filter tests rows one by one as it walks the
    /// list: a substring, a price filter, or two of the broad filters
    /// (marketplace, trust status, category), which no one index orders
    /// together. Its cost grows with its depth faster than the rows it skips.
    pub fn tests_rows(&self) -> bool {
        let broad = [
            self.marketplace.is_some(),
            self.trust_status.is_some(),
            given(&self.category).is_some(),
        ];
        self.has_substring()
            || self.has_price()
            || broad.into_iter().filter(|given| *given).count() > 1
    }

    /// The WHERE condition on products (the category is a join, see
    /// [`ProductFilter::matching`]); every branch is backed by an index.
    /// The price filters test the product's `lowest_prices` rows as `row` says.
    fn condition(&self, row: PriceRow) -> Condition {
        let cond = self.product_condition();
        match (row, self.prices()) {
            (PriceRow::Joined, _) => cond.add(self.price_row()),
            (PriceRow::Exists, Some(prices)) => cond.add(prices),
            (PriceRow::Exists, None) => cond,
        }
    }

    /// [`ProductFilter::condition`] without the price filters.
    fn product_condition(&self) -> Condition {
        let mut cond = Condition::all();
        if let Some(m) = self.marketplace {
            cond = cond.add(product::Column::Marketplace.eq(m));
        }
        if let Some(seller_id) = given(&self.seller_id) {
            let mut sellers = Query::select();
            sellers
                .column(seller::Column::Id)
                .from(seller::Entity)
                .and_where(seller::Column::SellerId.eq(seller_id));
            if let Some(m) = self.marketplace {
                sellers.and_where(seller::Column::Marketplace.eq(m));
            }
            cond = cond.add(product::Column::SellerRef.in_subquery(sellers.to_owned()));
        }
        if let Some(code) = given(&self.seller_code) {
            cond = cond.add(product::Column::SellerCode.eq(code));
        }
        if let Some(part) = given(&self.seller_code_contains) {
            cond = cond.add(contains(product::Column::SellerCodeKey, part));
        }
        if let Some(external_id) = given(&self.external_id) {
            cond = cond.add(product::Column::ExternalId.eq(external_id));
        }
        if let Some(url) = given(&self.url) {
            cond = cond.add(product::Column::Url.eq(text::normalize_url(url)));
        }
        if let Some(brand) = given(&self.brand) {
            cond = cond.add(product::Column::BrandKey.eq(text::fold(brand)));
        }
        if let Some(part) = given(&self.name_contains) {
            cond = cond.add(name_parts::name_holds(part, self.name_lookup));
        }
        if let Some(status) = self.trust_status {
            cond = cond.add(product::Column::TrustStatus.eq(status));
        }
        if let Some(ids) = &self.ids {
            cond = cond.add(product::Column::Id.is_in(ids.iter().copied()));
        }
        cond
    }

    /// The `lowest_prices` rows of the matching products in the filter's
    /// currency (`product_id`, `price`), unordered: read from
    /// `lowest_prices` alone when the filter tests nothing of the products
    /// but what those rows carry ([`ProductFilter::on_price_rows`]), else
    /// joined to the products.
    pub(super) fn lowest_prices(&self) -> SelectStatement {
        use lowest_price::Column;
        if let Some(rows) = self.on_price_rows() {
            return lowest_price::Entity::find()
                .select_only()
                .columns([Column::ProductId, Column::Price])
                .filter(rows)
                .into_query();
        }
        let order = ProductOrder {
            field: ProductOrderField::Price,
            direction: OrderDirection::Asc,
        };
        self.matching_in(order)
            .select_only()
            .columns([Column::ProductId, Column::Price])
            .into_query()
    }

    /// The ids of the matching products priced in the filter's currency:
    /// [`ProductFilter::lowest_prices`] without the prices.
    pub(super) fn priced_ids(&self) -> SelectStatement {
        let mut ids = self.lowest_prices();
        ids.clear_selects()
            .column((lowest_price::Entity, lowest_price::Column::ProductId));
        ids
    }

    /// The whole filter as a test of `lowest_prices` rows alone, when it
    /// tests nothing of the products but a marketplace and a trust status
    /// (copied onto each row) and a category (the ids its index rows
    /// hold): no product row is read. Joined to the products, the
    /// statistics of a category of 151,849 priced products took 871 ms
    /// instead of 491 on PostgreSQL (1,000,000 products).
    fn on_price_rows(&self) -> Option<Condition> {
        use lowest_price::Column;
        let elsewhere = ProductFilter {
            marketplace: None,
            trust_status: None,
            category: None,
            ..self.clone()
        };
        if !elsewhere.product_condition().is_empty() {
            return None;
        }
        let members = given(&self.category).map(category_members);
        Some(
            self.price_row()
                .add_option(self.marketplace.map(|m| Column::Marketplace.eq(m)))
                .add_option(self.trust_status.map(|s| Column::TrustStatus.eq(s)))
                .add_option(members.map(|ids| Column::ProductId.in_subquery(ids))),
        )
    }

    /// The price filters on one `lowest_prices` row: its currency, its
    /// price within the bounds, its stock (within a currency).
    fn price_row(&self) -> Condition {
        use lowest_price::Column;
        let currency = given(&self.currency);
        let stocked = currency.and(self.in_stock);
        Condition::all()
            .add_option(currency.map(|c| Column::Currency.eq(c)))
            .add_option(self.price_min.map(|min| Column::Price.gte(min)))
            .add_option(self.price_max.map(|max| Column::Price.lte(max)))
            .add_option(stocked.map(|stocked| Column::InStock.eq(stocked)))
    }

    /// The price filters as a test of the product's `lowest_prices` rows
    /// (one per currency, found by the product's id), or `None` without
    /// any. `inStock` without a currency asks whether a row of any
    /// currency is in stock: `false`, that none is.
    fn prices(&self) -> Option<Expr> {
        use lowest_price::Column;
        if !self.has_price() {
            return None;
        }
        let mut rows = Query::select();
        rows.expr(Expr::val(1))
            .from(lowest_price::Entity)
            .and_where(
                Expr::col((lowest_price::Entity, Column::ProductId))
                    .equals((product::Entity, product::Column::Id)),
            )
            .cond_where(self.price_row());
        Some(match (given(&self.currency), self.in_stock) {
            (None, Some(stocked)) => {
                rows.and_where(Column::InStock.eq(true));
                match stocked {
                    true => Expr::exists(rows),
                    false => Expr::exists(rows).not(),
                }
            }
            _ => Expr::exists(rows),
        })
    }

    /// Matching products, unordered. A category joins its index rows.
    pub(super) fn matching(&self) -> Select<product::Entity> {
        self.matching_with(PriceRow::Exists)
    }

    /// [`ProductFilter::matching`], its price filters tested as `row` says.
    fn matching_with(&self, row: PriceRow) -> Select<product::Entity> {
        let select = product::Entity::find().filter(self.condition(row));
        match given(&self.category) {
            Some(category) => select
                .inner_join(product_category::Entity)
                .filter(product_category::Column::CategoryKey.eq(text::fold(category))),
            None => select,
        }
    }

    /// The columns of `order` and its direction. A category's index rows
    /// carry those of the default order too, so with a category the index
    /// yields that order and a page stops after its own rows.
    fn order_columns(&self, order: ProductOrder) -> (Vec<Expr>, sea_orm::Order) {
        let mut columns: Vec<Expr> = match order.columns() {
            Some(columns) => columns.into(),
            None => {
                let (columns, _) = order::keyset::<product::Entity>();
                let indexed = given(&self.category).is_some();
                columns
                    .into_iter()
                    .map(|column| match (indexed, in_category_index(column)) {
                        (true, Some(twin)) => twin.into_expr(),
                        _ => column.into_expr(),
                    })
                    .collect()
            }
        };
        if self.name_lookup == NameLookup::Index
            && let Some(first) = columns.first_mut()
        {
            *first = unordered(first.clone());
        }
        (columns, order.direction())
    }

    /// Matching products, unordered, with the `lowest_prices` row that
    /// `order` sorts by when it sorts by price (one per product: the
    /// filter's currency). The price filters then test that row: the same
    /// row tested again through a subquery would be read once more for
    /// each product the walk passes.
    fn matching_in(&self, order: ProductOrder) -> Select<product::Entity> {
        match (order.field, given(&self.currency)) {
            (ProductOrderField::Price, Some(_)) => self.matching_with(PriceRow::Joined).join(
                JoinType::InnerJoin,
                lowest_price::Relation::Product.def().rev(),
            ),
            _ => self.matching(),
        }
    }

    /// The ids of the matching products, unordered. A category alone reads
    /// its own index rows without joining products (each row has its
    /// product: a foreign key), so each row read is one index entry.
    pub(super) fn matching_ids(&self) -> SelectStatement {
        match given(&self.category) {
            Some(category) if self.condition(PriceRow::Exists).is_empty() => {
                category_members(category)
            }
            _ => self
                .matching()
                .select_only()
                .column(product::Column::Id)
                .into_query(),
        }
    }

    /// Matching products in the default order.
    pub fn select(&self) -> Select<product::Entity> {
        let (columns, direction) = self.order_columns(ProductOrder::default());
        columns.into_iter().fold(self.matching(), |select, column| {
            select.order_by(column, direction.clone())
        })
    }

    /// The ids of `limit` matching products after the first `skip`, in the
    /// order of [`ProductFilter::select`]: the rows skipped are read for
    /// their order and id alone, which the index of the filter's order
    /// holds (an index-only scan, unless the filter tests columns that
    /// index lacks: a substring, or a second filter; a category alone, see
    /// [`ProductFilter::matching_ids`]).
    fn page_ids(&self, skip: u64, limit: u64) -> SelectStatement {
        let mut ids = self.matching_ids();
        let (columns, direction) = self.order_columns(ProductOrder::default());
        for column in columns {
            ids.order_by_expr(column, direction.clone());
        }
        ids.offset(skip).limit(limit).to_owned()
    }
}

/// The ids of the products in `category` (any level of their path, in any
/// language), from its index rows alone.
fn category_members(category: &str) -> SelectStatement {
    Query::select()
        .column(product_category::Column::ProductId)
        .from(product_category::Entity)
        .and_where(product_category::Column::CategoryKey.eq(text::fold(category)))
        .to_owned()
}

/// `column`'s value, written so that no index yields it in order. A name
/// part the probe chose to look up in its index ([`NameLookup::Index`]) is
/// then found there first and its products sorted, at a cost that follows
/// how many hold it. Ordered by the column itself, the planner may instead
/// walk the order's index, testing each product, on its estimate that the
/// part is spread evenly: for a part only older products hold, that is
/// nearly the whole catalog.
fn unordered(column: Expr) -> Expr {
    Func::coalesce([column.clone(), column]).into()
}

/// Where a filter's price conditions test the product's `lowest_prices` rows.
#[derive(Debug, Clone, Copy)]
enum PriceRow {
    /// In a subquery: the product has such a row.
    Exists,
    /// On the row a list ordered by price joins (in the filter's currency).
    Joined,
}

/// The column of a product's `product_categories` rows that holds the
/// value of `column`, if they hold one.
fn in_category_index(column: product::Column) -> Option<product_category::Column> {
    match column {
        product::Column::FirstSeenAt => Some(product_category::Column::FirstSeenAt),
        product::Column::Id => Some(product_category::Column::ProductId),
        _ => None,
    }
}

/// What a page statement reads with each product, besides the product.
#[derive(Debug, Clone, Copy)]
pub struct With {
    /// The product's columns to read. Those holding JSON documents that
    /// are not in it come back empty; the others are always read.
    pub columns: Columns,
    /// The product's seller, joined.
    pub sellers: bool,
    /// The product's child lists, each with the columns to read.
    pub lists: Asked,
    /// The product's latest `n` price observations.
    pub latest_prices: Option<(u64, Columns)>,
    /// The lowest price a list ordered by price sorts by (its joined
    /// `lowest_prices` row), for the products' cursors.
    pub order_price: bool,
}

impl With {
    /// The product row alone, every document of it.
    const ROW: With = With {
        columns: Columns::ALL,
        sellers: false,
        lists: Asked::NONE,
        latest_prices: None,
        order_price: false,
    };

    /// Everything a REST product shows.
    const VIEW: With = With {
        columns: Columns::ALL,
        sellers: true,
        lists: Asked::ALL,
        latest_prices: None,
        order_price: false,
    };
}

/// Whether a page statement reads product column `column` (at `at` in
/// the entity) when asked for `columns`. The database converts each JSON
/// document per row it sends (a product page of only scalars is read in
/// half the time), so a page reads the documents its query shows; the
/// others are read as empty values (`[]`, or NULL where the column allows
/// it). The search keys are never read: only filters use them.
fn reads(columns: Columns, at: usize, column: product::Column) -> bool {
    use product::Column::*;
    match column {
        BrandKey | SellerCodeKey | NameSearch => false,
        _ => !is_document(column) || columns.reads(at),
    }
}

/// The empty value of product column `column`, typed as the column is.
fn empty(backend: DbBackend, column: product::Column) -> Expr {
    let def = column.def();
    let json = matches!(
        def.get_column_type(),
        ColumnType::Json | ColumnType::JsonBinary
    );
    Expr::cust(match (def.is_null(), json, backend) {
        (true, _, _) => "NULL",
        (false, true, DbBackend::Postgres) => "'[]'::jsonb",
        (false, true, _) => "'[]'",
        (false, false, _) => "''",
    })
}

/// `read` when the product's stored size is at most `whole`, else `empty`:
/// a product stored before the per-product limit, and larger than it, is
/// read alone once its size is counted (see [`ResponseBudget`]).
pub(super) fn within(whole: Option<u64>, read: Expr, empty: Expr) -> Expr {
    match whole {
        None => read,
        Some(bytes) => Expr::case(
            product::Column::StoredSize
                .into_expr()
                .lte(i64::try_from(bytes).unwrap_or(i64::MAX)),
            read,
        )
        .finally(empty)
        .into(),
    }
}

/// What a page statement read with its products, by product or seller id;
/// `None` when not asked for.
#[derive(Debug, Default)]
pub struct Related {
    pub sellers: Option<HashMap<Uuid, seller::Model>>,
    pub lists: Read,
    /// The latest observations, with the `n` they were read for.
    pub latest_prices: Option<(u64, HashMap<Uuid, Vec<price_observation::Model>>)>,
}

/// A keyset page of products (GraphQL connections) with what was read
/// with it.
#[derive(Debug)]
pub struct ProductPage {
    pub slice: Slice<product::Model>,
    pub related: Related,
    /// Products matching the filter, when asked for.
    pub total: Option<Total>,
    /// The cursor keys of the page's products.
    pub keys: PageKeys,
}

/// The order of a page, and the price of each product when it sorts by price.
#[derive(Debug)]
pub struct PageKeys {
    order: ProductOrder,
    prices: HashMap<Uuid, f64>,
}

impl PageKeys {
    /// The cursor key of `product`, one of the page's.
    pub fn of(&self, product: &product::Model) -> ProductKey {
        // A page ordered by price has each product's: `connection` checks.
        let price = self.prices.get(&product.id).copied();
        self.order.key_of(product, price.unwrap_or_default())
    }
}

/// A keyset page of matching products (GraphQL connections), in one
/// statement with what `with` asks for and, when `count` is given, the
/// number of matching products within those limits ([`counts`]).
pub async fn connection(
    db: &(impl ConnectionTrait + StreamTrait),
    filter: &ProductFilter,
    order: ProductOrder,
    window: &Window<ProductKey>,
    with: With,
    count: Option<CountLimits>,
    budget: &ResponseBudget,
) -> Result<ProductPage, QueryError> {
    filter.validate()?;
    order.validate(given(&filter.currency))?;
    for (name, key) in [("after", &window.after), ("before", &window.before)] {
        if key.as_ref().is_some_and(|key| !order.fits(key)) {
            return Err(QueryError::Invalid(format!(
                "{name} is a cursor of another order of products: page a list in the order its cursors came from"
            )));
        }
    }
    let probed = name_parts::probe(db, filter).await?;
    let filter = &*probed.reading(window.reads());
    let (columns, direction) = filter.order_columns(order);
    let select = window.bound(filter.matching_in(order), &columns, direction);
    let with = With {
        order_price: order.field == ProductOrderField::Price,
        ..with
    };
    // A count reads more rows than a page, which may tip the lookup.
    let counting = count.map(|limits| probed.counting(limits));
    let statement = counting.as_ref().map(|c| c.statement.clone());
    let rows = read(db, select, with, statement, budget).await?;
    if with.order_price
        && rows
            .products
            .iter()
            .any(|p| !rows.order_prices.contains_key(&p.id))
    {
        return Err(DbErr::Custom("a product ordered by price was read without it".into()).into());
    }
    // A page with no rows has none to carry the count.
    let total = match (&counting, rows.total) {
        (Some(counting), Some(counted)) => Some(counting.total(counted)),
        (Some(counting), None) => Some(counts::total(db, counting).await?),
        (None, _) => None,
    };
    Ok(ProductPage {
        slice: window.cut(rows.products),
        related: rows.related,
        total,
        keys: PageKeys {
            order,
            prices: rows.order_prices,
        },
    })
}

/// One product by internal id, with what `with` asks for (one statement).
pub async fn by_id(
    db: &(impl ConnectionTrait + StreamTrait),
    id: Uuid,
    with: With,
    budget: &ResponseBudget,
) -> Result<Option<(product::Model, Related)>, QueryError> {
    matching_one(db, &ProductFilter::default(), id, with, budget).await
}

/// Product `id` if `filter` matches it, with what `with` asks for (one
/// statement).
pub async fn matching_one(
    db: &(impl ConnectionTrait + StreamTrait),
    filter: &ProductFilter,
    id: Uuid,
    with: With,
    budget: &ResponseBudget,
) -> Result<Option<(product::Model, Related)>, QueryError> {
    let select = filter.matching().filter(product::Column::Id.eq(id));
    let mut rows = read(db, select, with, None, budget).await?;
    Ok(rows.products.pop().map(|product| (product, rows.related)))
}

/// The products of `ids` that exist, in no order, with what `with` asks
/// for (one statement).
pub async fn listed(
    db: &(impl ConnectionTrait + StreamTrait),
    ids: &[Uuid],
    with: With,
    budget: &ResponseBudget,
) -> Result<(Vec<product::Model>, Related), QueryError> {
    let select = product::Entity::find().filter(super::one_of(db, product::Column::Id, ids));
    let rows = read(db, select, with, None, budget).await?;
    Ok((rows.products, rows.related))
}

/// Whether product `id` exists (reading none of it).
pub async fn exists(db: &impl ConnectionTrait, id: Uuid) -> Result<bool, DbErr> {
    use sea_orm::PaginatorTrait;
    Ok(product::Entity::find_by_id(id).count(db).await? > 0)
}

/// The prefix of a joined seller's columns (the products' own keep their names).
const SELLER: &str = "seller_";
/// The column that carries a product's latest prices (see [`List`]).
const LATEST_PRICES: &str = "latest_prices";
/// The column that carries the price a list is ordered by.
const ORDER_PRICE: &str = "order_price";

/// The rows of one page statement.
struct Rows {
    products: Vec<product::Model>,
    related: Related,
    /// `None` unless counted, or when no row came back to carry the count.
    total: Option<u64>,
    /// The price each product is ordered by, when read ([`With::order_price`]).
    order_prices: HashMap<Uuid, f64>,
}

/// A page statement and the child lists it reads.
struct Statement {
    statement: SelectStatement,
    lists: Statements,
    latest_prices: Option<List>,
    counted: bool,
}

/// Runs `select`, with what `with` asks for read with each product and the
/// scalar subquery `counted` as an extra column: one statement, however
/// much is read with the products. Each product is counted against
/// `budget` as it arrives; a product larger than the budget reads whole is
/// read again alone, whole, once counted.
async fn read(
    db: &(impl ConnectionTrait + StreamTrait),
    select: Select<product::Entity>,
    with: With,
    counted: Option<SelectStatement>,
    budget: &ResponseBudget,
) -> Result<Rows, QueryError> {
    let whole = budget.whole_product();
    let backend = ConnectionTrait::get_database_backend(db);
    let page = statement(backend, select, with, counted, whole)?;
    let mut rows = run(db, &page, with, Some(budget)).await?;
    let held_back: Vec<Uuid> = rows
        .products
        .iter()
        .filter(|p| {
            whole.is_some_and(|whole| p.stored_size > i64::try_from(whole).unwrap_or(i64::MAX))
        })
        .map(|p| p.id)
        .collect();
    if held_back.is_empty() {
        return Ok(rows);
    }
    let alone = product::Entity::find().filter(super::one_of(db, product::Column::Id, &held_back));
    let alone = statement(backend, alone, with, None, None)?;
    let alone = run(db, &alone, with, None).await?;
    rows.take_whole(alone);
    Ok(rows)
}

/// `select` reading the product's own columns `with` asks for, and an
/// empty value in place of each other one; documents of products larger
/// than `whole` read as empty too.
fn product_columns(
    backend: DbBackend,
    select: Select<product::Entity>,
    with: With,
    whole: Option<u64>,
) -> Select<product::Entity> {
    let mut select = select.select_only();
    for (at, column) in product::Column::iter().enumerate() {
        select = match reads(with.columns, at, column) {
            true if is_document(column) => {
                let read = within(whole, column.into_expr(), empty(backend, column));
                select.expr_as(read, column.as_str())
            }
            true => select.column(column),
            false => select.expr_as(empty(backend, column), column.as_str()),
        };
    }
    select
}

/// The page statement of `select` (see [`read`]); the documents and lists
/// of products larger than `whole` read as empty.
fn statement(
    backend: DbBackend,
    select: Select<product::Entity>,
    with: With,
    counted: Option<SelectStatement>,
    whole: Option<u64>,
) -> Result<Statement, DbErr> {
    let select = product_columns(backend, select, with, whole);
    let mut statement = if with.sellers {
        let mut joined = select.left_join(seller::Entity);
        for column in seller::Column::iter() {
            joined = joined.column_as(column, format!("{SELLER}{}", column.as_str()));
        }
        joined.into_query()
    } else {
        select.into_query()
    };
    let lists = Statements::of(backend, with.lists)?;
    lists.select(&mut statement, whole);
    let latest_prices = with.latest_prices.map(|(n, columns)| {
        use price_observation::{Column, Entity};
        List::of::<Entity>(backend, Column::ProductId, PARENT, columns, Some(n))
    });
    let latest_prices = latest_prices.transpose()?;
    // Read whatever the product's stored size: a page of its price history
    // is bounded by the query's complexity.
    if let Some(list) = &latest_prices {
        statement.expr_as(list.column(), LATEST_PRICES);
    }
    if with.order_price {
        statement.expr_as(lowest_price::Column::Price.into_expr(), ORDER_PRICE);
    }
    let counted = match counted {
        Some(subquery) => {
            statement.expr_as(Expr::from(subquery), TOTAL);
            true
        }
        None => false,
    };
    Ok(Statement {
        statement,
        lists,
        latest_prices,
        counted,
    })
}

/// Whether product column `column` holds a JSON document.
pub(crate) fn is_document(column: product::Column) -> bool {
    matches!(
        column.def().get_column_type(),
        ColumnType::Json | ColumnType::JsonBinary
    )
}

/// Runs a page statement, each product counted against `budget` (when
/// given) as its row arrives: rows are read one at a time, so a request
/// refused for its size has held at most one product more than its budget.
async fn run(
    db: &(impl ConnectionTrait + StreamTrait),
    page: &Statement,
    with: With,
    budget: Option<&ResponseBudget>,
) -> Result<Rows, QueryError> {
    let mut products = Vec::new();
    let mut related = Related {
        sellers: with.sellers.then(HashMap::new),
        lists: Read::expecting(with.lists),
        latest_prices: with.latest_prices.map(|(n, _)| (n, HashMap::new())),
    };
    let mut total = None;
    let mut order_prices = HashMap::new();
    let backend = ConnectionTrait::get_database_backend(db);
    let built = super::literal_limits::literal_limits(backend.build(&page.statement));
    let stream = db.stream_raw(built).await?;
    let mut stream = std::pin::pin!(stream);
    while let Some(row) = stream.try_next().await? {
        let product = product::Model::from_query_result(&row, "")?;
        if let Some(budget) = budget {
            budget.charge(product.stored_size)?;
        }
        if page.counted && total.is_none() {
            total = Some(counts::counted(&row)?);
        }
        if with.order_price {
            order_prices.insert(product.id, row.try_get::<f64>("", ORDER_PRICE)?);
        }
        // Decoded once per seller: pages often repeat one.
        if let Some(sellers) = &mut related.sellers
            && !sellers.contains_key(&product.seller_ref)
            && let Some(seller) = seller::Model::from_query_result_optional(&row, SELLER)?
        {
            sellers.insert(seller.id, seller);
        }
        page.lists.decode(&row, product.id, &mut related.lists)?;
        if let (Some((_, map)), Some(list)) = (&mut related.latest_prices, &page.latest_prices) {
            map.insert(
                product.id,
                list.decode::<price_observation::Entity>(&row, LATEST_PRICES)?,
            );
        }
        products.push(product);
    }
    Ok(Rows {
        products,
        related,
        total,
        order_prices,
    })
}

impl Rows {
    /// Puts the products of `whole`, read whole, in place of the same
    /// products read without their documents and lists.
    fn take_whole(&mut self, whole: Rows) {
        self.related.lists.extend(whole.related.lists);
        let mut whole: HashMap<Uuid, product::Model> =
            whole.products.into_iter().map(|p| (p.id, p)).collect();
        for product in &mut self.products {
            if let Some(read) = whole.remove(&product.id) {
                *product = read;
            }
        }
    }
}

/// Products by id, keyed by id (dataloaders).
pub async fn by_ids(
    db: &(impl ConnectionTrait + StreamTrait),
    ids: &[Uuid],
    budget: &ResponseBudget,
) -> Result<HashMap<Uuid, product::Model>, QueryError> {
    let (products, _) = listed(db, ids, With::ROW, budget).await?;
    Ok(products.into_iter().map(|p| (p.id, p)).collect())
}

/// A product with everything its representations show.
#[derive(Debug, Clone)]
pub struct ProductView {
    pub product: product::Model,
    pub seller: Option<seller::Model>,
    pub lists: Lists,
}

/// One page of matching products and whether another page follows. The
/// extra row fetched answers `has_more`; nothing is counted.
pub async fn list(
    db: &(impl ConnectionTrait + StreamTrait),
    filter: &ProductFilter,
    page: Page,
    budget: &ResponseBudget,
) -> Result<(Vec<ProductView>, bool), QueryError> {
    filter.validate()?;
    let need = page
        .offset()
        .map_or(0, |skip| skip.saturating_add(page.page_size + 1));
    let filter = &*name_parts::probe(db, filter).await?.reading(need);
    let Some(select) = page_select(filter, page) else {
        return Ok((Vec::new(), false));
    };
    let mut rows = read(db, select, With::VIEW, None, budget).await?;
    let has_more = rows.products.len() as u64 > page.page_size;
    rows.products.truncate(page.page_size as usize);
    Ok((views(rows), has_more))
}

/// The products of `page` and the one after them (which tells whether more
/// follow), or `None` for a page past what SQL can skip. The page's ids
/// come first, the rows before them walked in an index of the filter's
/// order (see [`ProductFilter::page_ids`]); only the rows of those ids are
/// read, with their seller and child lists. So no row skipped, nor any
/// matching row that a sort leaves out, is read whole or has its children
/// read, whatever plan the database picks.
fn page_select(filter: &ProductFilter, page: Page) -> Option<Select<product::Entity>> {
    let ids = filter.page_ids(page.offset()?, page.page_size + 1);
    let rows = product::Entity::find().filter(product::Column::Id.in_subquery(ids));
    Some(order::apply(rows).limit(page.page_size + 1))
}

/// One product by internal id.
pub async fn get(
    db: &(impl ConnectionTrait + StreamTrait),
    id: Uuid,
    budget: &ResponseBudget,
) -> Result<ProductView, QueryError> {
    let rows = read(
        db,
        product::Entity::find_by_id(id),
        With::VIEW,
        None,
        budget,
    )
    .await?;
    views(rows).pop().ok_or(QueryError::NotFound)
}

/// Products by id, in the order of `ids` (unknown ids are skipped).
pub async fn get_many(
    db: &(impl ConnectionTrait + StreamTrait),
    ids: &[Uuid],
    budget: &ResponseBudget,
) -> Result<Vec<ProductView>, QueryError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let select = product::Entity::find().filter(super::one_of(db, product::Column::Id, ids));
    let mut rows = read(db, select, With::VIEW, None, budget).await?;
    let mut found: HashMap<Uuid, product::Model> =
        rows.products.drain(..).map(|p| (p.id, p)).collect();
    rows.products = ids.iter().filter_map(|id| found.remove(id)).collect();
    Ok(views(rows))
}

/// The products of rows read with [`With::VIEW`], with everything read with them.
fn views(rows: Rows) -> Vec<ProductView> {
    let Related {
        sellers, mut lists, ..
    } = rows.related;
    let sellers = sellers.unwrap_or_default();
    rows.products
        .into_iter()
        .map(|product| ProductView {
            seller: sellers.get(&product.seller_ref).cloned(),
            lists: lists.take(product.id),
            product,
        })
        .collect()
}

/// `rows` by `key`, each group in the order of `rows`.
pub(super) fn group<K: std::hash::Hash + Eq, T>(
    rows: Vec<T>,
    key: impl Fn(&T) -> K,
) -> HashMap<K, Vec<T>> {
    let mut out: HashMap<K, Vec<T>> = HashMap::new();
    for row in rows {
        out.entry(key(&row)).or_default().push(row);
    }
    out
}

pub async fn sellers_by_id(
    db: &impl ConnectionTrait,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, seller::Model>, DbErr> {
    let mut unique = ids.to_vec();
    unique.sort_unstable();
    unique.dedup();
    Ok(seller::Entity::find()
        .filter(super::one_of(db, seller::Column::Id, &unique))
        .all(db)
        .await?
        .into_iter()
        .map(|s| (s.id, s))
        .collect())
}

/// The newest `n` products of each seller (internal seller ids): their ids
/// in one statement, then the products, counted as they arrive.
pub async fn newest_per_seller(
    db: &(impl ConnectionTrait + StreamTrait),
    seller_ids: &[Uuid],
    n: u64,
    budget: &ResponseBudget,
) -> Result<HashMap<Uuid, Vec<product::Model>>, QueryError> {
    let newest: Vec<Picked> = super::top::first_n_per_parent::<product::Entity, Picked>(
        db,
        product::Column::SellerRef,
        seller_ids,
        n,
        "t.id",
    )
    .await?;
    let ids: Vec<Uuid> = newest.iter().map(|p| p.id).collect();
    let mut found = by_ids(db, &ids, budget).await?;
    let in_order = ids.iter().filter_map(|id| found.remove(id)).collect();
    Ok(group(in_order, |p| p.seller_ref))
}

/// A product's id, as a statement that picks products gives it.
#[derive(FromQueryResult)]
struct Picked {
    id: Uuid,
}
