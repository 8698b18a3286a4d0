"""`precube metadata backup|restore`."""

from __future__ import annotations

from pathlib import Path

import typer

from precube.cli.context import console, state
from precube.metadata import backup as backup_mod

app = typer.Typer(help="Back up and restore all metadata as a directory tree.", no_args_is_help=True)


@app.command("backup")
def backup(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., help="New or empty directory to write the tree into."),
    project: str | None = typer.Option(None, "--project", "-p", help="Only this project."),
) -> None:
    """Write every metadata document to DIRECTORY, one file per key."""
    count = backup_mod.backup(state(ctx).store(), directory, project)
    console.print(f"backed up {count} documents to {directory}")


@app.command("restore")
def restore(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., help="A directory written by `precube metadata backup`."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace all existing metadata."),
) -> None:
    """Load a backup tree into the metadata store (all or nothing)."""
    cli = state(ctx)
    count = backup_mod.restore(cli.store(), directory, overwrite=overwrite, writer=cli.writer)
    console.print(f"restored {count} documents from {directory}")
