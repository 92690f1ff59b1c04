// GraphiQL as a user sees it: its editors (CodeMirror 5, whose instance
// each editor's element carries), its run button, its side panels.

import assert from "node:assert/strict";

import { eventually } from "./eventually.mjs";

const EDITORS = {
  query: ".graphiql-query-editor .CodeMirror",
  headers: ".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror",
  result: ".result-window .CodeMirror",
};

/**
 * Opens GraphiQL and waits for its query editor.
 * @param {import("playwright-core").BrowserContext} context
 * @param {{ url: string }} server
 */
export async function openGraphiQL(context, server) {
  const page = await context.newPage();
  await page.goto(`${server.url}/graphql`);
  const graphiql = new GraphiQL(page);
  await graphiql.ready();
  return graphiql;
}

export class GraphiQL {
  /** @param {import("playwright-core").Page} page */
  constructor(page) {
    this.page = page;
  }

  async ready() {
    await this.page.locator(EDITORS.query).waitFor();
  }

  async reload() {
    await this.page.reload();
    await this.ready();
  }

  /** @param {keyof EDITORS} editor */
  async text(editor) {
    if (editor === "headers") await this.showHeaders();
    return this.page.locator(EDITORS[editor]).evaluate((el) => el.CodeMirror.getValue());
  }

  /** Replaces an editor's content as a paste would. */
  async replace(editor, text) {
    if (editor === "headers") await this.showHeaders();
    await this.page.locator(EDITORS[editor]).click();
    await this.page.keyboard.press("Control+A");
    await this.page.keyboard.insertText(text);
    assert.equal(await this.text(editor), text, `the ${editor} editor after pasting`);
  }

  /** The query to run; GraphiQL reads its operation after a 100 ms pause, then stores it. */
  async setQuery(query) {
    await this.replace("query", query);
    await eventually(async () =>
      assert.equal(await this.page.evaluate(() => localStorage.getItem("graphiql:query")), query),
    );
  }

  async headers() {
    return JSON.parse(await this.text("headers"));
  }

  /**
   * Edits the headers and waits until GraphiQL has stored them for the next
   * visit (it does, in localStorage, half a second after the last edit).
   * @param {Record<string, string>} headers
   */
  async setHeaders(headers) {
    await this.replace("headers", JSON.stringify(headers, null, 2));
    await eventually(async () => {
      const stored = await this.page.evaluate(() => localStorage.getItem("graphiql:headers"));
      assert.deepEqual(JSON.parse(stored), headers, "the stored headers");
    });
  }

  async showHeaders() {
    await this.page.getByRole("button", { name: "Headers", exact: true }).click();
  }

  async run() {
    await this.page.getByRole("button", { name: /^Execute query/ }).click();
  }

  /**
   * The result pane once it holds a JSON response.
   * @returns {Promise<{ data?: any, errors?: any[] }>}
   */
  async result() {
    return eventually(async () => JSON.parse(await this.text("result")));
  }

  async openDocs() {
    const docs = this.page.locator(".graphiql-doc-explorer");
    if (!(await docs.isVisible())) {
      await this.page.getByRole("button", { name: "Show Documentation Explorer" }).click();
    }
    return docs;
  }

  /** Navigates the Docs panel from its root to a type listed there. */
  async showTypeInDocs(name) {
    const docs = await this.openDocs();
    await docs.locator("a.graphiql-doc-explorer-type-name").getByText(name, { exact: true }).first().click();
    await docs.locator(".graphiql-doc-explorer-title").getByText(name, { exact: true }).waitFor();
    return docs;
  }

  async openExplorer() {
    await this.page.getByRole("button", { name: "Show GraphiQL Explorer" }).click();
    return this.page.locator(".graphiql-explorer-root");
  }
}
