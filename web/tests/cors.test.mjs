// A dashboard on its own origin (issue 29, item 1): a page served from a
// second loopback port calls /graphql and /v1 of a server that lists that
// origin in VITRINA_CORS_ORIGINS, and reads ETag and the rate-limit
// headers; a page of an origin not listed is kept out by the browser.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { assertStayedOnLoopback, launchBrowser, offlineContext } from "./support/browser.mjs";
import { startServer } from "./support/server.mjs";

let dashboard;
let stranger;
let server;
let browser;

/** A plain page on a free loopback port: an origin of its own. */
async function pageServer() {
  const http = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end("<!doctype html><title>elsewhere</title><p>a page of another origin</p>");
  });
  await new Promise((resolve) => http.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${http.address().port}`;
  return { url, close: () => new Promise((resolve) => http.close(resolve)) };
}

before(async () => {
  dashboard = await pageServer();
  stranger = await pageServer();
  server = await startServer({ VITRINA_CORS_ORIGINS: dashboard.url });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await dashboard?.close();
  await stranger?.close();
});

/** What a fetch from a page of `origin` to the API gets, run in the page. */
async function callFrom(t, origin) {
  const { context, leaks } = await offlineContext(browser, t);
  const page = await context.newPage();
  await page.goto(origin);
  const result = await page.evaluate(
    async ({ api, key }) => {
      const keyed = { authorization: `Bearer ${key}` };
      try {
        const graphql = await fetch(`${api}/graphql`, {
          method: "POST",
          headers: { ...keyed, "content-type": "application/json" },
          body: JSON.stringify({ query: "{ products(first: 2) { totalCount } }" }),
        });
        const rest = await fetch(`${api}/v1/products?page_size=1`, { headers: keyed });
        const etag = rest.headers.get("etag");
        const again = await fetch(`${api}/v1/products?page_size=1`, {
          headers: { ...keyed, "if-none-match": etag },
        });
        return {
          total: (await graphql.json()).data.products.totalCount,
          remaining: graphql.headers.get("x-ratelimit-remaining"),
          restStatus: rest.status,
          etag,
          againStatus: again.status,
        };
      } catch (error) {
        return { blocked: error.name };
      }
    },
    { api: server.url, key: server.demoKey },
  );
  assertStayedOnLoopback(leaks);
  return result;
}

test("a page of a listed origin calls GraphQL and REST and reads their headers", async (t) => {
  const seen = await callFrom(t, dashboard.url);
  assert.equal(seen.blocked, undefined, `not blocked: ${JSON.stringify(seen)}`);
  assert.ok(seen.total > 0, "the demo catalog's count");
  assert.match(seen.remaining ?? "", /^\d+$/, "X-RateLimit-Remaining is readable");
  assert.equal(seen.restStatus, 200);
  assert.match(seen.etag ?? "", /^(W\/)?"/, "ETag is readable");
  assert.equal(seen.againStatus, 304, "If-None-Match is sent and answered");
});

test("a page of an origin not listed cannot read the API", async (t) => {
  const seen = await callFrom(t, stranger.url);
  assert.equal(seen.blocked, "TypeError", JSON.stringify(seen));
});
