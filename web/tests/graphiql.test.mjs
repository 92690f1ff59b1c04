// GraphiQL at GET /graphql under `serve --demo`, in headless Chromium with
// no internet: it loads from the binary, knows the schema, holds the demo
// key, keeps what the user typed, and recovers once a bad key is fixed. The
// API reference at GET /docs, offline too, shows every operation of both
// OpenAPI documents.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { assertStayedOnLoopback, launchBrowser, loadedFiles, offlineContext } from "./support/browser.mjs";
import { eventually } from "./support/eventually.mjs";
import { openGraphiQL } from "./support/graphiql.mjs";
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

test("GraphiQL loads offline, every script and stylesheet from the server", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const loaded = loadedFiles(context);
  await openGraphiQL(context, server);
  for (const { url, status } of loaded) {
    assert.ok(url.startsWith(`${server.url}/graphiql/`), `${url} is not served by Vitrina`);
    assert.equal(status, 200, url);
  }
  for (const name of ["react", "react-dom", "graphiql", "@graphiql/plugin-explorer"]) {
    const from = `${server.url}/graphiql/assets/${name}@`;
    assert.ok(
      loaded.some(({ url }) => url.startsWith(from)),
      `nothing loaded from ${from}...: ${loaded.map(({ url }) => url).join(", ")}`,
    );
  }
  assertStayedOnLoopback(leaks);
});

test("the Docs panel lists the Product type", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const graphiql = await openGraphiQL(context, server);
  const docs = await graphiql.showTypeInDocs("Product");
  await docs.getByText("priceHistory", { exact: true }).first().waitFor();
  assertStayedOnLoopback(leaks);
});

test("under --demo the headers hold the demo key and the pre-filled query runs", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const graphiql = await openGraphiQL(context, server);
  assert.equal((await graphiql.headers()).Authorization, `Bearer ${server.demoKey}`);
  await graphiql.run();
  const result = await graphiql.result();
  assert.equal(result.errors, undefined, JSON.stringify(result.errors));
  const totalCount = JSON.stringify(result).match(/"totalCount":(\d+)/)?.[1];
  assert.ok(Number(totalCount) > 0, `a totalCount above 0 in ${JSON.stringify(result)}`);
  assertStayedOnLoopback(leaks);
});

test("a misspelt field is underlined as an error", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const graphiql = await openGraphiQL(context, server);
  await graphiql.replace("query", "{\n  prodcts {\n    totalCount\n  }\n}\n");
  const mark = graphiql.page.locator(".graphiql-query-editor .CodeMirror-lint-mark-error");
  await mark.getByText("prodcts").waitFor();
  await mark.getByText("prodcts").hover();
  await graphiql.page.locator(".CodeMirror-lint-tooltip").getByText('Did you mean "products"').waitFor();
  assertStayedOnLoopback(leaks);
});

test("a reload keeps the headers the user typed", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const graphiql = await openGraphiQL(context, server);
  const headers = { ...(await graphiql.headers()), "X-Test": "kept" };
  await graphiql.setHeaders(headers);
  await graphiql.reload();
  assert.deepEqual(await graphiql.headers(), headers);
  assertStayedOnLoopback(leaks);
});

test("fixing a bad key fetches the schema again and clears the 401", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const graphiql = await openGraphiQL(context, server);
  await graphiql.setHeaders({ Authorization: "Bearer vtr_not_a_key" });
  // Opened with the bad key, as a user who typed a wrong one comes back to it.
  await graphiql.reload();
  const docs = await graphiql.openDocs();
  await docs.getByText("Error fetching schema").waitFor();
  await eventually(async () => assert.match(await graphiql.text("result"), /UNAUTHORIZED/));

  await graphiql.setHeaders({ Authorization: `Bearer ${server.demoKey}` });
  await graphiql.showTypeInDocs("Product");
  await eventually(async () => assert.doesNotMatch(await graphiql.text("result"), /UNAUTHORIZED|401/));
  assertStayedOnLoopback(leaks);
});

test("the explorer plugin lists the query fields and builds a query from a click", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const graphiql = await openGraphiQL(context, server);
  const explorer = await graphiql.openExplorer();
  // A root field comes before the fields nested in it (a seller's products).
  const rootField = (name) => explorer.locator(`[data-field-name="${name}"]`).first();
  await rootField("products").waitFor();
  assert.equal(await rootField("products").getAttribute("data-field-type"), "ProductConnection");
  await rootField("brands").click();
  await eventually(async () => assert.match(await graphiql.text("query"), /\bbrands\b/));
  assertStayedOnLoopback(leaks);
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
