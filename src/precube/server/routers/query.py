"""Kylin 5's `query` endpoints: `POST /query` (Kylin's answer as JSON, or the rows as an Arrow IPC stream
with the answer's metadata in a header; `params` binds its `?` marks as Kylin's prepared statements do, the thin
client's way to send parameters), `POST /query/explain`, the result cache (`DELETE /query/cache`,
`GET /query/cache/stats`), `GET /query/history_queries` and `GET /query/tables_and_columns` (also at Kylin's
older `GET /tables_and_columns`).

A statement precube refuses (bad SQL, a query-trust escape, no layout with pushdown forbidden, …) is a 4xx
with Kylin's failure envelope and the one-line query error as `msg`, not Kylin's 200 with `isException`:
the issue requires bad input to be a 4xx, and every client then sees a failure the same way."""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

import orjson
import pyarrow as pa
from fastapi import APIRouter, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive

from precube.auth import Permission
from precube.errors import InvalidInputError
from precube.jdbc_types import text_column
from precube.query.bounds import Window
from precube.query.errors import QueryTimeoutError
from precube.query.project_metadata import ProjectMetadata
from precube.remote import ANSWER_HEADER, ARROW_TYPE
from precube.server import table_meta
from precube.server.connections import SEND_DEADLINE
from precube.server.envelope import Paging, ok, paging
from precube.server.security import Caller, parse_json, requires, state_of
from precube.server.state import ServerState
from precube.server.state_params import StateParam, values_of
from precube.service.parameters import bind
from precube.service.queries import Handle, QueryResult, RunOptions
from precube_client.jdbc_types import of_arrow

router = APIRouter(tags=["query"])

TABLE_INDEX, AGG_INDEX = "Table Index", "Agg Index"
NO_CACHE_TOGGLE = "DEBUG_TOGGLE_DISABLE_QUERY_CACHE"  # Kylin's backdoor toggle: this query skips the result cache
MAX_INT = 2**31 - 1


class QueryRequest(BaseModel):
    """Kylin's `POST /api/query` body (`SQLRequest`); fields precube has no use for are accepted and ignored."""

    model_config = ConfigDict(extra="forbid", strict=True)

    sql: str = Field(min_length=1)
    project: str
    offset: int = Field(0, ge=0, le=MAX_INT)  # Java ints in Kylin: a larger value is refused (400), not a 500
    limit: int = Field(0, ge=0, le=MAX_INT)  # 0: every row
    accept_partial: bool = Field(False, alias="acceptPartial")
    forced_to_push_down: bool = Field(False, alias="forcedToPushDown")  # from the source tables, not layouts
    forced_to_index: bool = False  # answer from layouts or fail: never push down
    partial_match_index: bool = Field(False, alias="partialMatchIndex")
    forced_to_tiered_storage: int | None = Field(None, alias="forcedToTieredStorage", ge=0, le=MAX_INT)
    user_defined_tag: str | None = Field(None, max_length=256)
    format: str | None = Field(None, max_length=32)
    encode: bool = True
    backdoor_toggles: dict[str, str] | None = Field(None, alias="backdoorToggles")
    params: list[StateParam] | None = Field(None, max_length=65_535)  # Kylin's PrepareSqlRequest: `?` values


class ExplainRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    sql: str = Field(min_length=1)
    project: str
    forced_to_push_down: bool = Field(False, alias="forcedToPushDown")
    forced_to_index: bool = False


def _pushdown(forced_to_index: bool) -> bool | None:
    return False if forced_to_index else None


def _options(body: QueryRequest) -> RunOptions:
    """How the request lets its statement be answered."""
    toggles = body.backdoor_toggles or {}
    return RunOptions(
        pushdown=_pushdown(body.forced_to_index),
        force_pushdown=body.forced_to_push_down,
        no_cache=toggles.get(NO_CACHE_TOGGLE, "").lower() == "true",
        window=Window(body.offset, body.limit),  # in the statement, as Kylin's `appendLimitOffset` puts them
    )


QUERY_PATH = "/query"
ASK_QUERY = requires(Permission.QUERY)  # the route's dependency; `server.hot_path` checks its `requirement`


def query_request(content_type: str, parsed: Any) -> QueryRequest:
    """The body of `POST /query` as the route and the hot path both read it: JSON (`parsed`, None when the body
    was not JSON or empty), validated by `QueryRequest`."""
    if "json" not in content_type:
        raise InvalidInputError(f"the request body must be JSON (Content-Type: application/json), not {content_type!r}")
    try:
        return QueryRequest.model_validate(parsed)
    except ValidationError as err:
        raise RequestValidationError(err.errors(include_url=False)) from err


_JSON_BODY = {  # the route reads its body itself (`query_request`): its schema is declared for OpenAPI
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": QueryRequest.model_json_schema(by_alias=True)}},
    }
}


@router.post(QUERY_PATH, response_model=None, openapi_extra=_JSON_BODY)
async def query(request: Request, caller: Caller = Depends(ASK_QUERY)) -> Response:
    """Answer SQL over the project's tables (Kylin's answer; `Accept: application/vnd.apache.arrow.stream`:
    the rows as Arrow, the rest in the `X-Precube-Answer` header). A client that closes the connection before
    the answer cancels the statement."""
    kind = request.headers.get("content-type", "application/json").lower()
    raw = await request.body()
    body = query_request(kind, parse_json(raw) if "json" in kind and raw else None)
    accept, scope_state = request.headers.get("accept", ""), request.scope.setdefault("state", {})
    return await answer(state_of(request), caller, body, accept, request.receive, scope_state)


LOOP_ANSWER_CELLS = 20_000  # a larger answer is encoded in a worker thread, not on the event loop


async def answer(
    state: ServerState, caller: Caller, body: QueryRequest, accept: str, receive: Receive, sent: dict[str, Any]
) -> Response:
    """The response to `POST /query` (the route's and the hot path's one implementation): the query service's
    fast lane when this process's result cache holds the answer, else its executor; the event loop waits on
    neither. `receive` (the request's, its body read) tells when the client has gone: the statement is then
    cancelled. `sent` (the request's ASGI scope state) gets the statement's deadline for sending the answer."""
    arrived = time.monotonic()
    principal, options = caller.principal, _options(body)
    sql = body.sql if body.params is None else bind(body.sql, values_of(body.params))
    result = state.queries.answer_from_memory(principal, sql, options)
    if result is None:
        handle = state.queries.run(principal, sql, options=options)
        deadline = handle.cancellation.deadline or arrived + state.settings.query.timeout_s
        result = await _until_gone(state, handle, receive)
    else:
        deadline = arrived + state.settings.query.timeout_s
    # encoding and sending the answer end by the statement's deadline too (`server.connections` drops a client
    # that has not read it all by then)
    sent[SEND_DEADLINE] = deadline
    if result.table.num_rows * result.table.num_columns <= LOOP_ANSWER_CELLS:
        return _response(state, principal.project, result, accept, deadline)
    return await run_in_threadpool(_response, state, principal.project, result, accept, deadline)


WATCH_AFTER_S = 0.05  # a statement answered sooner is not worth a watcher on its connection


async def _until_gone(state: ServerState, handle: Handle, receive: Receive) -> QueryResult:
    """The handle's answer; a client that closes the connection first has the statement cancelled (its answer
    is then the cancellation). Only a statement still running after `WATCH_AFTER_S` gets a watcher: most are
    answered sooner, and a task per request costs them time for nothing."""
    loop = asyncio.get_running_loop()
    watcher: asyncio.Task[None] | None = None

    def watch() -> None:
        nonlocal watcher
        watcher = loop.create_task(_cancel_when_gone(state, handle, receive))

    timer = loop.call_later(WATCH_AFTER_S, watch)
    try:
        return await handle.wait()
    finally:
        timer.cancel()
        if watcher is not None:
            watcher.cancel()


async def _cancel_when_gone(state: ServerState, handle: Handle, receive: Receive) -> None:
    """Cancel the statement once the client has closed the connection (the body was read: nothing else may
    come); the engine is interrupted and freed."""
    while (await receive())["type"] != "http.disconnect":
        pass
    state.queries.cancel(handle)


def _response(state: ServerState, project: str, result: QueryResult, accept: str, deadline: float) -> Response:
    table = result.table  # the window asked for (`offset`, `limit`): the engine fetched no more
    found = _answer(result, table, state.name, lambda: state.queries.sessions.get(project).metadata.get(project))
    if ARROW_TYPE in accept:
        header = json.dumps(found, separators=(",", ":"), ensure_ascii=True)
        return Response(_ipc(table), media_type=ARROW_TYPE, headers={ANSWER_HEADER: header})
    if table.num_rows <= ENCODE_ROWS:
        found["results"] = _results(table)
        return Response(orjson.dumps(ok(found)), media_type=JSON_TYPE)  # JSONResponse's bytes, in a tenth the time
    return Response(_json_in_parts(found, table, deadline, state.settings.query.timeout_s), media_type=JSON_TYPE)


ENCODE_ROWS = 65_536  # a larger answer is encoded this many rows at a time, the time limit checked between
JSON_TYPE = "application/json"
_RESULTS = '"results":[]'


def _json_in_parts(found: dict[str, Any], table: pa.Table, deadline: float, timeout_s: float) -> bytes:
    """The envelope of `found` with `table`'s rows as `results`, as JSONResponse writes it, encoded by parts (only
    one part's Python strings are alive at a time); past `deadline` it is a QueryTimeoutError."""
    text = json.dumps(ok({**found, "results": []}), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    at = text.rindex(_RESULTS) + len(_RESULTS) - 1  # `results` is data's last key: only `msg` follows it
    parts = [text[:at].encode()]
    for start in range(0, table.num_rows, ENCODE_ROWS):
        if time.monotonic() > deadline:
            raise QueryTimeoutError(
                f"the query and encoding its answer took longer than the time limit of {timeout_s:g} s "
                "([query] timeout_s)"
            )
        rows = json.dumps(_results(table.slice(start, ENCODE_ROWS)), ensure_ascii=False, separators=(",", ":"))
        parts.append((b"," if start else b"") + rows[1:-1].encode())
    parts.append(text[at:].encode())
    return b"".join(parts)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def _results(table: pa.Table) -> list[list[str | None]]:
    columns = [text_column(c) for c in table.columns]
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


def _column_metas(schema: pa.Schema) -> list[dict[str, Any]]:
    metas = []
    for field in schema:
        t = of_arrow(field.type)
        metas.append(
            {
                "isNullable": 1 if field.nullable else 0,
                "displaySize": min(t.precision, 2147483647) or 256,
                "label": field.name,
                "name": field.name,
                "schemaName": None,
                "catelogName": None,
                "tableName": None,
                "precision": t.precision,
                "scale": t.scale,
                "columnType": t.code,
                "columnTypeName": t.name,
                "autoIncrement": False,
                "caseSensitive": t.name == "VARCHAR",
                "searchable": False,
                "currency": False,
                "signed": t.name in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL"),
                "readOnly": True,
                "writable": False,
                "definitelyWritable": False,
            }
        )
    return metas


def _realizations(
    result: QueryResult, metadata: Callable[[], ProjectMetadata]
) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """Kylin's `realizations` (a layout answered), and the rows and bytes each scanned."""
    if result.pushdown:
        return [], [], []
    snapshots = sorted({t.source.identity for found in result.snapshots for t in found.tables})
    found: list[tuple[str | None, str | None, int, bool, int, int]]
    if result.plan is not None and not result.from_cache:
        found = [
            (m.model.model.uuid, m.model.model.alias, m.layout.id, m.table_index, m.rows, _bytes(m))
            for m in result.matches
        ]
    else:  # a result-cache answer: its model and layouts, looked up in the project's metadata
        models = {m.model.alias: m for m in metadata().models}
        model = models.get(result.model or "")
        found = []
        for layout_id in result.layout_ids:
            layout = model.layouts.get(layout_id) if model is not None else None
            table_index = bool(layout is not None and layout.is_table_index)
            uuid_ = model.model.uuid if model is not None else None
            found.append((uuid_, result.model, layout_id, table_index, 0, 0))
    realizations = [
        {
            "modelId": model_id,
            "modelAlias": alias,
            "layoutId": layout_id,
            "indexType": TABLE_INDEX if table_index else AGG_INDEX,
            "partialMatchModel": False,
            "valid": True,
            "snapshots": snapshots,
        }
        for model_id, alias, layout_id, table_index, _, _ in found
    ]
    if not realizations and snapshots and result.model is not None:  # lookup snapshots alone answered it
        realizations.append(
            {
                "modelId": None,
                "modelAlias": result.model,
                "layoutId": -1,
                "indexType": None,
                "partialMatchModel": False,
                "valid": True,
                "snapshots": snapshots,
            }
        )
    return realizations, [f[4] for f in found], [f[5] for f in found]


def _bytes(match: Any) -> int:
    return sum(s.layouts[match.layout.id].byte_size for s in match.scanned if match.layout.id in s.layouts)


def _answer(
    result: QueryResult, table: pa.Table, server: str, metadata: Callable[[], ProjectMetadata]
) -> dict[str, Any]:
    realizations, scan_rows, scan_bytes = _realizations(result, metadata)
    return {
        "columnMetas": _column_metas(table.schema),
        "affectedRowCount": 0,
        "isException": False,
        "exceptionMessage": None,
        "duration": round(result.duration_ms),
        "scanRows": scan_rows,
        "totalScanRows": sum(scan_rows),
        "scanBytes": scan_bytes,
        "totalScanBytes": sum(scan_bytes),
        "resultRowCount": table.num_rows,
        "hitExceptionCache": False,
        "storageCacheUsed": result.from_cache,
        "queryId": str(uuid.UUID(int=random.getrandbits(128), version=4)),  # an id, not a secret
        "server": server,
        "signature": ",".join(result.segments),
        "engineType": result.engine.upper() if result.pushdown else "NATIVE",
        "pushDown": result.pushdown,
        "partial": result.partial,  # Kylin's flag: `limit` rows, and the answer had more
        "realizations": realizations,
        # precube's own, for its CLI: how the answer came
        "pushDownReason": result.pushdown_reason,
        "segments": result.segments,
        "engine": result.engine,
        "durationMs": round(result.duration_ms, 3),
    }


@router.post("/query/explain")
def explain(
    body: ExplainRequest, request: Request, caller: Caller = Depends(requires(Permission.QUERY))
) -> dict[str, Any]:
    """How the statement would be answered, without running it (as `precube query --explain`): `text`, and
    the plan's structure (contexts, chosen layouts, rejected candidates with their reasons, the engine's SQL)."""
    options = RunOptions(pushdown=_pushdown(body.forced_to_index), force_pushdown=body.forced_to_push_down)
    found = state_of(request).queries.explain(caller.principal, body.sql, options=options)
    return ok({"text": found.text(), **found.as_dict()})


def _cache(request: Request) -> Any:
    cache = state_of(request).cache
    if cache is None:
        raise InvalidInputError("the result cache is disabled ([cache] enabled = false)")
    return cache


@router.delete("/query/cache")
def clear_cache(
    request: Request,
    project: str | None = Query(None, description="Only this project's answers (default: every project's)."),
    sql: str | None = Query(None, max_length=1_000_000, description="Only this statement's answer (any spelling)."),
    caller: Caller = Depends(requires(admin=True)),
) -> dict[str, Any]:
    """Drop cached answers (a system admin's, as in Kylin): the project's (or one statement's), or all."""
    state = state_of(request)
    cache = _cache(request)
    if caller.project is None and sql is not None:
        raise InvalidInputError("sql needs a project")
    if caller.project is not None:
        state.store.require_project(caller.project)
    projects = [caller.project] if caller.project is not None else [p.name for p in state.store.list_projects()]
    dropped = sum(cache.clear(name, sql, store=state.store.identity) for name in projects)
    return ok({"cleared": dropped})


@router.get("/query/cache/stats")
def cache_stats(request: Request, caller: Caller = Depends(requires(Permission.QUERY))) -> dict[str, Any]:
    """The project's result-cache counters: hits, misses, stale drops, waits, stores, skipped, entries, bytes."""
    assert caller.project is not None
    state = state_of(request)
    state.store.require_project(caller.project)
    found: dict[str, Any] = _cache(request).stats(caller.project, store=state.store.identity).as_dict()
    return ok(found)


@router.get("/query/history_queries")
def history_queries(
    request: Request,
    paged: Paging = Depends(paging),
    start_time_from: int | None = Query(None, ge=0, description="epoch ms"),
    start_time_to: int | None = Query(None, ge=0, description="epoch ms"),
    latency_from: float | None = Query(None, ge=0, description="seconds"),
    latency_to: float | None = Query(None, ge=0, description="seconds"),
    sql: str | None = Query(None, max_length=10_000, description="SQL containing this text"),
    caller: Caller = Depends(requires(Permission.QUERY)),
) -> dict[str, Any]:
    """The project's query history, latest first: who, when, how long, how it was answered, errors."""
    assert caller.project is not None
    state = state_of(request)
    state.store.require_project(caller.project)
    if state.history is None:
        return ok({"query_histories": [], "size": 0})
    records, total = state.history.search(
        caller.project,
        start_from=start_time_from,
        start_to=start_time_to,
        min_ms=None if latency_from is None else latency_from * 1000,
        max_ms=None if latency_to is None else latency_to * 1000,
        sql=sql,
        offset=paged.start,
        limit=paged.size,
    )
    histories = [
        {
            "sql_text": r.sql,
            "query_time": r.start_ms,
            "duration": round(r.duration_ms, 3),
            "submitter": r.user,
            "project_name": r.project,
            "query_status": "SUCCEEDED" if r.succeeded else "FAILED",
            "engine_type": r.engine.upper() if r.pushdown else "NATIVE",
            "index_hit": not r.pushdown and bool(r.model),
            "result_row_count": r.rows,
            "realizations": [
                {"modelAlias": r.model, "layoutId": int(layout)} for layout in r.layouts.split(",") if layout
            ],
            "error_msg": r.error,
            # precube's own names, as `precube history` shows them
            "engine": r.engine,
            "pushdown": r.pushdown,
            "model": r.model,
            "layouts": r.layouts,
        }
        for r in records
    ]
    return ok({"query_histories": histories, "size": total})


MODEL_FILTER = Query(None, max_length=256, description="Only this model's tables (Kylin's `cube`: a model alias).")


@router.get("/query/tables_and_columns")
def tables_and_columns(
    request: Request, cube: str | None = MODEL_FILTER, caller: Caller = Depends(requires(Permission.QUERY))
) -> dict[str, Any]:
    """The project's tables and their columns as BI clients list them (Kylin 5's `TableMetaWithType` list):
    every table, computed columns included, never paged."""
    return ok(_tables_and_columns(request, caller, cube))


@router.get("/tables_and_columns")
def legacy_tables_and_columns(
    request: Request, cube: str | None = MODEL_FILTER, caller: Caller = Depends(requires(Permission.QUERY))
) -> list[Any]:
    """Kylin's older path of the same list (ODBC drivers call it), answered as Kylin does: the bare list,
    without the envelope."""
    return _tables_and_columns(request, caller, cube)


def _tables_and_columns(request: Request, caller: Caller, model: str | None) -> list[Any]:
    metadata = state_of(request).queries.metadata(caller.principal)
    return table_meta.tables_and_columns(metadata.description, (m.model for m in metadata.models), model)
