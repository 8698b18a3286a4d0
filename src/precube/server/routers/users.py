"""Kylin 5's user, user-group and project-ACL endpoints: `/api/user…`, `/api/user_group`,
`/api/access/project` and `/api/access/acls`, and precube's sign-in locks (`/api/user/locked`,
`/api/user/unlock`: Kylin has no endpoint for them). Users, groups and locks are the system admin's; a project's
ACL is its ADMIN's. Password hashes never leave the directory."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from precube.auth import Permission, User, check_user_name
from precube.auth.throttle import ADDRESS, USER
from precube.errors import InvalidInputError
from precube.server.envelope import Paging, ok, page, paging
from precube.server.security import Caller, requires, state_of

router = APIRouter(tags=["users"])

PrincipalType = Literal["user", "group", "USER", "GROUP"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewUser(_Body):
    username: str = Field(max_length=100)
    password: str = Field(max_length=1024)
    disabled: bool = False
    authorities: list[str] = Field(default_factory=list, max_length=100, description="Groups, e.g. ROLE_ADMIN.")


class UserUpdate(_Body):
    username: str = Field(max_length=100)
    authorities: list[str] | None = Field(default=None, max_length=100, description="Replaces the user's groups.")
    disabled: bool | None = None


class PasswordChange(_Body):
    username: str = Field(max_length=100)
    password: str | None = Field(default=None, max_length=1024, description="The old password (own password).")
    new_password: str = Field(max_length=1024)


class UserName(_Body):
    username: str = Field(max_length=100)


class Unlock(_Body):
    username: str | None = Field(default=None, max_length=100, description="The user to unlock.")
    address: str | None = Field(default=None, max_length=100, description="Or the client address to unlock.")


class Grant(_Body):
    project: str
    type: PrincipalType
    permission: str = Field(max_length=40, description="QUERY, OPERATION, MANAGEMENT or ADMIN (READ, ADMINISTRATION).")
    names: list[str] = Field(min_length=1, max_length=1000)


class GrantUpdate(_Body):
    project: str
    type: PrincipalType
    permission: str = Field(max_length=40)
    name: str = Field(max_length=100)


def _is_user(kind: str) -> bool:
    return kind.lower() == "user"


# -- the signed-in user ------------------------------------------------------------------------------


@router.get("/user/authentication")
@router.post("/user/authentication")
def authentication(caller: Caller = Depends(requires())) -> dict[str, Any]:
    """The signed-in user's details (Kylin's login call)."""
    return ok(caller.user.public())


# -- users (system admin) ----------------------------------------------------------------------------


@router.get("/user")
def list_users(
    request: Request,
    name: str | None = Query(None, max_length=100, description="Only users whose name contains this."),
    is_case_sensitive: bool = False,
    paged: Paging = Depends(paging),
    caller: Caller = Depends(requires(admin=True)),
) -> dict[str, Any]:
    state = state_of(request)
    users = state.directory.users()
    locked = {r.name.lower() for r in state.signin.throttle.locks() if r.kind == USER}
    if name:
        if is_case_sensitive:
            users = [u for u in users if name in u.username]
        else:
            users = [u for u in users if name.lower() in u.username.lower()]
    return ok(page([{**u.public(), "locked": u.username.lower() in locked} for u in users], paged))


@router.post("/user")
def create_user(request: Request, body: NewUser, caller: Caller = Depends(requires(admin=True))) -> dict[str, Any]:
    user = state_of(request).directory.add_user(
        body.username, body.password, body.authorities, body.disabled, writer=caller.writer
    )
    return ok(user.public())


@router.put("/user")
def update_user(request: Request, body: UserUpdate, caller: Caller = Depends(requires(admin=True))) -> dict[str, Any]:
    """Replace a user's groups and/or enable or disable them (the last system admin cannot lose admin)."""
    if body.authorities is None and body.disabled is None:
        raise InvalidInputError("nothing to change: give authorities and/or disabled")
    user = state_of(request).directory.update_user(
        body.username, groups=body.authorities, disabled=body.disabled, writer=caller.writer
    )
    return ok(user.public())


@router.put("/user/password")
def change_password(request: Request, body: PasswordChange, caller: Caller = Depends(requires())) -> dict[str, Any]:
    """A user changes their own password giving the old one; a system admin changes anyone's."""
    directory = state_of(request).directory
    user = directory.change_password(caller.user, body.username, body.new_password, body.password, writer=caller.writer)
    return ok(user.public())


@router.delete("/user/{username}")
def delete_user(username: str, request: Request, caller: Caller = Depends(requires(admin=True))) -> dict[str, Any]:
    """Delete a user and their grants (not the last system admin)."""
    state_of(request).directory.delete_user(username, writer=caller.writer)
    return ok("")


@router.delete("/user")
def delete_user_by_body(
    request: Request, body: UserName, caller: Caller = Depends(requires(admin=True))
) -> dict[str, Any]:
    """Kylin 5's form of the delete: the name in the body."""
    state_of(request).directory.delete_user(body.username, writer=caller.writer)
    return ok("")


@router.get("/user/locked")
def locked_users(request: Request, caller: Caller = Depends(requires(admin=True))) -> dict[str, Any]:
    """The user names and client addresses locked after failed sign-ins: `{type: user|address, name,
    wrong_time, last_failure, locked_time, locked_until}` (times in epoch ms)."""
    return ok([r.public() for r in state_of(request).signin.throttle.locks()])


@router.put("/user/unlock")
def unlock(request: Request, body: Unlock, caller: Caller = Depends(requires(admin=True))) -> dict[str, Any]:
    """Lift the sign-in lock of a user (`username`) or a client address (`address`) before it runs out."""
    throttle = state_of(request).signin.throttle
    if (body.username is None) == (body.address is None):
        raise InvalidInputError("give either username or address")
    if body.username is not None:
        record = throttle.unlock(USER, check_user_name(body.username), writer=caller.writer)
    else:
        record = throttle.unlock(ADDRESS, _address(str(body.address)), writer=caller.writer)
    return ok(record.public())


def _address(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError as err:
        raise InvalidInputError(f"address: {text[:100]!r} is not an IP address") from err


@router.get("/user_group")
def list_groups(
    request: Request,
    group_name: str | None = Query(None, max_length=100, description="Only groups whose name contains this."),
    paged: Paging = Depends(paging),
    caller: Caller = Depends(requires(admin=True)),
) -> dict[str, Any]:
    """The groups and their users."""
    directory = state_of(request).directory
    users = directory.users()
    groups = [
        {"group_name": g, "users": [u.username for u in users if g in u.groups]}
        for g in directory.known_groups()
        if not group_name or group_name.lower() in g.lower()
    ]
    return ok(page(groups, paged))


@router.get("/user_group/groups")
def group_names(
    request: Request,
    group_name: str | None = Query(None, max_length=100, description="Only groups whose name contains this."),
    is_case_sensitive: bool = False,
    paged: Paging = Depends(paging),
    caller: Caller = Depends(requires(admin=True)),
) -> dict[str, Any]:
    """The groups' names (Kylin 5's list); groups are Kylin's four and any group a user is in."""
    names = state_of(request).directory.known_groups()
    if group_name:
        names = [g for g in names if (group_name in g if is_case_sensitive else group_name.lower() in g.lower())]
    return ok(page(names, paged))


@router.get("/user_group/group_members/{group_name}")
def group_members(
    group_name: str,
    request: Request,
    username: str | None = Query(None, max_length=100, description="Only users whose name contains this."),
    paged: Paging = Depends(paging),
    caller: Caller = Depends(requires(admin=True)),
) -> dict[str, Any]:
    directory = state_of(request).directory
    directory.require_group(group_name)
    members = [
        u.public()
        for u in directory.users()
        if group_name in u.groups and (not username or username.lower() in u.username.lower())
    ]
    return ok(page(members, paged))


# -- project ACL (the project's ADMIN) ---------------------------------------------------------------


@router.get("/access/project")
def project_acl(
    request: Request,
    name: str | None = Query(None, max_length=100, description="Only users or groups whose name contains this."),
    paged: Paging = Depends(paging),
    caller: Caller = Depends(requires(Permission.ADMIN)),
) -> dict[str, Any]:
    """Who holds which permission on the project: `{type: user|group, name, permission}`."""
    state = state_of(request)
    project = str(caller.project)
    state.store.require_project(project)
    entries = [
        {"type": "user" if e.principal else "group", "name": e.sid, "permission": e.permission.name}
        for e in state.directory.acl(project).entries
        if not name or name.lower() in e.sid.lower()
    ]
    return ok(page(entries, paged))


@router.post("/access/project")
def grant(request: Request, body: Grant, caller: Caller = Depends(requires(Permission.ADMIN))) -> dict[str, Any]:
    """Grant `permission` on the project to each of `names` (replacing what they held there)."""
    directory = state_of(request).directory
    permission = Permission.parse(body.permission)
    for sid in body.names:  # all are checked first: a bad name grants nothing
        (directory.require_user(sid) if _is_user(body.type) else directory.require_group(sid))
    for sid in body.names:
        directory.grant(str(caller.project), sid, permission, principal=_is_user(body.type), writer=caller.writer)
    return ok("")


@router.put("/access/project")
def update_grant(
    request: Request, body: GrantUpdate, caller: Caller = Depends(requires(Permission.ADMIN))
) -> dict[str, Any]:
    """Change the permission a user or group holds on the project."""
    directory = state_of(request).directory
    directory.grant(
        str(caller.project),
        body.name,
        Permission.parse(body.permission),
        principal=_is_user(body.type),
        writer=caller.writer,
    )
    return ok("")


@router.delete("/access/project")
def revoke(
    request: Request,
    type: PrincipalType = Query(..., description="user or group"),  # Kylin's parameter name
    name: str = Query(..., max_length=100),
    caller: Caller = Depends(requires(Permission.ADMIN)),
) -> dict[str, Any]:
    state_of(request).directory.revoke(str(caller.project), name, principal=_is_user(type), writer=caller.writer)
    return ok("")


@router.get("/access/acls")
def acls_of(
    request: Request,
    type: PrincipalType = Query(..., description="user or group"),  # Kylin's parameter name
    name: str = Query(..., max_length=100),
    caller: Caller = Depends(requires(admin=True, project_optional=True)),
) -> dict[str, Any]:
    """The permission a user or group holds in each project (or in the `project` asked)."""
    state = state_of(request)
    directory = state.directory
    projects = [caller.project] if caller.project else [p.name for p in state.store.list_projects()]
    found: list[dict[str, Any]] = []
    if _is_user(type):
        user: User = directory.require_user(name)
        for project in projects:
            held = directory.permission(user, project)
            if held is not None:
                found.append({"project_name": project, "project_permission": held.name})
    else:
        directory.require_group(name)
        for project in projects:
            levels = [e.permission for e in directory.acl(project).entries if not e.principal and e.sid == name]
            if levels:
                found.append({"project_name": project, "project_permission": max(levels).name})
    return ok(found)
