"""`precube user add|list|passwd|delete|locked|unlock` and `precube acl grant|revoke|list`: the server's users,
sign-in locks and project ACLs, edited on the metadata store directly (the same `Directory` and `Throttle` the
server reads; a running server sees a change within a second)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from precube.cli.context import DRY_RUN, FORMAT, YES, OutputFormat, confirm_drop, console, print_records, state, when

if TYPE_CHECKING:
    from precube.auth import Directory
    from precube.auth.throttle import Throttle

app = typer.Typer(help="The server's users: add, list, change passwords, delete, unlock.", no_args_is_help=True)
acl_app = typer.Typer(help="Project permissions of users and groups: grant, revoke, list.", no_args_is_help=True)

PASSWORD_STDIN = typer.Option(
    False, "--password-stdin", help="Read the password from the first line of standard input (for scripts)."
)


def _directory(ctx: typer.Context) -> Directory:
    from precube.auth import Directory

    cli = state(ctx)
    return Directory(cli.store(), refresh_s=0, writer=cli.writer)


def _throttle(ctx: typer.Context) -> Throttle:
    from precube.auth.throttle import Throttle

    cli = state(ctx)
    return Throttle(cli.store(), cli.settings.auth, refresh_s=0, writer=cli.writer)


def _password(from_stdin: bool) -> str:
    """The new password: from stdin's first line, else asked twice without echo."""
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    password: str = typer.prompt("password", hide_input=True, confirmation_prompt=True)
    return password


@app.command("add")
def add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="User name (letters, digits, '_', '.', '-')."),
    admin: bool = typer.Option(False, "--admin", help="A system admin (group ROLE_ADMIN): every project."),
    group: list[str] = typer.Option([], "--group", "-g", help="A group to join (repeatable), e.g. ROLE_ANALYST."),
    disabled: bool = typer.Option(False, "--disabled", help="Create the user disabled (cannot sign in)."),
    password_stdin: bool = PASSWORD_STDIN,
) -> None:
    """Add a user (asked for the password twice, hidden)."""
    from precube.auth import ROLE_ADMIN, check_user_name

    directory = _directory(ctx)
    check_user_name(name)  # before asking for a password
    groups = [*group, ROLE_ADMIN] if admin else list(group)
    user = directory.add_user(name, _password(password_stdin), groups, disabled)
    console.print(f"added user [bold]{user.username}[/] (groups {', '.join(user.groups)})")


@app.command("list")
def list_(ctx: typer.Context, fmt: OutputFormat = FORMAT) -> None:
    """List users and their groups (never their password hashes)."""
    records = [u.public() for u in _directory(ctx).users()]
    print_records(
        fmt,
        records,
        {
            "user": lambda r: str(r["username"]),
            "groups": lambda r: ", ".join(a["authority"] for a in r["authorities"]),
            "disabled": lambda r: "yes" if r["disabled"] else "",
            "created (UTC)": lambda r: when(r["create_time"]),
        },
    )


@app.command("passwd")
def passwd(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The user whose password to set."),
    password_stdin: bool = PASSWORD_STDIN,
) -> None:
    """Set a user's password (the old one stops working at once)."""
    directory = _directory(ctx)
    directory.require_user(name)
    directory.update_user(name, password=_password(password_stdin))
    console.print(f"changed the password of [bold]{name}[/]")


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The user to delete, with their project grants."),
    yes: bool = YES,
    dry_run: bool = DRY_RUN,
) -> None:
    """Delete a user and their project grants (shown first, and asked for); not the last system admin."""
    directory = _directory(ctx)
    directory.require_user(name)
    projects = [p.name for p in state(ctx).store().list_projects()]
    granted = [p for p in projects if any(e.principal and e.sid == name for e in directory.acl(p).entries)]
    what = f"user {name}" + (f" and their grants on {', '.join(granted)}" if granted else " (no project grants)")
    if not confirm_drop(what, yes, dry_run, verb="delete"):
        return
    directory.delete_user(name)
    console.print(f"deleted user [bold]{name}[/]")


@app.command("locked")
def locked(ctx: typer.Context, fmt: OutputFormat = FORMAT) -> None:
    """User names and client addresses locked after failed sign-ins, and until when."""
    records = [r.public() for r in _throttle(ctx).locks()]
    print_records(
        fmt,
        records,
        {
            "type": _cell("type"),
            "name": _cell("name"),
            "failures": _cell("wrong_time"),
            "locked since (UTC)": lambda r: when(r["locked_time"]),
            "until (UTC)": lambda r: when(r["locked_until"]),
        },
    )


@app.command("unlock")
def unlock(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The user (or, with --address, the client address) to unlock."),
    address: bool = typer.Option(False, "--address", help="NAME is a client address (as `precube user locked` shows)."),
) -> None:
    """Lift a sign-in lock (and forget the failures that caused it) before it runs out."""
    from precube.auth import check_user_name
    from precube.auth.throttle import ADDRESS, USER

    if not address:
        check_user_name(name)
    record = _throttle(ctx).unlock(ADDRESS if address else USER, name)
    console.print(f"unlocked {'client address' if address else 'user'} [bold]{record.name}[/]")


@acl_app.command("grant")
def grant(
    ctx: typer.Context,
    project: str = typer.Argument(..., help="Project name."),
    name: str = typer.Argument(..., help="User (or, with --group, group) name."),
    permission: str = typer.Argument(..., help="QUERY, OPERATION, MANAGEMENT or ADMIN (each includes the lower)."),
    group: bool = typer.Option(False, "--group", help="NAME is a group."),
) -> None:
    """Give a user or group a permission on a project (replacing what it held there)."""
    from precube.auth import Permission

    level = Permission.parse(permission)
    _directory(ctx).grant(project, name, level, principal=not group)
    console.print(f"granted {level.name} on {project} to {'group' if group else 'user'} [bold]{name}[/]")


@acl_app.command("revoke")
def revoke(
    ctx: typer.Context,
    project: str = typer.Argument(..., help="Project name."),
    name: str = typer.Argument(..., help="User (or, with --group, group) name."),
    group: bool = typer.Option(False, "--group", help="NAME is a group."),
) -> None:
    """Take a user's or group's permission on a project away."""
    _directory(ctx).revoke(project, name, principal=not group)
    console.print(f"revoked the permission of {'group' if group else 'user'} [bold]{name}[/] on {project}")


@acl_app.command("list")
def list_acl(
    ctx: typer.Context, project: str = typer.Argument(..., help="Project name."), fmt: OutputFormat = FORMAT
) -> None:
    """Who holds which permission on a project (system admins hold ADMIN everywhere)."""
    state(ctx).store().require_project(project)
    records = [
        {"type": "user" if e.principal else "group", "name": e.sid, "permission": e.permission.name}
        for e in _directory(ctx).acl(project).entries
    ]
    print_records(
        fmt,
        records,
        {column: _cell(column) for column in ("type", "name", "permission")},
        title=f"project {project}",
    )


def _cell(column: str) -> Callable[[dict[str, Any]], str]:
    return lambda record: str(record[column])
