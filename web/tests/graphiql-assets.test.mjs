// GraphiQL and the API reference told to load their assets from a CDN that
// cannot be reached: each page must say so instead of staying blank.

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, test } from "node:test";

import { assertStayedOnLoopback, launchBrowser, offlineContext } from "./support/browser.mjs";
import { startServer } from "./support/server.mjs";

let server;
let browser;
let unreachable;

before(async () => {
  unreachable = `http://127.0.0.1:${await closedPort()}/npm`;
  server = await startServer({ VITRINA_GRAPHIQL_ASSETS: unreachable });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test("assets that do not load are reported on the page", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const page = await context.newPage();
  await page.goto(`${server.url}/graphql`);
  const message = page.locator("#graphiql").getByText(/could not load/i);
  await message.waitFor();
  assert.match(await message.textContent(), new RegExp(unreachable.replaceAll(".", "\\.")));
  assertStayedOnLoopback(leaks);
});

test("the API reference says so too, and where the documents are", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const page = await context.newPage();
  await page.goto(`${server.url}/docs`);
  const message = page.locator("#swagger-ui").getByText(/could not load/i);
  await message.waitFor();
  const text = await message.textContent();
  assert.match(text, new RegExp(unreachable.replaceAll(".", "\\.")));
  assert.match(text, /\/v1\/openapi\.json and \/extension\/v1\/openapi\.json/);
  assertStayedOnLoopback(leaks);
});

/** A loopback port nothing listens on: one the OS just handed out and took back. */
async function closedPort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
