"""The one place where requests are authenticated and permissions checked: every route declares what it
needs as a dependency (`requires(Permission.QUERY)`, `requires(admin=True)`, `requires()` for any
signed-in user); no handler decides access itself.

Credentials are HTTP Basic. The project a permission is checked on is the route's `{project}` path
parameter, else its `project` query parameter, else the `project` field of its JSON body."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from precube.auth import AuthenticationError, Permission, User
from precube.errors import InvalidInputError
from precube.metadata.paths import check_project_name
from precube.server.state import ServerState


@dataclass(frozen=True)
class Caller:
    """Who is calling, the project the route acts on (None for system-wide routes) and what they hold there."""

    user: User
    project: str | None
    permission: Permission | None

    @property
    def name(self) -> str:
        return self.user.username


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


def _credentials(request: Request) -> tuple[str, str]:
    header = request.headers.get("authorization", "")
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


async def authenticate(request: Request) -> User:
    """The signed-in user (401 otherwise); remembered passwords cost no hashing."""
    username, password = _credentials(request)
    directory = state_of(request).directory
    user = directory.remembered(username, password)
    if user is None:
        user = await run_in_threadpool(directory.authenticate, username, password)
    request.state.user = user.username  # for the access log
    return user


async def _project_of(request: Request) -> str | None:
    name = request.path_params.get("project") or request.query_params.get("project")
    if name is None and request.method in ("POST", "PUT", "DELETE", "PATCH"):
        body = await request.body()
        if body:
            try:
                parsed = json.loads(body)
            except ValueError as err:
                raise InvalidInputError(f"the request body is not valid JSON: {err}") from err
            found = parsed.get("project") if isinstance(parsed, dict) else None
            if found is not None and not isinstance(found, str):
                raise InvalidInputError("project must be a string")
            name = found
    return None if name is None else check_project_name(name)


def requires(
    level: Permission | None = None, *, admin: bool = False, project_optional: bool = False
) -> Callable[[Request], Awaitable[Caller]]:
    """A dependency: the caller must be signed in and hold `level` on the request's project (a system
    admin when `admin`). `project_optional`: a route that may act on every project the caller can see."""

    async def dependency(request: Request) -> Caller:
        user = await authenticate(request)
        directory = state_of(request).directory
        if admin:
            directory.require(user, None, Permission.ADMIN)
        project = await _project_of(request)
        if level is not None and project is None and not project_optional:
            raise InvalidInputError("project is required")
        if level is not None and project is not None:
            directory.require(user, project, level)
        held = directory.permission(user, project) if project is not None else None
        return Caller(user, project, held)

    return dependency
