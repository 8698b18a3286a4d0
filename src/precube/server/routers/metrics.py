"""`GET /metrics`: Prometheus's scrape of this server (`precube.server.metrics`), for any signed-in user (give
the scraper a user of its own with no permission on any project: the metrics hold counts, never data or names)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from precube.server.metrics import ScrapeCollector, exposition
from precube.server.security import requires, state_of

router = APIRouter(tags=["health"])


@router.get("/metrics", response_class=Response, dependencies=[Depends(requires())])
def scrape(request: Request) -> Response:
    """The metrics in Prometheus's text format."""
    app = request.app.state
    collector = getattr(app, "metrics", None)
    if collector is None or collector.state is not state_of(request):
        collector = app.metrics = ScrapeCollector(state_of(request))
    return Response(exposition(collector), media_type=CONTENT_TYPE_LATEST)
