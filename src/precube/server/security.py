"""The one place where requests are authenticated and permissions checked: every route declares what it
needs as a dependency (`requires(Permission.QUERY)`, `requires(admin=True)`, `requires()` for any
signed-in user); no handler decides access itself. The Postgres wire front end signs its connections in
with the same `ServerState.signin` (`server/signin.py`: throttled, its password checks bounded) and checks QUERY
with the directory's `require`, as the routes' dependency does.

Credentials are HTTP Basic, checked by the `Authenticate` middleware for every path but `/health` and a GET of
the web UI's static files (`public()` routes: they hold no data) before the request is routed or its body
parsed: a caller without valid credentials learns nothing (not even which paths exist or whether a body is
well-formed). The project a permission is checked on is the route's `{project}` path parameter, else its
`project` query parameter, else the `project` field of its JSON body."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from precube.auth import AuthenticationError, Directory, Permission, User
from precube.errors import InvalidInputError, PrecubeError
from precube.metadata.paths import check_project_name
from precube.server.envelope import error, unexpected, url_of
from precube.server.state import ServerState
from precube.service.principal import Principal

OPEN_PATHS = frozenset({"/health"})  # answered without credentials (and the web UI's files, given by create_app)


@dataclass(frozen=True)
class Caller:
    """Who is calling, the project the route acts on (None for system-wide routes) and what they hold there."""

    user: User
    project: str | None
    permission: Permission | None

    @property
    def name(self) -> str:
        return self.user.username

    @property
    def scoped(self) -> str:
        """The project of a route whose dependency requires one."""
        assert self.project is not None, "the route's dependency requires a project"
        return self.project

    @property
    def principal(self) -> Principal:
        """The caller as the query service knows it, on the route's project."""
        return Principal(self.user.username, self.scoped, tuple(self.user.groups))

    @property
    def writer(self) -> str:
        """Who the metadata's audit log names for this caller's changes."""
        return f"user:{self.user.username}"


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


@dataclass(frozen=True)
class Requirement:
    """What a route's `requires(...)` dependency asks (read by the server-wide security tests), and the one
    check of it: the dependency and the query route's fast path (`server.hot_path`) both call `check`."""

    level: Permission | None
    admin: bool
    project_optional: bool
    public: bool = False  # a static file of the web UI: no credentials, no data

    def check(self, directory: Directory, user: User, given: Sequence[object]) -> Caller:
        """`user` as the caller of a route with this requirement on the project `given` names (the values of
        the path, query and body `project`, None where absent); raises the 403 or 400 otherwise."""
        if self.admin:
            directory.require(user, None, Permission.ADMIN)
        project = one_project(given)
        if self.level is not None and project is None and not self.project_optional:
            raise InvalidInputError("project is required")
        if self.level is not None and project is not None:
            directory.require(user, project, self.level)
        held = directory.permission(user, project) if project is not None else None
        return Caller(user, project, held)


def _credentials(header: str) -> tuple[str, str]:
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic" or not token:
        raise AuthenticationError("credentials required: use HTTP Basic authentication")
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as err:
        raise AuthenticationError("malformed HTTP Basic credentials") from err
    username, sep, password = decoded.partition(":")
    if not sep:
        raise AuthenticationError("malformed HTTP Basic credentials")
    return username, password


async def _sign_in(scope: Scope, header: str) -> User:
    """The user of an `Authorization` header's credentials (401, or 429 while throttled, otherwise)."""
    client = scope.get("client")
    user: User = await scope["app"].state.server.signin(*_credentials(header), client[0] if client else None)
    return user


class Authenticate:
    """Pure ASGI middleware: signs the caller in (HTTP Basic) before anything else reads the request, and
    answers 401 in Kylin's envelope otherwise; every path but `OPEN_PATHS` and a GET of one of the exact
    `public_paths` (the web UI's files) needs it."""

    def __init__(self, app: ASGIApp, public_paths: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.public_paths = public_paths

    def _open(self, scope: Scope) -> bool:
        path = scope["path"]
        return path in OPEN_PATHS or (path in self.public_paths and scope["method"] in ("GET", "HEAD"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._open(scope):
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        rid = str(state.get("request_id", ""))
        try:
            user = await _sign_in(scope, header)
        except PrecubeError as err:
            await error(err, rid, url_of(scope))(scope, receive, send)
            return
        except Exception as err:  # noqa: BLE001 (e.g. the store's driver: answered in the envelope, and logged)
            await unexpected(err, rid, url_of(scope))(scope, receive, send)
            return
        state["user"] = user.username  # for the access log
        state["principal"] = user
        await self.app(scope, receive, send)


def authenticate(request: Request) -> User:
    """The user `Authenticate` signed in (every app `create_app` makes has it in front of the routes)."""
    found = getattr(request.state, "principal", None)
    if not isinstance(found, User):
        raise AuthenticationError("credentials required: use HTTP Basic authentication")
    return found


async def _body_project(request: Request) -> object:
    """The `project` field of a JSON body (None when there is none)."""
    if request.method not in ("POST", "PUT", "DELETE", "PATCH"):
        return None
    kind = request.headers.get("content-type", "application/json").lower()
    body = await request.body()
    if not body or "json" not in kind:
        return None
    parsed = parse_json(body)
    return parsed.get("project") if isinstance(parsed, dict) else None


def parse_json(body: bytes) -> Any:
    """A JSON body, or the 400 that says it is not JSON."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as err:  # RecursionError: nested too deep
        raise InvalidInputError(f"the request body is not valid JSON: {str(err)[:200]}") from err


def one_project(given: Sequence[object]) -> str | None:
    """The one project a request names. Given in two places (path, query, body) with different values
    it is refused: the permission checked must be on the project the handler acts on, whichever it reads."""
    names = [n for n in given if n is not None]
    for name in names:
        if not isinstance(name, str):
            raise InvalidInputError("project must be a string")
        check_project_name(name)
    if len(set(names)) > 1:
        raise InvalidInputError(f"the request names two projects ({', '.join(sorted(set(map(str, names))))})")
    return str(names[0]) if names else None


def public() -> Callable[[], Awaitable[None]]:
    """The dependency of a route that serves one of the web UI's static files: no credentials (the app lets
    exactly these paths through `Authenticate`), and it must hold no data. Declared, like `requires`, so that
    the security tests know the route is open on purpose."""

    async def dependency() -> None:
        return None

    dependency.requirement = Requirement(None, admin=False, project_optional=False, public=True)  # type: ignore[attr-defined]
    return dependency


def requires(
    level: Permission | None = None, *, admin: bool = False, project_optional: bool = False
) -> Callable[[Request], Awaitable[Caller]]:
    """A dependency: the caller must be signed in and hold `level` on the request's project (a system
    admin when `admin`). `project_optional`: a route that may act on every project the caller can see."""

    requirement = Requirement(level, admin, project_optional)

    async def dependency(request: Request) -> Caller:
        user = authenticate(request)
        directory = state_of(request).directory
        if admin:  # before the body is read: a non-admin learns nothing of it
            directory.require(user, None, Permission.ADMIN)
        given = [request.path_params.get("project"), request.query_params.get("project"), await _body_project(request)]
        return requirement.check(directory, user, given)

    dependency.requirement = requirement  # type: ignore[attr-defined]
    return dependency
