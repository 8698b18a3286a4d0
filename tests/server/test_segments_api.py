"""`/kylin/api/models/{model}/segments` on the shared live server, on a project and model of this module's
own: builds through the API run by the server's job service and answer like the oracle; refresh, merge,
delete with its preview; 409 on a concurrent build; permissions; hostile input changes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from precube.auth import Permission
from precube.jobs.removal import preview_segment_removal
from tests.server.conftest import ServerHome, data, error, fingerprint
from tests.server.live import LiveServer
from tests.server.tiny import MODEL, QUERY, build, make_project, ms, oracle_rows, rows, wait_job

pytestmark = pytest.mark.spark
SEGMENTS = f"/kylin/api/models/{MODEL}/segments"


@dataclass(frozen=True)
class Tiny:
    project: str
    first_job: str
    second_job: str
    conflict: httpx.Response


@pytest.fixture(scope="module")
def tiny(live: LiveServer, server_home: ServerHome) -> Iterator[Tiny]:
    """Two segments built through the API: [1992, 1993) given in full, then one ending 1994-01-01 whose
    start defaults to the last segment's end; the same range again while the second runs is refused."""
    project = f"p_{uuid.uuid4().hex[:8]}"
    make_project(live.settings, server_home.ssb_dir, project)
    with live.client() as admin:
        first = build(admin, project, "1992-01-01", "1993-01-01")
        wait_job(admin, project, first)
        second = build(admin, project, None, "1994-01-01")
        conflict = admin.post(SEGMENTS, json={"project": project, "start": ms("1993-06-01"), "end": ms("1994-01-01")})
        wait_job(admin, project, second)
    yield Tiny(project, first, second, conflict)


def test_builds_run_by_the_server_answer_like_the_oracle(live: LiveServer, server_home: ServerHome, tiny: Tiny) -> None:
    with live.client() as admin:
        second = data(admin.get(f"/kylin/api/jobs/{tiny.second_job}/detail", params={"project": tiny.project}))
        listed = data(admin.get(SEGMENTS, params={"project": tiny.project, "sort_by": "start_time", "reverse": False}))
    assert second["job_name"] == "INC_BUILD" and second["data_range_start"] == int(ms("1993-01-01"))
    assert [s["step_status"] for s in second["steps"]] == ["FINISHED"] * len(second["steps"])
    segments = listed["value"]
    assert listed["total_size"] == 2
    assert [(s["start_time"], s["end_time"]) for s in segments] == [
        (ms("1992-01-01"), ms("1993-01-01")),
        (ms("1993-01-01"), ms("1994-01-01")),
    ]
    assert all(s["status_to_display"] == "ONLINE" and s["index_count"] == s["index_count_total"] > 0 for s in segments)
    assert all(s["source_count"] > 0 and s["bytes_size"] > 0 and s["last_build_time"] > 0 for s in segments)
    answer = live.state.queries.sessions.get(tiny.project).sql(QUERY.format(where=""), pushdown=False)
    assert rows(answer.table) == oracle_rows(server_home.ssb_dir, "1994-01-01")


def test_a_concurrent_build_of_the_same_range_is_409(tiny: Tiny) -> None:
    assert "already covers part of its range" in error(tiny.conflict, 409)


def test_check_lists_the_overlapping_segments(live: LiveServer, tiny: Tiny) -> None:
    with live.client() as admin:
        found = data(
            admin.post(
                f"{SEGMENTS}/check", json={"project": tiny.project, "start": ms("1992-06-01"), "end": ms("1993-02-01")}
            )
        )
        none = data(
            admin.post(
                f"{SEGMENTS}/check", json={"project": tiny.project, "start": ms("1995-01-01"), "end": ms("1996-01-01")}
            )
        )
    assert [s["start"] for s in found["segments_overlap"]] == [ms("1992-01-01"), ms("1993-01-01")]
    assert none["segments_overlap"] == []


def test_refresh_merge_and_delete_with_its_preview(live: LiveServer, server_home: ServerHome, tiny: Tiny) -> None:
    def listed(admin: httpx.Client) -> list[dict]:
        return data(admin.get(SEGMENTS, params={"project": tiny.project, "sort_by": "start_time", "reverse": False}))[
            "value"
        ]

    with live.client() as admin:
        before = listed(admin)
        [refresh] = data(
            admin.put(SEGMENTS, json={"project": tiny.project, "type": "REFRESH", "names": [before[0]["name"]]})
        )["jobs"]
        assert refresh["job_name"] == "INDEX_REFRESH"
        wait_job(admin, tiny.project, refresh["job_id"])
        refreshed = listed(admin)
        assert refreshed[0]["id"] != before[0]["id"] and refreshed[0]["start_time"] == before[0]["start_time"]
        ids = [s["id"] for s in refreshed]
        [merge] = data(admin.put(SEGMENTS, json={"project": tiny.project, "type": "MERGE", "ids": ids}))["jobs"]
        wait_job(admin, tiny.project, merge["job_id"])
        [merged] = listed(admin)
        assert (merged["start_time"], merged["end_time"]) == (ms("1992-01-01"), ms("1994-01-01"))
        answer = live.state.queries.sessions.get(tiny.project).sql(QUERY.format(where=""), pushdown=False)
        assert rows(answer.table) == oracle_rows(server_home.ssb_dir, "1994-01-01")

        expected = preview_segment_removal(
            live.state.store, live.settings.warehouse_root, tiny.project, MODEL, [merged["id"]]
        ).describe()
        unchanged = fingerprint(live.settings)
        params = {"project": tiny.project, "purge": "false", "ids": merged["id"]}
        preview = data(admin.delete(SEGMENTS, params={**params, "dry_run": "true"}))
        assert preview["preview"] == expected and preview["dry_run"] is True
        assert "1 segment" in expected and f"of model {MODEL}" in expected
        assert fingerprint(live.settings) == unchanged
        done = data(admin.delete(SEGMENTS, params=params))
        assert done["preview"] == expected and [(s["id"], s["name"], s["start_time"]) for s in done["segments"]] == [
            (merged["id"], merged["name"], merged["start_time"])
        ]
        assert listed(admin) == []
        # rebuild what the other tests of this module may read after
        wait_job(admin, tiny.project, build(admin, tiny.project, "1992-01-01", "1994-01-01"))


def test_query_can_list_but_not_build_and_operation_can(live: LiveServer, tiny: Tiny) -> None:
    directory = live.state.directory
    reader, operator = f"r_{uuid.uuid4().hex[:6]}", f"o_{uuid.uuid4().hex[:6]}"
    for name, level in ((reader, Permission.QUERY), (operator, Permission.OPERATION)):
        directory.add_user(name, "Passw0rd!", [])
        directory.grant(tiny.project, name, level)
    later = {"project": tiny.project, "start": ms("1994-01-01"), "end": ms("1995-01-01")}
    unchanged = fingerprint(live.settings)
    with live.client((reader, "Passw0rd!")) as client:
        assert data(client.get(SEGMENTS, params={"project": tiny.project}))["total_size"] >= 1
        error(client.post(SEGMENTS, json=later), 403)
        error(client.put(SEGMENTS, json={"project": tiny.project, "names": ["x"]}), 403)
        error(client.delete(SEGMENTS, params={"project": tiny.project, "purge": "true"}), 403)
        error(client.post(f"/kylin/api/models/{MODEL}/indexes", json={"project": tiny.project}), 403)
    assert fingerprint(live.settings) == unchanged
    with live.client((operator, "Passw0rd!")) as client:  # at OPERATION: allowed (a dry run changes nothing)
        preview = data(client.delete(SEGMENTS, params={"project": tiny.project, "purge": "true", "dry_run": "true"}))
        assert preview["dry_run"] is True and preview["segments"]
        # every layout is built: the index build is refused for that, not for permission
        assert "every layout" in error(
            client.post(f"/kylin/api/models/{MODEL}/indexes", json={"project": tiny.project}), 400
        )


def test_a_user_of_another_project_sees_nothing(live: LiveServer, server_home: ServerHome, tiny: Tiny) -> None:
    other = f"u_{uuid.uuid4().hex[:6]}"
    live.state.directory.add_user(other, "Passw0rd!", [])
    live.state.directory.grant(server_home.project, other, Permission.OPERATION)
    with live.client((other, "Passw0rd!")) as client:
        error(client.get(SEGMENTS, params={"project": tiny.project}), 403)
        error(client.post(SEGMENTS, json={"project": tiny.project, "end": ms("1995-01-01")}), 403)
        # its own project has no model `tiny`
        assert "does not exist" in error(client.get(SEGMENTS, params={"project": server_home.project}), 404)


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("post", SEGMENTS, {"content": b"{not json"}, 400),
        ("post", SEGMENTS, {"json": ["a list"]}, 400),
        ("post", SEGMENTS, {"json": {"project": "{p}", "end": ms("1995-01-01"), "unknown": 1}}, 400),
        ("post", SEGMENTS, {"json": {"project": "{p}", "end": 19950101.5}}, 400),
        ("post", SEGMENTS, {"json": {"project": "{p}", "end": "1995-01-01"}}, 400),
        ("post", SEGMENTS, {"json": {"project": "{p}", "end": ms("1995-01-01"), "priority": 9}}, 400),
        ("post", SEGMENTS, {"json": {"project": "{p}", "end": ms("1995-01-01"), "priority": "high"}}, 400),
        ("post", SEGMENTS, {"json": {"project": "{p}", "start": ms("1996-01-01"), "end": ms("1995-01-01")}}, 400),
        ("post", SEGMENTS, {"json": {"project": "../{p}", "end": ms("1995-01-01")}}, 400),
        ("post", SEGMENTS, {"json": {"project": "{p}'--", "end": ms("1995-01-01")}}, 400),
        ("post", "/kylin/api/models/..%2F..%2Fx/segments", {"json": {"project": "{p}", "end": ms("1995-01-01")}}, 404),
        ("post", "/kylin/api/models/a'b/segments", {"json": {"project": "{p}", "end": ms("1995-01-01")}}, 400),
        ("post", "/kylin/api/models/a%00b/segments", {"json": {"project": "{p}", "end": ms("1995-01-01")}}, 400),
        ("put", SEGMENTS, {"json": {"project": "{p}", "type": "MERGE", "ids": ["a"], "names": ["b"]}}, 400),
        ("put", SEGMENTS, {"json": {"project": "{p}", "type": "DROP", "ids": ["a"]}}, 400),
        ("put", SEGMENTS, {"json": {"project": "{p}", "ids": ["../../x"]}}, 400),
        ("put", SEGMENTS, {"json": {"project": "{p}", "ids": ["a\u0000b"]}}, 400),
        ("put", SEGMENTS, {"json": {"project": "{p}", "names": ["no_such_segment"]}}, 400),
        ("delete", SEGMENTS, {"params": {"project": "{p}"}}, 400),
        ("delete", SEGMENTS, {"params": {"project": "{p}", "purge": "false"}}, 400),
        ("delete", SEGMENTS, {"params": {"project": "{p}", "purge": "false", "ids": "x'y"}}, 400),
        ("get", SEGMENTS, {"params": {"project": "{p}", "start": "yesterday"}}, 400),
        ("get", SEGMENTS, {"params": {"project": "{p}", "sort_by": "1;drop"}}, 400),
        ("get", SEGMENTS, {"params": {"project": "{p}", "page_size": "-1"}}, 400),
        ("post", f"{SEGMENTS}/check", {"json": {"project": "{p}", "start": "1", "end": "x"}}, 400),
        ("post", f"/kylin/api/models/{MODEL}/indexes", {"json": {"project": "{p}", "priority": [1]}}, 400),
    ],
)
def test_hostile_input_is_a_4xx_and_changes_nothing(
    live: LiveServer, tiny: Tiny, method: str, path: str, kwargs: dict, status: int
) -> None:
    def fill(value: object) -> object:
        if isinstance(value, str):
            return value.replace("{p}", tiny.project)
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        return value

    unchanged = fingerprint(live.settings)
    with live.client() as admin:
        error(admin.request(method, path, **{k: fill(v) for k, v in kwargs.items()}), status)
    assert fingerprint(live.settings) == unchanged
