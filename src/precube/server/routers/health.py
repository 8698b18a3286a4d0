"""`GET /health` (the process answers; the one route without credentials) and `GET /ready` (what a load
balancer asks: any signed-in user, e.g. its check user). `/ready` is 503 while the metadata store is unreachable
(this server can answer nothing: the balancer routes around it) and 200 otherwise, saying whether the result
cache is `UP`, `DEGRADED` (a shared cache that cannot be reached: queries are answered without it) or `OFF`, and
whether the job service's Spark session is `UP`, `DOWN`, `STARTING` (`OFF`: this server runs no jobs), and
the disk builds write to (`jobs.disk.report`): low disk refuses builds but not queries, so it stays 200."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from precube.errors import PrecubeError
from precube.jobs import disk
from precube.server.envelope import failure, ok, url_of
from precube.server.security import requires, state_of

router = APIRouter(tags=["health"])


@router.get("/health")
async def health() -> dict[str, Any]:
    return ok({"status": "UP"})


@router.get("/ready", response_model=None, dependencies=[Depends(requires())])
def ready(request: Request) -> dict[str, Any] | JSONResponse:
    state = state_of(request)
    try:
        state.store.last_change()
    except PrecubeError as err:
        return failure(503, f"metadata store unreachable: {err.message}", "NOT_READY", url=url_of(request.scope))
    cache = state.cache
    answer = {
        "status": "READY",
        "server": state.name,
        "cache": "OFF" if cache is None else ("UP" if cache.backend.available else "DEGRADED"),
        "cache_backend": None if cache is None else cache.backend.name,
        "jobs": None if state.jobs is None else state.jobs.status(),
        # Spark DOWN keeps /ready 200: queries do not need it (layouts and pushdown run in-process on DuckDB
        # unless `[query] engine = spark`), and a build submitted meanwhile waits for the new session, which the
        # supervisor starts within seconds; taking the server out of the balancer would refuse every query for
        # nothing.
        "spark": "OFF" if state.jobs is None else state.jobs.spark.state.value,
        "disk": disk.report(
            state.settings.warehouse_root, state.settings.metadata_url, state.settings.jobs.min_free_bytes
        ),
    }
    return ok(answer)
