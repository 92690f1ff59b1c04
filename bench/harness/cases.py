"""The fixed query set of issue 6, its parameters, and what a right answer is.

Parameters are found through Vitrina's own API on the seeded data (the top
brand, the first product of that brand, its category, seller code and
seller), so the same --products and --seed always give the same set. Each
check returns a signature (ids, totals) and the harness requires every
backend and the peer to give the same signature for the same question:
a fast wrong answer is not a result.
"""

import json
import urllib.parse
from dataclasses import dataclass
from typing import Callable

from .http import Request, send
from .proc import Failed

PAGE = 20  # rows of every list in the set (the dashboard also runs at 100)
# Rows of GET /v1/products that page numbers reach (VITRINA_PRODUCTS_PAGE_WINDOW).
PAGE_WINDOW = 10_000
DEEP_PAGE = PAGE_WINDOW // PAGE  # REST's deep page; capped so the page stays full on small data


@dataclass
class Params:
    brand: str
    product_id: str
    category: str
    name_part: str
    seller_code: str
    tin: str
    deep_page: int  # REST page number; its rows start after (deep_page-1)*PAGE
    deep_cursor: str | None = None  # Vitrina's cursor at that offset
    peer_deep_cursor: str | None = None  # PostGraphile's

    @property
    def deep_offset(self) -> int:
        return (self.deep_page - 1) * PAGE


@dataclass
class Case:
    key: str  # file-name friendly id
    title: str  # row of the tables
    surface: str  # REST or GraphQL
    request: Request
    check: Callable[[object], object]  # body -> signature, or Failed
    peer: Request | None = None  # the PostGraphile equivalent
    peer_check: Callable[[object], object] | None = None
    # The same question with 100 rows instead of 20, to show the statement
    # count does not grow with the page size.
    larger: Request | None = None


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


def call(base: str, request: Request, key: str | None) -> object:
    """Sends a request and requires HTTP 200 and, for GraphQL, no errors."""
    status, body = send(base, request, key)
    expect(status == 200, f"{request.method} {request.path}: HTTP {status}: {str(body)[:300]}")
    expect(isinstance(body, dict), f"{request.path}: not a JSON object")
    if request.method == "POST":
        expect(not body.get("errors"), f"GraphQL errors: {json.dumps(body.get('errors'))[:500]}")
        expect(body.get("data") is not None, "GraphQL answered no data")
    return body


# --- parameters -----------------------------------------------------------

def _gql(base: str, key: str | None, query: str, variables: dict | None = None) -> dict:
    return call(base, Request.graphql(query, variables), key)["data"]


def discover(base: str, key: str, brand: str | None = None,
             pick: Callable[[list[dict]], dict] | None = None) -> Params:
    """The parameters, around the top brand unless `brand` is given, and its
    newest product unless `pick` chooses among its newest 100."""
    def get(path: str) -> dict:
        return call(base, Request("GET", path), key)

    brand = brand or get("/v1/brands")["data"][0]["brand"]
    newest = get("/v1/products?" + urllib.parse.urlencode(
        {"brand": brand, "page_size": 100 if pick else 1}))["data"]
    product = pick(newest) if pick else newest[0]
    category = (product["category_path"] or ["-"])[-1]
    # A piece from inside the first word of the name: a true substring search.
    word = product["name"].split()[0].lower()
    name_part = word[1:7] if len(word) > 4 else word
    seller = get("/v1/sellers?" + urllib.parse.urlencode(
        {"marketplace": product["marketplace"], "seller_id": product["seller"]["id"]}))["data"][0]
    total = _gql(base, key, "{ products { totalCount } }")["products"]["totalCount"]
    return Params(
        brand=brand,
        product_id=product["id"],
        category=category,
        name_part=name_part,
        seller_code=product["seller"]["code"],
        tin=seller["tin"],
        deep_page=max(1, min(DEEP_PAGE, total // PAGE)),
    )


def walk(base: str, key: str | None, rows: int, query: str, field: str) -> str | None:
    """The cursor after `rows` rows, reached by paging through the API (the
    cursors are opaque, so the benchmark never builds one)."""
    cursor = None
    while rows > 0:
        step = min(rows, 500)
        data = _gql(base, key, query, {"first": step, "after": cursor})
        cursor = data[field]["pageInfo"]["endCursor"]
        rows -= step
    return cursor


VITRINA_WALK = """query($first: Int!, $after: String) {
  products(first: $first, after: $after) { pageInfo { endCursor } } }"""
PEER_WALK = """query($first: Int!, $after: Cursor) {
  allProducts(first: $first, after: $after, orderBy: [FIRST_SEEN_AT_DESC, ID_DESC]) {
    pageInfo { endCursor } } }"""


# --- checks ---------------------------------------------------------------

def ids(items: list) -> list:
    return [item["id"] for item in items]


def rest_list(condition: Callable[[dict], bool], what: str, rows: int | None = None):
    def check(body):
        data = body["data"]
        expect(len(data) > 0, f"{what}: empty page")
        if rows is not None:
            expect(len(data) == rows, f"{what}: {len(data)} rows, expected {rows}")
        expect(all(condition(p) for p in data), f"{what}: a row does not match the filter")
        return {"ids": ids(data)}
    return check


def rest_product(product_id: str):
    def check(body):
        expect(body["data"]["id"] == product_id, "product by id: wrong product")
        return {"ids": [product_id]}
    return check


def rest_sellers(tin: str):
    def check(body):
        data = body["data"]
        expect(len(data) > 0 and all(s["tin"] == tin for s in data), "sellers by tin")
        return {"ids": [[s["marketplace"], s["seller_id"]] for s in data]}
    return check


def names(product: dict) -> list[str]:
    return [product["name"].lower()] + [t["name"].lower() for t in product["translations"]]


def paths(product: dict) -> list[str]:
    levels = list(product["category_path"])
    for t in product["translations"]:
        levels += t["category_path"]
    return [level.lower() for level in levels]


def check_history(body):
    data = body["data"]
    expect(len(data) > 0 and body["meta"]["total"] >= len(data), "price history: empty")
    times = [o["recorded_at"] for o in data]
    expect(times == sorted(times, reverse=True), "price history: not newest first")
    return {"total": body["meta"]["total"], "rows": len(data)}


def gql_nodes(field: str, rows: int | None, edges: bool = True):
    """GraphQL list check; the signature is the ids (and totalCount if asked)."""
    def check(body):
        connection = body["data"][field]
        nodes = [e["node"] for e in connection["edges"]] if edges else connection["nodes"]
        expect(len(nodes) > 0, f"{field}: empty")
        if rows is not None:
            expect(len(nodes) == rows, f"{field}: {len(nodes)} rows, expected {rows}")
        return {"ids": ids(nodes), "total": connection.get("totalCount")}
    return check


def dashboard_check(field: str, n: int, vitrina: bool):
    base = gql_nodes(field, None, edges=vitrina)

    def check(body):
        signature = base(body)
        expect(len(signature["ids"]) == min(n, signature["total"]), "dashboard: page not full")
        connection = body["data"][field]
        for node in ([e["node"] for e in connection["edges"]] if vitrina else connection["nodes"]):
            history = node["priceHistory"]["edges"] if vitrina else node["priceObservationsByProductId"]["nodes"]
            expect(0 < len(history) <= 5, "dashboard: not the latest 5 prices")
            seller = node["seller"] if vitrina else node["sellerBySellerRef"]
            expect(seller is not None and seller["tin"], "dashboard: no seller")
        return signature
    return check


def product_check(field: str, product_id: str):
    def check(body):
        product = body["data"][field]
        expect(product is not None and product["id"] == product_id, f"{field}: wrong product")
        return {"ids": [product_id]}
    return check


# --- queries --------------------------------------------------------------

FULL = """fragment Full on Product {
  id marketplace externalId url name brand categoryPath attributes imageCover imageGallery
  videoCover videoGallery seller { sellerId name } sellerCode trustStatus priceFlagged
  prices { countryCode regionCode userAuthStatus price oldPrice currency stockStatus stockQuantity recordedAt }
  specialPrices { countryCode regionCode userAuthStatus min max }
  stats firstSeenLanguage defaultLanguage
  translations { language name categoryPath attributes updatedAt }
  firstSeenAt lastSeenAt }"""

# The same fields through PostGraphile's generated schema over the same tables.
PEER_FULL = """fragment Full on Product {
  id marketplace externalId url name brand categoryPath attributes imageCover imageGallery
  videoCover videoGallery sellerBySellerRef { sellerId name } sellerCode trustStatus priceFlagged
  currentPricesByProductId { nodes { countryCode regionCode userAuthStatus price oldPrice currency stockStatus stockQuantity recordedAt } }
  specialPricesByProductId { nodes { countryCode regionCode userAuthStatus min max } }
  stats firstSeenLanguage defaultLanguage
  productTranslationsByProductId { nodes { language name categoryPath attributes updatedAt } }
  firstSeenAt lastSeenAt }"""

DASHBOARD = """query Dashboard($brand: String!, $n: Int!) {
  products(filter: {brand: $brand}, first: $n) {
    totalCount
    edges { node {
      id name marketplace
      seller { name tin }
      translations { language name }
      priceHistory(first: 5) { edges { node { price currency recordedAt } } } } } } }"""

PEER_DASHBOARD = """query Dashboard($brand: String!, $n: Int!) {
  allProducts(condition: {brandKey: $brand}, orderBy: [FIRST_SEEN_AT_DESC, ID_DESC], first: $n) {
    totalCount
    nodes {
      id name marketplace
      sellerBySellerRef { name tin }
      productTranslationsByProductId { nodes { language name } }
      priceObservationsByProductId(first: 5, orderBy: [RECORDED_AT_DESC, ID_DESC]) {
        nodes { price currency recordedAt } } } } }"""

PAGE_QUERY = FULL + """
query Page($n: Int!, $after: String) {
  products(first: $n, after: $after) { edges { node { ...Full } } } }"""

PEER_PAGE_QUERY = PEER_FULL + """
query Page($n: Int!, $after: Cursor) {
  allProducts(first: $n, after: $after, orderBy: [FIRST_SEEN_AT_DESC, ID_DESC]) {
    nodes { ...Full } } }"""


def cases(p: Params) -> list[Case]:
    def rest(path: str, **query) -> Request:
        return Request("GET", path + ("?" + urllib.parse.urlencode(query) if query else ""))

    gql, brand_key = Request.graphql, p.brand.lower()
    return [
        Case("rest_product", "REST product by id", "REST",
             rest(f"/v1/products/{p.product_id}"), rest_product(p.product_id)),
        Case("rest_brand", "REST products by brand", "REST",
             rest("/v1/products", brand=p.brand, page_size=PAGE),
             rest_list(lambda x: x["brand"].lower() == brand_key, "by brand")),
        Case("rest_category", "REST products by category", "REST",
             rest("/v1/products", category=p.category, page_size=PAGE),
             rest_list(lambda x: p.category.lower() in paths(x), "by category")),
        Case("rest_name", "REST products by name_contains", "REST",
             rest("/v1/products", name_contains=p.name_part, page_size=PAGE),
             rest_list(lambda x: any(p.name_part in n for n in names(x)), "by name_contains")),
        Case("rest_seller_code", "REST products by seller_code", "REST",
             rest("/v1/products", seller_code=p.seller_code, page_size=PAGE),
             rest_list(lambda x: x["seller"]["code"] == p.seller_code, "by seller_code")),
        Case("rest_history", "REST price history of one product", "REST",
             rest(f"/v1/products/{p.product_id}/price-history"), check_history),
        Case("rest_sellers", "REST sellers by tin", "REST",
             rest("/v1/sellers", tin=p.tin), rest_sellers(p.tin)),
        Case("rest_first", "REST first page", "REST",
             rest("/v1/products", page_size=PAGE),
             rest_list(lambda x: True, "first page", PAGE),
             larger=rest("/v1/products", page_size=100)),
        Case("rest_deep", f"REST deep page (page {p.deep_page})", "REST",
             rest("/v1/products", page=p.deep_page, page_size=PAGE),
             rest_list(lambda x: True, "deep page", PAGE)),
        Case("gql_product", "GraphQL product by id", "GraphQL",
             gql(FULL + "query($id: UUID!) { product(id: $id) { ...Full } }", {"id": p.product_id}),
             product_check("product", p.product_id),
             peer=gql(PEER_FULL + "query($id: UUID!) { productById(id: $id) { ...Full } }", {"id": p.product_id}),
             peer_check=product_check("productById", p.product_id)),
        Case("gql_dashboard_20", "GraphQL dashboard, 20 products", "GraphQL",
             gql(DASHBOARD, {"brand": p.brand, "n": 20}),
             dashboard_check("products", 20, vitrina=True),
             peer=gql(PEER_DASHBOARD, {"brand": brand_key, "n": 20}),
             peer_check=dashboard_check("allProducts", 20, vitrina=False)),
        Case("gql_dashboard_100", "GraphQL dashboard, 100 products", "GraphQL",
             gql(DASHBOARD, {"brand": p.brand, "n": 100}),
             dashboard_check("products", 100, vitrina=True),
             peer=gql(PEER_DASHBOARD, {"brand": brand_key, "n": 100}),
             peer_check=dashboard_check("allProducts", 100, vitrina=False)),
        Case("gql_first", "GraphQL first page", "GraphQL",
             gql(PAGE_QUERY, {"n": PAGE}),
             gql_nodes("products", PAGE),
             peer=gql(PEER_PAGE_QUERY, {"n": PAGE}),
             peer_check=gql_nodes("allProducts", PAGE, edges=False),
             larger=gql(PAGE_QUERY, {"n": 100})),
        Case("gql_deep", f"GraphQL deep cursor page (after {p.deep_offset:,} rows)", "GraphQL",
             gql(PAGE_QUERY, {"n": PAGE, "after": p.deep_cursor}),
             gql_nodes("products", PAGE),
             peer=gql(PEER_PAGE_QUERY, {"n": PAGE, "after": p.peer_deep_cursor}),
             peer_check=gql_nodes("allProducts", PAGE, edges=False)),
    ]


# Answers that must agree across surfaces: the same rows (signature "ids")
# through REST and GraphQL.
SAME_ROWS = [("rest_first", "gql_first"), ("rest_deep", "gql_deep"), ("rest_product", "gql_product")]
# The pairs whose latency and throughput are compared (REST vs GraphQL, same question).
SAME_QUESTION = [("rest_product", "gql_product"), ("rest_first", "gql_first")]
