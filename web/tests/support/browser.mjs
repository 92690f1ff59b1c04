// Debian's Chromium (or the one $CHROMIUM names), headless, driven by
// playwright-core, which never downloads a browser of its own. Pages run
// offline: requests and WebSockets to loopback go through, anything else is
// aborted and recorded, so that each test can assert nothing tried to leave
// the machine.

import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

export function launchBrowser() {
  return chromium.launch({ executablePath: CHROMIUM });
}

/**
 * A new context (its own localStorage) whose traffic stays on loopback,
 * closed when the test ends.
 * @param {import("playwright-core").Browser} browser
 * @param {import("node:test").TestContext} t
 * @returns {Promise<{ context: import("playwright-core").BrowserContext, leaks: string[] }>}
 */
export async function offlineContext(browser, t) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  t.after(() => context.close());
  context.setDefaultTimeout(15_000);
  const leaks = [];
  await context.route(
    () => true,
    (route) => {
      if (isLoopback(route.request().url())) return route.continue();
      leaks.push(route.request().url());
      return route.abort("internetdisconnected");
    },
  );
  await context.routeWebSocket(
    () => true,
    (ws) => {
      if (isLoopback(ws.url())) return ws.connectToServer();
      leaks.push(ws.url());
      return ws.close();
    },
  );
  return { context, leaks };
}

/**
 * The scripts and stylesheets the context's pages load, with their status,
 * recorded as they load.
 * @returns {{ url: string, status: number }[]}
 */
export function loadedFiles(context) {
  const loaded = [];
  context.on("response", (response) => {
    if (["script", "stylesheet"].includes(response.request().resourceType())) {
      loaded.push({ url: response.url(), status: response.status() });
    }
  });
  return loaded;
}

/** @param {string[]} leaks */
export function assertStayedOnLoopback(leaks) {
  assert.deepEqual(leaks, [], "requests that tried to leave loopback");
}

function isLoopback(url) {
  return ["127.0.0.1", "[::1]", "localhost"].includes(new URL(url).hostname);
}
