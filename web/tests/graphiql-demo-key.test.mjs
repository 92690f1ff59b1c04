// `serve --demo` on a fresh database makes a new demo key. A browser that
// kept the old one in GraphiQL's headers must get the new one, or its first
// sight of the page is a 401.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { assertStayedOnLoopback, launchBrowser, offlineContext } from "./support/browser.mjs";
import { openGraphiQL } from "./support/graphiql.mjs";
import { startServer } from "./support/server.mjs";

let browser;

before(async () => {
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
});

test("headers stored with an older demo key get the new one, the rest kept", async (t) => {
  const first = await startServer();
  t.after(() => first.stop());
  const { context, leaks } = await offlineContext(browser, t);
  const graphiql = await openGraphiQL(context, first);
  await graphiql.setHeaders({ Authorization: `Bearer ${first.demoKey}`, "X-Test": "kept" });

  // The same address (so the same localStorage), a new demo database.
  await first.stop();
  const second = await startServer({ VITRINA_BIND: new URL(first.url).host });
  t.after(() => second.stop());
  await graphiql.reload();
  assert.deepEqual(await graphiql.headers(), { Authorization: `Bearer ${second.demoKey}`, "X-Test": "kept" });
  await graphiql.run();
  const result = await graphiql.result();
  assert.equal(result.errors, undefined, JSON.stringify(result.errors));
  assertStayedOnLoopback(leaks);
});
