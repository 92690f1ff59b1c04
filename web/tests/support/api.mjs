// Calls to the server's REST and extension APIs with the demo key, to make
// things happen that a page should then show.

import assert from "node:assert/strict";

import { eventually } from "./eventually.mjs";

/**
 * Uploads one scraped product the way the browser extension does.
 * @returns {Promise<string>} the new scrape session's id
 */
export async function uploadScrape(server, externalId) {
  const item = {
    marketplace: "ozon",
    external_id: externalId,
    url: `https://www.ozon.ru/product/${externalId}/`,
    language: "ru",
    name: `Чайник ${externalId}`,
    brand: "Redmond",
    category_path: ["Бытовая техника", "Чайники"],
    attributes: {},
    seller: { id: "42", name: "ООО «Вектор»", code: "RM-1" },
    prices: [{ country_code: "ru", user_auth_status: "anonymous", price: 1000, currency: "RUB" }],
  };
  const upload = { source_type: "page", intent: "price_monitoring", url_count: 1, items: [item] };
  const response = await call(server, "POST", "/extension/v1/scrapes", upload);
  assert.equal(response.status, 202, "upload accepted");
  return (await response.json()).data.id;
}

/** The session as `GET /v1/me/scrapes/{id}` shows it. */
export async function scrapeSession(server, id) {
  const response = await call(server, "GET", `/v1/me/scrapes/${id}`);
  assert.equal(response.status, 200);
  return (await response.json()).data;
}

/**
 * Waits for the server's merge job to tick (it merges an upload made for
 * the purpose), so that the next tick is a whole interval away.
 */
export async function waitForMergeTick(server, timeoutMs) {
  const probe = await uploadScrape(server, `tick-${Date.now()}`);
  await eventually(async () => {
    assert.equal((await scrapeSession(server, probe)).status, "completed");
  }, timeoutMs);
}

/**
 * One GraphQL request with the demo key: what the page should show, asked
 * of the API directly.
 */
export async function graphql(server, query, variables = {}) {
  const response = await call(server, "POST", "/graphql", { query, variables });
  const body = await response.json();
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}

/**
 * Uploads a product again as the extension would, with one of its variants
 * at a new price; the rest of the item repeats what the product holds.
 * @param {any} product id-less fields of `PRODUCT_AS_UPLOADED`
 * @param {any} variant one of its `prices`
 * @param {number} price
 */
export async function uploadPrice(server, product, variant, price) {
  const item = {
    marketplace: product.marketplace.toLowerCase(),
    external_id: product.externalId,
    url: product.url,
    language: "ru",
    name: product.name,
    brand: product.brand,
    category_path: product.categoryPath,
    attributes: {},
    seller: { id: product.seller.sellerId, name: product.seller.name, code: product.sellerCode },
    prices: [
      {
        country_code: variant.countryCode,
        region_code: variant.regionCode,
        user_auth_status: variant.userAuthStatus.toLowerCase(),
        price,
        old_price: Math.max(variant.oldPrice, price),
        currency: variant.currency,
      },
    ],
  };
  const upload = { source_type: "page", intent: "price_monitoring", url_count: 1, items: [item] };
  const response = await call(server, "POST", "/extension/v1/scrapes", upload);
  assert.equal(response.status, 202, "upload accepted");
  return (await response.json()).data.id;
}

/** What `uploadPrice` needs of a product. */
export const PRODUCT_AS_UPLOADED = `
  name marketplace externalId url brand categoryPath sellerCode
  seller { sellerId name }
  prices { countryCode regionCode userAuthStatus price oldPrice currency }
`;

function call(server, method, path, body) {
  return fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${server.demoKey}`, "Content-Type": "application/json" },
    body: body && JSON.stringify(body),
  });
}
