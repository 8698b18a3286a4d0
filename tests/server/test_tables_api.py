"""`/kylin/api/tables` on a live server whose `source_roots` is one directory of SSB copies: loads only from
inside it (escapes refused with nothing changed), lists, samples, reloads and unloads as the CLI does, under
the project's permissions."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from precube.auth import Permission
from precube.cli.app import run
from precube.metadata import Model, Project, Table, TableExt, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.ssb.generate import TABLES
from tests.query.conftest import SPEC
from tests.server.conftest import ServerHome, data, error, fingerprint
from tests.server.live import LiveServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

API = "/kylin/api"
PASSWORD = "Passw0rd!"


@dataclass(frozen=True)
class Roots:
    server: LiveServer
    root: Path  # the one source root: a copy of the SSB tables
    outside: Path  # a sibling directory sharing the root's name as a prefix


@pytest.fixture(scope="module")
def roots(server_home: ServerHome, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Roots]:
    base = tmp_path_factory.mktemp("roots")
    root, outside = base / "data", base / "data2"
    for name in TABLES:
        shutil.copytree(server_home.ssb_dir / name, root / name)
    shutil.copytree(server_home.ssb_dir / "DATES", outside / "DATES")
    (root / "link_out").symlink_to(outside / "DATES")  # a link from inside the root to outside it
    (root / "has_link").mkdir()
    (root / "has_link" / "x.parquet").symlink_to(min((outside / "DATES").iterdir()))
    server = server_home.settings.server.model_copy(update={"source_roots": [str(root)]})
    settings = server_home.settings.model_copy(update={"server": server})
    live = LiveServer(settings, run_jobs=False)
    yield Roots(live, root, outside)
    live.stop()


@pytest.fixture
def admin_of(roots: Roots) -> Iterator[httpx.Client]:
    with roots.server.client() as client:
        yield client


@pytest.fixture
def project(roots: Roots, admin_of: httpx.Client) -> Iterator[str]:
    name = f"p_{uuid.uuid4().hex[:8]}"
    data(admin_of.post(f"{API}/projects", json={"name": name, "default_database": "SSB"}))
    yield name
    admin_of.delete(f"{API}/projects/{name}")


def _user(live: LiveServer, project: str, level: Permission | None) -> tuple[str, str]:
    name = f"U_{uuid.uuid4().hex[:8]}".upper()
    live.state.directory.add_user(name, PASSWORD, [])
    if level is not None:
        live.state.directory.grant(project, name, level)
    return name, PASSWORD


def _tables(live: LiveServer, project: str) -> dict[str, Table]:
    with live.state.store.read(project) as tx:
        return {t.identity: t for t in tx.list(Table)}


def _load(client: httpx.Client, project: str, *names: str, root: Path, **extra: object) -> httpx.Response:
    files = [{"path": str(root / n)} for n in names]
    return client.post(f"{API}/tables", json={"project": project, "files": files, **extra})


def test_files_load_as_the_cli_loads_them(roots: Roots, admin_of: httpx.Client, project: str) -> None:
    loaded = data(_load(admin_of, project, "DATES", "CUSTOMER", root=roots.root))
    assert loaded["loaded"] == ["SSB.DATES", "SSB.CUSTOMER"] and loaded["sampling"] == []
    by_api = _tables(roots.server, project)
    cli_project = f"c_{uuid.uuid4().hex[:8]}"
    home = ["--home", str(roots.server.settings.home)]
    assert run([*home, "project", "create", cli_project, "-d", "SSB"]) == 0
    for name in ("DATES", "CUSTOMER"):
        assert run([*home, "table", "load", str(roots.root / name), "-p", cli_project]) == 0
    by_cli = _tables(roots.server, cli_project)
    assert set(by_api) == set(by_cli)
    for identity, table in by_api.items():
        assert [(c.name, c.datatype) for c in table.columns] == [(c.name, c.datatype) for c in by_cli[identity].columns]
        assert table.location == by_cli[identity].location == str((roots.root / table.name).resolve())
    assert run([*home, "project", "delete", cli_project, "--yes"]) == 0


def test_load_refuses_an_existing_table_and_rolls_back_a_partial_load(
    roots: Roots, admin_of: httpx.Client, project: str
) -> None:
    data(_load(admin_of, project, "DATES", root=roots.root))
    before = fingerprint(roots.server.settings)
    error(_load(admin_of, project, "PART", "DATES", root=roots.root), 409)  # PART loads, then DATES exists
    assert set(_tables(roots.server, project)) == {"SSB.DATES"}
    assert fingerprint(roots.server.settings) == before


@pytest.mark.parametrize(
    "path",
    [
        "{root}/../data2/DATES",
        "{root}/DATES/../../data2/DATES",
        "{outside}/DATES",  # /…/data2 shares the prefix of /…/data
        "{root}/link_out",
        "{root}/has_link",
        "/etc/passwd",
        "/etc",
        "file:///etc/passwd",
        "file://{outside}/DATES",
        "http://127.0.0.1:1/x.parquet",
        "s3a://bucket/x",
        "DATES",
        "../data2/DATES",
        "{root}/DATES\0",
        "",
    ],
)
def test_paths_outside_the_roots_are_refused(roots: Roots, admin_of: httpx.Client, project: str, path: str) -> None:
    before = fingerprint(roots.server.settings)
    given = path.format(root=roots.root, outside=roots.outside)
    body = {"project": project, "files": [{"path": given}]}
    msg = error(admin_of.post(f"{API}/tables", json=body), 403)
    assert any(w in msg for w in ("source_roots", "outside", "control characters", "empty"))
    assert fingerprint(roots.server.settings) == before


def test_without_source_roots_file_loads_are_refused(live: LiveServer, server_home: ServerHome) -> None:
    """The shared server has no `source_roots`: a file load names the setting, even for a path it could read."""
    before = fingerprint(live.settings)
    with live.client() as client:
        body = {"project": server_home.project, "files": [{"path": str(server_home.ssb_dir / "DATES")}]}
        assert "source_roots" in error(client.post(f"{API}/tables", json=body), 403)
    assert fingerprint(live.settings) == before


@pytest.mark.parametrize(
    "body",
    [
        {"tables": ["../x.y"]},
        {"tables": ["SSB"]},
        {"tables": ["a.b.c"]},
        {"tables": ["`x`.y"]},
        {"tables": ["x'y.z"]},
        {"tables": ['x".z']},
        {"tables": ["SSB.T\0"]},
        {"tables": "SSB.DATES"},
        {"tables": [5]},
        {"databases": ["a/b"]},
        {"files": [{"path": "{root}/DATES", "name": "../x"}]},
        {"files": [{"path": "{root}/DATES", "database": "a b"}]},
        {"files": [{"path": "{root}/DATES", "format": "orc"}]},
        {"files": [{"path": "{root}/DATES", "delimiter": ";;"}]},
        {"files": [{"path": "{root}/DATES", "format": "csv", "delimiter": "\n"}]},
        {"files": [{"path": "{root}/DATES", "format": "csv", "columns": [{"name": "a;b", "type": "int"}]}]},
        {"files": [{"path": "{root}/DATES", "format": "csv", "columns": [{"name": "A", "type": "blob"}]}]},
        {"files": [{"path": "{root}/DATES", "header": False}]},  # CSV options on Parquet files
        {"files": [{"path": "{root}/DATES", "surprise": 1}]},
        {"data_source_type": 1, "tables": ["SSB.X"]},
        {"sampling_rows": -5, "tables": ["SSB.X"]},
        {"unknown": True},
        {},
    ],
)
def test_hostile_load_bodies_are_4xx_and_change_nothing(
    roots: Roots, admin_of: httpx.Client, project: str, body: dict[str, Any]
) -> None:
    before = fingerprint(roots.server.settings)
    files = body.get("files")
    given = {**body, "files": [{**f, "path": f["path"].format(root=roots.root)} for f in files]} if files else body
    response = admin_of.post(f"{API}/tables", json={"project": project, **given})
    assert 400 <= response.status_code < 500
    error(response, response.status_code)
    assert fingerprint(roots.server.settings) == before
    assert _tables(roots.server, project) == {}


def test_load_needs_management(roots: Roots, project: str) -> None:
    live = roots.server
    users = [_user(live, project, level) for level in (None, Permission.QUERY, Permission.OPERATION)]
    before = fingerprint(live.settings)
    for user in users:
        with live.client(auth=user) as client:
            error(_load(client, project, "DATES", root=roots.root), 403)
    assert fingerprint(live.settings) == before
    with live.client(auth=_user(live, project, Permission.MANAGEMENT)) as client:
        assert data(_load(client, project, "DATES", root=roots.root))["loaded"] == ["SSB.DATES"]


def test_list_filters_and_hides_other_projects(roots: Roots, admin_of: httpx.Client, project: str) -> None:
    live = roots.server
    data(_load(admin_of, project, "DATES", "PART", "SUPPLIER", root=roots.root))
    reader = _user(live, project, Permission.QUERY)
    with live.client(auth=reader) as client:
        every = data(client.get(f"{API}/tables", params={"project": project, "page_size": 100}))
        assert [t["name"] for t in every["value"]] == ["DATES", "PART", "SUPPLIER"] and every["total_size"] == 3
        stored = _tables(live, project)
        for t in every["value"]:
            assert {k: v for k, v in t.items() if k != "ext"} == stored[f"SSB.{t['name']}"].model_dump(mode="json")
        exact = data(client.get(f"{API}/tables", params={"project": project, "table": "PART"}))
        assert [t["name"] for t in exact["value"]] == ["PART"]
        fuzzy = data(client.get(f"{API}/tables", params={"project": project, "table": "p", "is_fuzzy": True}))
        assert [t["name"] for t in fuzzy["value"]] == ["PART", "SUPPLIER"]
        assert data(client.get(f"{API}/tables", params={"project": project, "database": "other"}))["value"] == []
        paged = data(client.get(f"{API}/tables", params={"project": project, "page_offset": 1, "page_size": 2}))
        assert [t["name"] for t in paged["value"]] == ["SUPPLIER"]
        error(client.get(f"{API}/tables", params={"project": "ssb"}), 403)
        error(client.get(f"{API}/tables"), 400)
    with live.client(auth=_user(live, "ssb", Permission.ADMIN)) as stranger:
        error(stranger.get(f"{API}/tables", params={"project": project}), 403)


def test_sampling_runs_on_spark_and_list_shows_the_stats(roots: Roots, admin_of: httpx.Client, project: str) -> None:
    data(_load(admin_of, project, "SUPPLIER", root=roots.root))
    operator = _user(roots.server, project, Permission.OPERATION)
    before = fingerprint(roots.server.settings)
    body = {"project": project, "qualified_table_name": "SSB.SUPPLIER"}
    with roots.server.client(auth=operator) as client:
        error(client.post(f"{API}/tables/sampling_jobs", json=body), 403)
    assert fingerprint(roots.server.settings) == before
    stats = data(admin_of.post(f"{API}/tables/sampling_jobs", json=body))
    rows = pads.dataset(str(roots.root / "SUPPLIER")).count_rows()  # the oracle: the files' own count
    assert stats["total_rows"] == rows and stats["table"] == "SSB.SUPPLIER"
    with roots.server.state.store.read(project) as tx:
        ext = tx.require(TableExt, "SSB.SUPPLIER")
    assert ext.total_rows == rows
    listed = data(admin_of.get(f"{API}/tables", params={"project": project, "table": "SUPPLIER"}))["value"][0]
    assert listed["ext"]["total_rows"] == rows and len(listed["ext"]["sample_rows"]) == min(rows, 10)
    bare = data(admin_of.get(f"{API}/tables", params={"project": project, "ext": False}))["value"][0]
    assert "ext" not in bare
    error(admin_of.post(f"{API}/tables/sampling_jobs", json={**body, "qualified_table_name": "SSB.NOPE"}), 404)
    error(admin_of.post(f"{API}/tables/sampling_jobs", json={**body, "rows": 0}), 400)


def test_load_with_sampling(roots: Roots, admin_of: httpx.Client, project: str) -> None:
    done = data(_load(admin_of, project, "DATES", root=roots.root, need_sampling=True, sampling_rows=100))
    rows = pads.dataset(str(roots.root / "DATES")).count_rows()
    assert [s["table"] for s in done["sampling"]] == ["SSB.DATES"]
    # stats over a sample of about sampling_rows (Spark samples by fraction), the count exact
    assert done["sampling"][0]["total_rows"] == rows and 0 < done["sampling"][0]["sampled_rows"] < rows


def test_pre_reload_shows_the_diff_and_reload_saves_it(roots: Roots, admin_of: httpx.Client, project: str) -> None:
    live = roots.server
    copy = roots.root / f"dates_{uuid.uuid4().hex[:6]}"
    shutil.copytree(roots.root / "DATES", copy)
    body = {"project": project, "files": [{"path": str(copy), "name": "D"}]}
    data(admin_of.post(f"{API}/tables", json=body))
    old = pq.read_table(copy)
    for f in copy.iterdir():
        f.unlink()
    changed = old.drop_columns(["D_WEEKDAYFL"]).append_column("D_EXTRA", pa.array([1] * old.num_rows, pa.int64()))
    pq.write_table(changed, copy / "part-0.parquet")
    manager = _user(live, project, Permission.OPERATION)
    before = fingerprint(live.settings)
    preview = data(admin_of.get(f"{API}/tables/pre_reload", params={"project": project, "table": "SSB.D"}))
    assert fingerprint(live.settings) == before
    assert (preview["add_column_count"], preview["remove_column_count"]) == (1, 1)
    assert preview["tables"][0]["added"] == ["D_EXTRA"] and preview["tables"][0]["removed"] == ["D_WEEKDAYFL"]
    assert preview["broken_model_count"] == 0
    with live.client(auth=manager) as client:
        error(client.get(f"{API}/tables/pre_reload", params={"project": project, "table": "SSB.D"}), 403)
        error(client.post(f"{API}/tables/reload", json={"project": project, "table": "SSB.D"}), 403)
    assert fingerprint(live.settings) == before
    done = data(admin_of.post(f"{API}/tables/reload", json={"project": project, "table": "SSB.D"}))
    assert done["add_column_count"] == 1
    columns = [c.name for c in _tables(live, project)["SSB.D"].columns]
    assert columns == [c.upper() for c in changed.column_names]
    again = data(admin_of.get(f"{API}/tables/pre_reload", params={"project": project, "table": "SSB.D"}))
    assert again["tables"][0]["describe"] == "no schema change"
    reload = f"{API}/tables/reload"
    error(admin_of.post(reload, json={"project": project, "table": "SSB.NOPE"}), 404)
    for bad in ({"table": "../x"}, {"table": "SSB.D", "need_building": True}, {"table": "SSB.D", "x": 1}):
        error(admin_of.post(reload, json={"project": project, **bad}), 400)


def test_unload_previews_refuses_without_cascade_and_cascades(
    roots: Roots, admin_of: httpx.Client, project: str
) -> None:
    live = roots.server
    data(_load(admin_of, project, *TABLES, root=roots.root))
    with open_store(live.settings.metadata_url, live.settings.metadata.table) as store:
        create_model(store, project, parse_spec(SPEC))
    alias = SPEC["alias"]
    preview = data(admin_of.get(f"{API}/tables/SSB/DATES/prepare_unload", params={"project": project}))
    assert preview == {"table": "SSB.DATES", "has_model": True, "models": [{"model": alias, "segments": 0}]}
    operator = _user(live, project, Permission.OPERATION)
    before = fingerprint(live.settings)
    assert "cascade" in error(admin_of.delete(f"{API}/tables/SSB/DATES", params={"project": project}), 400)
    with live.client(auth=operator) as client:
        error(client.delete(f"{API}/tables/SSB/DATES", params={"project": project, "cascade": True}), 403)
        error(client.get(f"{API}/tables/SSB/DATES/prepare_unload", params={"project": project}), 403)
    assert fingerprint(live.settings) == before
    done = data(admin_of.delete(f"{API}/tables/SSB/DATES", params={"project": project, "cascade": True}))
    assert done == {"table": "SSB.DATES", "deleted_models": [alias]}
    with live.state.store.read(project) as tx:
        assert tx.list(Model) == [] and tx.get(Table, "SSB.DATES") is None
    plain = data(admin_of.delete(f"{API}/tables/SSB/PART", params={"project": project}))
    assert plain == {"table": "SSB.PART", "deleted_models": []}
    assert set(_tables(live, project)) == {"SSB.LINEORDER", "SSB.CUSTOMER", "SSB.SUPPLIER"}
    error(admin_of.delete(f"{API}/tables/SSB/PART", params={"project": project}), 404)
    for path in ("SS%27B/X", "SSB/X%00", "SSB/X.Y", "SSB/%22X%22"):
        error(admin_of.delete(f"{API}/tables/{path}", params={"project": project}), 400)


def test_the_shared_model_blocks_an_unload_and_its_preview_changes_nothing(
    live: LiveServer, server_home: ServerHome
) -> None:
    before = fingerprint(live.settings)
    with live.client() as client:
        params = {"project": server_home.project}
        preview = data(client.get(f"{API}/tables/SSB/LINEORDER/prepare_unload", params=params))
        assert preview["models"] == [{"model": server_home.model, "segments": 2}]
        error(client.delete(f"{API}/tables/SSB/LINEORDER", params=params), 400)
    assert fingerprint(live.settings) == before
    assert isinstance(live.state.store.get_project(server_home.project), Project)


def test_catalog_tables_and_databases_load_by_name(
    spark: SparkSession, roots: Roots, admin_of: httpx.Client, project: str
) -> None:
    db = f"api_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    frame = spark.createDataFrame([(1, "a"), (2, None)], "id INT, label STRING")
    frame.write.mode("overwrite").saveAsTable(f"{db}.items")
    frame.write.mode("overwrite").saveAsTable(f"{db}.more")
    body = {"project": project, "tables": [f"{db}.items"], "need_sampling": True}
    done = data(admin_of.post(f"{API}/tables", json=body))
    assert done["loaded"] == [f"{db.upper()}.ITEMS"]
    assert done["sampling"][0]["total_rows"] == frame.count()
    table = _tables(roots.server, project)[f"{db.upper()}.ITEMS"]
    assert [c.name for c in table.columns] == [f.name.upper() for f in spark.table(f"{db}.items").schema.fields]
    error(admin_of.post(f"{API}/tables", json={"project": project, "tables": [f"{db}.nope"]}), 400)
    rest = data(admin_of.post(f"{API}/tables", json={"project": project, "databases": [db.upper()], "tables": []}))
    assert rest["loaded"] == [f"{db.upper()}.MORE"]  # a whole database: the tables not loaded yet
    error(admin_of.post(f"{API}/tables", json={"project": project, "databases": ["no_such_db"]}), 400)


def test_csv_files_load_with_their_options(roots: Roots, admin_of: httpx.Client, project: str) -> None:
    folder = roots.root / f"csv_{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    (folder / "a.csv").write_text("1;x\n2;\n3;'z;z'\n", encoding="utf-8")
    spec = {
        "path": str(folder),
        "name": "SEMI",
        "header": False,
        "delimiter": ";",
        "quote": "'",
        "columns": [{"name": "id", "type": "bigint"}, {"name": "label", "type": "varchar(10)"}],
    }
    done = data(admin_of.post(f"{API}/tables", json={"project": project, "files": [spec], "need_sampling": True}))
    assert done["loaded"] == ["SSB.SEMI"] and done["sampling"][0]["total_rows"] == 3
    table = _tables(roots.server, project)["SSB.SEMI"]
    assert [(c.name, c.datatype) for c in table.columns] == [("ID", "bigint"), ("LABEL", "varchar(10)")]
    assert table.source_properties["delimiter"] == ";" and table.source_properties["quote"] == "'"
    values = sorted(r[1] or "" for r in done["sampling"][0]["sample_rows"])
    assert values == ["", "x", "z;z"]
