"""The query endpoints on a real server: the SSB query cases through `POST /kylin/api/query` equal the
oracle's answers (as Kylin's JSON of strings, and as Arrow), Kylin's answer fields, offset/limit, the result
cache, the query-trust escapes refused as 4xx, explain, the history with the user, tables_and_columns, the
QUERY permission boundary and project isolation, and the CLI's `--server` mode."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from precube.auth import Permission
from precube.metadata import Project, SourceType, open_store
from precube.remote import ANSWER_HEADER, ARROW_TYPE
from precube.sources.tables import load_file_table
from tests.query.oracle import Oracle, assert_same, load_case
from tests.query.test_escapes import ESCAPES
from tests.server.conftest import ServerHome, data, error, fingerprint, server_settings
from tests.server.live import ADMIN, LiveServer, live_server

CASES = sorted((Path(__file__).parent.parent / "query" / "cases").glob("*.sql"))
QUERY = "/kylin/api/query"
SSB_Q = (
    "select d_year, sum(lo_revenue) as revenue from ssb.lineorder "
    "join ssb.dates on lo_orderdate = d_datekey group by d_year order by d_year"
)
PASSWORD = "Passw0rd!"

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def caching(server_home: ServerHome) -> Iterator[LiveServer]:
    """A second server on the same home whose result cache admits every answer (the shared one keeps the
    default thresholds, which the small test data never reaches)."""
    settings = server_settings(server_home.settings.home, cache={"min_duration_ms": 0, "min_scanned_rows": 0})
    with live_server(settings, run_jobs=False) as server:
        yield server


def _user(live: LiveServer, project: str, level: Permission | None) -> tuple[str, str]:
    name = f"u_{uuid.uuid4().hex[:8]}"
    live.state.directory.add_user(name, PASSWORD, [])
    if level is not None:
        live.state.directory.grant(project, name, level)
    return name, PASSWORD


def _typed(answer: dict[str, Any]) -> pa.Table:
    """Kylin's answer of strings back into typed columns, by each column's JDBC type (independent of how
    the server made the strings)."""
    arrays = []
    for i, meta in enumerate(answer["columnMetas"]):
        texts = [row[i] for row in answer["results"]]
        kind = meta["columnTypeName"]
        if kind in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT"):
            arrays.append(pa.array([None if v is None else int(v) for v in texts], pa.int64()))
        elif kind == "DECIMAL":
            typ = pa.decimal128(meta["precision"], meta["scale"])
            arrays.append(pa.array([None if v is None else Decimal(v) for v in texts], typ))
        elif kind in ("DOUBLE", "FLOAT"):
            arrays.append(pa.array([None if v is None else float(v) for v in texts], pa.float64()))
        elif kind == "DATE":
            arrays.append(pa.array([None if v is None else dt.date.fromisoformat(v) for v in texts], pa.date32()))
        elif kind == "BOOLEAN":
            arrays.append(pa.array([None if v is None else v == "true" for v in texts], pa.bool_()))
        elif kind == "VARCHAR":
            arrays.append(pa.array(texts, pa.string()))
        else:  # arrays and other types: compared as the case's values are not
            pytest.skip(f"column type {kind} has no typed comparison")
    return pa.table(arrays, names=[m["label"] for m in answer["columnMetas"]])


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_through_the_api_equals_the_oracle(
    path: Path, live: LiveServer, admin: httpx.Client, oracle: Oracle, server_home: ServerHome
) -> None:
    case = load_case(path)
    expected = oracle.run(case.sql)
    body = {"sql": case.sql, "project": server_home.project}
    answer = data(admin.post(QUERY, json=body))
    arrow = admin.post(QUERY, json=body, headers={"Accept": ARROW_TYPE})
    assert arrow.status_code == 200 and arrow.headers["content-type"] == ARROW_TYPE, arrow.text
    table = pa.ipc.open_stream(arrow.content).read_all()
    assert_same(case, expected, table)
    meta = json.loads(arrow.headers[ANSWER_HEADER])
    assert meta["resultRowCount"] == table.num_rows == answer["resultRowCount"] == len(answer["results"])
    if any(m["columnTypeName"] in ("ARRAY", "OTHER", "VARBINARY") for m in answer["columnMetas"]):
        return  # the strings of collections are for people; the Arrow answer above is the exact one
    assert_same(case, expected, _typed(answer))
    assert answer["isException"] is False and answer["server"] == live.state.name
    if not answer["pushDown"]:
        assert answer["engineType"] == "NATIVE"
        if case.answer == "layout" and answer["segments"]:  # (a statement over no table reads no layout)
            assert answer["realizations"] and all(r["modelAlias"] == server_home.model for r in answer["realizations"])
    else:
        assert answer["realizations"] == [] and answer["engineType"] != "NATIVE"


def test_answer_fields_types_paging_and_the_result_cache(
    caching: LiveServer, oracle: Oracle, server_home: ServerHome
) -> None:
    project = server_home.project
    admin = caching.client()
    data(admin.delete(f"{QUERY}/cache", params={"project": project}))
    first = data(admin.post(QUERY, json={"sql": SSB_Q, "project": project}))
    expected = oracle.run(SSB_Q)
    assert first["pushDown"] is False and first["storageCacheUsed"] is False
    [realization] = first["realizations"]
    assert realization["modelAlias"] == server_home.model and realization["indexType"] == "Agg Index"
    with open_store(server_home.settings.metadata_url, server_home.settings.metadata.table) as store:
        from precube.metadata import IndexPlan
        from precube.modeling.model_store import find_model

        with store.read(project) as tx:
            model = find_model(tx, server_home.model)
            assert model is not None
            plan = tx.require(IndexPlan, model.uuid)
    assert realization["layoutId"] in {lay.id for lay in plan.all_layouts()}
    assert realization["modelId"] == model.uuid
    assert first["totalScanRows"] == sum(first["scanRows"]) > 0
    metas = {m["label"].lower(): m for m in first["columnMetas"]}
    assert (metas["d_year"]["columnType"], metas["d_year"]["columnTypeName"]) in ((4, "INTEGER"), (-5, "BIGINT"))
    assert metas["revenue"]["columnType"] in (3, -5) and metas["revenue"]["columnTypeName"] in ("DECIMAL", "BIGINT")
    years = expected.column(0).to_pylist()
    assert [row[0] for row in first["results"]] == [str(y) for y in years]
    assert all(isinstance(v, str) for row in first["results"] for v in row)

    second = data(admin.post(QUERY, json={"sql": SSB_Q, "project": project}))
    assert second["storageCacheUsed"] is True and second["results"] == first["results"]
    assert second["realizations"][0]["layoutId"] == realization["layoutId"]
    stats = data(admin.get(f"{QUERY}/cache/stats", params={"project": project}))
    assert stats["hits"] >= 1 and stats["entries"] >= 1

    paged = data(admin.post(QUERY, json={"sql": SSB_Q, "project": project, "offset": 2, "limit": 3}))
    assert paged["results"] == first["results"][2:5] and paged["resultRowCount"] == 3 and paged["partial"] is True
    again = data(admin.post(QUERY, json={"sql": SSB_Q, "project": project, "offset": 2, "limit": 3}))
    assert again["storageCacheUsed"] is True and again["results"] == paged["results"] and again["partial"] is True
    tail = data(admin.post(QUERY, json={"sql": SSB_Q, "project": project, "offset": len(years) - 1, "limit": 5}))
    assert tail["results"] == first["results"][-1:] and tail["partial"] is False
    assert first["partial"] is False and second["partial"] is False  # the whole answer, its own cache entry

    pushed = data(admin.post(QUERY, json={"sql": SSB_Q, "project": project, "forcedToPushDown": True}))
    assert pushed["pushDown"] is True and pushed["realizations"] == [] and pushed["results"] == first["results"]

    cleared = data(admin.delete(f"{QUERY}/cache", params={"project": project}))
    assert cleared["cleared"] >= 1
    assert data(admin.get(f"{QUERY}/cache/stats", params={"project": project}))["entries"] == 0


@pytest.mark.parametrize(("attempt", "_error"), ESCAPES, ids=[f"{i:02d}" for i in range(len(ESCAPES))])
def test_escapes_are_4xx_and_change_nothing(
    attempt: str, _error: type, admin: httpx.Client, server_home: ServerHome, tmp_path: Path
) -> None:
    canary = tmp_path / "canary.csv"
    canary.write_text("secret\n42\n")
    sql = attempt.replace("{canary}", str(canary))
    before = fingerprint(server_home.settings)
    response = admin.post(QUERY, json={"sql": sql, "project": server_home.project})
    assert 400 <= response.status_code < 500, response.text
    message = error(response, response.status_code)
    assert "secret" not in message
    assert fingerprint(server_home.settings) == before


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b'{"sql": 1, "project": "ssb"}',
        b'{"sql": "select 1", "project": "ssb", "limit": "10"}',
        b'{"sql": "select 1", "project": "ssb", "limit": -1}',
        b'{"sql": "select 1", "project": "ssb", "colour": "red"}',
        b'{"sql": "select 1", "project": "../ssb"}',
        b'{"sql": "select 1", "project": "ss\'b"}',
        b'{"sql": "select 1", "project": "ss\\u0000b"}',
        b'{"sql": "select 1"}',
        b'{"sql": "selec lo_revenue frm ssb.lineorder", "project": "ssb"}',
        b'{"sql": "select no_such_column from ssb.lineorder", "project": "ssb"}',
        b'{"sql": "drop table ssb.lineorder", "project": "ssb"}',
        b'{"sql": "select 1; select 2", "project": "ssb"}',
        b'["sql", "project"]',
    ],
)
def test_hostile_query_bodies_are_4xx(body: bytes, admin: httpx.Client, server_home: ServerHome) -> None:
    before = fingerprint(server_home.settings)
    response = admin.post(QUERY, content=body, headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500, response.text
    error(response, response.status_code)
    assert fingerprint(server_home.settings) == before


def test_the_query_route_reads_only_json_and_one_project(admin: httpx.Client, server_home: ServerHome) -> None:
    """The hot path (`server.hot_path`) refuses what the FastAPI route would: a body not sent as JSON, and a
    project named in the query string other than the body's (the permission must be checked on the one acted on)."""
    body = {"sql": "select count(*) from ssb.lineorder", "project": server_home.project}
    as_text = {"content": json.dumps(body), "headers": {"Content-Type": "text/plain"}}
    assert "project is required" in error(admin.post(QUERY, **as_text), 400)
    named = admin.post(QUERY, params={"project": server_home.project}, **as_text)
    assert "Content-Type: application/json" in error(named, 400)
    assert "two projects" in error(admin.post(QUERY, params={"project": "elsewhere"}, json=body), 400)
    assert data(admin.post(QUERY, params={"project": server_home.project}, json=body))["resultRowCount"] == 1


def test_params_bind_the_marks_as_kylins_prepared_statements(admin: httpx.Client, server_home: ServerHome) -> None:
    """`params` (Kylin's `PrepareSqlRequest`): each `?` bound by the server's binder, a value as its class says;
    an unknown class, a value it cannot read and marks that do not match are 400s with one-line messages."""
    sql = "select count(*) from ssb.dates where d_year = ? and d_month = ? and ? is null"
    params = [
        {"className": "java.lang.Integer", "value": "1995"},
        {"className": "java.lang.String", "value": "May"},
        {"className": "java.lang.Object", "value": None},
    ]
    body = {"sql": sql, "project": server_home.project, "params": params}
    assert data(admin.post(QUERY, json=body))["results"] == [["31"]]
    odd = {**body, "params": [*params[:2], {"className": "java.lang.Long", "value": "x"}]}
    assert error(admin.post(QUERY, json=odd), 400) == "parameter 3 is not a java.lang.Long: 'x'"
    assert "3 ? marks but 2 parameters" in error(admin.post(QUERY, json={**body, "params": params[:2]}), 400)


def test_explain_tells_the_layout_and_the_rejections(admin: httpx.Client, server_home: ServerHome) -> None:
    found = data(admin.post(f"{QUERY}/explain", json={"sql": SSB_Q, "project": server_home.project}))
    assert found["pushdown"] is False and found["contexts"][0]["model"] == server_home.model
    assert f"layout {found['contexts'][0]['layout_id']}" in found["text"] and "SQL:" in found["text"]
    pushed = data(
        admin.post(f"{QUERY}/explain", json={"sql": SSB_Q, "project": server_home.project, "forcedToPushDown": True})
    )
    assert pushed["pushdown"] is True and "PUSHDOWN" in pushed["text"]


def test_history_records_the_signed_in_user(live: LiveServer, server_home: ServerHome) -> None:
    project = server_home.project
    user = _user(live, project, Permission.QUERY)
    marker = f"/* {uuid.uuid4().hex} */"
    with live.client(auth=user) as client:
        data(client.post(QUERY, json={"sql": f"{SSB_Q} {marker}", "project": project}))
        error(client.post(QUERY, json={"sql": f"select nope from ssb.lineorder {marker}", "project": project}), 400)
        found = data(client.get(f"{QUERY}/history_queries", params={"project": project, "sql": marker}))
    assert found["size"] == 2
    failed, succeeded = found["query_histories"]
    assert failed["submitter"] == succeeded["submitter"] == user[0]
    assert succeeded["query_status"] == "SUCCEEDED" and succeeded["realizations"][0]["modelAlias"]
    assert failed["query_status"] == "FAILED" and failed["error_msg"]
    with live.client() as admin:
        page = data(admin.get(f"{QUERY}/history_queries", params={"project": project, "page_size": 1}))
        assert len(page["query_histories"]) == 1 and page["size"] >= 2
        later = data(admin.get(f"{QUERY}/history_queries", params={"project": project, "start_time_from": 2**50}))
        assert later["size"] == 0


def test_tables_and_columns_lists_only_the_project(live: LiveServer, server_home: ServerHome) -> None:
    other = f"p_{uuid.uuid4().hex[:8]}"
    with open_store(server_home.settings.metadata_url, server_home.settings.metadata.table) as store:
        store.create_project(Project(name=other, default_database="OTHER"))
        load_file_table(store, other, server_home.ssb_dir / "PART", SourceType.PARQUET, database="OTHER")
    with live.client() as admin:
        tables = data(admin.get(f"{QUERY}/tables_and_columns", params={"project": server_home.project}))
        names = {(t["table_SCHEM"], t["table_NAME"]) for t in tables}
        assert ("SSB", "LINEORDER") in names and all(schema == "SSB" for schema, _ in names)
        lineorder = next(t for t in tables if t["table_NAME"] == "LINEORDER")
        revenue = next(c for c in lineorder["columns"] if c["column_NAME"] == "LO_REVENUE")
        assert revenue["data_TYPE"] in (4, -5, 3) and revenue["ordinal_POSITION"] >= 1
        mine = data(admin.get(f"{QUERY}/tables_and_columns", params={"project": other}))
        assert [(t["table_SCHEM"], t["table_NAME"]) for t in mine] == [("OTHER", "PART")]
        assert mine[0]["type"] == [] and all(c["type"] == [] for c in mine[0]["columns"])  # in no model


def test_query_permission_boundary_and_isolation(live: LiveServer, server_home: ServerHome) -> None:
    project = server_home.project
    other = f"p_{uuid.uuid4().hex[:8]}"
    with open_store(server_home.settings.metadata_url, server_home.settings.metadata.table) as store:
        store.create_project(Project(name=other, default_database="SSB"))
    allowed = _user(live, project, Permission.QUERY)
    outsider = _user(live, other, Permission.ADMIN)  # everything on B, nothing on A
    nobody = _user(live, project, None)
    body = {"sql": SSB_Q, "project": project}
    with live.client(auth=allowed) as client:
        assert data(client.post(QUERY, json=body))["results"]
        data(client.get(f"{QUERY}/tables_and_columns", params={"project": project}))
        data(client.post(f"{QUERY}/explain", json=body))
        error(client.delete(f"{QUERY}/cache", params={"project": project}), 403)  # a system admin's
    for user in (outsider, nobody):
        with live.client(auth=user) as client:
            error(client.post(QUERY, json=body), 403)
            error(client.post(QUERY, json=body, headers={"Accept": ARROW_TYPE}), 403)
            error(client.post(f"{QUERY}/explain", json=body), 403)
            error(client.get(f"{QUERY}/tables_and_columns", params={"project": project}), 403)
            error(client.get("/kylin/api/tables_and_columns", params={"project": project}), 403)
            error(client.get(f"{QUERY}/history_queries", params={"project": project}), 403)
            error(client.get(f"{QUERY}/cache/stats", params={"project": project}), 403)
    with live.client(auth=None) as anonymous:
        error(anonymous.post(QUERY, json=body), 401)
    with live.client(auth=outsider) as client:  # B has no tables: A's stay invisible
        assert data(client.get(f"{QUERY}/tables_and_columns", params={"project": other})) == []
        error(client.post(QUERY, json={"sql": SSB_Q, "project": other}), 400)


def test_cli_server_mode(live: LiveServer, server_home: ServerHome, monkeypatch: pytest.MonkeyPatch) -> None:
    """`precube --server URL query|history|cache` answer through the API, as they do locally."""
    from precube.cli.app import app

    monkeypatch.setenv("PRECUBE__SERVER__USER", ADMIN[0])
    monkeypatch.setenv("PRECUBE__SERVER__PASSWORD", ADMIN[1])
    runner = CliRunner()
    home = ["--home", str(server_home.settings.home)]
    remote = [*home, "--server", live.url]
    project = ["-p", server_home.project]

    def run(*args: str) -> str:
        result = runner.invoke(app, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    local = json.loads(run(*home, "query", SSB_Q, *project, "-f", "json", "--no-cache"))
    served = json.loads(run(*remote, "query", SSB_Q, *project, "-f", "json", "--no-cache"))
    assert served["rows"] == local["rows"] and served["columns"] == local["columns"]
    assert served["layout_id"] == local["layout_id"] and served["model"] == local["model"]
    assert run(*remote, "query", SSB_Q, *project, "-f", "csv") == run(*home, "query", SSB_Q, *project, "-f", "csv")
    assert "layout" in run(*remote, "query", SSB_Q, *project, "--explain")
    run(*remote, "query", f"{SSB_Q} /* through the server */", *project, "-f", "csv")
    history = json.loads(run(*remote, "history", *project, "--format", "json", "-n", "1"))
    assert [(r["user"], r["sql"].endswith("/* through the server */")) for r in history] == [(ADMIN[0], True)]
    stats = json.loads(run(*remote, "cache", "stats", *project, "-f", "json"))
    assert {"hits", "misses", "entries"} <= stats.keys()
    assert "cleared" in run(*remote, "cache", "clear", *project)
    failed = runner.invoke(app, [*remote, "query", "select nope from ssb.lineorder", *project])
    assert failed.exit_code != 0 and "nope" in str(failed.exception).lower()


def test_serve_with_two_workers_answers_queries(server_home: ServerHome) -> None:
    """`precube serve --workers 2 --pg-port P`: worker processes made from the command's settings answer the API
    and the Postgres wire protocol (each binds its port), and stop cleanly on SIGTERM."""
    import psycopg

    from tests.server.live import ServerProcess, free_port

    pg_port = free_port()
    server = ServerProcess(server_home.settings.home, args=("--workers", "2", "--no-jobs", "--pg-port", str(pg_port)))
    try:
        with server.client() as client:
            for _ in range(4):  # spread over the workers
                answer = data(client.post(QUERY, json={"sql": SSB_Q, "project": server_home.project}))
                assert answer["pushDown"] is False and answer["results"]
        dsn = f"host=127.0.0.1 port={pg_port} dbname={server_home.project} user={ADMIN[0]} password={ADMIN[1]}"
        for _ in range(4):
            with psycopg.connect(dsn, connect_timeout=30) as conn:
                assert [str(v) for _, v in conn.execute(SSB_Q).fetchall()] == [r[1] for r in answer["results"]]
    finally:
        assert server.terminate() == 0


# fields that differ between two servers' answers to one request: who served it, when, how long it took, whether
# the result cache had it and so what it scanned (both servers of this process share the memory cache's store)
_VOLATILE = {
    "queryId", "server", "duration", "durationMs", "request_id", "storageCacheUsed",
    "scanRows", "scanBytes", "totalScanRows", "totalScanBytes", "url",
}  # fmt: skip


def _comparable(response: httpx.Response) -> tuple[int, Any]:
    """The status and the body without what differs between two servers answering the same request."""
    if response.headers.get("content-type", "").startswith(ARROW_TYPE):
        header = json.loads(response.headers[ANSWER_HEADER])
        rows = pa.ipc.open_stream(response.content).read_all().to_pylist()
        return response.status_code, ({k: v for k, v in header.items() if k not in _VOLATILE}, rows)
    body = response.json()
    if isinstance(body.get("data"), dict):
        body["data"] = {k: v for k, v in body["data"].items() if k not in _VOLATILE}
    return response.status_code, {k: v for k, v in body.items() if k not in _VOLATILE}


def test_the_hot_path_answers_as_the_declared_route(live: LiveServer, server_home: ServerHome) -> None:
    """The same requests to the shared server (`POST /query` taken by the hot path) and to one whose app has no
    hot path (FastAPI's declared route answers) get the same status and body: the two cannot drift apart."""
    project = server_home.project
    ok_sql = {"sql": SSB_Q, "project": project}
    asked = [
        ("json", ok_sql, {}),
        ("json", {**ok_sql, "offset": 1, "limit": 2}, {}),
        ("json", {**ok_sql, "forced_to_index": True}, {}),
        ("json", {**ok_sql, "forcedToPushDown": True}, {}),
        ("json", {**ok_sql, "backdoorToggles": {"DEBUG_TOGGLE_DISABLE_QUERY_CACHE": "true"}}, {}),
        ("arrow", ok_sql, {}),
        ("json", {**ok_sql, "sql": f"{SSB_Q} limit ?", "params": [{"className": "java.lang.Long", "value": "2"}]}, {}),
        ("json", {**ok_sql, "params": [{"className": "java.util.List", "value": "[]"}]}, {}),
        ("json", {**ok_sql, "params": [{"className": "java.lang.Long", "value": "1"}]}, {}),  # no ? mark
        ("json", {"sql": "select nope from ssb.lineorder", "project": project}, {}),
        ("json", {"sql": "select 1", "project": "no_such_project"}, {}),
        ("json", {"sql": SSB_Q}, {}),
        ("json", {**ok_sql, "unknown_field": 1}, {}),
        ("json", {**ok_sql, "limit": -1}, {}),
        ("json", ok_sql, {"project": "elsewhere"}),
        ("text", ok_sql, {}),
        ("text", ok_sql, {"project": project}),
        ("raw", b"{not json", {}),
        ("json", {"sql": "select * from read_parquet('/etc/passwd')", "project": project}, {}),
    ]
    querier = _user(live, project, Permission.QUERY)
    stranger = _user(live, project, None)
    settings = live.settings.model_copy(deep=True)
    settings.server.pg_port = settings.server.flight_port = None  # the shared server's wire ports are taken
    statuses = set()
    with live_server(settings, run_jobs=False, hot_path=False) as routed:
        for auth in (ADMIN, querier, stranger):
            for kind, body, params in asked:
                answers = []
                for server in (live, routed):
                    with server.client(auth=auth) as client:
                        if kind == "arrow":
                            answers.append(client.post(QUERY, json=body, headers={"Accept": ARROW_TYPE}))
                        elif kind == "text":
                            content = json.dumps(body)
                            text = {"Content-Type": "text/plain"}
                            answers.append(client.post(QUERY, content=content, params=params, headers=text))
                        elif kind == "raw":
                            raw = {"Content-Type": "application/json"}
                            answers.append(client.post(QUERY, content=body, headers=raw))
                        else:
                            answers.append(client.post(QUERY, json=body, params=params))
                hot, declared = (_comparable(a) for a in answers)
                assert hot == declared, (auth[0], kind, body, params)
                statuses.add(hot[0])
    assert {200, 400, 403} <= statuses  # answers and refusals of both kinds were compared
