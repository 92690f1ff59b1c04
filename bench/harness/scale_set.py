"""The query set of the scale mode (issue 28): what a dashboard or a v1
client sends, each asked of catalogs of several sizes.

The same question at every size, as far as the data allows:

- the text filters (brand, category, name piece, marketplace) are found on
  the smallest catalog and kept for the larger ones;
- the deep page is the deepest that page numbers reach
  (`VITRINA_PRODUCTS_PAGE_WINDOW`, 10,000 rows: page 100 of 100 rows) at
  every size, so its answer needs the same work everywhere; REST pages by
  number, GraphQL by a cursor walked to the same row. A deeper REST page
  is refused by design (422 `page_too_deep`, tests/it/deep_pages.rs), so
  none is measured;
- the product whose price history is read (and by id), and the seller
  code and tin, are those of the newest product of that brand in the
  smallest catalog, and in each larger one the newest of that brand with
  as many price observations (the ids differ from one catalog to the
  next).
"""

import dataclasses
import urllib.parse
from dataclasses import dataclass

from . import cases
from .cases import Case, expect
from .http import Request

PAGE = 100  # rows of a page: a v1 client's default page size
DEEP_PAGE = cases.PAGE_WINDOW // PAGE  # the deepest page numbers reach
# Requests that must answer the same rows as each other at every size.
SAME_ROWS = [("rest_first", "gql_first"), ("rest_deep", "gql_deep")]
SAME_TOTAL = [("rest_history", "gql_history")]


@dataclass
class ScaleParams:
    found: cases.Params  # brand, product, category, name piece, seller code, tin
    marketplace: str  # as REST spells it (GraphQL's enum is its upper case)
    products: int  # the catalog's size
    deep_page: int  # the same at every size
    history: int  # price observations of the product
    deep_cursor: str | None = None  # after (deep_page - 1) * PAGE rows

    @property
    def deep_offset(self) -> int:
        return (self.deep_page - 1) * PAGE


def discover(base: str, key: str, products: int, smallest: int,
             first: "ScaleParams | None") -> ScaleParams:
    """The parameters on one catalog; `first` holds those found on the
    smallest, whose text filters are kept."""
    def history(product: dict) -> int:
        return cases.call(base, Request("GET", f"/v1/products/{product['id']}/price-history"
                                               "?page_size=1"), key)["meta"]["total"]

    def alike(newest: list[dict]) -> dict:
        return next((p for p in newest if history(p) == first.history), newest[0])

    if first:
        found = cases.discover(base, key, brand=first.found.brand, pick=alike)
        found = dataclasses.replace(found, category=first.found.category,
                                    name_part=first.found.name_part)
        marketplace = first.marketplace
    else:
        found = cases.discover(base, key)
        marketplace = cases.call(base, Request("GET", f"/v1/products/{found.product_id}"),
                                 key)["data"]["marketplace"]
    params = ScaleParams(found=found, marketplace=marketplace, products=products,
                         deep_page=min(DEEP_PAGE, smallest // PAGE),
                         history=history({"id": found.product_id}))
    params.deep_cursor = cases.walk(base, key, params.deep_offset, cases.VITRINA_WALK,
                                    "products")
    return params


# --- checks ---------------------------------------------------------------

def count_check(exactly: int | None = None):
    """An exact count is compared with the other database's; one that is not
    (the bound, or on PostgreSQL a sampled estimate of a name part: the two
    databases count such a part differently, see docs/graphql.md) only with
    its exactness, as neither is the number of products."""
    def check(body):
        products = body["data"]["products"]
        total, exact = products["totalCount"], products["totalCountIsExact"]
        expect(isinstance(total, int) and total > 0, f"totalCount {total!r}")
        if exactly is not None:
            expect(exact and total == exactly, f"totalCount {total}, the catalog holds {exactly}")
        return {"total": total} if exact else {"total": "not exact"}
    return check


def gql_history_check(body):
    connection = body["data"]["priceHistory"]
    times = [e["node"]["recordedAt"] for e in connection["edges"]]
    expect(len(times) > 0 and connection["totalCount"] >= len(times), "price history: empty")
    expect(times == sorted(times, reverse=True), "price history: not newest first")
    return {"total": connection["totalCount"], "rows": len(times)}


def gql_named(part: str):
    base = cases.gql_nodes("products", None)

    def check(body):
        signature = base(body)
        nodes = [e["node"] for e in body["data"]["products"]["edges"]]
        expect(all(any(part in n for n in cases.names(x)) for x in nodes),
               "nameContains: a row does not match")
        return signature
    return check


# --- queries --------------------------------------------------------------

COUNT = """query Count($filter: ProductFilterInput) {
  products(filter: $filter, first: 1) { totalCount totalCountIsExact } }"""

NAMED = """query Named($part: String!) {
  products(filter: {nameContains: $part}, first: 20) {
    edges { node { id name brand translations { name } } } } }"""

HISTORY = """query History($id: UUID!) {
  priceHistory(productId: $id, first: 20) {
    totalCount edges { node { price currency recordedAt } } } }"""


def scale_cases(p: ScaleParams) -> list[Case]:
    f = p.found

    def rest(path: str, **query) -> Request:
        return Request("GET", path + ("?" + urllib.parse.urlencode(query) if query else ""))

    def count(filter_: dict | None = None) -> Request:
        return Request.graphql(COUNT, {"filter": filter_} if filter_ else None)

    gql, brand_key, anything = Request.graphql, f.brand.lower(), (lambda x: True)
    return [
        Case("rest_first", f"REST first page ({PAGE} rows)", "REST",
             rest("/v1/products", page_size=PAGE), cases.rest_list(anything, "first page", PAGE)),
        Case("rest_deep", f"REST deep page (page {p.deep_page} of {PAGE} rows at every size)",
             "REST", rest("/v1/products", page=p.deep_page, page_size=PAGE),
             cases.rest_list(anything, "deep page", PAGE)),
        Case("rest_marketplace", f"REST products by marketplace ({PAGE} rows)", "REST",
             rest("/v1/products", marketplace=p.marketplace, page_size=PAGE),
             cases.rest_list(lambda x: x["marketplace"] == p.marketplace, "by marketplace")),
        Case("rest_brand", f"REST products by brand ({PAGE} rows)", "REST",
             rest("/v1/products", brand=f.brand, page_size=PAGE),
             cases.rest_list(lambda x: x["brand"].lower() == brand_key, "by brand")),
        Case("rest_category", f"REST products by category ({PAGE} rows)", "REST",
             rest("/v1/products", category=f.category, page_size=PAGE),
             cases.rest_list(lambda x: f.category.lower() in cases.paths(x), "by category")),
        Case("rest_name", f"REST products by name_contains ({PAGE} rows)", "REST",
             rest("/v1/products", name_contains=f.name_part, page_size=PAGE),
             cases.rest_list(lambda x: any(f.name_part in n for n in cases.names(x)),
                             "by name_contains")),
        Case("rest_seller_code", "REST products by seller_code", "REST",
             rest("/v1/products", seller_code=f.seller_code),
             cases.rest_list(lambda x: x["seller"]["code"] == f.seller_code, "by seller_code")),
        Case("rest_product", "REST product by id", "REST",
             rest(f"/v1/products/{f.product_id}"), cases.rest_product(f.product_id)),
        Case("rest_history", "REST price history of one product", "REST",
             rest(f"/v1/products/{f.product_id}/price-history"), cases.check_history),
        Case("rest_sellers", "REST sellers by tin", "REST",
             rest("/v1/sellers", tin=f.tin), cases.rest_sellers(f.tin)),
        Case("gql_first", f"GraphQL first page ({PAGE} rows, every field)", "GraphQL",
             gql(cases.PAGE_QUERY, {"n": PAGE}), cases.gql_nodes("products", PAGE)),
        Case("gql_deep", f"GraphQL deep cursor page (after {p.deep_offset:,} rows, {PAGE} rows)",
             "GraphQL", gql(cases.PAGE_QUERY, {"n": PAGE, "after": p.deep_cursor}),
             cases.gql_nodes("products", PAGE)),
        Case("gql_count", "GraphQL whole-catalog count", "GraphQL",
             count(), count_check(p.products)),
        Case("gql_count_marketplace", "GraphQL count by marketplace", "GraphQL",
             count({"marketplace": p.marketplace.upper()}), count_check()),
        Case("gql_count_brand", "GraphQL count by brand", "GraphQL",
             count({"brand": f.brand}), count_check()),
        Case("gql_count_category", "GraphQL count by category", "GraphQL",
             count({"category": f.category}), count_check()),
        Case("gql_count_name", "GraphQL count by nameContains", "GraphQL",
             count({"nameContains": f.name_part}), count_check()),
        Case("gql_name", "GraphQL products by nameContains (20 rows)", "GraphQL",
             gql(NAMED, {"part": f.name_part}), gql_named(f.name_part)),
        Case("gql_history", "GraphQL price history of one product (20 rows, totalCount)",
             "GraphQL", gql(HISTORY, {"id": f.product_id}), gql_history_check),
        Case("gql_product", "GraphQL product by id", "GraphQL",
             gql(cases.FULL + "query($id: UUID!) { product(id: $id) { ...Full } }",
                 {"id": f.product_id}),
             cases.product_check("product", f.product_id)),
        Case("gql_dashboard_20", "GraphQL dashboard, 20 products", "GraphQL",
             gql(cases.DASHBOARD, {"brand": f.brand, "n": 20}),
             cases.dashboard_check("products", 20, vitrina=True)),
        Case("gql_dashboard_100", "GraphQL dashboard, 100 products", "GraphQL",
             gql(cases.DASHBOARD, {"brand": f.brand, "n": 100}),
             cases.dashboard_check("products", 100, vitrina=True)),
    ]
