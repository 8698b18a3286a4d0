"""`precube project create|list|delete|config`."""

from __future__ import annotations

import datetime as dt

import typer
from rich.table import Table as RichTable

from precube.cli import segment_settings as seg
from precube.cli.context import DRY_RUN, PROJECT, YES, confirm_drop, console, project_state, state
from precube.jobs import lifecycle
from precube.jobs.lifecycle import FIRST_DAY_OF_WEEK
from precube.metadata import Project, Table
from precube.service.queries import PUSHDOWN_PROPERTY

app = typer.Typer(help="Create, list and delete projects; view or change their segment settings.", no_args_is_help=True)


@app.command("create")
def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Project name (letters, digits, underscores)."),
    default_database: str = typer.Option("DEFAULT", "--default-database", "-d", help="Database for bare names."),
    description: str = typer.Option("", "--description", help="Free text."),
) -> None:
    """Create a project."""
    cli = state(ctx)
    project = Project(name=name, default_database=default_database.upper(), description=description)
    cli.store().create_project(project, writer=cli.writer)
    console.print(f"created project [bold]{name}[/] (default database {project.default_database})")


@app.command("list")
def list_(ctx: typer.Context) -> None:
    """List projects."""
    store = state(ctx).store()
    view = RichTable("project", "default database", "tables", "created (UTC)", "description")
    for p in store.list_projects():
        with store.read(p.name) as tx:
            tables = len(tx.list(Table))
        created = dt.datetime.fromtimestamp(p.create_time / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M")
        view.add_row(p.name, p.default_database, str(tables), created, p.description)
    console.print(view)


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Project to delete with all its metadata and built data."),
    yes: bool = YES,
    dry_run: bool = DRY_RUN,
) -> None:
    """Delete a project: its metadata and its built data (shown first, and asked for)."""
    from precube.jobs.removal import preview_project_removal, remove_project

    cli = state(ctx)
    store = cli.store()
    store.require_project(name)
    found = preview_project_removal(store, cli.settings.warehouse_root, name)
    if not confirm_drop(found.describe(), yes, dry_run, verb="delete"):
        return
    remove_project(store, cli.settings.warehouse_root, name, cli.writer)
    console.print(f"deleted project [bold]{name}[/]")


@app.command("config")
def config(
    ctx: typer.Context,
    project: str = PROJECT,
    auto_merge: bool | None = seg.AUTO_MERGE,
    merge_levels: str | None = seg.MERGE_LEVELS,
    merge_thresholds: str | None = seg.MERGE_THRESHOLDS,
    volatile: str | None = seg.VOLATILE,
    no_volatile: bool = seg.NO_VOLATILE,
    retention: str | None = seg.RETENTION,
    no_retention: bool = seg.NO_RETENTION,
    first_day_of_week: str | None = typer.Option(
        None, "--first-day-of-week", help="Week start for WEEK merges: monday or sunday.", show_default=False
    ),
    pushdown: str | None = typer.Option(
        None,
        "--pushdown",
        help=f"on or off: may queries no layout answers run on the source tables ({PUSHDOWN_PROPERTY}).",
        show_default=False,
    ),
) -> None:
    """Show the project's settings (auto-merge, its levels, volatile range, retention, first day of week,
    pushdown), or change those given; models take the segment settings unless they override them (`precube
    model config`)."""
    cli = project_state(ctx, project)
    edits = seg.SegmentEdits.parse(
        auto_merge, merge_levels, volatile, no_volatile, retention, no_retention, merge_thresholds
    )
    first_day = None if first_day_of_week is None else seg.parse_first_day(first_day_of_week)
    allowed = None if pushdown is None else _on_off(pushdown)
    from precube.jobs.project_settings import pushdown_enabled, update_project_settings

    store = cli.store()
    if edits or first_day is not None or allowed is not None:
        properties: dict[str, str | None] = {}
        if first_day is not None:
            properties[FIRST_DAY_OF_WEEK] = first_day
        if allowed is not None:
            properties[PUSHDOWN_PROPERTY] = "true" if allowed else "false"
        changes = edits.changes(store.get_project(project).segment_config)
        update_project_settings(store, project, cli.writer, changes, properties)
        console.print(f"updated the settings of project [bold]{project}[/]")
    p = store.get_project(project)
    day = lifecycle.first_day_of_week(p)
    view = seg.settings_table(p.segment_config, day)
    view.add_row("pushdown", "on" if pushdown_enabled(p) else "off")  # the project's, as `Session` reads it
    console.print(view)


def _on_off(value: str) -> bool:
    found = {"on": True, "true": True, "off": False, "false": False}.get(value.strip().lower())
    if found is None:
        raise typer.BadParameter(f"--pushdown must be on or off, not {value!r}")
    return found
