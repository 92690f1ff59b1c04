// @ts-check
// A price chart drawn as SVG from `priceSeries` buckets: the band from each
// bucket's lowest to highest price, the line of its average, axes with
// prices and UTC dates, the lowest and highest price marked, and a tooltip
// per bucket. No library: this is all a chart of a few hundred buckets needs.

/** @typedef {{ start: string, count: number, min: number, max: number, avg: number, open: number, close: number }} Bucket */

const SVG = "http://www.w3.org/2000/svg";
const [WIDTH, HEIGHT] = [640, 260];
const MARGIN = { top: 18, right: 18, bottom: 34, left: 76 };
const DAY_MS = 86_400_000;

export const money = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
const shortDate = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short", timeZone: "UTC" });
const longDate = new Intl.DateTimeFormat("en-GB", {
  weekday: "short",
  day: "numeric",
  month: "short",
  year: "numeric",
  timeZone: "UTC",
});
const month = new Intl.DateTimeFormat("en-GB", { month: "long", year: "numeric", timeZone: "UTC" });

/**
 * The chart of `buckets` (oldest first), with its tooltip, in one element.
 * @param {Bucket[]} buckets at least one
 * @param {string} currency
 * @param {"DAY" | "WEEK" | "MONTH"} bucket what a bucket spans
 * @returns {HTMLElement}
 */
export function priceChart(buckets, currency, bucket) {
  const times = buckets.map((b) => Date.parse(b.start));
  const x = scale(padded(Math.min(...times), Math.max(...times), DAY_MS), [MARGIN.left, WIDTH - MARGIN.right]);
  const lowest = Math.min(...buckets.map((b) => b.min));
  const highest = Math.max(...buckets.map((b) => b.max));
  const [yLow, yHigh] = padded(lowest, highest, Math.max(Math.abs(highest) * 0.05, 1));
  const y = scale([yLow, yHigh], [HEIGHT - MARGIN.bottom, MARGIN.top]);

  const svg = /** @type {SVGSVGElement} */ (element("svg", {
    class: "price-chart",
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "img",
    "aria-label": `Price in ${currency}, ${buckets.length} buckets, from ${money.format(lowest)} to ${money.format(highest)}`,
  }));
  const [left, right, bottom] = [MARGIN.left, WIDTH - MARGIN.right, HEIGHT - MARGIN.bottom];
  const yAxis = element("g", { class: "axis y" });
  for (const tick of ticks(yLow, yHigh, 5)) {
    yAxis.append(
      element("line", { class: "grid", x1: left, x2: right, y1: y(tick), y2: y(tick) }),
      text(money.format(tick), { x: left - 6, y: y(tick), "text-anchor": "end", "dominant-baseline": "middle" }),
    );
  }
  yAxis.append(
    element("line", { x1: left, x2: left, y1: MARGIN.top, y2: bottom }),
    text(currency, { x: 4, y: MARGIN.top - 6, class: "unit" }),
  );
  const xAxis = element("g", { class: "axis x" });
  xAxis.append(element("line", { x1: left, x2: right, y1: bottom, y2: bottom }));
  const [from, to] = x.domain;
  for (let i = 0; i <= 4; i++) {
    const at = from + ((to - from) * i) / 4;
    xAxis.append(
      element("line", { x1: x(at), x2: x(at), y1: bottom, y2: bottom + 4 }),
      text(shortDate.format(at), { x: x(at), y: bottom + 16, "text-anchor": "middle" }),
    );
  }
  xAxis.append(text("UTC", { x: right, y: bottom + 30, "text-anchor": "end", class: "unit" }));

  const band = [
    ...buckets.map((b, i) => `${x(times[i] ?? 0)},${y(b.max)}`),
    ...buckets.map((b, i) => `${x(times[i] ?? 0)},${y(b.min)}`).reverse(),
  ];
  const line = buckets.map((b, i) => `${x(times[i] ?? 0)},${y(b.avg)}`);
  const dots = buckets.map((b, i) => {
    const dot = element("circle", { class: "bucket", cx: x(times[i] ?? 0), cy: y(b.avg), r: 3 });
    dot.append(element("title", {}, describe(b, currency, bucket).join("\n")));
    return dot;
  });
  const low = buckets.findIndex((b) => b.min === lowest);
  const high = buckets.findIndex((b) => b.max === highest);
  svg.append(
    yAxis,
    xAxis,
    element("polygon", { class: "range", points: band.join(" ") }),
    element("polyline", { class: "average", points: line.join(" ") }),
    ...dots,
    marker("min", x(times[low] ?? 0), y(lowest), `min ${money.format(lowest)}`),
    marker("max", x(times[high] ?? 0), y(highest), `max ${money.format(highest)}`),
  );

  const box = document.createElement("div");
  box.className = "chart";
  const tip = document.createElement("div");
  tip.className = "tooltip";
  tip.hidden = true;
  const guide = element("line", { class: "guide", y1: MARGIN.top, y2: bottom, visibility: "hidden" });
  svg.append(guide);
  svg.addEventListener("pointermove", (event) => {
    const at = svg.getScreenCTM()?.inverse();
    if (!at) return;
    const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(at);
    const nearest = nearestIndex(times.map((t) => x(t)), point.x);
    const shown = buckets[nearest];
    if (!shown) return;
    const cx = x(times[nearest] ?? 0);
    guide.setAttribute("x1", String(cx));
    guide.setAttribute("x2", String(cx));
    guide.setAttribute("visibility", "visible");
    tip.replaceChildren(...describe(shown, currency, bucket).map((line) => div(line)));
    tip.hidden = false;
    tip.style.left = `${(cx / WIDTH) * 100}%`;
    tip.style.top = `${(y(shown.max) / HEIGHT) * 100}%`;
  });
  svg.addEventListener("pointerleave", () => {
    tip.hidden = true;
    guide.setAttribute("visibility", "hidden");
  });
  box.append(svg, tip);
  return box;
}

/**
 * A bucket in words, for its tooltip.
 * @param {Bucket} b
 * @param {string} currency
 * @param {"DAY" | "WEEK" | "MONTH"} bucket
 */
function describe(b, currency, bucket) {
  const start = Date.parse(b.start);
  const span = { DAY: longDate.format(start), WEEK: `week of ${longDate.format(start)}`, MONTH: month.format(start) };
  return [
    span[bucket],
    `average ${money.format(b.avg)} ${currency}`,
    `lowest ${money.format(b.min)}, highest ${money.format(b.max)}`,
    `first ${money.format(b.open)}, last ${money.format(b.close)}`,
    `${b.count} observation${b.count === 1 ? "" : "s"}`,
  ];
}

/**
 * A ringed point with its label beside it, on the side away from the
 * nearer edge, so that it never covers an axis.
 * @param {string} kind @param {number} cx @param {number} cy @param {string} label
 */
function marker(kind, cx, cy, label) {
  const g = element("g", { class: `extreme ${kind}` });
  const [anchor, dx] = cx > WIDTH / 2 ? ["end", -8] : ["start", 8];
  g.append(
    element("circle", { cx, cy, r: 4 }),
    text(label, { x: cx + dx, y: cy, "text-anchor": anchor, "dominant-baseline": "middle" }),
  );
  return g;
}

/**
 * A linear map from `domain` to `range`; a one-value domain maps to the middle.
 * @param {[number, number]} domain
 * @param {[number, number]} range
 */
function scale(domain, range) {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const map = (/** @type {number} */ v) => (d1 === d0 ? (r0 + r1) / 2 : r0 + ((v - d0) / (d1 - d0)) * (r1 - r0));
  return Object.assign(map, { domain });
}

/**
 * The range widened by `pad` on each side when it is a single value, so
 * one observation still gets a readable axis.
 * @returns {[number, number]}
 */
function padded(/** @type {number} */ low, /** @type {number} */ high, /** @type {number} */ pad) {
  return low === high ? [low - pad, high + pad] : [low, high];
}

/** Round values (1, 2 or 5 times a power of ten) inside [low, high], about `count` of them. */
function ticks(/** @type {number} */ low, /** @type {number} */ high, /** @type {number} */ count) {
  const raw = (high - low) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= raw) ?? raw;
  const out = [];
  for (let v = Math.ceil(low / step) * step; v <= high; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** @param {number[]} xs ascending @param {number} at */
function nearestIndex(xs, at) {
  let best = 0;
  xs.forEach((v, i) => {
    if (Math.abs(v - at) < Math.abs((xs[best] ?? v) - at)) best = i;
  });
  return best;
}

/**
 * @param {string} name
 * @param {Record<string, string | number>} attributes
 * @param {string} [content]
 */
function element(name, attributes, content) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (content !== undefined) node.textContent = content;
  return node;
}

/** @param {string} content @param {Record<string, string | number>} attributes */
function text(content, attributes) {
  return element("text", attributes, content);
}

/** @param {string} content */
function div(content) {
  const node = document.createElement("div");
  node.textContent = content;
  return node;
}
