"""`precube cache stats|clear`: operate a project's query result cache (the settings' `[cache]` backend)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer
from rich.table import Table as RichTable

from precube.cli.context import PROJECT, console, project_state, state

if TYPE_CHECKING:
    from precube.cache import ResultCache

app = typer.Typer(help="The query result cache: counters, entries, clearing.", no_args_is_help=True)


@app.command("stats")
def stats(
    ctx: typer.Context,
    project: str = PROJECT,
    output: str = typer.Option("table", "--format", "-f", help="table or json"),
) -> None:
    """Hits, misses, stale drops, waits, stores, skipped answers, entries and bytes of a project's cache
    (counters shared by every process of a Redis backend; a memory backend only knows this process)."""
    remote = state(ctx).remote()
    if remote is not None:
        found = remote.call("GET", "/query/cache/stats", params={"project": project})
    else:
        with _local_cache(ctx, project) as (cache, store):
            found = cache.stats(project, store=store).as_dict()
    if output == "json":
        sys.stdout.write(json.dumps(found) + "\n")
        return
    view = RichTable("statistic", "value", title=f"result cache of {project} ({found['backend']})")
    for name, value in found.items():
        if name not in ("project", "backend"):
            view.add_row(name, f"{value:,}" if isinstance(value, int) else str(value))
    console.print(view)


@app.command("clear")
def clear(
    ctx: typer.Context,
    project: str = PROJECT,
    sql: str | None = typer.Option(None, "--sql", help="Clear only this statement's entry (any spelling)."),
) -> None:
    """Drop a project's cached answers, or the one of `--sql` (through a server: a system admin's)."""
    remote = state(ctx).remote()
    if remote is not None:
        params = {"project": project} if sql is None else {"project": project, "sql": sql}
        dropped = int(remote.call("DELETE", "/query/cache", params=params)["cleared"])
    else:
        with _local_cache(ctx, project) as (cache, store):
            dropped = cache.clear(project, sql, store=store)
    console.print(f"cleared {dropped} cached answer{'s' if dropped != 1 else ''} of {project}")


@contextmanager
def _local_cache(ctx: typer.Context, project: str) -> Iterator[tuple[ResultCache, str]]:
    """The settings' result cache and the store's identity (its entries are keyed by it), closed after use."""
    from precube.api import open_cache

    cli = project_state(ctx, project)
    cache = open_cache(cli.settings)
    if cache is None:
        raise typer.BadParameter("the result cache is disabled (cache.enabled = false)")
    try:
        yield cache, cli.store().identity
    finally:
        cache.close()
