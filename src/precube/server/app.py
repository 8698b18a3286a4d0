"""The ASGI application: Kylin's REST API under `/kylin/api` (one router module per resource), the health
probes, the middleware, and the one mapping from errors to HTTP answers."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from precube.auth import Directory, check_admin_password
from precube.errors import PrecubeError
from precube.server.envelope import error, failure, invalid_input, unexpected, url_of
from precube.server.hot_path import QueryHotPath
from precube.server.middleware import BodyLimit, RequestLog
from precube.server.security import Authenticate
from precube.server.state import ServerState, freeze_heap
from precube.settings import Settings

LOG = logging.getLogger("precube.server")
BASE = "/kylin/api"
ROOT_ROUTERS = ("health", "metrics", "docs", "web")  # /health, /ready, /metrics; /docs; the web UI at / and /web/…
# Each module has `router`; all but those of ROOT_ROUTERS are mounted under BASE, in this order. A request is
# matched against the routes in order (FastAPI walks every included router, each route twice), so the hot path,
# `query`, comes first: matching the last of some 70 routes cost more than the rest of a cache hit.
ROUTERS = (
    "query", "health", "metrics", "docs", "users", "projects", "tables", "models", "index_plans", "segments", "jobs",
    "web",
)  # fmt: skip


def create_app(
    settings: Settings,
    name: str | None = None,
    run_jobs: bool = True,
    reuse_port: bool = False,
    hot_path: bool = True,
) -> FastAPI:
    """The server application on `settings`; `name` (host:port) is what query answers call this server;
    `run_jobs`: this process runs the projects' queued jobs (the job service). With `[server] pg_port` its
    lifespan also serves the Postgres wire protocol (`reuse_port`: in each of several worker processes), with
    `flight_port` Arrow Flight SQL.
    `hot_path`: `POST /query` is answered ahead of FastAPI's router (`server.hot_path`); off, the declared
    route answers it, the same way."""
    server_name = name or f"{settings.server.host}:{settings.server.port}"
    admin_password = _admin_password(settings)
    if admin_password is not None:  # a weak one fails here, before the server listens
        check_admin_password(admin_password)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = ServerState.open(settings, server_name)
        create_admin(state.directory, settings)
        app.state.server = state
        if settings.server.preload:
            state.start_warming()  # freezes the heap once the layouts are loaded
        else:
            freeze_heap()
        if run_jobs:
            from precube.server.jobservice import JobService

            state.jobs = JobService.start(state)
        wire = await _start_wire(state, reuse_port)
        flight = await _start_flight(state, reuse_port)
        try:
            yield
        finally:
            if flight is not None:
                await flight.stop()
            if wire is not None:
                await wire.stop()
            if state.jobs is not None:
                state.jobs.stop()
            state.close()

    app = FastAPI(
        title="precube",
        summary="Kylin 5's REST API over precube: projects, tables, models, index plans, segments, jobs, query.",
        version=_version(),
        lifespan=lifespan,
        docs_url=None,  # served by the `docs` router behind credentials, from packaged assets
        redoc_url=None,
        openapi_url=None,
    )
    for module in ROUTERS:
        router = importlib.import_module(f"precube.server.routers.{module}").router
        app.include_router(router, prefix="" if module in ROOT_ROUTERS else BASE)
    _handle_errors(app)
    if hot_path:
        app.add_middleware(QueryHotPath, base=BASE)  # innermost of ours: the caller is signed in, the body bounded
    app.add_middleware(BodyLimit, max_bytes=settings.server.max_body_bytes)
    from precube.server.routers.web import PATHS

    # outside BodyLimit: no body is read for a caller without credentials; the UI's static files need none
    app.add_middleware(Authenticate, public_paths=PATHS)
    app.add_middleware(RequestLog)
    return app


async def _start_wire(state: ServerState, reuse_port: bool) -> Any:
    """The Postgres wire front end on `[server] pg_port`, on this event loop (None when it is off)."""
    port = state.settings.server.pg_port
    if port is None:
        return None
    from precube.server.pgwire.listener import PgServer

    return await PgServer.start(state, state.settings.server.host, port, reuse_port=reuse_port)


async def _start_flight(state: ServerState, shared: bool) -> Any:
    """The Arrow Flight SQL front end on `[server] flight_port` (None when it is off, or another of the `--workers`
    serves it)."""
    port = state.settings.server.flight_port
    if not port:
        return None
    from precube.server.flight.server import FlightListener

    return await FlightListener.start(state, state.settings.server.host, port, shared)


def _admin_password(settings: Settings) -> str | None:
    """`[server] admin_password`; set but empty (`PRECUBE__SERVER__ADMIN_PASSWORD=`) counts as unset."""
    secret = settings.server.admin_password
    return (secret.get_secret_value() or None) if secret is not None else None


def create_admin(directory: Directory, settings: Settings) -> None:
    """Create `ADMIN` on the first start (`[server] admin_password`, else a random password printed once)."""
    configured = _admin_password(settings)
    created = directory.bootstrap(configured)
    if directory.ignores(configured):
        LOG.warning(
            "[server] admin_password (PRECUBE__SERVER__ADMIN_PASSWORD) is not ADMIN's password and is ignored: it "
            "sets the password on the first start only; reset it with `precube user passwd ADMIN`"
        )
    if created is not None:
        print(
            f"precube: created user ADMIN with password {created} (shown once; change it with "
            "`precube user passwd ADMIN`)",
            file=sys.stderr,
            flush=True,
        )


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"  # `precube serve`'s log lines


def configure_logging() -> None:
    """`precube serve`'s log lines go to standard error as it was at start, through a duplicate of its descriptor:
    while Spark starts in the background (`spark_session`'s console log), descriptor 2 points at HOME/logs/spark.log
    for the JVM to inherit, and the server's own lines written meanwhile would land there."""
    stream = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=stream)


SERVE_ENV = "PRECUBE_SERVE"  # `precube serve --workers N`: the settings its worker processes start from (JSON)


def from_environment() -> FastAPI:
    """The application of one worker of `precube serve --workers N`: the settings the command read (the config
    file and home in `SERVE_ENV`, the rest from the inherited environment); the jobs run in the one worker that
    holds the home's job lock (the others answer requests only)."""
    import fcntl
    import json
    from pathlib import Path

    from precube.settings import load_settings

    configure_logging()  # a spawned worker starts unconfigured
    given = json.loads(os.environ[SERVE_ENV])
    settings = load_settings(Path(given["config"]) if given["config"] else None, home=Path(given["home"]))
    run_jobs = False
    if given["jobs"]:
        lock = Path(settings.home) / "serve-jobs.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = lock.open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _JOB_LOCK.append(handle)  # held for the life of this process
            run_jobs = True
        except OSError:
            handle.close()
    return create_app(settings, run_jobs=run_jobs, reuse_port=True)


_JOB_LOCK: list[object] = []


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", ""))


def _handle_errors(app: FastAPI) -> None:
    @app.exception_handler(PrecubeError)
    async def precube_error(request: Request, err: PrecubeError) -> JSONResponse:
        return error(err, _request_id(request), url_of(request.scope))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, err: RequestValidationError) -> JSONResponse:
        return invalid_input(err.errors(), _request_id(request), url_of(request.scope))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(err.status_code, "HTTP_ERROR")
        return failure(err.status_code, str(err.detail), code, _request_id(request), url=url_of(request.scope))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, err: Exception) -> JSONResponse:
        return unexpected(err, _request_id(request), url_of(request.scope))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("precube")
    except PackageNotFoundError:
        return "0"
