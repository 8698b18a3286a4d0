"""Server-wide security rules, checked over `app.routes`, so they hold for every route of every router
(those added later too): credentials on every path but `/health` and the web UI's static files (routes that
declare `public()`: exactly the packaged assets, holding no data), a declared permission on every route,
403 for a user without a grant, and bad input refused in Kylin's envelope with one line, changing
nothing. Runs on a server of its own (no Spark, no jobs): every refusal happens before a handler runs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import httpx
import pytest
from fastapi.dependencies.models import Dependant

from precube.auth import Permission
from precube.metadata import Project, open_store
from precube.server.routers import web
from precube.server.security import Requirement
from tests.server.conftest import error, fingerprint, server_settings
from tests.server.live import ADMIN, LiveServer

PROJECT, OTHER = "sec", "sec_other"
PASSWORD = "Passw0rd!"
NO_GRANT, OTHER_ADMIN = "no_grant", "other_admin"
_PARAM = re.compile(r"\{(\w+)(?::[^}]*)?\}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    # sign-in throttling off: every route is tried with a wrong password, each must be the 401 itself (the
    # throttle has tests of its own: test_signin.py)
    no_throttle = {"max_failures": 0, "address_max_failures": 0}
    settings = server_settings(tmp_path_factory.mktemp("security-home"), auth=no_throttle)
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        store.create_project(Project(name=PROJECT))
        store.create_project(Project(name=OTHER))
    live = LiveServer(settings, run_jobs=False)
    live.state.directory.add_user(NO_GRANT, PASSWORD, [])
    live.state.directory.add_user(OTHER_ADMIN, PASSWORD, ["ROLE_MODELER"])
    live.state.directory.grant(OTHER, OTHER_ADMIN, Permission.ADMIN)
    yield live
    live.stop()


def _requirement(dependant: Dependant) -> Requirement | None:
    for sub in dependant.dependencies:
        found = getattr(sub.call, "requirement", None)
        if isinstance(found, Requirement):
            return found
        found = _requirement(sub)
        if found is not None:
            return found
    return None


@dataclass(frozen=True)
class Endpoint:
    """One method of one route as the application serves it (prefix and router dependencies included)."""

    dependant: Dependant | None
    body_field: Any

    @property
    def has_body(self) -> bool:
        return self.body_field is not None

    @property
    def requirement(self) -> Requirement | None:
        return None if self.dependant is None else _requirement(self.dependant)

    @property
    def public(self) -> bool:
        """A static file of the web UI (`public()`): served without credentials, holds no data."""
        need = self.requirement
        return need is not None and need.public


def _endpoints(server: LiveServer) -> list[tuple[str, str, Endpoint]]:
    """Every (method, path, endpoint) of the app: FastAPI >= 0.16x keeps included routers as branches
    (`effective_route_contexts`), older versions list the routes themselves."""
    found = []
    for top in server.app.routes:
        contexts = top.effective_route_contexts() if hasattr(top, "effective_route_contexts") else [top]
        for route in contexts:
            endpoint = Endpoint(getattr(route, "dependant", None), getattr(route, "body_field", None))
            methods = sorted(getattr(route, "methods", None) or ())
            found += [(method, str(route.path), endpoint) for method in methods if method != "HEAD"]
    assert len(found) > 10
    return found


def _fill(path: str, project: str, other: str = "x1") -> str:
    return _PARAM.sub(lambda m: project if m.group(1) == "project" else other, path)


def _assert_clean(response: httpx.Response) -> None:
    """Never a stack trace or a Python file path, whatever the status."""
    assert "Traceback" not in response.text and 'File "' not in response.text, response.text[:500]
    assert response.status_code < 500, (response.request.method, response.request.url, response.text[:500])


def test_every_route_but_health_needs_credentials(server: LiveServer) -> None:
    checked = 0
    with (
        server.client(auth=None) as anonymous,
        server.client(auth=(ADMIN[0], "Wr0ng-pass!")) as wrong,
        server.client(auth=("nobody_at_all", PASSWORD)) as unknown,
    ):
        for method, path, _route in _endpoints(server):
            url = _fill(path, PROJECT)
            if path == "/health":
                assert anonymous.request(method, url).status_code == 200
                continue
            if _route.public:
                continue  # the web UI's files: test_only_the_web_ui_files_are_public checks them
            # a body, valid or not, is never read before the caller is known (a wrong password costs a
            # bcrypt check: one request each is enough)
            tries = [(anonymous, body) for body in (None, b"{}", b"{not json")] + [(wrong, b"{}"), (unknown, None)]
            for client, body in tries:
                response = client.request(method, url, content=body, params={"project": PROJECT})
                error(response, 401)
                assert response.headers["www-authenticate"].startswith("Basic")
            checked += 1
        error(anonymous.get("/kylin/api/no_such_route"), 401)  # nor is which paths exist
    assert checked > 10


def test_only_the_web_ui_files_are_public(server: LiveServer) -> None:
    """The routes declared `public()` are the web router's (GET only), and without credentials they serve
    exactly the packaged files: any other path under them, or another method, still needs credentials."""
    public = sorted({(method, path) for method, path, route in _endpoints(server) if route.public})
    assert public == [("GET", "/"), ("GET", "/web/{name:path}")]
    assert (
        "/" in web.PATHS and "/web/js/app.js" in web.PATHS and all(p == "/" or p.startswith("/web/") for p in web.PATHS)
    )
    with server.client(auth=None) as anonymous, server.client() as admin:
        for path in web.PATHS:
            response = anonymous.get(path)
            assert response.status_code == 200 and response.content == web.ASSETS[path].body, path
            assert "default-src 'self'" in response.headers["content-security-policy"]
            assert "unsafe-inline" not in response.headers["content-security-policy"]
            assert response.headers["x-content-type-options"] == "nosniff"
            packaged = resources.files("precube").joinpath("web", "index.html" if path == "/" else path[5:])
            assert response.content == packaged.read_bytes()  # a file shipped in the package: no data
        assert anonymous.get("/").headers["cache-control"] == "no-store"
        assert anonymous.get("/").headers["content-type"].startswith("text/html")
        assert anonymous.get("/web/js/app.js").headers["content-type"].startswith("text/javascript")
        etag = anonymous.get("/web/css/app.css").headers["etag"]
        assert anonymous.get("/web/css/app.css", headers={"If-None-Match": etag}).status_code == 304
        for path in ("/web/", "/web/nope.js", "/web/js/../../pyproject.toml", "/web/%2e%2e/app.py",
                     "/web/js/app.js/", "/index.html", "/web/js/pages"):  # fmt: skip
            error(anonymous.get(path), 401)
            assert admin.get(path).status_code == 404, path  # signed in: not a file of the UI
        for method in ("POST", "PUT", "DELETE"):
            error(anonymous.request(method, "/", content=b"{}"), 401)
            error(anonymous.request(method, "/web/js/app.js", content=b"{}"), 401)


def test_every_route_declares_what_it_needs(server: LiveServer) -> None:
    """A route without `requires(...)` would be open to any signed-in user by accident."""
    missing = [
        f"{method} {path}"
        for method, path, route in _endpoints(server)
        if path != "/health" and route.requirement is None
    ]
    assert missing == []


def test_a_user_without_a_grant_gets_403_from_every_project_route(server: LiveServer) -> None:
    before = fingerprint(server.settings)
    checked = 0
    with server.client((NO_GRANT, PASSWORD)) as client, server.client((OTHER_ADMIN, PASSWORD)) as other:
        for method, path, route in _endpoints(server):
            need = route.requirement
            if need is None or (need.level is None and not need.admin):
                continue  # any signed-in user may call it
            body = json.dumps({"project": PROJECT}).encode() if route.has_body else None
            kwargs: dict[str, Any] = {"params": {"project": PROJECT}, "content": body}
            for caller in (client, other):  # no grant at all; ADMIN of another project
                response = caller.request(method, _fill(path, PROJECT), **kwargs)
                _assert_clean(response)
                error(response, 403)
                checked += 1
    assert checked > 10
    assert fingerprint(server.settings) == before


def _hostile_bodies(limit: int) -> list[bytes]:
    # (no empty or `null` body: a route may take an optional body and do its default)
    bodies = [b"{not json", b"[1, 2]", b"42", b'"text"', b"true", b"\xff\xfe", b'{"project": "sec"']
    for project in (5, ["sec"], {"a": 1}, "../sec", "sec'--", 'se"c', "se\x00c", "x" * 10_000):
        bodies.append(json.dumps({"project": project}).encode())
    bodies.append(json.dumps({"project": PROJECT, "no_such_field_xyz": 1}).encode())
    bodies.append(b'{"project": "sec", "a": ' + b"[" * 5000 + b"]" * 5000 + b"}")  # deep nesting
    bodies.append(b" " * (limit + 1))
    return bodies


def _wrong_types(route: Endpoint) -> list[bytes]:
    """For each field of the body model: an object, a nested list or a huge number where it expects
    something else."""
    model = route.body_field.field_info.annotation if route.body_field is not None else None
    fields = getattr(model, "model_fields", {})
    base = {"project": PROJECT} if "project" in fields else {}
    return [
        json.dumps({**base, name: value}).encode()
        for name in fields
        if name != "project"
        for value in ({"$where": [1]}, [[None]], 1e308)
    ]


def test_bad_input_gets_a_4xx_envelope_and_changes_nothing(server: LiveServer) -> None:
    limit = server.settings.server.max_body_bytes
    before = fingerprint(server.settings)
    checked = 0
    with server.client() as admin:
        for method, path, route in _endpoints(server):
            if path == "/health" or route.public:
                continue  # they read nothing of the request (test_only_the_web_ui_files_are_public)
            if route.has_body:
                for body in [*_hostile_bodies(limit), *_wrong_types(route)]:
                    response = admin.request(
                        method, _fill(path, PROJECT), content=body, headers={"content-type": "application/json"}
                    )
                    _assert_clean(response)
                    assert 400 <= response.status_code < 500, (method, path, body[:80], response.text[:300])
                    error(response, response.status_code)
                    checked += 1
            for name in ("../sec", "sec'", 'se"c', "se\x00c", "sec/x", ""):
                error(admin.request(method, _fill(path, PROJECT), params={"project": name}), 400)
            if "{" in path:  # hostile path parameters: refused or not found, never served
                for value in ("..%2F..%2Fetc", "a%27b", "a%22b", "a%00b", "%2e%2e"):
                    response = admin.request(method, _fill(path, value, value), params={"project": PROJECT})
                    _assert_clean(response)
                    assert 400 <= response.status_code < 500, (method, path, value, response.text[:300])
                    error(response, response.status_code)
    assert checked > 10
    assert fingerprint(server.settings) == before


def test_a_10_mb_body_is_refused_before_it_is_read(server: LiveServer) -> None:
    with server.client() as admin, server.client(auth=None) as anonymous:
        big = b"{" + b" " * (10 * 1024 * 1024) + b"}"
        for method, path, route in _endpoints(server):
            if route.has_body:
                error(admin.request(method, _fill(path, PROJECT), content=big), 413)
                error(anonymous.request(method, _fill(path, PROJECT), content=big), 401)


def test_malformed_credentials_are_401_not_500(server: LiveServer) -> None:
    import base64

    headers = [
        "Basic",
        "Basic !!!",
        "Basic " + "QQ==" * 10_000,
        "Basic QURNSU4=",  # no colon
        "Bearer abc",
        "Basic " + base64.b64encode(b"\xff\xfe:x").decode(),
        "Basic " + base64.b64encode(b"ADMIN\x00:x").decode(),
        "Basic " + base64.b64encode(("a" * 5000 + ":" + "b" * 5000).encode()).decode(),
    ]
    with server.client(auth=None) as client:
        for header in headers:
            response = client.get("/kylin/api/user/authentication", headers={"Authorization": header})
            error(response, 401)


def test_a_project_named_twice_differently_is_refused(server: LiveServer) -> None:
    """The ADMIN of one project cannot act on another by naming theirs in the query and the other in the
    body (or path): whichever the handler reads, the permission was checked on it."""
    before = fingerprint(server.settings)
    checked = 0
    with server.client((OTHER_ADMIN, PASSWORD)) as other:
        for method, path, route in _endpoints(server):
            need = route.requirement
            if need is None or need.level is None or not (route.has_body or "{project}" in path):
                continue
            body = json.dumps({"project": PROJECT}).encode() if route.has_body else None
            response = other.request(method, _fill(path, PROJECT), params={"project": OTHER}, content=body)
            assert response.status_code in (400, 403), (method, path, response.text[:300])
            error(response, response.status_code)
            checked += 1
        grant = {"project": PROJECT, "type": "user", "permission": "ADMIN", "names": [OTHER_ADMIN]}
        assert "two projects" in error(
            other.post("/kylin/api/access/project", params={"project": OTHER}, json=grant), 400
        )
    assert checked >= 2
    assert fingerprint(server.settings) == before
