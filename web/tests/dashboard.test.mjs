// The demo dashboard at /dashboard under `serve --demo`, in Chromium: what
// each panel shows is checked against the API's own answer to the same
// question, asked directly with the demo key.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { PRODUCT_AS_UPLOADED, graphql, scrapeSession, uploadPrice } from "./support/api.mjs";
import { assertStayedOnLoopback, launchBrowser, offlineContext } from "./support/browser.mjs";
import { eventually } from "./support/eventually.mjs";
import { startServer } from "./support/server.mjs";

// Merges run every 2 s, so that a price change reaches the page soon. The
// tests click through the page far faster than a person, on one key: its
// database-time burst is a minute's budget, as in the server's own tests.
const MERGE_INTERVAL_SECS = 2;
const SETTINGS = { VITRINA_MERGE_INTERVAL_SECS: String(MERGE_INTERVAL_SECS), VITRINA_DB_TIME_BURST_MS: "10000" };
const MARKETPLACES = { WILDBERRIES: "Wildberries", OZON: "Ozon", YANDEX_MARKET: "Yandex Market", MEGAMARKET: "Megamarket" };
const money = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

let server;
let browser;

before(async () => {
  server = await startServer(SETTINGS);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** The dashboard, loaded with its defaults (Samsung, RUB, cheapest first). */
async function openDashboard(t) {
  const { context, leaks } = await offlineContext(browser, t);
  const calls = new Set();
  context.on("request", (request) => {
    if (["fetch", "xhr"].includes(request.resourceType())) {
      calls.add(`${request.method()} ${new URL(request.url()).pathname}`);
    }
  });
  const page = await context.newPage();
  await page.goto(`${server.url}/dashboard`);
  await page.locator("#range").filter({ hasText: /^1–/ }).waitFor();
  return { page, leaks, calls };
}

/** The table as shown: one object per row. */
function shownRows(page) {
  return page.locator("table#products tbody tr").evaluateAll((trs) =>
    trs.map((tr) => {
      const [name, marketplace, seller, price] = [...tr.cells].map((td) => td.textContent.trim());
      return { id: tr.dataset.id, name, marketplace, seller, price };
    }),
  );
}

/** What the API lists for the filter, in that order, with each one's lowest price in the currency. */
async function listed(filter, direction = "ASC", first = 40) {
  const data = await graphql(
    server,
    `query ($filter: ProductFilterInput!, $order: ProductOrder!, $first: Int!, $currency: String!) {
      products(filter: $filter, orderBy: $order, first: $first) {
        totalCount
        nodes { id name marketplace prices { price currency } }
      }
      productStats(filter: $filter, currency: $currency) { count priceMin priceMax priceAvg priceMedian }
    }`,
    { filter, first, currency: filter.currency, order: { field: "PRICE", direction } },
  );
  const rows = data.products.nodes.map((p) => {
    const lowest = Math.min(...p.prices.filter((x) => x.currency === filter.currency).map((x) => x.price));
    return { id: p.id, name: p.name, marketplace: MARKETPLACES[p.marketplace], price: `${money.format(lowest)} ${filter.currency}` };
  });
  return { total: data.products.totalCount, stats: data.productStats, rows };
}

const withoutSeller = (rows) => rows.map(({ seller, ...row }) => row);

test("a brand's products in one currency: sorted by price, paged and counted, with stats", async (t) => {
  const { page, leaks, calls } = await openDashboard(t);
  const expected = await listed({ brand: "Samsung", currency: "RUB" });
  assert.ok(expected.total > 20, `the demo brand has more than a page: ${expected.total}`);

  assert.equal(await page.locator("#status").textContent(), "", "no error, nothing pending");
  assert.equal(await page.locator("#range").textContent(), `1–20 of ${expected.total}`);
  const first = await shownRows(page);
  assert.deepEqual(withoutSeller(first), expected.rows.slice(0, 20), "the first page, cheapest first");
  assert.ok(first.every((row) => row.seller), "every row names a seller");
  const figures = await page.locator("#stats .figure").evaluateAll((boxes) =>
    Object.fromEntries(boxes.map((b) => [b.dataset.label, b.lastChild.textContent])),
  );
  const { count, priceMin, priceMedian, priceAvg, priceMax } = expected.stats;
  assert.deepEqual(figures, {
    Products: String(count),
    Lowest: `${money.format(priceMin)} RUB`,
    Median: `${money.format(priceMedian)} RUB`,
    Average: `${money.format(priceAvg)} RUB`,
    Highest: `${money.format(priceMax)} RUB`,
  });
  assert.equal(count, expected.total, "stats count the products listed");

  await page.locator("#next").click();
  const end = Math.min(40, expected.total);
  await page.locator("#range").filter({ hasText: `21–${end} of ${expected.total}` }).waitFor();
  assert.deepEqual(withoutSeller(await shownRows(page)), expected.rows.slice(20, 40), "the second page");
  await page.locator("#previous").click();
  await page.locator("#range").filter({ hasText: /^1–20 / }).waitFor();
  assert.deepEqual(await shownRows(page), first, "back to the first page");
  assert.ok(await page.locator("#previous").isDisabled());

  await page.locator("#currency").selectOption("KZT");
  const tenge = await listed({ brand: "Samsung", currency: "KZT" }, "ASC", 20);
  await page.locator("#range").filter({ hasText: `of ${tenge.total}` }).waitFor();
  await eventually(async () => assert.deepEqual(withoutSeller(await shownRows(page)), tenge.rows));
  await page.locator("#order").selectOption("PRICE DESC");
  const dearest = await listed({ brand: "Samsung", currency: "KZT" }, "DESC", 20);
  await eventually(async () => assert.deepEqual(withoutSeller(await shownRows(page)), dearest.rows));

  assert.deepEqual([...calls], ["POST /graphql"], "the page's API calls");
  assertStayedOnLoopback(leaks);
});

test("the category picker lists a category's products", async (t) => {
  const { page, leaks } = await openDashboard(t);
  await page.locator("#kind").selectOption("category");
  // Picked at once, or as soon as the suggestions arrive.
  const category = await eventually(async () => {
    const picked = await page.locator("#choice").inputValue();
    assert.ok(picked, "the most common category is picked");
    return picked;
  });
  const expected = await listed({ category, currency: "RUB" }, "ASC", 20);
  await page.locator("#range").filter({ hasText: ` of ${expected.total}` }).waitFor();
  await eventually(async () => assert.deepEqual(withoutSeller(await shownRows(page)), expected.rows));
  const suggested = await page.locator("#choices option").count();
  assert.ok(suggested > 1, `categories are suggested: ${suggested}`);
  assertStayedOnLoopback(leaks);
});

test("the chart has axes, dates, min, max and a tooltip per bucket", async (t) => {
  const { page, leaks } = await openDashboard(t);
  const [row] = await shownRows(page);
  await page.locator("#bucket").selectOption("DAY");
  const { product } = await graphql(
    server,
    `query ($id: UUID!) { product(id: $id) { name priceSeries(currency: "RUB", bucket: DAY) { start min max avg } } }`,
    { id: row.id },
  );
  const buckets = product.priceSeries;
  const chart = page.locator("#chart svg.price-chart");
  await eventually(async () => assert.equal(await chart.locator("circle.bucket").count(), buckets.length));
  assert.equal(await page.locator("#detail-title").textContent(), product.name);
  assert.equal(await page.locator("tr.selected").getAttribute("data-id"), row.id);

  const lowest = Math.min(...buckets.map((b) => b.min));
  const highest = Math.max(...buckets.map((b) => b.max));
  assert.equal(await chart.locator(".extreme.min text").textContent(), `min ${money.format(lowest)}`);
  assert.equal(await chart.locator(".extreme.max text").textContent(), `max ${money.format(highest)}`);
  const dates = await chart.locator(".axis.x text:not(.unit)").allTextContents();
  assert.equal(dates.length, 5);
  for (const date of dates) assert.match(date, /^\d{1,2} [A-Z][a-z]{2}$/, "an x-axis date");
  const prices = await chart.locator(".axis.y text:not(.unit)").allTextContents();
  assert.ok(prices.length >= 2, `y-axis prices: ${prices}`);
  const values = prices.map((p) => Number(p.replaceAll(",", "")));
  assert.ok(values.every((v, i) => i === 0 || v > values[i - 1]), `ascending prices: ${prices}`);
  assert.ok(values[0] >= lowest - (highest - lowest) && values.at(-1) <= highest + Math.max(highest * 0.05, 1));

  const last = buckets.at(-1);
  await chart.locator("circle.bucket").last().hover();
  const tip = page.locator("#chart .tooltip");
  await tip.waitFor();
  const day = new Date(last.start).toLocaleDateString("en-GB", {
    weekday: "short", day: "numeric", month: "short", year: "numeric", timeZone: "UTC",
  });
  assert.deepEqual((await tip.locator("div").allTextContents()).slice(0, 3), [
    day,
    `average ${money.format(last.avg)} RUB`,
    `lowest ${money.format(last.min)}, highest ${money.format(last.max)}`,
  ]);
  assertStayedOnLoopback(leaks);
});

test("a slow chart answer for an earlier bucket does not replace the chart chosen after it", async (t) => {
  const { page, leaks } = await openDashboard(t);
  const [row] = await shownRows(page);
  const chart = page.locator("#chart svg.price-chart");
  await chart.waitFor();
  const bucketsOf = async (bucket) => {
    const { product } = await graphql(
      server,
      `query ($id: UUID!, $bucket: TimeBucket!) { product(id: $id) { priceSeries(currency: "RUB", bucket: $bucket) { start } } }`,
      { id: row.id, bucket },
    );
    return product.priceSeries.length;
  };
  const [days, months] = [await bucketsOf("DAY"), await bucketsOf("MONTH")];
  assert.notEqual(days, months, "the two charts can be told apart");

  // The MONTH request is held back until the DAY chart, asked for after it, is shown.
  let release;
  const held = new Promise((resolve) => (release = resolve));
  let asked;
  const monthAsked = new Promise((resolve) => (asked = resolve));
  const isMonth = (request) => request.postDataJSON()?.variables?.bucket === "MONTH";
  await page.route("**/graphql", async (route) => {
    if (isMonth(route.request())) {
      asked();
      await held;
    }
    await route.continue();
  });
  await page.locator("#bucket").selectOption("MONTH");
  await monthAsked;
  await page.locator("#bucket").selectOption("DAY");
  await eventually(async () => assert.equal(await chart.locator("circle.bucket").count(), days));

  const finished = page.waitForEvent("requestfinished", isMonth);
  release();
  await finished;
  await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 200)));
  assert.equal(await chart.locator("circle.bucket").count(), days, "the DAY chart stays");
  assertStayedOnLoopback(leaks);
});

test("the biggest drops of the week to the newest scrape", async (t) => {
  const { page, leaks } = await openDashboard(t);
  const filter = { brand: "Samsung", currency: "RUB" };
  const { products } = await graphql(
    server,
    `query ($filter: ProductFilterInput!) {
      products(filter: $filter, orderBy: { field: LAST_SEEN, direction: DESC }, first: 1) { nodes { lastSeenAt } }
    }`,
    { filter },
  );
  const since = new Date(Date.parse(products.nodes[0].lastSeenAt) - 7 * 86_400_000).toISOString();
  const { priceMovers } = await graphql(
    server,
    `query ($filter: ProductFilterInput!, $since: DateTime!) {
      priceMovers(filter: $filter, currency: "RUB", since: $since, direction: DROP, first: 5) {
        product { name } changePercent
      }
    }`,
    { filter, since },
  );
  assert.ok(priceMovers.length > 0, "the demo brand has drops that week");
  const drops = page.locator("#drops li");
  await eventually(async () => assert.equal(await drops.count(), priceMovers.length));
  const shown = await drops.evaluateAll((items) =>
    items.map((li) => [li.querySelector("a").textContent, li.querySelector("strong").textContent]),
  );
  assert.deepEqual(
    shown,
    priceMovers.map((m) => [m.product.name, `${m.changePercent.toFixed(1)}%`]),
  );
  assertStayedOnLoopback(leaks);
});

test("a merged price change shows at once, without reloading", async (t) => {
  const { page, leaks } = await openDashboard(t);
  await page.locator("#live").filter({ hasText: "Live updates: on" }).waitFor();
  const [row] = await shownRows(page);
  const { product } = await graphql(server, `query ($id: UUID!) { product(id: $id) { ${PRODUCT_AS_UPLOADED} } }`, {
    id: row.id,
  });
  const rubles = product.prices.filter((p) => p.currency === "RUB");
  const cheapest = rubles.reduce((a, b) => (b.price < a.price ? b : a));
  const price = Math.round(cheapest.price * 0.8);
  const session = await uploadPrice(server, product, cheapest, price);

  const move = page.locator("#moves li").first();
  await move.waitFor({ timeout: 20 * MERGE_INTERVAL_SECS * 1000 });
  assert.equal(await move.locator("a").textContent(), product.name);
  assert.match(await move.textContent(), new RegExp(`${money.format(cheapest.price)} → ${money.format(price)} RUB`));
  const cell = page.locator(`tr[data-id="${row.id}"] td.price`);
  assert.equal(await cell.textContent(), `${money.format(price)} RUB`);
  assert.equal((await scrapeSession(server, session)).status, "completed");
  assertStayedOnLoopback(leaks);
});
