"""The tables of a scale run, its targets (issue 28), and its generated
block of bench/README.md."""

import datetime

from . import scale_set, write_side
from .report import num, verdict
from .scale import BACKENDS

MARKERS = ("<!-- bench:scale:begin -->", "<!-- bench:scale:end -->")
TARGET_RATIO = 1.5  # largest / smallest catalog, every request (item 2)
# Absolute bounds of issue 28 at 1,000,000 products, in ms of median latency.
AT = 1_000_000
PAGE_MS = 50  # any page of 100 (item 3)
COUNT_MS = {"gql_count": 20, "gql_count_marketplace": 20, "gql_count_name": 50}  # item 4
FAIR_MS = 60  # a fifth key's dashboard under 16 heavy loops (item 5)
MERGE_S = 20  # a 1,000-item upload merged (item 6)
PAGES = ("rest_first", "rest_deep", "rest_marketplace", "rest_brand",
         "rest_category", "rest_name")


def size_mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB" if n >= 1e8 else f"{n / 1e6:,.1f} MB"


def ratios(catalogs: dict, sizes: list[int]) -> dict[str, float]:
    """Median at the largest size over the median at the smallest, per
    request measured at both."""
    small, large = catalogs[sizes[0]]["latency"], catalogs[sizes[-1]]["latency"]
    return {k: large[k]["p50_ms"] / small[k]["p50_ms"] for k in small if k in large}


def round_ratios(catalogs: dict, sizes: list[int], key: str) -> list[float]:
    """The same ratio in each round (the two sizes measured back to back)."""
    small, large = catalogs[sizes[0]]["latency"], catalogs[sizes[-1]]["latency"]
    if key not in small or key not in large:
        return []
    return [b / a for a, b in zip(small[key]["rounds_ms"], large[key]["rounds_ms"])]


def render(r: dict) -> str:
    opts, m = r["options"], r["machine"]
    sizes, backends = opts.scale, [b for b in opts.db if b in r["catalogs"]]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        f"Run on {when}, commit {r['commit']}, with:", "",
        f"    {opts.command}", "",
        f"Machine: {m['nproc']} CPUs ({m['model']}), {m['memory']} memory, Linux {m['kernel']}; "
        f"PostgreSQL {r['pg_version']}. Build: {opts.build}. Seed {opts.seed}. Each request, "
        f"on each catalog of a database in turn: "
        + (f"a {opts.warmup} s warm-up, then " if opts.warmup else "")
        + f"{opts.rounds} round{'s' if opts.rounds > 1 else ''} of wrk at 1 client for "
        f"{opts.duration} s; the figure is the median of the rounds' medians. The server "
        "on its own core, wrk on the other, PostgreSQL unpinned.", "",
    ] + parameters(r, sizes) + catalogs_table(r, sizes, backends) + latency_table(
        r, sizes, backends) + write_table(r, backends) + targets_table(r, sizes, backends)
    if r["failures"]:
        out += ["", "Failed (not measured where they failed):", ""] + [
            f"- {failure}" for failure in r["failures"]]
    return "\n".join(out) + "\n"


def parameters(r: dict, sizes: list[int]) -> list[str]:
    catalogs = next(iter(r["catalogs"].values()))
    first = catalogs[sizes[0]].get("params")
    if first is None:
        return []
    f = first.found
    each = []
    for size in sizes:
        p = catalogs.get(size, {}).get("params")
        if p is None:
            continue
        each.append(f"{size:,}: product `{p.found.product_id}` ({p.history} observations), "
                    f"seller_code `{p.found.seller_code}`, tin `{p.found.tin}`")
    return [
        f"Parameters at every size: brand `{f.brand}`, category `{f.category}`, "
        f"name_contains `{f.name_part}`, marketplace `{first.marketplace}`; deep page "
        f"{first.deep_page:,} of {scale_set.PAGE} rows (GraphQL: the cursor after "
        f"{first.deep_offset:,} rows). The product (the newest of that brand with as many "
        "price observations as in the smallest catalog) and its seller, at each size: "
        + "; ".join(each) + ".", "",
    ]


def catalogs_table(r: dict, sizes: list[int], backends: list[str]) -> list[str]:
    out = ["### Catalogs", "",
           "| database | products | seeding (s) | products/s | disk | seed's summary |",
           "|---|--:|--:|--:|--:|---|"]
    for backend in backends:
        for size in sizes:
            c = r["catalogs"][backend].get(size)
            if c is None:
                continue
            out.append(f"| {BACKENDS[backend]} | {size:,} | {num(c['seed_s'], 1)} "
                       f"| {num(size / c['seed_s'], 0)} | {size_mb(c['disk_bytes'])} "
                       f"| {c['seed_summary']} |")
    return out + [""]


def write_table(r: dict, backends: list[str]) -> list[str]:
    """The write side on the largest catalog (write_side.py)."""
    out = []
    for backend in backends:
        size = max(r["catalogs"][backend])
        w = r["catalogs"][backend][size].get("write")
        if not w:
            continue
        m, ret = w["merge"], w["retention"]
        out += [f"- {BACKENDS[backend]}, {size:,} products: {m['submissions']:,} uploaded items "
                f"merged in {num(m['seconds'], 1)} s ({num(m['per_second'], 0)}/s, one `jobs "
                f"run-once`); a retention pass ({write_side.RETENTION_DAYS} days of price "
                f"history kept) deleted {ret['observations']:,} observations in "
                f"{ret['batches']} batches in {num(ret['seconds'], 1)} s, "
                f"{num(ret['ms_per_batch'])} ms a batch."]
        idx = w.get("age_index")
        if idx:
            out += [f"- {BACKENDS[backend]}: the retention index `{write_side.AGE_INDEX}` takes "
                    f"{size_mb(idx['bytes'])} for {idx['observations']:,} observations; "
                    f"{idx['inserted']:,} inserted observations took "
                    f"{num(idx['with_ms'])} ms with it, {num(idx['without_ms'])} ms without: "
                    f"{num(idx['us_per_insert'])} µs more per insert."]
    return ["### Write side", ""] + out + [""] if out else []


def latency_table(r: dict, sizes: list[int], backends: list[str]) -> list[str]:
    head = ["query"]
    for backend in backends:
        head += [f"{BACKENDS[backend]} {size:,}" for size in sizes] + [f"{BACKENDS[backend]} ratio"]
    out = ["### Median latency at 1 client (ms), and largest / smallest", "",
           "| " + " | ".join(head) + " |", "|---|" + "--:|" * (len(head) - 1)]
    each = {b: ratios(r["catalogs"][b], sizes) for b in backends}
    for key, title in r["titles"].items():
        cells = [title]
        for backend in backends:
            for size in sizes:
                c = r["catalogs"][backend][size]
                cells.append(num(c["latency"][key]["p50_ms"]) if key in c["latency"]
                             else ("failed" if key in c["failed"] else "—"))
            cells.append(ratio_cell(key, each[backend].get(key),
                                    round_ratios(r["catalogs"][backend], sizes, key)))
        out.append("| " + " | ".join(cells) + " |")
    return out + ["", f"A ratio in bold is above {TARGET_RATIO}. In brackets, the lowest and highest ratio of a round (the sizes measured back "
                  "to back): their spread is the noise.", ""]


def ratio_cell(key: str, value: float | None, by_round: list[float]) -> str:
    if value is None:
        return "—"
    text = num(value)
    if value > TARGET_RATIO:
        text = f"**{text}**"
    if len(by_round) > 1:
        text += f" ({num(min(by_round))}-{num(max(by_round))})"
    return text


def targets_table(r: dict, sizes: list[int], backends: list[str]) -> list[str]:
    rows = []
    spread = f"{sizes[0]:,} to {sizes[-1]:,} products"
    for backend in backends:
        held = ratios(r["catalogs"][backend], sizes)
        over = sorted((k for k, v in held.items() if v > TARGET_RATIO), key=lambda k: -held[k])
        failed = sum(1 for c in r["catalogs"][backend].values() for _ in c["failed"])
        text = (f"{len(over)} of {len(held)} above"
                + (": " + ", ".join(f"{r['titles'][k]} {num(held[k])}x" for k in over)
                   if over else "")
                + (f"; {failed} failed" if failed else ""))
        rows.append((f"{BACKENDS[backend]}: every request at most {TARGET_RATIO}x from "
                     f"{spread} (item 2)", text, not over and not failed and bool(held)))
    for backend in backends:
        at = r["catalogs"][backend].get(AT)
        if at is None:
            continue
        lat = at["latency"]
        pages = {k: lat[k]["p50_ms"] for k in PAGES if k in lat}
        worst = max(pages, key=pages.get, default=None)
        rows.append((f"{BACKENDS[backend]}: every REST page of 100 at most {PAGE_MS} ms at "
                     f"{AT:,} products (item 3)",
                     f"worst {r['titles'][worst]} {num(pages[worst])} ms" if worst else "—",
                     all(v <= PAGE_MS for v in pages.values()) if pages else None))
        for key, bound in COUNT_MS.items():
            value = lat.get(key, {}).get("p50_ms")
            rows.append((f"{BACKENDS[backend]}: {r['titles'].get(key, key)} at most {bound} ms "
                         f"at {AT:,} products (item 4)",
                         f"{num(value)} ms" if value is not None else "failed",
                         value is not None and value <= bound))
        fair = at.get("fairness")
        if fair:
            rows.append((f"{BACKENDS[backend]}: a fifth key's dashboard median at most "
                         f"{FAIR_MS} ms while 4 keys loop the heaviest requests (16 loops) "
                         f"at {AT:,} products (item 5)",
                         f"{num(fair['loaded_p50_ms'])} ms (alone {num(fair['quiet_p50_ms'])} "
                         f"ms; loops of {', '.join(fair['heavy'])} answered {fair['outcomes']})",
                         fair["loaded_p50_ms"] <= FAIR_MS))
        write = at.get("write")
        if write:
            m = write["merge"]
            rows.append((f"{BACKENDS[backend]}: a {m['submissions']:,}-item upload merged in at "
                         f"most {MERGE_S} s at {AT:,} products (item 6)",
                         f"{num(m['seconds'], 1)} s", m["seconds"] <= MERGE_S))
    return ["### Targets (issue 28)", "", "| target | measured | status |", "|---|---|---|"] + [
        f"| {t} | {m} | {verdict(ok)} |" for t, m, ok in rows]
