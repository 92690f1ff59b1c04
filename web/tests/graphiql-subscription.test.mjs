// A subscription run from GraphiQL: the page opens /graphql/ws with the key
// of its Headers tab and shows each update the server pushes.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { scrapeSession, uploadScrape, waitForMergeTick } from "./support/api.mjs";
import { assertStayedOnLoopback, launchBrowser, offlineContext } from "./support/browser.mjs";
import { eventually } from "./support/eventually.mjs";
import { openGraphiQL } from "./support/graphiql.mjs";
import { startServer } from "./support/server.mjs";

// Uploads merge on the next job tick: 8 s apart leaves the page time to
// subscribe between an upload and its merge.
const MERGE_INTERVAL_SECS = 8;

let server;
let browser;

before(async () => {
  server = await startServer({ VITRINA_MERGE_INTERVAL_SECS: String(MERGE_INTERVAL_SECS) });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test("a subscription in GraphiQL shows the session now, then its merge", async (t) => {
  const { context, leaks } = await offlineContext(browser, t);
  const graphiql = await openGraphiQL(context, server);
  const tickMs = MERGE_INTERVAL_SECS * 1000;
  await waitForMergeTick(server, 2 * tickMs);
  const session = await uploadScrape(server, "subscribed-1");
  await graphiql.setQuery(
    `subscription Progress {\n  scrapeSessionUpdated(id: "${session}") {\n` +
      "    status\n    stats { pending merged }\n  }\n}\n",
  );
  await graphiql.run();

  const now = await graphiql.result();
  assert.deepEqual(
    now.data?.scrapeSessionUpdated,
    { status: "PROCESSING", stats: { pending: 1, merged: 0 } },
    `the first update, before the merge: ${JSON.stringify(now)}`,
  );
  const merged = await eventually(async () => {
    const update = await graphiql.result();
    assert.equal(update.data?.scrapeSessionUpdated?.status, "COMPLETED", JSON.stringify(update));
    return update.data.scrapeSessionUpdated;
  }, 2 * tickMs);
  assert.deepEqual(merged.stats, { pending: 0, merged: 1 });
  assert.equal((await scrapeSession(server, session)).status, "completed");
  assertStayedOnLoopback(leaks);
});
