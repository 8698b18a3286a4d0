"""`/kylin/api/jobs` on the shared live server, on a project of this module's own: listing with Kylin's
statuses, names, time filter and paging; the actions; detail and step output; deletion; isolation between
projects; hostile job ids."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from precube.auth import Permission
from tests.server.conftest import ServerHome, data, error, fingerprint
from tests.server.live import LiveServer
from tests.server.tiny import build, make_project, wait_job

pytestmark = pytest.mark.spark
JOBS = "/kylin/api/jobs"


@dataclass(frozen=True)
class Project:
    name: str
    finished: str  # a build that ran to its end


@pytest.fixture(scope="module")
def project(live: LiveServer, server_home: ServerHome) -> Iterator[Project]:
    name = f"p_{uuid.uuid4().hex[:8]}"
    make_project(live.settings, server_home.ssb_dir, name)
    with live.client() as admin:
        job = build(admin, name, "1992-01-01", "1993-01-01")
        wait_job(admin, name, job)
    yield Project(name, job)


def test_list_filters_and_pages_with_kylins_names(live: LiveServer, project: Project) -> None:
    with live.client() as admin:

        def listed(**params: object) -> dict:
            return data(admin.get(JOBS, params={"project": project.name, "time_filter": 4, **params}))

        everything = listed()
        assert everything["total_size"] >= 1
        [job] = [j for j in everything["value"] if j["id"] == project.finished]
        assert (job["job_name"], job["job_status"], job["target_subject"], job["project"]) == (
            "INC_BUILD",
            "FINISHED",
            "tiny",
            project.name,
        )
        assert job["step_ratio"] == 1.0 and job["duration"] > 0
        assert project.finished in [j["id"] for j in listed(statuses="FINISHED")["value"]]
        assert project.finished in [j["id"] for j in listed(statuses=["ERROR", "FINISHED"])["value"]]
        assert project.finished not in [j["id"] for j in listed(statuses="RUNNING,STOPPED")["value"]]
        assert listed(job_names="INDEX_MERGE")["total_size"] == 0
        assert listed(time_filter=0)["total_size"] == everything["total_size"]  # made in the last day
        assert listed(key=project.finished[:8])["value"][0]["id"] == project.finished
        assert listed(key="no-such-thing")["total_size"] == 0
        paged = listed(page_offset=5, page_size=10)
        assert paged["value"] == [] and paged["total_size"] == everything["total_size"]
        error(admin.get(JOBS, params={"project": project.name}), 400)  # time_filter is required, as in Kylin
        error(admin.get(JOBS, params={"project": project.name, "time_filter": 4, "statuses": "DONE"}), 400)


def test_detail_and_step_output(live: LiveServer, project: Project) -> None:
    with live.client() as admin:
        job = data(admin.get(f"{JOBS}/{project.finished}/detail", params={"project": project.name}))
        steps = job["steps"]
        assert [s["name"] for s in steps] == ["dictionaries", "layers", "commit"]
        assert all(s["step_status"] == "FINISHED" and s["progress"] == 1.0 for s in steps)
        layers = steps[1]
        assert layers["id"] == f"{project.finished}_01" and layers["duration"] >= 0
        output = data(
            admin.get(f"{JOBS}/{project.finished}/steps/{layers['id']}/output", params={"project": project.name})
        )
        assert output["step_id"] == layers["id"]
        assert "layers: FINISHED" in output["cmd_output"] and f"job={project.finished}" in output["cmd_output"]
        error(
            admin.get(
                f"{JOBS}/{project.finished}/steps/{project.finished}_09/output", params={"project": project.name}
            ),
            404,
        )
        error(admin.get(f"{JOBS}/{project.finished}/steps/other_00/output", params={"project": project.name}), 404)


def test_pause_resume_discard_and_delete(live: LiveServer, project: Project) -> None:
    with live.client() as admin:
        job = build(admin, project.name, "1993-01-01", "1994-01-01")
        act = {"project": project.name, "job_ids": [job]}
        [paused] = data(admin.put(f"{JOBS}/status", json={**act, "action": "PAUSE"}))
        assert paused == {"id": job, "job_status": "STOPPED", "state": "PAUSED"}
        wait_job(admin, project.name, job, until=("STOPPED",))
        assert "cannot pause" in error(admin.put(f"{JOBS}/status", json={**act, "action": "PAUSE"}), 409)
        assert "discard it first" in error(admin.delete(JOBS, params={"project": project.name, "job_ids": job}), 409)
        data(admin.put(f"{JOBS}/status", json={**act, "action": "RESUME"}))
        wait_job(admin, project.name, job)
        error(admin.put(f"{JOBS}/status", json={**act, "action": "DISCARD"}), 409)  # a finished job stays
        # a third build, discarded before it ends, then deleted with the finished one
        third = build(admin, project.name, "1994-01-01", "1995-01-01")
        data(admin.put(f"{JOBS}/status", json={"project": project.name, "job_ids": [third], "action": "DISCARD"}))
        wait_job(admin, project.name, third, until=("DISCARDED",))
        deleted = data(admin.delete(JOBS, params={"project": project.name, "job_ids": f"{job},{third}"}))
        assert sorted(deleted) == sorted([job, third])
        error(admin.get(f"{JOBS}/{job}/detail", params={"project": project.name}), 404)


def test_jobs_of_another_project_are_invisible(live: LiveServer, server_home: ServerHome, project: Project) -> None:
    other = f"u_{uuid.uuid4().hex[:6]}"
    live.state.directory.add_user(other, "Passw0rd!", [])
    live.state.directory.grant(server_home.project, other, Permission.OPERATION)
    with live.client((other, "Passw0rd!")) as client:
        everywhere = data(client.get(JOBS, params={"time_filter": 4, "page_size": 1000}))
        assert all(j["project"] == server_home.project for j in everywhere["value"])
        error(client.get(JOBS, params={"project": project.name, "time_filter": 4}), 403)
        # its own project does not hold the job; the other one it may not name
        error(client.get(f"{JOBS}/{project.finished}/detail", params={"project": server_home.project}), 404)
        error(client.get(f"{JOBS}/{project.finished}/detail", params={"project": project.name}), 403)
        unchanged = fingerprint(live.settings)
        error(
            client.put(
                f"{JOBS}/status", json={"project": project.name, "job_ids": [project.finished], "action": "RESTART"}
            ),
            403,
        )
        error(client.delete(JOBS, params={"project": project.name, "job_ids": project.finished}), 403)
        assert fingerprint(live.settings) == unchanged
    with live.client() as admin:
        assert project.finished in [
            j["id"] for j in data(admin.get(JOBS, params={"time_filter": 4, "page_size": 1000}))["value"]
        ]


def test_query_permission_reads_jobs_but_cannot_act(live: LiveServer, project: Project) -> None:
    reader = f"r_{uuid.uuid4().hex[:6]}"
    live.state.directory.add_user(reader, "Passw0rd!", [])
    live.state.directory.grant(project.name, reader, Permission.QUERY)
    with live.client((reader, "Passw0rd!")) as client:
        data(client.get(f"{JOBS}/{project.finished}/detail", params={"project": project.name}))
        error(
            client.put(
                f"{JOBS}/status", json={"project": project.name, "job_ids": [project.finished], "action": "DISCARD"}
            ),
            403,
        )


@pytest.mark.parametrize("job_id", ["..%2F..%2Fetc", "x'y", "a%00b", "%22%3Bdrop", "a b", str(uuid.uuid4()), "0000"])
def test_hostile_job_ids_are_4xx_and_change_nothing(live: LiveServer, project: Project, job_id: str) -> None:
    unchanged = fingerprint(live.settings)
    with live.client() as admin:
        response = admin.get(f"{JOBS}/{job_id}/detail", params={"project": project.name})
        assert response.status_code in (400, 404), response.text
        error(response, response.status_code)
        put = admin.put(
            f"{JOBS}/status",
            json={"project": project.name, "job_ids": [job_id.replace("%00", "\u0000")], "action": "PAUSE"},
        )
        assert put.status_code in (400, 404), put.text
        error(put, put.status_code)
    assert fingerprint(live.settings) == unchanged
