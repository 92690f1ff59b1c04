// Takes the README's picture of the demo dashboard: `npm run screenshot`
// after `cargo build`. The same server and browser as the tests.

import { launchBrowser } from "../tests/support/browser.mjs";
import { startServer } from "../tests/support/server.mjs";

const OUT = new URL("../../docs/dashboard.png", import.meta.url);

const server = await startServer();
const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
  await page.goto(`${server.url}/dashboard`);
  await page.locator("#range").filter({ hasText: /^1–/ }).waitFor();
  await page.locator("#drops li").first().waitFor();
  await page.locator("#live").filter({ hasText: "Live updates: on" }).waitFor();
  await page.locator("#chart circle.bucket").nth(-2).hover();
  await page.locator("#chart .tooltip").waitFor();
  await page.screenshot({ path: OUT.pathname, fullPage: true });
  console.log(`wrote ${OUT.pathname}`);
} finally {
  await browser.close();
  await server.stop();
}
