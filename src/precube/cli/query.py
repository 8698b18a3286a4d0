"""`precube query` and `precube history`: SQL over a project's tables from the command line."""

from __future__ import annotations

import base64
import csv
import datetime as dt
import decimal
import json
import sys
from typing import Any

import pyarrow as pa
import typer
from rich.markup import escape
from rich.table import Table as RichTable

from precube.api import connect
from precube.cache import CachedSession
from precube.cli.context import FORMAT, PROJECT, OutputFormat, console, print_records, project_state, when
from precube.query.session import QueryResult, Session

FORMATS = ("table", "csv", "json")


def _type_name(t: pa.DataType) -> str:
    """The SQL name of an Arrow result type."""
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "timestamp"
    names = {
        "int8": "tinyint", "int16": "smallint", "int32": "integer", "int64": "bigint", "float": "float",
        "double": "double", "string": "varchar", "large_string": "varchar", "date32[day]": "date", "bool": "boolean",
        "binary": "binary",
    }  # fmt: skip
    return names.get(str(t), str(t))


def _json_value(v: Any) -> Any:
    if isinstance(v, decimal.Decimal):
        exponent = v.as_tuple().exponent
        return int(v) if isinstance(exponent, int) and exponent >= 0 else float(v)
    if isinstance(v, (dt.date, dt.datetime, dt.time)):
        return v.isoformat()
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    return v


def result_json(result: QueryResult) -> dict[str, Any]:
    return {
        "columns": [{"name": f.name, "type": _type_name(f.type)} for f in result.table.schema],
        "rows": [[_json_value(v) for v in row] for row in result.rows],
        "pushdown": result.pushdown,
        "pushdown_reason": result.pushdown_reason,
        "model": result.model,
        "layout_id": result.layout_ids[0] if len(result.layout_ids) == 1 else (result.layout_ids or None),
        "segments": result.segments,
        "snapshots": sorted({t.source.identity for found in result.snapshots for t in found.tables}),
        "engine": result.engine,
        "duration_ms": round(result.duration_ms, 3),
        "cached": result.from_cache,
    }


def _print(result: QueryResult, output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(result_json(result)) + "\n")
    elif output == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(result.table.column_names)
        writer.writerows(result.rows)
    else:
        view = RichTable(*[f"{f.name}\n[dim]{_type_name(f.type)}" for f in result.table.schema])
        for row in result.rows:
            view.add_row(*[escape("NULL" if v is None else str(v)) for v in row])
        console.print(view)
        where = (
            f"pushdown to the source tables ({escape(result.pushdown_reason or 'no reason recorded')})"
            if result.pushdown
            else f"model {result.model}, layout {', '.join(map(str, result.layout_ids)) or '-'}"
        )
        if result.snapshots and not result.pushdown:
            tables = sorted({t.source.identity for found in result.snapshots for t in found.tables})
            where += f", snapshots of {', '.join(tables)}"

        cached = " · from the result cache" if result.from_cache else ""
        console.print(
            f"{result.table.num_rows:,} rows in {result.duration_ms:.1f} ms · {where} · {result.engine}{cached}"
        )


def _session(ctx: typer.Context, project: str, engine: str | None) -> Session | CachedSession:
    cli = project_state(ctx, project)
    return connect(project, settings=cli.settings, engine=engine)


def query(
    ctx: typer.Context,
    sql: str = typer.Argument(..., help="The SQL; '-' reads it from standard input."),
    project: str = PROJECT,
    output: str = typer.Option("table", "--format", "-f", help="table, csv or json"),
    engine: str | None = typer.Option(None, "--engine", "-e", help="duckdb or spark (default: settings)."),
    explain: bool = typer.Option(False, "--explain", help="Tell how the query would be answered; run nothing."),
    pushdown: bool | None = typer.Option(
        None, "--pushdown/--no-pushdown", help="Allow or forbid running on the source tables (default: project)."
    ),
    force_pushdown: bool = typer.Option(False, "--force-pushdown", help="Run on the source tables, not layouts."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor store the result cache."),
) -> None:
    """Answer SQL over a project's tables from precomputed layouts (or, failing that, the source tables)."""
    if output not in FORMATS:
        raise typer.BadParameter(f"--format must be one of {', '.join(FORMATS)}, not {output!r}")
    # bytes that are not UTF-8 become lone surrogates (as in argv), which the session refuses in one line
    text = sys.stdin.buffer.read().decode("utf-8", "surrogateescape") if sql == "-" else sql
    with _session(ctx, project, engine) as session:
        if explain:
            info = session.explain(text, engine=engine, pushdown=pushdown, force_pushdown=force_pushdown)
            if output == "json":
                sys.stdout.write(json.dumps(info.as_dict()) + "\n")
            else:
                console.print(escape(info.text()), highlight=False)
            return
        result = session.sql(text, engine=engine, pushdown=pushdown, force_pushdown=force_pushdown, no_cache=no_cache)
        _print(result, output)


def history(
    ctx: typer.Context,
    project: str = PROJECT,
    limit: int = typer.Option(20, "--limit", "-n", help="How many of the latest queries."),
    fmt: OutputFormat = FORMAT,
) -> None:
    """A project's latest queries: when, who, how long, how they were answered, and errors."""
    with _session(ctx, project, None) as session:
        found = session.history.recent(project, limit) if session.history is not None else []
    records = [
        {
            "started": r.start_ms,
            "user": r.user,
            "duration_ms": round(r.duration_ms, 1),
            "engine": r.engine,
            "pushdown": r.pushdown,
            "model": r.model,
            "layouts": r.layouts,
            "rows": r.rows,
            "succeeded": r.succeeded,
            "error": r.error,
            "sql": r.sql,
        }
        for r in found
    ]
    columns = {
        "started": lambda r: when(r["started"]),
        "user": lambda r: r["user"],
        "ms": lambda r: f"{r['duration_ms']:.1f}",
        "engine": lambda r: r["engine"],
        "answered by": lambda r: (
            "pushdown" if r["pushdown"] else (f"{r['model']} / {r['layouts']}" if r["model"] else "-")
        ),
        "rows": lambda r: f"{r['rows']:,}",
        "status": lambda r: "ok" if r["succeeded"] else f"[red]{escape(r['error'] or 'failed')}[/]",
        "sql": lambda r: escape(" ".join(r["sql"].split())[:120]),
    }
    print_records(fmt, records, columns, title=f"queries of {project}")


def _answered_by(record: dict[str, Any]) -> str:
    if record["pushdown"]:
        return "pushdown"
    return f"{record['model']} / {record['layouts']}" if record["model"] else "-"
