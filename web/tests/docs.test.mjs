// The API reference at /docs, in Chromium with no internet: Swagger UI from
// the binary shows every operation of both OpenAPI documents, as the
// documents the server serves list them.

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

/** "GET /products" for every operation of the document at `path`. */
async function operations(path) {
  const document = await (await fetch(`${server.url}${path}`)).json();
  return Object.entries(document.paths)
    .flatMap(([route, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${route}`))
    .sort();
}

/** The operations the page shows, as "GET /products". */
async function shown(page) {
  const blocks = page.locator(".opblock-summary");
  const found = await blocks.evaluateAll((summaries) =>
    summaries.map((s) => {
      const method = s.querySelector(".opblock-summary-method")?.textContent?.trim();
      const route = s.querySelector(".opblock-summary-path")?.getAttribute("data-path");
      return `${method} ${route}`;
    }),
  );
  return found.sort();
}

test("the API reference shows every operation of both documents, offline", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const page = await context.newPage();
  await page.goto(`${server.url}/docs`);

  const rest = await operations("/v1/openapi.json");
  await page.locator(".opblock-summary").first().waitFor();
  await page.locator(".info .title").filter({ hasText: "Vitrina REST v1" }).waitFor();
  assert.deepEqual(await shown(page), rest);

  await page.locator(".topbar select").selectOption({ label: "Extension API" });
  await page.locator(".info .title").filter({ hasText: "Vitrina extension API" }).waitFor();
  assert.deepEqual(await shown(page), await operations("/extension/v1/openapi.json"));
  assert.equal(await page.locator("#vitrina-assets-notice").count(), 0, "no CDN notice");
  assertStayedOnLoopback(leaks);
});
