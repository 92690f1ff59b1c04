// The demo dashboard at /dashboard under `serve --demo`: a brand's products
// with seller, current price and a price chart, from GraphQL alone, offline.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { assertStayedOnLoopback, launchBrowser, offlineContext } from "./support/browser.mjs";
import { startServer } from "./support/server.mjs";

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test("the dashboard lists products with seller, price and a price chart", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const calls = new Set();
  context.on("request", (request) => {
    if (["fetch", "xhr"].includes(request.resourceType())) {
      calls.add(`${request.method()} ${new URL(request.url()).pathname}`);
    }
  });
  const page = await context.newPage();
  await page.goto(`${server.url}/dashboard`);
  const rows = page.locator("table#products tbody tr");
  await rows.first().waitFor();

  assert.equal(await page.locator("#status").textContent(), "", "no error, nothing pending");
  const shown = await rows.evaluateAll((trs) =>
    trs.map((tr) => ({
      cells: [...tr.cells].slice(0, 3).map((td) => td.textContent.trim()),
      points: tr.querySelector("svg.price-chart polyline")?.points.numberOfItems ?? 0,
    })),
  );
  assert.ok(shown.length > 0);
  for (const { cells, points } of shown) {
    const [name, seller, price] = cells;
    assert.ok(name && seller, `a name and a seller: ${cells}`);
    assert.match(price, /\d/, `a current price: ${cells}`);
    assert.ok(points >= 2, `a price chart with at least 2 points: ${cells} has ${points}`);
  }
  assert.deepEqual([...calls], ["POST /graphql"], "the page's API calls");
  assertStayedOnLoopback(leaks);
});
