"""`precube project create|list|delete`."""

from __future__ import annotations

import datetime as dt

import typer
from rich.table import Table as RichTable

from precube.cli.context import console, state
from precube.metadata import Project, Table

app = typer.Typer(help="Create, list and delete projects.", no_args_is_help=True)


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
    name: str = typer.Argument(..., help="Project to delete with all its metadata."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Delete a project and all of its metadata."""
    cli = state(ctx)
    store = cli.store()
    store.require_project(name)
    if not yes:
        typer.confirm(f"delete project {name} and all of its metadata?", abort=True)
    count = store.delete_project(name, writer=cli.writer)
    console.print(f"deleted project [bold]{name}[/] ({count} documents)")
