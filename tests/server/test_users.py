"""Users, groups and project ACLs over the REST API (Kylin 5's `/api/user…`, `/api/user_group`,
`/api/access/…`), the OpenAPI docs, and the server's first start. A server of its own (no Spark, no jobs)
on a fresh store: these tests create and delete users freely."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from precube.auth import Permission
from precube.metadata import Project, open_store
from tests.server.conftest import data, error, fingerprint, server_settings
from tests.server.live import ADMIN, LiveServer, ServerProcess, free_port

API = "/kylin/api"
PASSWORD = "Passw0rd!"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = server_settings(tmp_path_factory.mktemp("users-home"))
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        for name in ("pa", "pb"):
            store.create_project(Project(name=name))
    live = LiveServer(settings, run_jobs=False)
    yield live
    live.stop()


@pytest.fixture
def admin(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def _name() -> str:
    return f"u_{uuid.uuid4().hex[:8]}"


def _user(server: LiveServer, *groups: str) -> str:
    name = _name()
    server.state.directory.add_user(name, PASSWORD, list(groups))
    return name


def test_authentication_tells_who_is_signed_in(server: LiveServer) -> None:
    name = _user(server, "ROLE_ANALYST")
    with server.client((name, PASSWORD)) as client:
        for method in ("GET", "POST"):
            me = data(client.request(method, f"{API}/user/authentication"))
            assert me["username"] == name
            assert {a["authority"] for a in me["authorities"]} == {"ALL_USERS", "ROLE_ANALYST"}
            assert "password" not in str(me).replace("default_password", "")


def test_admin_creates_lists_updates_and_deletes_users(server: LiveServer, admin: httpx.Client) -> None:
    name = _name()
    made = data(
        admin.post(f"{API}/user", json={"username": name, "password": PASSWORD, "authorities": ["ROLE_MODELER"]})
    )
    assert made["username"] == name and made["disabled"] is False
    listed = data(admin.get(f"{API}/user", params={"name": name.upper(), "page_size": 5}))
    assert [u["username"] for u in listed["value"]] == [name] and listed["total_size"] == 1
    assert data(admin.get(f"{API}/user", params={"name": name.upper(), "is_case_sensitive": True}))["value"] == []
    everyone = data(admin.get(f"{API}/user", params={"page_size": 1000}))
    assert {u["username"] for u in everyone["value"]} == {u.username for u in server.state.directory.users()}
    assert "password_hash" not in admin.get(f"{API}/user", params={"page_size": 1000}).text
    paged = data(admin.get(f"{API}/user", params={"page_size": 1, "page_offset": 1}))
    assert len(paged["value"]) == 1 and paged["value"][0] == everyone["value"][1]

    updated = data(admin.put(f"{API}/user", json={"username": name, "authorities": ["ROLE_ANALYST"]}))
    assert [a["authority"] for a in updated["authorities"]] == ["ALL_USERS", "ROLE_ANALYST"]
    groups = data(admin.get(f"{API}/user_group", params={"page_size": 100}))["value"]
    assert name in next(g for g in groups if g["group_name"] == "ROLE_ANALYST")["users"]
    assert name not in next(g for g in groups if g["group_name"] == "ROLE_MODELER")["users"]
    names = data(admin.get(f"{API}/user_group/groups", params={"group_name": "role_", "page_size": 100}))["value"]
    assert names == ["ROLE_ADMIN", "ROLE_ANALYST", "ROLE_MODELER"]
    members = data(admin.get(f"{API}/user_group/group_members/ROLE_ANALYST", params={"username": name}))["value"]
    assert [m["username"] for m in members] == [name]
    error(admin.get(f"{API}/user_group/group_members/NO_SUCH_GROUP"), 404)

    error(admin.post(f"{API}/user", json={"username": name.upper(), "password": PASSWORD}), 409)
    error(admin.post(f"{API}/user", json={"username": _name(), "password": "weak"}), 400)
    data(admin.delete(f"{API}/user/{name}"))
    assert server.state.directory.user(name) is None
    error(admin.delete(f"{API}/user/{name}"), 404)
    other = _user(server)
    data(admin.request("DELETE", f"{API}/user", json={"username": other}))  # Kylin 5's form
    assert server.state.directory.user(other) is None


def test_user_management_is_for_system_admins(server: LiveServer) -> None:
    name = _user(server, "ROLE_MODELER")
    server.state.directory.grant("pa", name, Permission.ADMIN)  # a project admin is not a system admin
    before = fingerprint(server.settings)
    with server.client((name, PASSWORD)) as client:
        error(client.get(f"{API}/user"), 403)
        error(client.post(f"{API}/user", json={"username": _name(), "password": PASSWORD}), 403)
        error(client.put(f"{API}/user", json={"username": name, "authorities": ["ROLE_ADMIN"]}), 403)
        error(client.delete(f"{API}/user/ADMIN"), 403)
        error(client.get(f"{API}/user_group"), 403)
        error(client.put(f"{API}/user/password", json={"username": "ADMIN", "new_password": "Hijack3d!"}), 403)
    assert fingerprint(server.settings) == before


def test_the_last_admin_cannot_be_removed_or_demoted(server: LiveServer, admin: httpx.Client) -> None:
    assert [u.username for u in server.state.directory.users() if u.is_admin] == [ADMIN[0]]
    before = fingerprint(server.settings)
    assert "last system admin" in error(admin.delete(f"{API}/user/ADMIN"), 400)
    assert "last system admin" in error(admin.put(f"{API}/user", json={"username": "ADMIN", "authorities": []}), 400)
    assert "last system admin" in error(admin.put(f"{API}/user", json={"username": "ADMIN", "disabled": True}), 400)
    assert fingerprint(server.settings) == before
    data(admin.get(f"{API}/user"))  # still signed in, still admin


def test_a_disabled_user_gets_401_at_once(server: LiveServer, admin: httpx.Client) -> None:
    name = _user(server)
    server.state.directory.grant("pa", name, Permission.QUERY)
    with server.client((name, PASSWORD)) as client:
        data(client.get(f"{API}/user/authentication"))  # the password is now remembered
        data(admin.put(f"{API}/user", json={"username": name, "disabled": True}))
        assert error(client.get(f"{API}/user/authentication"), 401) == "wrong user name or password"
        data(admin.put(f"{API}/user", json={"username": name, "disabled": False}))
        data(client.get(f"{API}/user/authentication"))


def test_a_password_change_invalidates_the_old_one_immediately(server: LiveServer, admin: httpx.Client) -> None:
    name = _user(server)
    with server.client((name, PASSWORD)) as client:
        data(client.get(f"{API}/user/authentication"))  # remembered by the directory
        body = {"username": name, "password": "Wr0ng-old!", "new_password": "N3w-pass!"}
        assert "old password" in error(client.put(f"{API}/user/password", json=body), 400)
        data(client.put(f"{API}/user/password", json={**body, "password": PASSWORD}))
        error(client.get(f"{API}/user/authentication"), 401)
    with server.client((name, "N3w-pass!")) as client:
        data(client.get(f"{API}/user/authentication"))
        # an admin sets anyone's password without the old one
        data(admin.put(f"{API}/user/password", json={"username": name, "new_password": "Th1rd-pass!"}))
        error(client.get(f"{API}/user/authentication"), 401)


def test_project_acl_grant_change_list_revoke(server: LiveServer, admin: httpx.Client) -> None:
    name, group_member = _user(server), _user(server, "ROLE_ANALYST")
    acl = f"{API}/access/project"
    query_body = {"project": "pa", "type": "user", "permission": "QUERY", "names": [name]}
    with server.client((name, PASSWORD)) as user:
        error(user.get(acl, params={"project": "pa"}), 403)
        data(admin.post(acl, json={**query_body, "permission": "READ"}))
        error(user.get(f"{API}/access/acls", params={"type": "user", "name": name}), 403)  # system admins only
        error(user.get(acl, params={"project": "pa"}), 403)  # QUERY is not ADMIN
        data(admin.put(acl, json={"project": "pa", "type": "user", "permission": "MANAGEMENT", "name": name}))
        error(user.get(acl, params={"project": "pa"}), 403)  # just below ADMIN
        data(admin.put(acl, json={"project": "pa", "type": "user", "permission": "ADMINISTRATION", "name": name}))
        rows = data(user.get(acl, params={"project": "pa"}))["value"]  # the change counts on the next request
        assert {"type": "user", "name": name, "permission": "ADMIN"} in rows
        data(
            user.post(
                acl, json={"project": "pa", "type": "group", "permission": "OPERATION", "names": ["ROLE_ANALYST"]}
            )
        )
        error(user.get(acl, params={"project": "pb"}), 403)  # ADMIN of pa sees nothing of pb
        error(user.post(acl, json={**query_body, "project": "pb", "names": [name]}), 403)
    with server.client((group_member, PASSWORD)) as member:
        held = {
            r["project_name"]: r["project_permission"]
            for r in data(admin.get(f"{API}/access/acls", params={"type": "user", "name": group_member}))
        }
        assert held == {"pa": "OPERATION"}
        error(member.get(acl, params={"project": "pa"}), 403)
    filtered = data(admin.get(acl, params={"project": "pa", "name": name[2:]}))["value"]
    assert [r["name"] for r in filtered] == [name]
    data(admin.delete(acl, params={"project": "pa", "type": "user", "name": name}))
    with server.client((name, PASSWORD)) as user:
        error(user.get(acl, params={"project": "pa"}), 403)  # revoked: takes effect on the next request
    error(admin.delete(acl, params={"project": "pa", "type": "user", "name": name}), 404)
    error(admin.get(acl, params={"project": "nope"}), 404)
    error(admin.post(acl, json={"project": "nope", "type": "user", "permission": "QUERY", "names": [name]}), 404)


def test_acl_requests_with_bad_input_change_nothing(server: LiveServer, admin: httpx.Client) -> None:
    name = _user(server)
    acl = f"{API}/access/project"
    before = fingerprint(server.settings)
    bad_bodies = [
        {"project": "pa", "type": "user", "permission": "SUPER", "names": [name]},
        {"project": "pa", "type": "robot", "permission": "QUERY", "names": [name]},
        {"project": "pa", "type": "user", "permission": "QUERY", "names": [name, "nobody_here"]},  # all or nothing
        {"project": "pa", "type": "user", "permission": "QUERY", "names": ["../etc"]},
        {"project": "pa", "type": "user", "permission": "QUERY", "names": []},
        {"project": "pa", "type": "user", "permission": "QUERY", "names": name},
        {"project": "../pa", "type": "user", "permission": "QUERY", "names": [name]},
        {"project": "pa", "type": "user", "permission": "QUERY", "names": [name], "extra": 1},
        {"project": "pa", "type": "group", "permission": "QUERY", "names": ["NO_SUCH_GROUP"]},
    ]
    for body in bad_bodies:
        status = admin.post(acl, json=body).status_code
        assert 400 <= status < 500, body
        error(admin.post(acl, json=body), status)
    for body in [{"username": "a'b", "password": PASSWORD}, {"username": "a\x00b", "password": PASSWORD}]:
        error(admin.post(f"{API}/user", json=body), 400)
    error(admin.post(f"{API}/user", json={"username": _name(), "password": PASSWORD, "role": "x"}), 400)
    error(admin.put(f"{API}/user", json={"username": name}), 400)  # nothing to change
    error(admin.put(f"{API}/user", json={"username": "nobody_here", "disabled": True}), 404)
    assert fingerprint(server.settings) == before
    assert all(e.sid != name for e in server.state.directory.acl("pa").entries)


def test_openapi_docs_need_credentials_and_use_no_cdn(server: LiveServer, admin: httpx.Client) -> None:
    with server.client(auth=None) as anonymous:
        for path in ("/docs", "/openapi.json", "/docs/assets/swagger-ui-bundle.js"):
            error(anonymous.get(path), 401)
    name = _user(server)  # any signed-in user
    with server.client((name, PASSWORD)) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and "swagger-ui" in page.text
        assert (
            "cdn." not in page.text
            and "http://" not in page.text
            and "https://" not in page.text.replace("https://swagger.io", "")
        )
        schema = client.get("/openapi.json").json()
        assert f"{API}/user" in schema["paths"] and f"{API}/access/project" in schema["paths"]
        assert (
            schema["security"] == [{"basic": []}]
            and schema["components"]["securitySchemes"]["basic"]["scheme"] == "basic"
        )
        for asset, kind in (("swagger-ui-bundle.js", "javascript"), ("swagger-ui.css", "css")):
            got = client.get(f"/docs/assets/{asset}")
            assert got.status_code == 200 and kind in got.headers["content-type"] and len(got.content) > 10_000
        error(client.get("/docs/assets/..%2F..%2F__init__.py"), 404)
        error(client.get("/docs/assets/index.html"), 404)


def _serve(home: Path, password: str | None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECUBE__")}
    if password is not None:
        env["PRECUBE__SERVER__ADMIN_PASSWORD"] = password
    command = [sys.executable, "-m", "precube", "--home", str(home), "serve", "--no-jobs", "--port", str(free_port())]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_a_weak_admin_password_is_a_clear_start_up_error(tmp_path: Path) -> None:
    process = _serve(tmp_path, "admin")
    out, _ = process.communicate(timeout=120)
    assert process.returncode != 0
    text = out.decode()
    assert "PRECUBE__SERVER__ADMIN_PASSWORD" in text and "too weak" in text and "Traceback" not in text, text


def test_first_start_prints_a_random_admin_password_once(tmp_path: Path) -> None:
    first = ServerProcess(tmp_path, env={"PRECUBE__SERVER__ADMIN_PASSWORD": ""}, args=("--no-jobs",))
    try:
        lines = [line for line in first.log.read_text().splitlines() if "created user ADMIN" in line]
        assert len(lines) == 1, first.log.read_text()
        password = lines[0].split("with password ")[1].split(" ")[0]
        with first.client((ADMIN[0], password)) as client:
            assert data(client.get(f"{API}/user/authentication"))["username"] == "ADMIN"
        with first.client() as client:  # the usual test password was not set
            error(client.get(f"{API}/user/authentication"), 401)
    finally:
        first.terminate()
    second = ServerProcess(tmp_path, env={"PRECUBE__SERVER__ADMIN_PASSWORD": ""}, args=("--no-jobs",))
    try:
        assert first.log != second.log and "created user ADMIN" not in second.log.read_text()
    finally:
        second.terminate()


def test_a_configured_admin_password_is_used(tmp_path: Path) -> None:
    process = ServerProcess(tmp_path, args=("--no-jobs",))  # PRECUBE__SERVER__ADMIN_PASSWORD = the test password
    try:
        with process.client() as client:
            assert data(client.get(f"{API}/user/authentication"))["username"] == "ADMIN"
        assert "created user ADMIN" not in process.log.read_text()
    finally:
        process.terminate()


def test_a_changed_admin_password_setting_is_logged_with_the_reset_command(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The setting applies on the first start only: a start whose setting differs says so, and how to reset."""
    from precube.auth import Directory
    from precube.server.app import create_admin
    from precube.settings import load_settings

    with open_store(f"sqlite:///{tmp_path / 'metadata.db'}") as store:
        directory = Directory(store, refresh_s=0)
        create_admin(directory, server_settings(tmp_path))  # the first start creates ADMIN with it
        create_admin(directory, server_settings(tmp_path))  # the same setting: nothing to say
        assert not [r for r in caplog.records if r.name == "precube.server"]
        create_admin(directory, load_settings(home=tmp_path, server={"admin_password": "Other-pass1!"}))
        [record] = [r for r in caplog.records if r.name == "precube.server"]
        assert record.levelname == "WARNING" and "PRECUBE__SERVER__ADMIN_PASSWORD" in record.getMessage()
        assert "precube user passwd ADMIN" in record.getMessage()
        assert directory.authenticate(ADMIN[0], ADMIN[1]).is_admin  # the stored one still stands
