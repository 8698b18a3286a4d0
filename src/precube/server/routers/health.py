"""`GET /health` (the process answers; the one route without credentials) and `GET /ready` (the metadata
store answers; any signed-in user, e.g. a load balancer's check user)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from precube.errors import PrecubeError
from precube.server.envelope import failure, ok
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
        return failure(503, f"metadata store unreachable: {err.message}", "NOT_READY")
    return ok({"status": "READY", "server": state.name})
