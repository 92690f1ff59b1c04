"""Merge pass throughput: submissions merged per second.

The items are what a price-monitoring scraper sends: half re-observe known
products at prices 5% up (a new history row each, not flagged), half are
new products (copies of known ones under new marketplace ids). They are
uploaded through `POST /extension/v1/scrapes` like the extension does, then
one `vitrina jobs run-once` merges them all; its wall time (process start
and the other, idle, jobs included) is the denominator.
"""

import re
import urllib.parse

from .cases import call
from .http import Request, post_json
from .proc import Failed
from .vitrina import jobs_run_once

UPLOAD_LIMIT = 1000  # items per upload (the extension API's limit)


def scraped_item(product: dict, external_id: str | None = None) -> dict:
    item = {
        "marketplace": product["marketplace"],
        "external_id": external_id or product["external_id"],
        "url": product["url"] if external_id is None else product["url"] + "-" + external_id,
        "language": product["default_language"],
        "name": product["name"],
        "brand": product["brand"],
        "category_path": product["category_path"],
        "attributes": product["attributes"],
        "image_cover": product["image_cover"],
        "image_gallery": product["image_gallery"],
        "seller": {"id": product["seller"]["id"], "name": product["seller"]["name"],
                   "code": product["seller"]["code"]},
        "prices": [
            {"country_code": p["country_code"], "region_code": p["region_code"],
             "user_auth_status": p["user_auth_status"], "price": round(p["price"] * 1.05),
             "old_price": p["old_price"], "currency": p["currency"],
             "stock_status": p["stock_status"], "stock_quantity": p["stock_quantity"]}
            for p in product["prices"]
        ],
    }
    return item


def items(base: str, key: str, count: int) -> list[dict]:
    known = count - count // 2
    products: list[dict] = []
    page = 1
    while len(products) < known:
        query = urllib.parse.urlencode({"page": page, "page_size": 500})
        data = call(base, Request("GET", f"/v1/products?{query}"), key)["data"]
        if not data:
            raise Failed(f"merge: only {len(products)} products to re-observe")
        products += data
        page += 1
    products = products[:known]
    fresh = [scraped_item(products[i % known], f"9{i:09d}") for i in range(count // 2)]
    return [scraped_item(p) for p in products] + fresh


def throughput(binary: str, database_url: str, base: str, key: str, count: int) -> dict:
    payload = items(base, key, count)
    for start in range(0, len(payload), UPLOAD_LIMIT):
        status, body = post_json(base, "/extension/v1/scrapes", {
            "source_type": "bulk", "intent": "price_monitoring",
            "items": payload[start:start + UPLOAD_LIMIT]}, key)
        if status != 202:
            raise Failed(f"merge: upload answered {status}: {str(body)[:300]}")
    seconds, report = jobs_run_once(binary, database_url)
    # `vitrina jobs run-once` prints "merged N, flagged N, rejected N, ...".
    counts = {name: int(re.search(rf"\b{name} (\d+)", report).group(1))
              for name in ("merged", "flagged", "rejected")}
    done = counts["merged"] + counts["flagged"]
    if counts["rejected"] or done != count:
        raise Failed(f"merge: expected {count} merged, the pass reported {counts}")
    return {"submissions": count, "seconds": seconds, "per_second": count / seconds}
