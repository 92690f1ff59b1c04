// A typed GraphQL client: the demo dashboard's query (in
// web/dashboard/dashboard.js) as GraphQL Code Generator types it from
// schema.graphql. A field renamed or removed in the schema fails `tsc` here.
import { BrandDashboardDocument, type TypedDocumentString } from "../generated/graphql/graphql";

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

/** Each product of a brand with its seller, current price and how the price moved. */
export async function brandOverview(origin: string, apiKey: string, brand: string) {
  const { products } = await execute(origin, apiKey, BrandDashboardDocument, { brand });
  return products.edges.map(({ node }) => {
    const current = node.prices[0];
    const history = node.priceHistory.edges.map(({ node: observation }) => observation);
    const oldest = history.filter((o) => o.countryCode === current?.countryCode).at(-1);
    return {
      name: node.name,
      seller: node.seller?.name ?? "unknown",
      price: current ? `${current.price} ${current.currency}` : "no price",
      change: current && oldest ? current.price - oldest.price : 0,
      since: oldest?.recordedAt,
    };
  });
}
