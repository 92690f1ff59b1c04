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

function call(server, method, path, body) {
  return fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${server.demoKey}`, "Content-Type": "application/json" },
    body: body && JSON.stringify(body),
  });
}
