"""`precube query` and `precube history`: SQL over a project's tables from the command line."""

from __future__ import annotations

import base64
import csv
import datetime as dt
import decimal
import json
import sys
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from precube.cli.context import FORMAT, PROJECT, CliContext, OutputFormat, console, print_records, project_state, when
from precube.cli.context import state as cli_state

if TYPE_CHECKING:  # imported when a query runs here, not through a server (`--server`: no engine is loaded)
    import pyarrow as pa

    from precube.cache import CachedSession
    from precube.query.session import QueryResult, Session
    from precube.remote import Remote

FORMATS = ("table", "csv", "json")


def _type_name(t: pa.DataType) -> str:
    """The SQL name of an Arrow result type."""
    import pyarrow as pa

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


def summary_of(result: QueryResult) -> dict[str, Any]:
    """How a result was answered, as `--format json` prints it (with `rows` added)."""
    return {
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


def summary_of_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """The same from a server's answer (`POST /kylin/api/query`)."""
    realizations = answer.get("realizations") or []
    layouts = [r["layoutId"] for r in realizations if r.get("layoutId", -1) >= 0]
    return {
        "pushdown": answer["pushDown"],
        "pushdown_reason": answer.get("pushDownReason"),
        "model": realizations[0]["modelAlias"] if realizations else None,
        "layout_id": layouts[0] if len(layouts) == 1 else (layouts or None),
        "segments": answer.get("segments") or [],
        "snapshots": sorted({s for r in realizations for s in r.get("snapshots") or []}),
        "engine": answer.get("engine") or str(answer.get("engineType", "")).lower(),
        "duration_ms": answer.get("durationMs", answer.get("duration", 0)),
        "cached": answer["storageCacheUsed"],
    }


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True)) if table.num_columns else []


def result_json(table: pa.Table, summary: dict[str, Any]) -> dict[str, Any]:
    return {
        "columns": [{"name": f.name, "type": _type_name(f.type)} for f in table.schema],
        "rows": [[_json_value(v) for v in row] for row in _rows(table)],
        **summary,
    }


def _print(table: pa.Table, summary: dict[str, Any], output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(result_json(table, summary)) + "\n")
    elif output == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(table.column_names)
        writer.writerows(_rows(table))
    else:
        view = RichTable(*[f"{f.name}\n[dim]{_type_name(f.type)}" for f in table.schema])
        for row in _rows(table):
            view.add_row(*[escape("NULL" if v is None else str(v)) for v in row])
        console.print(view)
        layouts = summary["layout_id"]
        layout_text = ", ".join(map(str, layouts if isinstance(layouts, list) else [layouts] if layouts else []))
        where = (
            f"pushdown to the source tables ({escape(summary['pushdown_reason'] or 'no reason recorded')})"
            if summary["pushdown"]
            else f"model {summary['model']}, layout {layout_text or '-'}"
        )
        if summary["snapshots"] and not summary["pushdown"]:
            where += f", snapshots of {', '.join(summary['snapshots'])}"

        cached = " · from the result cache" if summary["cached"] else ""
        console.print(
            f"{table.num_rows:,} rows in {summary['duration_ms']:.1f} ms · {where} · {summary['engine']}{cached}"
        )


def _session(ctx: typer.Context, project: str, engine: str | None) -> Session | CachedSession:
    from precube.api import connect

    cli = project_state(ctx, project)
    return connect(project, settings=cli.settings, engine=engine)


def _remote(ctx: typer.Context) -> Remote | None:
    cli: CliContext = cli_state(ctx)
    return cli.remote()


def _remote_query(
    remote: Remote,
    text: str,
    project: str,
    output: str,
    explain: bool,
    pushdown: bool | None,
    force: bool,
    no_cache: bool,
) -> None:
    """The query through the server: the rows come as Arrow, how they were answered in a header."""
    import pyarrow as pa

    from precube.remote import ANSWER_HEADER, ARROW_TYPE

    body: dict[str, Any] = {"sql": text, "project": project, "forcedToPushDown": force}
    if pushdown is False:
        body["forced_to_index"] = True
    if explain:
        info = remote.call("POST", "/query/explain", json=body)
        shown = info.pop("text")
        if output == "json":
            sys.stdout.write(json.dumps(info) + "\n")
        else:
            console.print(escape(shown), highlight=False)
        return
    if no_cache:  # Kylin's switch for one query
        body["backdoorToggles"] = {"DEBUG_TOGGLE_DISABLE_QUERY_CACHE": "true"}
    response = remote.request("POST", "/query", json=body, headers={"Accept": ARROW_TYPE})
    table = pa.ipc.open_stream(response.content).read_all()
    _print(table, summary_of_answer(json.loads(response.headers[ANSWER_HEADER])), output)


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
    remote = _remote(ctx)
    if remote is not None:
        if engine is not None:
            raise typer.BadParameter("--engine cannot be chosen through a server (--server): it uses its own")
        _remote_query(remote, text, project, output, explain, pushdown, force_pushdown, no_cache)
        return
    with _session(ctx, project, engine) as session:
        if explain:
            info = session.explain(text, engine=engine, pushdown=pushdown, force_pushdown=force_pushdown)
            if output == "json":
                sys.stdout.write(json.dumps(info.as_dict()) + "\n")
            else:
                console.print(escape(info.text()), highlight=False)
            return
        result = session.sql(text, engine=engine, pushdown=pushdown, force_pushdown=force_pushdown, no_cache=no_cache)
        _print(result.table, summary_of(result), output)


def history(
    ctx: typer.Context,
    project: str = PROJECT,
    limit: int = typer.Option(20, "--limit", "-n", help="How many of the latest queries."),
    fmt: OutputFormat = FORMAT,
) -> None:
    """A project's latest queries: when, who, how long, how they were answered, and errors."""
    remote = _remote(ctx)
    if remote is not None:
        found = remote.call("GET", "/query/history_queries", params={"project": project, "page_size": limit})
        records = [
            {
                "started": r["query_time"],
                "user": r["submitter"],
                "duration_ms": round(r["duration"], 1),
                "engine": r["engine"],
                "pushdown": r["pushdown"],
                "model": r["model"],
                "layouts": r["layouts"],
                "rows": r["result_row_count"],
                "succeeded": r["query_status"] == "SUCCEEDED",
                "error": r["error_msg"],
                "sql": r["sql_text"],
            }
            for r in found["query_histories"]
        ]
    else:
        with _session(ctx, project, None) as session:
            recent = session.history.recent(project, limit) if session.history is not None else []
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
            for r in recent
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
