// @ts-check
// Vitrina's demo dashboard: one GraphQL query lists a brand's products with
// their seller, current price and price history, drawn as a small chart.
// It is meant to be read: this is all it takes to use the API from a browser.

/** @typedef {import("../generated/graphql/graphql").BrandDashboardQuery} BrandDashboardQuery */
/** @typedef {BrandDashboardQuery["products"]["edges"][number]["node"]} Product */

const QUERY = /* GraphQL */ `
  query BrandDashboard($brand: String!) {
    products(filter: { brand: $brand }, first: 20) {
      totalCount
      edges {
        node {
          id
          name
          seller { name }
          prices { countryCode price currency }
          priceHistory(first: 30) {
            edges { node { countryCode price currency recordedAt } }
          }
        }
      }
    }
  }
`;

const config = JSON.parse(document.getElementById("vitrina-config")?.textContent ?? "{}");
const form = /** @type {HTMLFormElement} */ (document.getElementById("search"));
const brandInput = /** @type {HTMLInputElement} */ (document.getElementById("brand"));
const rows = /** @type {HTMLTableSectionElement} */ (document.querySelector("#products tbody"));
const status = /** @type {HTMLElement} */ (document.getElementById("status"));

/**
 * Sends one GraphQL request; GraphQL reports errors in the body, often
 * with HTTP 200, so both are checked.
 * @param {string} query
 * @param {Record<string, unknown>} variables
 * @returns {Promise<any>}
 */
async function graphql(query, variables) {
  const response = await fetch("/graphql", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${config.apiKey}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  /** @type {{ message: string }[] | undefined} */
  const errors = body.errors;
  if (errors?.length) throw new Error(errors.map((e) => e.message).join("; "));
  return body.data;
}

/** @param {string} brand */
async function show(brand) {
  status.className = "";
  status.textContent = `Loading ${brand}...`;
  try {
    /** @type {BrandDashboardQuery} */
    const data = await graphql(QUERY, { brand });
    rows.replaceChildren(...data.products.edges.map(({ node }) => row(node)));
    status.textContent = data.products.totalCount === 0 ? `No products of ${brand}.` : "";
  } catch (error) {
    rows.replaceChildren();
    status.className = "error";
    status.textContent = `Could not load products: ${error instanceof Error ? error.message : error}`;
  }
}

/** @param {Product} product */
function row(product) {
  const current = product.prices[0];
  const tr = document.createElement("tr");
  const cell = (/** @type {string} */ text, className = "") => {
    const td = document.createElement("td");
    td.textContent = text;
    td.className = className;
    return td;
  };
  const cells = [
    cell(product.name),
    cell(product.seller?.name ?? "unknown"),
    cell(current ? `${current.price.toFixed(2)} ${current.currency}` : "no price", "price"),
  ];
  const chart = document.createElement("td");
  // One market's prices, so that the line compares like with like.
  const history = product.priceHistory.edges
    .map(({ node }) => node)
    .filter((p) => !current || (p.countryCode === current.countryCode && p.currency === current.currency));
  chart.append(priceChart(history.map((p) => p.price).reverse()));
  tr.append(...cells, chart);
  return tr;
}

/**
 * A sparkline of prices, oldest first, scaled to the box.
 * @param {number[]} prices
 */
function priceChart(prices) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  const [width, height] = [160, 40];
  svg.setAttribute("class", "price-chart");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${prices.length} prices`);
  const low = Math.min(...prices);
  const span = Math.max(...prices) - low || 1;
  const step = prices.length > 1 ? width / (prices.length - 1) : 0;
  const line = document.createElementNS(svg.namespaceURI, "polyline");
  const points = prices.map((p, i) => `${(i * step).toFixed(1)},${(height - 2 - ((p - low) / span) * (height - 4)).toFixed(1)}`);
  line.setAttribute("points", points.join(" "));
  svg.append(line);
  return svg;
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  show(brandInput.value.trim());
});
show(brandInput.value);
