// GraphiQL and the API reference loaded from a CDN, as a binary built
// without npm does: a mirror
// on loopback serves web/node_modules in unpkg's layout
// (`/<package>@<version>/<file>`, with CORS), and VITRINA_GRAPHIQL_ASSETS
// points the page at it. Chromium must accept the files under the page's
// Subresource Integrity hashes, and refuse one whose bytes changed.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { assertStayedOnLoopback, launchBrowser, loadedFiles, offlineContext } from "./support/browser.mjs";
import { openGraphiQL } from "./support/graphiql.mjs";
import { startServer } from "./support/server.mjs";

const MODULES = new URL("../node_modules/", import.meta.url);

let mirror;
let server;
let browser;
/** When set, the mirror appends a byte to this file, as a tampered CDN would. */
let tampered = null;

before(async () => {
  mirror = await startMirror();
  server = await startServer({ VITRINA_GRAPHIQL_ASSETS: mirror.url });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await new Promise((resolve) => mirror?.server.close(resolve));
});

test("GraphiQL loads every file from the CDN under its pinned hash, and says where from", async (t) => {
  tampered = null;
  const { context, leaks } = await offlineContext(browser, t);
  const loaded = loadedFiles(context);
  const graphiql = await openGraphiQL(context, server);
  const urls = loaded.map(({ url }) => url);
  const fromMirror = urls.filter((url) => url.startsWith(`${mirror.url}/`));
  assert.equal(fromMirror.length, 6, urls.join("\n"));
  assert.deepEqual(mirror.asked.sort(), fromMirror.map((url) => url.slice(mirror.url.length)).sort());
  const notice = await graphiql.page.locator("#vitrina-assets-notice").textContent();
  assert.match(notice, new RegExp(`loads its packages from ${mirror.url.replaceAll(".", "\\.")}`));
  assertStayedOnLoopback(leaks);
});

test("a file whose bytes differ from the pinned hash is refused", async (t) => {
  tampered = "/graphiql@3.9.0/graphiql.min.js";
  const { context, leaks } = await offlineContext(browser, t);
  const page = await context.newPage();
  await page.goto(`${server.url}/graphql`);
  const message = page.locator("#graphiql").getByText(/could not load/i);
  await message.waitFor();
  assert.match(await message.textContent(), /GraphiQL missing/);
  assert.ok(mirror.asked.includes(tampered), mirror.asked.join("\n"));
  assertStayedOnLoopback(leaks);
});

test("the API reference loads Swagger UI from the CDN under its pinned hashes", async (t) => {
  tampered = null;
  const { context, leaks } = await offlineContext(browser, t);
  const loaded = loadedFiles(context);
  const page = await context.newPage();
  await page.goto(`${server.url}/docs`);
  await page.locator(".info .title").filter({ hasText: "Vitrina REST v1" }).waitFor();
  const urls = loaded.map(({ url }) => url);
  const fromMirror = urls.filter((url) => url.startsWith(`${mirror.url}/swagger-ui-dist@`));
  assert.equal(fromMirror.length, 3, urls.join("\n"));
  const notice = await page.locator("#vitrina-assets-notice").textContent();
  assert.match(notice, new RegExp(`loads its packages from ${mirror.url.replaceAll(".", "\\.")}`));
  assertStayedOnLoopback(leaks);
});

/** The mirror: installed package files at their installed version, 404 otherwise. */
async function startMirror() {
  const asked = [];
  const server = createServer((request, response) => {
    const path = new URL(request.url, "http://mirror").pathname.replace(/^\/npm/, "");
    asked.push(path);
    const match = /^\/((?:@[^/]+\/)?[^/@]+)@([^/]+)\/(.+)$/.exec(path);
    let body;
    try {
      const [, name, version, file] = match ?? [];
      const dir = new URL(`${name}/`, MODULES);
      const installed = JSON.parse(readFileSync(new URL("package.json", dir), "utf8")).version;
      if (installed !== version || file.includes("..")) throw new Error("not pinned");
      body = readFileSync(new URL(file, dir));
    } catch {
      response.writeHead(404).end();
      return;
    }
    if (path === tampered) body = Buffer.concat([body, Buffer.from("\n")]);
    const type = path.endsWith(".css") ? "text/css" : "text/javascript";
    response.writeHead(200, { "content-type": type, "access-control-allow-origin": "*" });
    response.end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return { server, url: `http://127.0.0.1:${port}/npm`, asked };
}
