//! Products and what hangs off them.

use std::sync::Arc;

use async_graphql::{Context, ID, InputObject, Json, Lookahead, Object, Result, Value};
use entity::{Marketplace, TrustStatus, UserAuthStatus, product};
use sea_orm::EntityTrait;
use tokio::sync::OnceCell;
use uuid::Uuid;

use super::context;
use super::inline::Inline;
use super::node::GlobalId;
use super::page::{Loads, Page};
use super::reads::Reads;
use super::relay_connection::{self, Args, Conn};
use super::seller::Seller;
use super::series::{self, PricePoint};
use crate::graphql::error::gql;
use crate::query::children::{Columns, ShownAs, Shows};
use crate::query::counts::{self, Total};
use crate::query::prices::{self, ObservationKey, PriceHistoryFilter};
use crate::query::product_lists::{Asked, ListTable, PickColumns};
use crate::query::product_order::ProductOrder;
use crate::query::products::{self, ProductFilter, Related};
use crate::query::series::{SeriesArgs, TimeBucket};
use crate::views::{self, Attributes, PriceObservation, SpecialPrice, Timestamp, Translation};

/// Filters of a price history, combined with AND; `from` and `to` are inclusive.
#[derive(Debug, Clone, Default, InputObject)]
pub struct PriceHistoryFilterInput {
    /// One country-market variant; case-insensitive.
    pub country_code: Option<String>,
    /// One region or warehouse; marketplace-native code.
    pub region_code: Option<String>,
    /// `ANONYMOUS` (guest) or `AUTHENTICATED` (logged-in shopper).
    pub user_auth_status: Option<UserAuthStatus>,
    /// Start of the range; must not be after `to`.
    pub from: Option<Timestamp>,
    /// End of the range; inclusive.
    pub to: Option<Timestamp>,
}

impl From<PriceHistoryFilterInput> for PriceHistoryFilter {
    fn from(f: PriceHistoryFilterInput) -> Self {
        PriceHistoryFilter {
            country_code: f.country_code,
            region_code: f.region_code,
            user_auth_status: f.user_auth_status,
            from: f.from.map(|t| t.0),
            to: f.to.map(|t| t.0),
        }
    }
}

/// `totalCount` and `totalCountIsExact` of a product list, counted only
/// when asked for.
pub enum ProductTotal {
    /// Counted from the filter when first asked for.
    Matching(Box<Counted>),
    /// Already known (counted with the page, or a session's merged products).
    Known(Total),
}

/// A filter and its count, once counted.
pub struct Counted {
    filter: ProductFilter,
    total: OnceCell<Total>,
}

impl ProductTotal {
    pub fn matching(filter: ProductFilter) -> Self {
        ProductTotal::Matching(Box::new(Counted {
            filter,
            total: OnceCell::new(),
        }))
    }

    /// A count known to be exact.
    pub fn exact(count: u64) -> Self {
        ProductTotal::Known(Total { count, exact: true })
    }

    async fn total(&self, ctx: &Context<'_>) -> Result<Total> {
        match self {
            ProductTotal::Matching(counted) => {
                let limits = context::lists(ctx).counts();
                let filter = &counted.filter;
                let count = || Reads::of(ctx).run(|db| counts::products(db, filter, limits));
                Ok(*counted.total.get_or_try_init(count).await?)
            }
            ProductTotal::Known(total) => Ok(*total),
        }
    }
}

#[Object]
impl ProductTotal {
    /// Products in the whole list, across all pages. Exact when the list's
    /// filter has nothing but a marketplace, a trust status and a brand (or
    /// nothing): those counts are kept as products change, and cost 1
    /// complexity point. Any other filter is counted up to a bound
    /// (`VITRINA_COUNT_BOUND`, 10,000 unless configured), for 1 point plus
    /// 1 per 1,000 of the bound: when more products match, `totalCount` is
    /// the bound and `totalCountIsExact` is false. On PostgreSQL, a filter
    /// of a `nameContains`, alone or with a marketplace and a trust status
    /// that keep a tenth of the catalog or more, whose exact count would
    /// read more than `VITRINA_COUNT_MAX_READS` entries (100,000 unless
    /// configured) is estimated instead from a random sample of the
    /// catalog's pages holding about `VITRINA_COUNT_SAMPLE` products
    /// (20,000), the same pages each time: `totalCount` is then the
    /// estimate, under or over the bound, and `totalCountIsExact` is false. Costed once per list, whatever the page size (a session's
    /// products are counted with their page: the list's price includes
    /// it).
    #[graphql(complexity = "super::relay_connection::COUNTED")]
    async fn total_count(&self, ctx: &Context<'_>) -> Result<u64> {
        Ok(self.total(ctx).await?.count)
    }

    /// Whether `totalCount` is the number of products in the list; false
    /// when more than `totalCount` (the bound) match, or when `totalCount`
    /// is an estimate. Costed as `totalCount`, which it is counted with.
    #[graphql(complexity = "super::relay_connection::COUNTED")]
    async fn total_count_is_exact(&self, ctx: &Context<'_>) -> Result<bool> {
        Ok(self.total(ctx).await?.exact)
    }
}

/// `totalCount` of a price history, counted only when asked for.
pub struct PriceTotal(pub Uuid, pub PriceHistoryFilter);

#[Object]
impl PriceTotal {
    /// Observations matching the filter, across all pages. Counted for each
    /// product asked: 1 complexity point, plus 1 per 1,000 observations a
    /// product has on average, once whatever the page size.
    #[graphql(complexity = "super::relay_connection::COUNTED")]
    async fn total_count(&self, ctx: &Context<'_>) -> Result<u64> {
        Ok(Reads::of(ctx)
            .run(|db| prices::count(db, self.0, &self.1))
            .await?)
    }
}

pub type ProductConnection = Conn<Inline<Product>, ProductTotal>;
pub type PriceConnection = Conn<Inline<PriceObservation>, PriceTotal>;

/// Products as a connection in `order`. The page statement also reads the
/// sellers, the translations and the total when the query asks for them.
pub async fn product_connection(
    ctx: &Context<'_>,
    filter: ProductFilter,
    order: ProductOrder,
    args: &Args,
) -> Result<ProductConnection> {
    let fields = ctx.look_ahead();
    let window = args.window_in(ctx)?;
    let with = read_with(&[fields.field("nodes"), fields.field("edges").field("node")]);
    let counted = ["totalCount", "totalCountIsExact"]
        .iter()
        .any(|name| fields.field(name).exists());
    let count = counted.then_some(context::lists(ctx).counts());
    let reads = Reads::of(ctx);
    let budget = reads.budget();
    let page = reads
        .run(|db| products::connection(db, &filter, order, &window, with, count, budget))
        .await?;
    let total = match page.total {
        Some(total) => ProductTotal::Known(total),
        None => ProductTotal::matching(filter),
    };
    let node = Product::paged(&page.slice.items, page.related);
    let keys = page.keys;
    Ok(relay_connection::from_slice(
        page.slice,
        total,
        |p| keys.of(p),
        node,
    ))
}

/// What a page statement should read with its products, from the
/// selections of its `nodes` (a list's `nodes` and `edges.node`, or one product).
pub fn read_with(nodes: &[Lookahead<'_>]) -> products::With {
    use entity::price_observation as history;
    let asks = |name: &str| nodes.iter().any(|n| n.field(name).exists());
    let mut history_nodes = at(nodes, &["priceHistory", "edges", "node"]);
    history_nodes.extend(at(nodes, &["priceHistory", "nodes"]));
    products::With {
        columns: shown::<Product, product::Entity>(nodes).unwrap_or(Columns::NONE),
        sellers: asks("seller"),
        lists: Asked::picked(&Selected(nodes)),
        latest_prices: latest_prices_asked(nodes).map(|n| {
            let columns = shown::<PriceObservation, history::Entity>(&history_nodes);
            (n, columns.unwrap_or(Columns::NONE))
        }),
        order_price: false,
    }
}

/// The selections of `path` (field names, outermost first) under `nodes`.
fn at<'a>(nodes: &[Lookahead<'a>], path: &[&str]) -> Vec<Lookahead<'a>> {
    nodes
        .iter()
        .map(|n| {
            path[1..]
                .iter()
                .fold(n.field(path[0]), |at, name| at.field(name))
        })
        .filter(Lookahead::exists)
        .collect()
}

/// The child lists a product's selections (`nodes`) ask for, by their
/// GraphQL fields.
struct Selected<'n, 'a>(&'n [Lookahead<'a>]);

impl PickColumns for Selected<'_, '_> {
    fn columns<E: ListTable + ShownAs>(&self) -> Option<Columns> {
        shown::<E::View, E>(&at(self.0, &[E::FIELD]))
    }
}

/// The columns of child table `E` that the `selections` of a list of `V`
/// show; `None` when the list is not asked for.
fn shown<V: Shows<E>, E: EntityTrait>(selections: &[Lookahead<'_>]) -> Option<Columns> {
    (!selections.is_empty()).then(|| {
        let lists = selections.iter().flat_map(Lookahead::selection_fields);
        // Collected: the iterator of a field's selections borrows the field.
        let asked =
            lists.flat_map(|list| list.selection_set().map(|f| f.name()).collect::<Vec<_>>());
        V::columns(asked)
    })
}

/// The number of latest observations to read with a page: when every
/// `priceHistory` selected under its nodes asks for the plain "first N"
/// (the shape [`price_connection`] batches), N, and one more when any of
/// them asks whether more follow.
fn latest_prices_asked(nodes: &[Lookahead<'_>]) -> Option<u64> {
    let (mut asked, mut more) = (None, false);
    for field in nodes
        .iter()
        .flat_map(|n| n.field("priceHistory").selection_fields())
    {
        let mut args = Args::default();
        for (name, value) in field.arguments().ok()? {
            match (name.as_str(), value) {
                (_, Value::Null) => {}
                ("first", Value::Number(n)) => args.first = Some(n.as_i64()?.try_into().ok()?),
                // A filter, a cursor or `last`: loaded on its own.
                _ => return None,
            }
        }
        let n = args.simple_first()?;
        if asked.is_some_and(|m| m != n) {
            return None;
        }
        asked = Some(n);
        more |= relay_connection::asks_more(&Lookahead::from(field));
    }
    asked.map(|n| n + u64::from(more))
}

/// One product's price history as a connection, newest first. The plain
/// "latest N" shape is batched across products.
pub async fn price_connection(
    ctx: &Context<'_>,
    product_id: Uuid,
    page: Option<&Page>,
    filter: Option<PriceHistoryFilterInput>,
    args: &Args,
) -> Result<PriceConnection> {
    let reads = Reads::of(ctx);
    let slice = match (args.simple_first(), &filter) {
        (Some(n), None) => {
            let more = relay_connection::asks_more(&ctx.look_ahead());
            let rows = match page {
                Some(page) => page.latest_prices(reads, product_id, n, more).await,
                None => {
                    let key = (product_id, n + u64::from(more));
                    reads.load(|l| &l.latest_prices, key).await
                }
            };
            relay_connection::first_n(rows.map_err(gql)?.unwrap_or_default(), n)
        }
        _ => {
            let filter: PriceHistoryFilter = filter.clone().unwrap_or_default().into();
            let window = args.window_in(ctx)?;
            reads
                .run(|db| prices::connection(db, product_id, &filter, &window))
                .await?
        }
    };
    let filter = filter.unwrap_or_default().into();
    Ok(relay_connection::from_slice(
        slice,
        PriceTotal(product_id, filter),
        ObservationKey::of,
        |row| Inline(PriceObservation::from(row)),
    ))
}

/// A product on one of the marketplaces; a node of a list page loads its
/// relations together with the other products of its page.
pub struct Product(pub product::Model, pub Arc<Page>);

/// The product columns each field shows: a page statement reads the JSON
/// documents of the fields a query selects (every other column it always
/// reads). A field not declared here reads every column; a test checks
/// that every field is.
impl Shows<product::Entity> for Product {
    const FIELDS: &'static [(&'static str, &'static [product::Column])] = {
        use product::Column::*;
        &[
            ("id", &[Id]),
            ("globalId", &[Id]),
            ("marketplace", &[Marketplace]),
            ("externalId", &[ExternalId]),
            ("url", &[Url]),
            ("name", &[Name]),
            ("brand", &[Brand]),
            ("categoryPath", &[CategoryPath]),
            ("attributes", &[Attributes]),
            ("imageCover", &[ImageCover]),
            ("imageGallery", &[ImageGallery]),
            ("videoCover", &[VideoCover]),
            ("videoGallery", &[VideoGallery]),
            ("seller", &[SellerRef]),
            ("sellerCode", &[SellerCode]),
            ("trustStatus", &[TrustStatus]),
            ("priceFlagged", &[PriceFlagged]),
            ("prices", &[Id]),
            ("specialPrices", &[Id]),
            ("stats", &[Stats]),
            ("firstSeenLanguage", &[FirstSeenLanguage]),
            ("defaultLanguage", &[DefaultLanguage]),
            ("translations", &[Id]),
            ("firstSeenAt", &[FirstSeenAt]),
            ("lastSeenAt", &[LastSeenAt]),
            ("priceSeries", &[Id]),
            ("priceHistory", &[Id]),
        ]
    };
}

impl Product {
    /// Makes the nodes of one page of `products`, with what was read with
    /// them.
    pub fn paged(
        products: &[product::Model],
        related: Related,
    ) -> impl Fn(product::Model) -> Inline<Product> + use<> {
        let page = Page::new(products, related);
        move |model| Inline(Product(model, page.clone()))
    }
}

/// A product on one of the marketplaces.
#[Object]
impl Product {
    /// Internal identifier; not a marketplace SKU.
    async fn id(&self) -> Uuid {
        self.0.id
    }
    /// Global id (Relay's `Node`): opaque, for `node(id:)`.
    pub(super) async fn global_id(&self) -> ID {
        GlobalId::Product(self.0.id).into()
    }
    /// One of the four supported marketplaces.
    async fn marketplace(&self) -> Marketplace {
        self.0.marketplace
    }
    /// The marketplace's own SKU; unique only together with marketplace.
    async fn external_id(&self) -> &str {
        &self.0.external_id
    }
    /// Product page URL (normalized).
    async fn url(&self) -> &str {
        &self.0.url
    }
    /// Name in the default language.
    async fn name(&self) -> &str {
        &self.0.name
    }
    /// Brand name.
    async fn brand(&self) -> &str {
        &self.0.brand
    }
    /// Category hierarchy, root first, in the default language.
    async fn category_path(&self) -> &[String] {
        &self.0.category_path.0
    }
    /// Free key/value attributes; values are strings or booleans.
    async fn attributes(&self) -> Attributes {
        views::attributes(&self.0.attributes)
    }
    /// Cover image URL.
    async fn image_cover(&self) -> &str {
        &self.0.image_cover
    }
    /// Image URLs.
    async fn image_gallery(&self) -> &[String] {
        &self.0.image_gallery.0
    }
    /// Cover video URL, when there is one.
    async fn video_cover(&self) -> Option<&str> {
        self.0.video_cover.as_deref()
    }
    /// Video URLs; may be empty.
    async fn video_gallery(&self) -> &[String] {
        &self.0.video_gallery.0
    }
    /// The full seller record.
    async fn seller(&self, ctx: &Context<'_>) -> Result<Option<Inline<Seller>>> {
        let model = self.1.seller(Reads::of(ctx), self.0.seller_ref).await;
        Ok(model
            .map_err(gql)?
            .map(|m| Inline(Seller::of_product(m, self.1.clone()))))
    }
    /// The seller's own SKU for this product.
    async fn seller_code(&self) -> &str {
        &self.0.seller_code
    }
    /// How far the product data is trusted: unverified, verified or flagged.
    async fn trust_status(&self) -> TrustStatus {
        self.0.trust_status
    }
    /// Whether the latest prices looked wrong (far from their recent values).
    async fn price_flagged(&self) -> bool {
        self.0.price_flagged
    }
    /// Current price observations, one per country, region and auth status.
    async fn prices(&self, ctx: &Context<'_>) -> Result<Vec<Inline<PriceObservation>>> {
        inlined(self.1.prices(Reads::of(ctx), self.0.id).await)
    }
    /// Special (promotional) price ranges per country, region and auth status.
    async fn special_prices(&self, ctx: &Context<'_>) -> Result<Vec<Inline<SpecialPrice>>> {
        inlined(self.1.special_prices(Reads::of(ctx), self.0.id).await)
    }
    /// Statistics, when known.
    async fn stats(&self) -> Option<Json<serde_json::Value>> {
        self.0.stats.clone().map(Json)
    }
    /// Language code of the first page the product was seen on.
    async fn first_seen_language(&self) -> &str {
        &self.0.first_seen_language
    }
    /// Language of name and categoryPath.
    async fn default_language(&self) -> &str {
        &self.0.default_language
    }
    /// Known-language translations.
    async fn translations(&self, ctx: &Context<'_>) -> Result<Vec<Inline<Translation>>> {
        inlined(self.1.translations(Reads::of(ctx), self.0.id).await)
    }
    /// When the product was first seen.
    async fn first_seen_at(&self) -> Timestamp {
        self.0.first_seen_at.into()
    }
    /// When the product was last seen.
    async fn last_seen_at(&self) -> Timestamp {
        self.0.last_seen_at.into()
    }
    /// The product's prices in `currency` bucketed by UTC time (an hour, a
    /// day, a week from Monday, a calendar month), oldest first: for each
    /// bucket with observations, their count, lowest, highest and mean
    /// price, and the first and last price by time, across the product's
    /// variants. `from` and `to` bound the times, inclusive. A series of
    /// more buckets than `VITRINA_SERIES_MAX_BUCKETS` (1,000) is refused:
    /// narrow the times or take a larger bucket. Computed in the database,
    /// one statement for the products of a level; costed as a count of the
    /// product's history, by the rows it reads.
    #[graphql(complexity = "crate::graphql::cost::scans::price_series(child_complexity)")]
    async fn price_series(
        &self,
        ctx: &Context<'_>,
        currency: String,
        bucket: TimeBucket,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> Result<Vec<PricePoint>> {
        let args = SeriesArgs {
            currency,
            bucket,
            from: from.map(|t| t.0),
            to: to.map(|t| t.0),
            most: 0,
        };
        series::price_series(ctx, self.0.id, args).await
    }
    /// The full price and stock history, newest first.
    #[graphql(
        complexity = "crate::graphql::cost::scans::price_history(first, last, child_complexity)"
    )]
    async fn price_history(
        &self,
        ctx: &Context<'_>,
        filter: Option<PriceHistoryFilterInput>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<PriceConnection> {
        price_connection(
            ctx,
            self.0.id,
            Some(&self.1),
            filter,
            &Args {
                first,
                after,
                last,
                before,
            },
        )
        .await
    }
}

/// A product's child rows, as loaded for its page, as GraphQL objects.
fn inlined<M, V: From<M>>(rows: Loads<Vec<M>>) -> Result<Vec<Inline<V>>> {
    let rows = rows.map_err(gql)?.unwrap_or_default();
    Ok(rows.into_iter().map(|row| Inline(row.into())).collect())
}

#[cfg(test)]
mod tests {
    use sea_orm::Iterable;

    use super::*;

    /// The fields of type `name` in the SDL, leaving out their descriptions.
    fn fields_of(sdl: &str, name: &str) -> Vec<String> {
        let start = sdl
            .find(&format!("\ntype {name} "))
            .unwrap_or_else(|| panic!("no type {name}"));
        let body = &sdl[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
        let mut in_description = false;
        let mut fields = Vec::new();
        for line in body.lines().map(str::trim) {
            if line.starts_with("\"\"\"") {
                // A description on one line opens and closes it.
                in_description ^= !(line.len() > 3 && line.ends_with("\"\"\""));
            } else if !in_description && !line.is_empty() {
                let end = line.find(['(', ':']).unwrap_or(line.len());
                fields.push(line[..end].to_owned());
            }
        }
        fields
    }

    /// A field not declared would read every document of every product of
    /// its page; a document no field declares would never be read.
    #[test]
    fn every_field_of_product_declares_the_columns_it_shows() {
        let mut fields = fields_of(&crate::graphql::sdl(), "Product");
        let mut declared: Vec<String> = Product::FIELDS
            .iter()
            .map(|(field, _)| (*field).to_owned())
            .collect();
        fields.sort();
        declared.sort();
        assert_eq!(fields, declared);

        let shown = Product::columns(Product::FIELDS.iter().map(|(field, _)| *field));
        for (at, column) in product::Column::iter().enumerate() {
            if products::is_document(column) {
                assert!(shown.reads(at), "{column:?} is shown by no field");
            }
        }
    }
}
