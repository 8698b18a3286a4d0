"""`precube gc`: remove warehouse directories that no metadata references."""

from __future__ import annotations

import typer

from precube.cli.context import PROJECT, console, project_state
from precube.jobs.gc import collect_garbage

MB = 1_000_000


def gc(
    ctx: typer.Context,
    project: str = PROJECT,
    grace_hours: float | None = typer.Option(
        None,
        "--grace-hours",
        min=0,
        help="Keep unreferenced directories written or dropped from the metadata within this many hours "
        "(a build still writing, a query still reading); default: the jobs.gc_grace_hours setting (24).",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be removed; remove nothing."),
) -> None:
    """Remove a project's built data that no model, segment or layout refers to any more (local warehouses)."""
    cli = project_state(ctx, project)
    if grace_hours is None:
        grace_hours = cli.settings.jobs.gc_grace_hours
    report = collect_garbage(
        cli.store(), cli.settings.warehouse_root, project, grace_s=grace_hours * 3600, dry_run=dry_run
    )
    verb = "would remove" if dry_run else "removed"
    for garbage in report.removed:
        console.print(f"{verb} {garbage.path} ({garbage.bytes / MB:.1f} MB): {garbage.reason}", markup=False)
    for path in report.skipped:
        console.print(f"left alone {path}: not written by precube", markup=False)
    if report.pending:
        size = sum(g.bytes for g in report.pending) / MB
        console.print(
            f"kept {len(report.pending)} unreferenced directories ({size:.1f} MB) used within the last "
            f"{grace_hours:g} hours"
        )
    console.print(f"{verb} {len(report.removed)} directories, {report.bytes_freed / MB:.1f} MB")
