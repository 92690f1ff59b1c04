// @ts-check
// Vitrina's demo dashboard: a brand's or a category's products in one
// currency, sorted and paged with their count, their price statistics, a
// chart of the chosen product, the week's biggest drops and price changes as
// merges make them. It is meant to be read: this is all it takes to build a
// dashboard on the GraphQL API from a browser.

import { graphql, subscribe } from "./api.js";
import { money, priceChart } from "./chart.js";
import { CATALOG, CHOICES, DROPS, LIVE, SERIES } from "./queries.js";

/** @typedef {import("../generated/graphql/graphql").DashboardCatalogQuery} CatalogQuery */
/** @typedef {import("../generated/graphql/graphql").DashboardChoicesQuery} ChoicesQuery */
/** @typedef {import("../generated/graphql/graphql").DashboardDropsQuery} DropsQuery */
/** @typedef {import("../generated/graphql/graphql").DashboardSeriesQuery} SeriesQuery */
/** @typedef {import("../generated/graphql/graphql").DashboardLiveSubscription} LiveSubscription */
/** @typedef {CatalogQuery["products"]["nodes"][number]} Product */
/** @typedef {{ first?: number, after?: string | null, last?: number, before?: string | null }} PageArgs */

const PAGE_SIZE = 20;
const WEEK_MS = 7 * 86_400_000;
const LIVE_KEPT = 20;
const MARKETPLACES = {
  WILDBERRIES: "Wildberries",
  OZON: "Ozon",
  YANDEX_MARKET: "Yandex Market",
  MEGAMARKET: "Megamarket",
};
const day = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short", year: "numeric", timeZone: "UTC" });

/** @param {string} id */
const $ = (id) => /** @type {any} */ (document.getElementById(id));
const form = /** @type {HTMLFormElement} */ ($("choose"));
const kind = /** @type {HTMLSelectElement} */ ($("kind"));
const choice = /** @type {HTMLInputElement} */ ($("choice"));
const currencyPicker = /** @type {HTMLSelectElement} */ ($("currency"));
const orderPicker = /** @type {HTMLSelectElement} */ ($("order"));
const bucketPicker = /** @type {HTMLSelectElement} */ ($("bucket"));
const rows = /** @type {HTMLTableSectionElement} */ (document.querySelector("#products tbody"));
const status = /** @type {HTMLElement} */ ($("status"));

/** What is shown: the query's filter, currency, order and page. */
const view = {
  /** @type {Record<string, string>} */
  filter: {},
  currency: "RUB",
  order: { field: "PRICE", direction: "ASC" },
  page: 0,
  /** @type {CatalogQuery["products"]["pageInfo"] | null} */
  pageInfo: null,
  /** @type {string | null} */
  selected: null,
  /** @type {(() => void) | null} */
  stopLive: null,
  /** Counts the page loads, so that an answer to an older one is dropped. */
  loads: 0,
  /** Counts the chart loads: a slow answer for an earlier product or bucket must not replace a newer chart. */
  charts: 0,
};

/** @type {Record<string, string[]>} picker suggestions by kind */
const suggestions = { brand: [], category: [] };

async function loadChoices() {
  /** @type {ChoicesQuery} */
  const data = await graphql(CHOICES, {});
  suggestions.brand = data.brands.map((b) => b.brand);
  const categories = new Map();
  for (const list of [data.wildberries, data.ozon, data.yandexMarket, data.megamarket]) {
    for (const { categoryPath, productCount } of list) {
      for (const name of categoryPath) categories.set(name, (categories.get(name) ?? 0) + productCount);
    }
  }
  suggestions.category = [...categories].sort((a, b) => b[1] - a[1]).map(([name]) => name);
  fillSuggestions();
  // A kind picked before the suggestions came gets its first one now.
  const first = suggestions[kind.value]?.[0];
  if (!choice.value.trim() && first) {
    choice.value = first;
    show();
  }
}

function fillSuggestions() {
  $("choices").replaceChildren(
    ...(suggestions[kind.value] ?? []).map((value) => Object.assign(document.createElement("option"), { value })),
  );
}

/** Shows the first page of what the form names, and watches it live. */
async function show() {
  const [field = "PRICE", direction = "ASC"] = orderPicker.value.split(" ");
  view.currency = currencyPicker.value;
  view.filter = { [kind.value]: choice.value.trim(), currency: view.currency };
  view.order = { field, direction };
  view.selected = null;
  await loadPage(0, { first: PAGE_SIZE });
  watchLive();
}

/**
 * @param {number} page
 * @param {PageArgs} args
 */
async function loadPage(page, args) {
  const load = ++view.loads;
  status.className = "";
  status.textContent = "Loading...";
  try {
    /** @type {CatalogQuery} */
    const data = await graphql(CATALOG, {
      filter: view.filter,
      currency: view.currency,
      order: view.order,
      ...args,
    });
    if (load !== view.loads) return;
    view.page = page;
    view.pageInfo = data.products.pageInfo;
    const products = data.products.nodes;
    rows.replaceChildren(...products.map(row));
    showRange(products.length, data.products.totalCount, data.products.totalCountIsExact);
    showStats(data.productStats);
    status.textContent = products.length === 0 ? `Nothing priced in ${view.currency}.` : "";
    const first = products[0];
    if (first && !products.some((p) => p.id === view.selected)) select(first.id);
    const latest = data.latest.nodes[0]?.lastSeenAt;
    if (page === 0) showDrops(latest ? Date.parse(latest) : null);
  } catch (error) {
    if (load !== view.loads) return;
    rows.replaceChildren();
    failed("Could not load products", error);
  }
}

/** @param {Product} product */
function row(product) {
  const tr = document.createElement("tr");
  tr.dataset.id = product.id;
  tr.tabIndex = 0;
  const lowest = Math.min(...product.prices.filter((p) => p.currency === view.currency).map((p) => p.price));
  tr.append(
    cell(product.name, "name"),
    cell(MARKETPLACES[product.marketplace] ?? product.marketplace, "marketplace"),
    cell(product.seller?.name ?? "unknown"),
    cell(Number.isFinite(lowest) ? `${money.format(lowest)} ${view.currency}` : "none", "price"),
    cell(day.format(Date.parse(product.lastSeenAt)), "seen"),
  );
  tr.addEventListener("click", () => select(product.id));
  tr.addEventListener("keydown", (event) => event.key === "Enter" && select(product.id));
  return tr;
}

/** @param {string} text @param {string} [className] */
function cell(text, className = "") {
  const td = document.createElement("td");
  td.textContent = text;
  td.className = className;
  return td;
}

/** @param {number} shown @param {number} total @param {boolean} exact */
function showRange(shown, total, exact) {
  const start = view.page * PAGE_SIZE;
  $("range").textContent =
    shown === 0 ? "no products" : `${start + 1}–${start + shown} of ${exact ? "" : "more than "}${total}`;
  $("previous").disabled = !view.pageInfo?.hasPreviousPage;
  $("next").disabled = !view.pageInfo?.hasNextPage;
}

/** @param {CatalogQuery["productStats"]} stats */
function showStats(stats) {
  const figure = (/** @type {string} */ label, /** @type {number | null | undefined} */ value, unit = view.currency) => {
    const box = document.createElement("div");
    box.className = "figure";
    box.dataset.label = label;
    const shown = value === null || value === undefined ? "–" : `${money.format(value)} ${unit}`.trim();
    box.append(Object.assign(document.createElement("span"), { textContent: label }), document.createTextNode(shown));
    return box;
  };
  $("stats").replaceChildren(
    figure("Products", stats.count, ""),
    figure("Lowest", stats.priceMin),
    figure("Median", stats.priceMedian),
    figure("Average", stats.priceAvg),
    figure("Highest", stats.priceMax),
  );
}

/**
 * The week's biggest drops: the week to the newest scrape of what is shown,
 * so that a catalog scraped a while ago still shows its last week.
 * @param {number | null} latest
 */
async function showDrops(latest) {
  const filter = view.filter;
  const list = /** @type {HTMLOListElement} */ (document.querySelector("#drops ol"));
  if (latest === null) {
    list.replaceChildren();
    $("drops-since").textContent = "";
    return;
  }
  const since = new Date(latest - WEEK_MS);
  $("drops-since").textContent = `${day.format(since)} to ${day.format(latest)}, the newest scrape`;
  try {
    /** @type {DropsQuery} */
    const data = await graphql(DROPS, { filter, currency: view.currency, since: since.toISOString() });
    if (filter !== view.filter) return;
    list.replaceChildren(...data.priceMovers.map((move) => moveItem(move, view.currency)));
    if (data.priceMovers.length === 0) list.append(Object.assign(document.createElement("li"), { textContent: "No drops." }));
  } catch (error) {
    failed("Could not load the drops", error);
  }
}

/**
 * One price move, as a list item that shows its product's chart.
 * @param {DropsQuery["priceMovers"][number]} move
 * @param {string} currency
 */
function moveItem(move, currency) {
  const li = document.createElement("li");
  li.dataset.id = move.product.id;
  const change = `${move.changePercent > 0 ? "+" : ""}${move.changePercent.toFixed(1)}%`;
  li.append(
    Object.assign(document.createElement("a"), { href: "#", textContent: move.product.name }),
    ` (${MARKETPLACES[move.product.marketplace] ?? move.product.marketplace}) `,
    `${money.format(move.before)} → ${money.format(move.after)} ${currency} `,
    Object.assign(document.createElement("strong"), {
      textContent: change,
      className: move.changePercent < 0 ? "down" : "up",
    }),
    `, ${day.format(Date.parse(move.changedAt))}`,
  );
  li.querySelector("a")?.addEventListener("click", (event) => {
    event.preventDefault();
    select(move.product.id);
  });
  return li;
}

/** Shows the product's chart in the chosen bucket. @param {string} id */
async function select(id) {
  const load = ++view.charts;
  view.selected = id;
  for (const tr of rows.rows) tr.classList.toggle("selected", tr.dataset.id === id);
  const chart = $("chart");
  try {
    const { currency } = view;
    const bucket = bucketPicker.value;
    /** @type {SeriesQuery} */
    const data = await graphql(SERIES, { id, currency, bucket });
    if (load !== view.charts) return;
    $("detail-title").textContent = data.product.name;
    const buckets = data.product.priceSeries;
    chart.replaceChildren(
      buckets.length ? priceChart(buckets, currency, /** @type {any} */ (bucket)) : `No prices in ${currency}.`,
    );
  } catch (error) {
    if (load !== view.charts) return;
    failed("Could not load the chart", error);
  }
}

/** Subscribes to price changes of what is shown, instead of polling. */
function watchLive() {
  view.stopLive?.();
  const indicator = $("live");
  const currency = view.currency;
  view.stopLive = subscribe(LIVE, { filter: view.filter }, {
    state(state, why) {
      indicator.className = state;
      indicator.textContent = `Live updates: ${state === "live" ? "on" : state}${why ? ` (${why})` : ""}`;
    },
    next(/** @type {LiveSubscription} */ data) {
      const move = data.priceChanged;
      const list = /** @type {HTMLOListElement} */ (document.querySelector("#moves ol"));
      list.prepend(moveItem(move, currency));
      while (list.children.length > LIVE_KEPT) list.lastElementChild?.remove();
      const tr = [...rows.rows].find((r) => r.dataset.id === move.product.id);
      const price = tr?.querySelector("td.price");
      if (tr && price) {
        price.textContent = `${money.format(move.after)} ${currency}`;
        tr.classList.add("changed");
      }
    },
  });
}

/** @param {string} what @param {unknown} error */
function failed(what, error) {
  status.className = "error";
  status.textContent = `${what}: ${error instanceof Error ? error.message : error}`;
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  show();
});
kind.addEventListener("change", () => {
  fillSuggestions();
  choice.value = suggestions[kind.value]?.[0] ?? "";
  show();
});
for (const picker of [currencyPicker, orderPicker]) picker.addEventListener("change", () => show());
bucketPicker.addEventListener("change", () => view.selected && select(view.selected));
$("next").addEventListener("click", () => loadPage(view.page + 1, { first: PAGE_SIZE, after: view.pageInfo?.endCursor }));
$("previous").addEventListener("click", () =>
  loadPage(view.page - 1, { last: PAGE_SIZE, before: view.pageInfo?.startCursor }),
);

loadChoices().catch((error) => failed("Could not load the brands and categories", error));
show();
