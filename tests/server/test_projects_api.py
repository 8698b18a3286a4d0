"""`/kylin/api/projects` on a live server: list by visibility, create and delete by system admins only, the
project's settings by its admins; hostile input refused with nothing changed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from precube.auth import Permission
from precube.jobs.lease import Lease
from precube.jobs.lifecycle import FIRST_DAY_OF_WEEK
from precube.metadata import Job, JobState, JobType, NotFoundError, SourceType, open_store
from precube.metadata.job import new_job_id
from precube.query.errors import NoLayoutError
from precube.query.session import PUSHDOWN_PROPERTY
from precube.server.envelope import MAX_PAGE_OFFSET, MAX_PAGE_SIZE
from precube.sources.tables import load_file_table
from tests.server.conftest import ServerHome, data, error, fingerprint
from tests.server.live import LiveServer, live_server

API = "/kylin/api"
PASSWORD = "Passw0rd!"


def _name(prefix: str = "p") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _user(live: LiveServer, grants: dict[str, Permission]) -> tuple[str, str]:
    name = _name("U").upper()
    live.state.directory.add_user(name, PASSWORD, [])
    for project, level in grants.items():
        live.state.directory.grant(project, name, level)
    return name, PASSWORD


def _create(admin: httpx.Client, name: str, **extra: object) -> dict[str, object]:
    found: dict[str, object] = data(admin.post(f"{API}/projects", json={"name": name, **extra}))
    return found


@pytest.fixture
def project(admin: httpx.Client) -> Iterator[str]:
    name = _name()
    _create(admin, name, description="mine")
    yield name
    admin.delete(f"{API}/projects/{name}")


def test_create_records_the_project_and_makes_the_creator_its_admin(live: LiveServer, admin: httpx.Client) -> None:
    name = _name()
    made = _create(admin, name, description="sales", override_kylin_properties={PUSHDOWN_PROPERTY: "false"})
    assert made["name"] == name and made["permission"] == "ADMIN"
    stored = live.state.store.get_project(name)
    assert (stored.description, stored.owner) == ("sales", "ADMIN")
    assert stored.override_kylin_properties == {PUSHDOWN_PROPERTY: "false"}
    assert any(e.sid == "ADMIN" and e.permission is Permission.ADMIN for e in live.state.directory.acl(name).entries)
    assert "already exists" in error(admin.post(f"{API}/projects", json={"name": name}), 409)


def test_only_system_admins_create_and_delete(live: LiveServer, project: str) -> None:
    owner = _user(live, {project: Permission.ADMIN})  # a project admin is not a system admin
    before = fingerprint(live.settings)
    with live.client(auth=owner) as client:
        error(client.post(f"{API}/projects", json={"name": _name()}), 403)
        error(client.delete(f"{API}/projects/{project}"), 403)
    with live.client(auth=None) as anonymous:
        error(anonymous.post(f"{API}/projects", json={"name": _name()}), 401)
        error(anonymous.get(f"{API}/projects"), 401)
    assert fingerprint(live.settings) == before


@pytest.mark.parametrize(
    "body",
    [
        {"name": "../etc"},
        {"name": "a'b"},
        {"name": 'a"b'},
        {"name": "x\0y"},
        {"name": "_global"},
        {"name": ""},
        {"name": 5},
        {"name": ["x"]},
        {"name": "ok_name", "unknown": 1},
        {"name": "ok_name", "override_kylin_properties": {"bad key": "x"}},
        {"name": "ok_name", "override_kylin_properties": {PUSHDOWN_PROPERTY: "maybe"}},
        {"name": "ok_name", "override_kylin_properties": {"kylin.x": 3}},
        {"name": "ok_name", "default_database": "a.b"},
        {"name": "ok_name", "description": "x\0"},
        {"description": "no name"},
        [],
    ],
)
def test_hostile_create_bodies_are_refused_and_change_nothing(
    live: LiveServer, admin: httpx.Client, body: object
) -> None:
    before = fingerprint(live.settings)
    error(admin.post(f"{API}/projects", json=body), 400)
    assert fingerprint(live.settings) == before


def test_malformed_json_is_a_400(live: LiveServer, admin: httpx.Client) -> None:
    before = fingerprint(live.settings)
    headers = {"Content-Type": "application/json"}
    error(admin.post(f"{API}/projects", content=b'{"name": "x"', headers=headers), 400)
    error(admin.post(f"{API}/projects", content=b"\xff\xfe", headers=headers), 400)
    assert fingerprint(live.settings) == before


def test_list_shows_only_the_projects_the_caller_holds(
    live: LiveServer, admin: httpx.Client, server_home: ServerHome, project: str
) -> None:
    everything = data(admin.get(f"{API}/projects", params={"page_size": 1000}))
    names = [p["name"] for p in everything["value"]]
    assert {project, server_home.project} <= set(names)
    assert everything["total_size"] == len(live.state.store.list_projects())
    member = _user(live, {project: Permission.QUERY})
    stranger = _user(live, {})
    with live.client(auth=member) as client:
        seen = data(client.get(f"{API}/projects"))
        assert [(p["name"], p["permission"]) for p in seen["value"]] == [(project, "QUERY")]
        assert data(client.get(f"{API}/projects", params={"project": server_home.project}))["value"] == []
    with live.client(auth=stranger) as client:
        assert data(client.get(f"{API}/projects"))["value"] == []
        assert data(client.get(f"{API}/projects", params={"project": project, "exact": True}))["total_size"] == 0


def test_list_filters_by_name_and_pages(admin: httpx.Client, project: str) -> None:
    fuzzy = data(admin.get(f"{API}/projects", params={"project": project[2:].upper()}))
    assert [p["name"] for p in fuzzy["value"]] == [project]
    assert data(admin.get(f"{API}/projects", params={"project": project[2:], "exact": True}))["value"] == []
    exact = data(admin.get(f"{API}/projects", params={"project": project, "exact": True}))
    assert [p["name"] for p in exact["value"]] == [project]
    first = data(admin.get(f"{API}/projects", params={"page_offset": 0, "page_size": 1}))
    second = data(admin.get(f"{API}/projects", params={"page_offset": 1, "page_size": 1}))
    assert len(first["value"]) == 1 and first["total_size"] >= 2 and first["value"] != second["value"]
    for bad in ({"page_size": 0}, {"page_offset": -1}, {"page_size": "x"}, {"project": "../x"}):
        error(admin.get(f"{API}/projects", params=bad), 400)
    everything = data(admin.get(f"{API}/projects", params={"page_size": 2**31 - 2}))  # kylinpy's "all": clamped
    assert everything["limit"] == MAX_PAGE_SIZE and len(everything["value"]) == everything["total_size"] >= 2
    beyond = data(admin.get(f"{API}/projects", params={"page_offset": 10**30, "page_size": 10**30}))
    assert beyond["value"] == [] and (beyond["offset"], beyond["limit"]) == (MAX_PAGE_OFFSET, MAX_PAGE_SIZE)


def test_delete_drops_metadata_acl_and_warehouse_data(
    live: LiveServer, admin: httpx.Client, server_home: ServerHome
) -> None:
    name = _name()
    _create(admin, name)
    with open_store(live.settings.metadata_url, live.settings.metadata.table) as store:
        load_file_table(store, name, server_home.ssb_dir / "DATES", SourceType.PARQUET)
    data_dir = Path(live.settings.warehouse_root) / name
    (data_dir / "m").mkdir(parents=True)
    (data_dir / "m" / "f.parquet").write_bytes(b"1234")
    dropped = data(admin.delete(f"{API}/projects/{name}"))
    assert dropped["project"] == name and dropped["documents"] >= 2 and dropped["data_bytes"] == 4
    with pytest.raises(NotFoundError):
        live.state.store.get_project(name)
    assert not data_dir.exists()
    assert live.state.directory.acl(name).entries == []
    assert "does not exist" in error(admin.delete(f"{API}/projects/{name}"), 404)
    error(admin.delete(f"{API}/projects/a%27b"), 400)


def test_segment_config_needs_the_project_admin(live: LiveServer, project: str) -> None:
    manager = _user(live, {project: Permission.MANAGEMENT})
    owner = _user(live, {project: Permission.ADMIN})
    body = {
        "auto_merge_enabled": True,
        "auto_merge_time_ranges": ["DAY", "WEEK"],
        "retention_range": {"retention_range_number": 3, "retention_range_enabled": True},
    }
    before = fingerprint(live.settings)
    with live.client(auth=manager) as client:
        error(client.put(f"{API}/projects/{project}/segment_config", json=body), 403)
        read = data(client.get(f"{API}/projects/{project}/segment_config"))  # members read it
        assert read["auto_merge_enabled"] is False
    assert fingerprint(live.settings) == before
    with live.client(auth=owner) as client:
        done = data(client.put(f"{API}/projects/{project}/segment_config", json=body))
    stored = live.state.store.get_project(project).segment_config
    assert done == stored.model_dump(mode="json")
    assert stored.auto_merge_enabled and [r.value for r in stored.auto_merge_time_ranges] == ["DAY", "WEEK"]
    assert stored.retention_range.retention_range_number == 3 and stored.retention_range.retention_range_enabled
    assert stored.retention_range.retention_range_type.value == "MONTH"  # not given: kept


@pytest.mark.parametrize(
    "body",
    [
        {"auto_merge_time_ranges": ["FORTNIGHT"]},
        {"auto_merge_time_ranges": []},
        {"auto_merge_enabled": "perhaps"},
        {"volatile_range": {"volatile_range_number": -1}},
        {"volatile_range": {"volatile_range_unit": "DAY"}},
        {"auto_merge_thresholds_ms": [0]},
        {"project": "ssb"},
        {"nonsense": True},
    ],
)
def test_bad_segment_configs_change_nothing(live: LiveServer, admin: httpx.Client, project: str, body: object) -> None:
    before = fingerprint(live.settings)
    error(admin.put(f"{API}/projects/{project}/segment_config", json=body), 400)
    assert fingerprint(live.settings) == before


def test_push_down_config_is_what_the_query_session_reads(
    live: LiveServer, admin: httpx.Client, server_home: ServerHome, project: str
) -> None:
    with open_store(live.settings.metadata_url, live.settings.metadata.table) as store:
        load_file_table(store, project, server_home.ssb_dir / "DATES", SourceType.PARQUET, database="SSB")
    sql = "select count(*) from SSB.DATES"
    session = live.state.queries.sessions.get(project)
    assert session.sql(sql).rows  # no layout: answered by pushdown
    off = data(admin.put(f"{API}/projects/{project}/push_down_config", json={"push_down_enabled": False}))
    assert off == {"project": project, "push_down_enabled": False}
    assert live.state.store.get_project(project).override_kylin_properties[PUSHDOWN_PROPERTY] == "false"
    with pytest.raises(NoLayoutError, match="pushdown-enabled is false"):
        live.state.queries.sessions.get(project).sql(sql)
    data(admin.put(f"{API}/projects/{project}/push_down_config", json={"push_down_enabled": True}))
    assert live.state.queries.sessions.get(project).sql(sql).rows
    error(admin.put(f"{API}/projects/{project}/push_down_config", json={"push_down_enabled": "x"}), 400)
    error(admin.put(f"{API}/projects/{project}/push_down_config", json={}), 400)


def test_project_config_reads_and_overrides_properties(live: LiveServer, admin: httpx.Client, project: str) -> None:
    config = data(admin.get(f"{API}/projects/{project}/project_config"))
    assert config["project"] == project and config["push_down_enabled"] is True
    assert config["first_day_of_week"] == "monday" and config["description"] == "mine"
    props = {FIRST_DAY_OF_WEEK: "Sunday", "kylin.custom.thing": "v"}
    done = data(admin.put(f"{API}/projects/{project}/project_config", json={"override_kylin_properties": props}))
    assert done["first_day_of_week"] == "sunday"
    stored = live.state.store.get_project(project)
    assert stored.override_kylin_properties == {FIRST_DAY_OF_WEEK: "sunday", "kylin.custom.thing": "v"}
    removed = {"override_kylin_properties": {"kylin.custom.thing": None}}
    assert (
        "kylin.custom.thing"
        not in data(admin.put(f"{API}/projects/{project}/config", json=removed))["override_kylin_properties"]
    )
    before = fingerprint(live.settings)
    for bad in (
        {"override_kylin_properties": {FIRST_DAY_OF_WEEK: "friday"}},
        {"override_kylin_properties": {"../x": "1"}},
        {"override_kylin_properties": {"kylin.x": "a\nb"}},
        {"override_kylin_properties": "x"},
        {"override_kylin_properties": {}, "extra": 1},
    ):
        error(admin.put(f"{API}/projects/{project}/project_config", json=bad), 400)
    assert fingerprint(live.settings) == before


def test_project_settings_are_invisible_to_other_projects_users(live: LiveServer, project: str) -> None:
    outsider = _user(live, {"ssb": Permission.ADMIN})
    with live.client(auth=outsider) as client:
        for path in ("segment_config", "project_config"):
            error(client.get(f"{API}/projects/{project}/{path}"), 403)
        error(client.put(f"{API}/projects/{project}/push_down_config", json={"push_down_enabled": False}), 403)
    missing = _name()
    with live.client() as admin:
        error(admin.get(f"{API}/projects/{missing}/project_config"), 404)


def test_project_type_matches_the_store(live: LiveServer, admin: httpx.Client, project: str) -> None:
    listed = data(admin.get(f"{API}/projects", params={"project": project, "exact": True}))["value"][0]
    stored = live.state.store.get_project(project)
    assert {k: v for k, v in listed.items() if k != "permission"} == stored.model_dump(mode="json")


def test_a_project_with_a_running_job_is_not_deleted(server_home: ServerHome) -> None:
    """On a server that runs no jobs: the refusal is a 409, nothing changes. The job's runner is this (live) test
    process, holding the project's lease: no server of the session takes the job over meanwhile."""
    with live_server(server_home.settings, run_jobs=False) as quiet, quiet.client() as admin:
        name = _name()
        _create(admin, name)
        assert Lease(quiet.state.store, name).acquire()
        job = Job(uuid=new_job_id(None), job_type=JobType.TABLE_SAMPLING, target_table="SSB.DATES")
        job.state = JobState.RUNNING
        with quiet.state.store.transaction(name, "test") as tx:
            tx.create(job)
        before = fingerprint(quiet.settings)
        assert "running jobs" in error(admin.delete(f"{API}/projects/{name}"), 409)
        assert fingerprint(quiet.settings) == before
        with quiet.state.store.transaction(name, "test") as tx:
            tx.delete(tx.require(Job, job.uuid))
        data(admin.delete(f"{API}/projects/{name}"))
