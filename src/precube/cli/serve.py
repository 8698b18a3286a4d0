"""`precube serve`: the REST API, the query sessions and the job service in one long-lived process."""

from __future__ import annotations

import logging

import typer

from precube.cli.context import CliContext


def serve(
    ctx: typer.Context,
    host: str | None = typer.Option(None, "--host", help="Address to listen on; default [server] host (127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", min=0, max=65535, help="Port; default [server] port (7070)."),
    no_jobs: bool = typer.Option(False, "--no-jobs", help="Answer requests but run no jobs (another server does)."),
) -> None:
    """Serve Kylin's REST API (/kylin/api) with users and project permissions; run queued jobs. Stops
    cleanly on SIGTERM or Ctrl-C: running jobs are paused, and resume at the next start."""
    import uvicorn

    from precube.server.app import create_app

    cli: CliContext = ctx.obj
    settings = cli.settings
    settings.server.host = host or settings.server.host
    settings.server.port = settings.server.port if port is None else port
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    app = create_app(settings, run_jobs=not no_jobs)
    uvicorn.run(
        app,
        host=settings.server.host,
        port=settings.server.port,
        access_log=False,  # precube.access logs one line per request, with its request id and user
        log_config=None,  # keep the logging configured above
        timeout_graceful_shutdown=30,
    )
