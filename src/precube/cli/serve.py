"""`precube serve`: the REST API, the query sessions and the job service in one long-lived process."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import typer

from precube.cli.context import CliContext


def serve(
    ctx: typer.Context,
    host: str | None = typer.Option(None, "--host", help="Address to listen on; default [server] host (127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", min=0, max=65535, help="Port; default [server] port (7070)."),
    no_jobs: bool = typer.Option(False, "--no-jobs", help="Answer requests but run no jobs (another server does)."),
    pg_port: int | None = typer.Option(
        None,
        "--pg-port",
        min=0,
        max=65535,
        help="Also answer the PostgreSQL wire protocol on this port (psql, psycopg, JDBC); default [server] "
        "pg_port (off). Passwords travel in clear text: keep it on loopback or configure pg_tls_cert.",
    ),
    flight_port: int | None = typer.Option(
        None,
        "--flight-port",
        min=0,
        max=65535,
        help="Also answer Arrow Flight SQL on this port (ADBC, the Flight SQL JDBC driver); default [server] "
        "flight_port (off). Passwords travel in clear text: keep it on loopback or configure pg_tls_cert.",
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        min=1,
        max=64,
        help="Server processes sharing the port (default [server] workers: 1). One runs the jobs; each has its "
        "own sessions and memory result cache (a Redis [cache] url shares it).",
    ),
) -> None:
    """Serve Kylin's REST API (/kylin/api) with users and project permissions; run queued jobs. Stops
    cleanly on SIGTERM or Ctrl-C: running jobs are paused, and resume at the next start."""
    import uvicorn

    from precube.server.app import SERVE_ENV, configure_logging, create_app
    from precube.server.connections import uvicorn_options

    cli: CliContext = ctx.obj
    settings = cli.settings
    settings.server.host = host or settings.server.host
    settings.server.port = settings.server.port if port is None else port
    settings.server.pg_port = settings.server.pg_port if pg_port is None else pg_port
    settings.server.flight_port = settings.server.flight_port if flight_port is None else flight_port
    configure_logging()
    count = workers or settings.server.workers
    options: dict[str, Any] = {
        "host": settings.server.host,
        "port": settings.server.port,
        "access_log": False,  # precube.access logs one line per request, with its request id and user
        "log_config": None,  # keep the logging configured above
        "timeout_graceful_shutdown": 30,
        **uvicorn_options(settings.server),  # header and keep-alive timeouts, the cap on connections
    }
    if count == 1:
        uvicorn.run(create_app(settings, run_jobs=not no_jobs), **options)
        return
    # ADMIN is created here, once: the workers would race to create it on a new store
    from precube.auth import Directory
    from precube.metadata import open_store
    from precube.server.app import create_admin

    with open_store(settings.metadata_url, settings.metadata.table) as store:
        create_admin(Directory(store, writer="server"), settings)
    # each worker process makes its application from the settings this command read (`from_environment`)
    os.environ[SERVE_ENV] = json.dumps(
        {"config": str(cli.config) if cli.config else None, "home": str(settings.home), "jobs": not no_jobs}
    )
    os.environ["PRECUBE__SERVER__HOST"], os.environ["PRECUBE__SERVER__PORT"] = options["host"], str(options["port"])
    os.environ["PRECUBE__SERVER__WORKERS"] = str(count)  # each process's share of the memory (`query.bounds`)
    if settings.server.pg_port is not None:  # each worker listens on it too (SO_REUSEPORT)
        os.environ["PRECUBE__SERVER__PG_PORT"] = str(settings.server.pg_port)
    if settings.server.flight_port:  # the first worker to bind it serves Flight SQL
        os.environ["PRECUBE__SERVER__FLIGHT_PORT"] = str(settings.server.flight_port)
    share_metrics(settings.home, settings.server.port)
    uvicorn.run("precube.server.app:from_environment", factory=True, workers=count, **options)


def share_metrics(home: Path, port: int) -> None:
    """Have the workers keep their Prometheus metrics in files, so a scrape of any worker sums them all
    (prometheus_client's multiprocess mode): HOME/metrics/PORT (one server per port), emptied (an earlier run's
    values would add up), unless the operator set PROMETHEUS_MULTIPROC_DIR."""
    from precube.metrics import MULTIPROC_ENV

    if os.environ.get(MULTIPROC_ENV):
        return
    folder = home / "metrics" / str(port)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    os.environ[MULTIPROC_ENV] = str(folder)
