"""The write side of the scale mode (issue 28, item 6), on the largest
catalog once its reads are measured:

- merge: 1,000 scraped items (one upload, the extension API's limit; half
  re-observed at new prices, half new products) merged by one
  `vitrina jobs run-once` (merge.py), its wall time;
- retention: one pass of `vitrina jobs run-once` with the price history
  kept RETENTION_DAYS days, so a backlog of seeded history is due: what it
  deleted, in how many batches, and its wall time (process start and the
  idle jobs included), hence the time of one batch;
- PostgreSQL only: the size of the retention index on
  `price_observations` (`recorded_at`, `id`, migration 000022) and what it
  adds to each inserted observation: the last INSERT_ROWS observations (all
  of them in a smaller catalog) copied in a transaction that is rolled back, with and without the index (dropped in
  that transaction), ROUNDS times each in turn, the medians' difference.
"""

import re
import statistics

from . import merge, vitrina
from .proc import Failed, log

UPLOAD = merge.UPLOAD_LIMIT
RETENTION_DAYS = 60
INSERT_ROWS = 20_000
ROUNDS = 3
AGE_INDEX = "price_observations_age"

# Copies of the last INSERT_ROWS observations, a second later at another
# price: rows of the shape the merge writes, spread over every product.
INSERT = f"""
CREATE TEMP TABLE started ON COMMIT DROP AS SELECT clock_timestamp() AS at;
WITH inserted AS (
  INSERT INTO price_observations (product_id, country_code, region_code, user_auth_status,
                                  price, old_price, currency, stock_status, stock_quantity,
                                  recorded_at)
  SELECT product_id, country_code, region_code, user_auth_status, price + 1, old_price,
         currency, stock_status, stock_quantity, recorded_at + interval '1 second'
  FROM price_observations
  WHERE id > (SELECT max(id) - {INSERT_ROWS} FROM price_observations)
  RETURNING 1)
SELECT count(*) FROM inserted;
SELECT extract(epoch FROM clock_timestamp() - at) * 1000 FROM started;
ROLLBACK;
"""


def measure(testbed, backend: str, catalog) -> dict:
    """The figures above for `catalog`, served anew without the limits."""
    figures: dict = {}
    server = testbed.server(f"write-{backend}", catalog.url)
    try:
        log(f"write side: merging {UPLOAD} items on {catalog.size:,} products")
        figures["merge"] = merge.throughput(testbed.binary, catalog.url, server.base,
                                            catalog.key, UPLOAD)
    finally:
        server.stop()
    figures["retention"] = retention_pass(testbed.binary, catalog.url)
    if backend == "pg":
        figures["age_index"] = age_index(testbed.pg, catalog.url.rsplit("/", 1)[1].split("?")[0])
    return figures


def retention_pass(binary: str, url: str) -> dict:
    log(f"write side: one retention pass, price history kept {RETENTION_DAYS} days")
    seconds, report = vitrina.jobs_run_once(
        binary, url, env={"VITRINA_PRICE_HISTORY_RETENTION_DAYS": str(RETENTION_DAYS)})
    found = re.search(r"(\d+) price observations in (\d+) batches", report)
    if not found:
        raise Failed(f"write side: no retention figures in {report!r}")
    observations, batches = int(found.group(1)), int(found.group(2))
    return {"observations": observations, "batches": batches, "seconds": seconds,
            "ms_per_batch": seconds * 1000 / max(1, batches)}


def age_index(pg, database: str) -> dict:
    log(f"write side: the retention index, up to {INSERT_ROWS:,} inserts with and without it")
    size = int(pg.sql(f"SELECT pg_relation_size('{AGE_INDEX}')", database))
    rows = int(pg.sql("SELECT reltuples::bigint FROM pg_class "
                      "WHERE relname = 'price_observations'", database))
    took: dict[str, list[float]] = {"with": [], "without": []}
    inserted = 0
    for _ in range(ROUNDS):
        for way, prefix in (("with", "BEGIN;"), ("without", f"BEGIN; DROP INDEX {AGE_INDEX};")):
            count, ms = pg.script(prefix + INSERT, database).split()
            inserted = int(count)
            took[way].append(float(ms))
    with_ms, without_ms = (statistics.median(took[k]) for k in ("with", "without"))
    return {"bytes": size, "observations": rows, "inserted": inserted, "with_ms": with_ms,
            "without_ms": without_ms, "us_per_insert": (with_ms - without_ms) * 1000 / inserted}
