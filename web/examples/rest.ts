// A typed REST client: openapi-fetch over the types that openapi-typescript
// generates from Vitrina's two OpenAPI documents (`npm run check` makes them).
// Paths, parameters, bodies and answers are all checked by `tsc`.
import createClient from "openapi-fetch";
import type { paths as ExtensionPaths } from "../generated/extension-v1";
import type { components, paths as RestPaths } from "../generated/rest-v1";

type Product = components["schemas"]["Product"];

/** Both APIs, authenticated with one API key. */
export function vitrinaClients(origin: string, apiKey: string) {
  const headers = { Authorization: `Bearer ${apiKey}` };
  return {
    rest: createClient<RestPaths>({ baseUrl: `${origin}/v1`, headers }),
    extension: createClient<ExtensionPaths>({ baseUrl: `${origin}/extension/v1`, headers }),
  };
}

type Clients = ReturnType<typeof vitrinaClients>;

/** The answer of a 2xx response; the API's `{"error": {code, message}}` is thrown. */
function body<T>(result: { data?: T; error?: { error: { code: string; message: string } } }): T {
  if (result.data === undefined) {
    throw new Error(`${result.error?.error.code}: ${result.error?.error.message}`);
  }
  return result.data;
}

/** Every verified product of a brand on Ozon, following the pages. */
export async function verifiedProducts({ rest }: Clients, brand: string): Promise<Product[]> {
  const products: Product[] = [];
  for (let page = 1; ; page++) {
    const query = { marketplace: "ozon", brand, trust_status: "verified", page, page_size: 100 } as const;
    const { data, meta } = body(await rest.GET("/products", { params: { query } }));
    products.push(...data);
    if (!meta.has_more) return products;
  }
}

/** One product's name, seller and its prices in one market since a date, oldest first. */
export async function priceTrend({ rest }: Clients, id: string, countryCode: string, since: Date) {
  const path = { id };
  const product = body(await rest.GET("/products/{id}", { params: { path } })).data;
  const query = { country_code: countryCode, from: since.toISOString(), page_size: 500 };
  const history = body(await rest.GET("/products/{id}/price-history", { params: { path, query } }));
  return {
    title: `${product.name} (${product.seller.name})`,
    points: history.data
      .map((p) => ({ at: new Date(p.recorded_at), price: p.price, currency: p.currency }))
      .reverse(),
  };
}

/** Subscribes `url` to the account's scrape events; the signing secret is shown only now. */
export async function subscribe({ extension }: Clients, url: string) {
  const created = body(await extension.POST("/webhooks", { body: { url } })).data;
  return { id: created.id, status: created.status, secret: created.secret };
}

/** The deliveries to each active subscription of the account that finally failed. */
export async function failedDeliveries({ extension }: Clients) {
  const subscriptions = body(await extension.GET("/webhooks")).data;
  const failed = [];
  for (const subscription of subscriptions.filter((s) => s.status === "active")) {
    const path = { id: subscription.id };
    const deliveries = body(await extension.GET("/webhooks/{id}/deliveries", { params: { path } })).data;
    const failures = deliveries.filter((d) => d.status === "failed");
    failed.push(...failures.map((d) => ({ url: subscription.url, ...d })));
  }
  return failed;
}
