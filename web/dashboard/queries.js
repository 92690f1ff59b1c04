// @ts-check
// Every GraphQL document the dashboard sends. The generated types
// (`npm run check`) are named after the operations, and a server test runs
// each of them against the cost limits.

/** Suggestions for the picker, from the daily snapshot. */
export const CHOICES = /* GraphQL */ `
  query DashboardChoices {
    brands { brand productCount }
    wildberries: categories(marketplace: WILDBERRIES) { categoryPath productCount }
    ozon: categories(marketplace: OZON) { categoryPath productCount }
    yandexMarket: categories(marketplace: YANDEX_MARKET) { categoryPath productCount }
    megamarket: categories(marketplace: MEGAMARKET) { categoryPath productCount }
  }
`;

/** One page of the chosen products, their count and their price statistics. */
export const CATALOG = /* GraphQL */ `
  query DashboardCatalog(
    $filter: ProductFilterInput!
    $currency: String!
    $order: ProductOrder!
    $first: Int
    $after: String
    $last: Int
    $before: String
  ) {
    products(filter: $filter, orderBy: $order, first: $first, after: $after, last: $last, before: $before) {
      totalCount
      totalCountIsExact
      pageInfo { hasPreviousPage hasNextPage startCursor endCursor }
      nodes {
        id
        name
        marketplace
        lastSeenAt
        seller { name }
        prices { price currency stockStatus stockQuantity }
      }
    }
    productStats(filter: $filter, currency: $currency) {
      count
      priceMin
      priceMax
      priceAvg
      priceMedian
    }
    latest: products(filter: $filter, orderBy: { field: LAST_SEEN, direction: DESC }, first: 1) {
      nodes { lastSeenAt }
    }
  }
`;

/** The biggest price drops of the chosen products since a time. */
export const DROPS = /* GraphQL */ `
  query DashboardDrops($filter: ProductFilterInput!, $currency: String!, $since: DateTime!) {
    priceMovers(filter: $filter, currency: $currency, since: $since, direction: DROP, first: 5) {
      product { id name marketplace }
      before
      after
      changePercent
      changedAt
    }
  }
`;

/** One product's price chart, bucketed by the server. */
export const SERIES = /* GraphQL */ `
  query DashboardSeries($id: UUID!, $currency: String!, $bucket: TimeBucket!) {
    product(id: $id) {
      id
      name
      priceSeries(currency: $currency, bucket: $bucket) { start count min max avg open close }
    }
  }
`;

/** Price moves of the chosen products, as merges make them. */
export const LIVE = /* GraphQL */ `
  subscription DashboardLive($filter: ProductFilterInput!) {
    priceChanged(filter: $filter) {
      product { id name marketplace }
      currency
      before
      after
      changePercent
      changedAt
    }
  }
`;
