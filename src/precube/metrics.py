"""The process's Prometheus metrics that are recorded as things happen (counters and histograms), in the one
registry `REGISTRY`. Any layer records here (the result cache its hits, the query service its answers, the
server its sign-in failures): the module needs nothing of precube. The server's `GET /metrics`
(`precube.server.metrics`) exposes them beside the values it reads when scraped (statements running, jobs,
Spark, the process's memory).

Recording is a counter's `inc` and a histogram's `observe` on children made once (`answered`), so the warm path
pays no label lookup. With `PROMETHEUS_MULTIPROC_DIR` set before this module is first imported (`precube serve
--workers N` sets it), prometheus_client keeps the values in files there and a scrape of any worker sums every
worker's (`multiprocess`).
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own variable

# no `_created` series beside each counter and histogram: half the lines, of no use here
disable_created_metrics()  # type: ignore[no-untyped-call]

REGISTRY = CollectorRegistry(auto_describe=True)

# How a statement was answered: the result cache, a layout (aggregate index, or lookup snapshot), a table index,
# the source tables (pushdown), the metadata (a catalog statement), or not at all (an error).
ANSWER_KINDS = ("cache", "layout", "table_index", "pushdown", "catalog", "error")
# a cache hit answers in ~0.1 ms, a layout in ms, a pushdown in seconds; the last bucket is past the time-out
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

QUERIES = Counter("precube_queries", "Statements answered, by how they were answered.", ["answer"], registry=REGISTRY)
QUERY_SECONDS = Histogram(
    "precube_query_seconds",
    "Time from a statement's submission to its answer (or error), by how it was answered.",
    ["answer"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
CACHE_LOOKUPS = Counter(
    "precube_cache_lookups",
    "Result-cache lookups of statements the cache may answer: a hit, or a miss (which then runs or waits).",
    ["result"],
    registry=REGISTRY,
)
FLIGHT_TAKEOVERS = Counter(
    "precube_cache_flight_takeovers",
    "Identical concurrent statements run again by a waiter because the run they waited on failed.",
    registry=REGISTRY,
)
SIGN_IN_FAILURES = Counter(
    "precube_sign_in_failures",
    "Sign-ins refused (a wrong name or password, a locked or throttled name or address; REST and the wire).",
    registry=REGISTRY,
)

_ANSWERED = {kind: (QUERIES.labels(kind), QUERY_SECONDS.labels(kind)) for kind in ANSWER_KINDS}
CACHE_HIT, CACHE_MISS = CACHE_LOOKUPS.labels("hit"), CACHE_LOOKUPS.labels("miss")


def answered(kind: str, seconds: float) -> None:
    """Count a statement answered as `kind` (one of `ANSWER_KINDS`) in `seconds`."""
    count, latency = _ANSWERED[kind]
    count.inc()
    latency.observe(seconds)


def multiprocess() -> bool:
    """Whether the values are kept in `PROMETHEUS_MULTIPROC_DIR`'s files, shared by every worker process."""
    return bool(os.environ.get(MULTIPROC_ENV))
