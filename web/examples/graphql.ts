// A typed GraphQL client: one of the demo dashboard's queries (in
// web/dashboard/queries.js) as GraphQL Code Generator types it from
// schema.graphql. A field renamed or removed in the schema fails `tsc` here.
import {
  DashboardCatalogDocument,
  OrderDirection,
  ProductOrderField,
  type TypedDocumentString,
} from "../generated/graphql/graphql";

type GraphQLAnswer<Result> = { data?: Result; errors?: { message: string; extensions?: { code?: string } }[] };

/** Runs one generated operation: its variables and its result are typed by the document. */
export async function execute<Result, Variables>(
  origin: string,
  apiKey: string,
  operation: TypedDocumentString<Result, Variables>,
  variables: Variables,
): Promise<Result> {
  const response = await fetch(`${origin}/graphql`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ query: operation.toString(), variables }),
  });
  // GraphQL errors often come with HTTP 200: the body says.
  const answer = (await response.json()) as GraphQLAnswer<Result>;
  if (answer.errors?.length || answer.data === undefined) {
    const reasons = answer.errors?.map((e) => `${e.extensions?.code}: ${e.message}`);
    throw new Error(reasons?.join("; ") ?? `HTTP ${response.status}`);
  }
  return answer.data;
}

/** A page of a brand's products priced in `currency`, cheapest first, with each one's lowest price and the brand's median. */
export async function brandOverview(origin: string, apiKey: string, brand: string, currency: string) {
  const { products, productStats } = await execute(origin, apiKey, DashboardCatalogDocument, {
    filter: { brand, currency },
    currency,
    order: { field: ProductOrderField.Price, direction: OrderDirection.Asc },
    first: 20,
  });
  return products.nodes.map((product) => {
    const lowest = Math.min(...product.prices.filter((p) => p.currency === currency).map((p) => p.price));
    return {
      name: product.name,
      seller: product.seller?.name ?? "unknown",
      price: `${lowest} ${currency}`,
      againstMedian: productStats.priceMedian ? lowest - productStats.priceMedian : 0,
    };
  });
}
