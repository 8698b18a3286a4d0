"""`precube build|refresh|merge|segments` and `precube segment list|delete|rolling`: each operation
becomes a job, run here with `--wait` (live progress) or handed to the background job runner."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import typer

from precube.cli.context import (
    DRY_RUN,
    FORMAT,
    MODEL,
    PROJECT,
    YES,
    CliContext,
    Columns,
    OutputFormat,
    confirm_drop,
    console,
    print_records,
    project_state,
    state,
    when,
)
from precube.cli.follow import hand_off, wait_for
from precube.errors import InvalidInputError
from precube.jobs.build_range import build_range, parse_time
from precube.jobs.lifecycle import delete_segments
from precube.jobs.plans import build_job, index_build_job, merge_job, refresh_job, segments_in
from precube.jobs.submission import submit_all
from precube.metadata import Dataflow, Job, MetadataStore, TimeRange
from precube.modeling.model_store import require_model
from precube.modeling.rolling import plan_rolling

WAIT = typer.Option(False, "--wait", "-w", help="Run the job here and block until it (and the jobs after it) end.")
PRIORITY = typer.Option(3, "--priority", min=0, max=4, help="0 runs first, 4 last.")


def run_jobs(cli: CliContext, project: str, jobs: Sequence[Job], wait: bool) -> None:
    """Submit `jobs` (all, or none when one is refused), then wait for them or hand them off."""
    submitted = submit_all(cli.store(), project, jobs, cli.writer)
    if wait:
        wait_for(cli, project, submitted)
    else:
        hand_off(cli, project, submitted)


def build(
    ctx: typer.Context,
    project: str = PROJECT,
    model: str = MODEL,
    start: str | None = typer.Option(None, "--start", help="Start (inclusive); default: the last segment's end."),
    end: str | None = typer.Option(None, "--end", help="End (exclusive); required for a partitioned model."),
    full: bool = typer.Option(False, "--full", help="Full build (non-partitioned models)."),
    add_layouts: bool = typer.Option(False, "--add-layouts", help="Build layouts missing from existing segments."),
    priority: int = PRIORITY,
    wait: bool = WAIT,
) -> None:
    """Build a segment from source (incremental: it starts where the last segment ends)."""
    remote = state(ctx).remote()
    if remote is not None:
        from precube.cli import remote_jobs

        if add_layouts:
            remote_jobs.index_build(remote, project, model, priority, wait)
        else:
            times = {} if full else {k: str(parse_time(v)) for k, v in (("start", start), ("end", end)) if v}
            remote_jobs.build(remote, project, model, {**times, "priority": priority}, wait)
        return
    cli = project_state(ctx, project)
    store = cli.store()
    if add_layouts:
        job = index_build_job(store, project, model, priority)
    else:
        job = build_job(store, project, model, None if full else _range(store, project, model, start, end), priority)
    run_jobs(cli, project, [job], wait)


def _range(store: MetadataStore, project: str, model: str, start: str | None, end: str | None) -> TimeRange | None:
    return build_range(store, project, model, parse_time(start) if start else None, parse_time(end) if end else None)


def refresh(
    ctx: typer.Context,
    segments: list[str] = typer.Argument(None, help="Segment ids or names (or give --start/--end)."),
    project: str = PROJECT,
    model: str = MODEL,
    start: str | None = typer.Option(None, "--start", help="Refresh every segment holding data from here…"),
    end: str | None = typer.Option(None, "--end", help="…to here (exclusive)."),
    priority: int = PRIORITY,
    wait: bool = WAIT,
) -> None:
    """Rebuild segments from source, each swapped in atomically when its job ends (one job per segment)."""
    remote = state(ctx).remote()
    targets = list(segments or [])
    if (start is not None or end is not None) and (start is None or end is None or targets):
        raise InvalidInputError("refresh takes segments, or a range with both --start and --end, not both")
    if remote is not None:
        from precube.cli import remote_jobs

        if start is not None and end is not None:
            targets = remote_jobs.segments_in(remote, project, model, parse_time(start), parse_time(end))
        if not targets:
            raise InvalidInputError("name the segments to refresh, or give --start and --end")
        remote_jobs.change(remote, project, model, "REFRESH", targets, priority, wait)
        return
    cli = project_state(ctx, project)
    store = cli.store()
    if start is not None and end is not None:
        targets = segments_in(store, project, model, TimeRange.of(parse_time(start), parse_time(end)))
    if not targets:
        raise InvalidInputError("name the segments to refresh, or give --start and --end")
    run_jobs(cli, project, [refresh_job(store, project, model, t, priority) for t in targets], wait)


def merge(
    ctx: typer.Context,
    segments: list[str] = typer.Argument(..., help="Two or more contiguous segments (ids or names)."),
    project: str = PROJECT,
    model: str = MODEL,
    priority: int = PRIORITY,
    wait: bool = WAIT,
) -> None:
    """Merge contiguous segments into one (no source read)."""
    remote = state(ctx).remote()
    if remote is not None:
        from precube.cli import remote_jobs

        remote_jobs.change(remote, project, model, "MERGE", list(segments), priority, wait)
        return
    cli = project_state(ctx, project)
    run_jobs(cli, project, [merge_job(cli.store(), project, model, segments, priority)], wait)


# `segments`' table (local and through a server): a record's cells
SEGMENT_COLUMNS: Columns = {
    "segment": lambda r: r["segment"],
    "id": lambda r: r["id"],
    "start": lambda r: when(r["start"]),
    "end": lambda r: when(r["end"]),
    "status": lambda r: r["status"],
    "source rows": lambda r: "-" if r["source_rows"] is None else f"{r['source_rows']:,}",
}


def segments(ctx: typer.Context, project: str = PROJECT, model: str = MODEL, fmt: OutputFormat = FORMAT) -> None:
    """List a model's segments."""
    remote = state(ctx).remote()
    if remote is not None:
        from precube.cli import remote_jobs

        remote_jobs.segments(remote, project, model, fmt)
        return
    from precube.jobs.segment_listing import list_segments

    cli = project_state(ctx, project)
    listing = list_segments(cli.store(), cli.settings.warehouse_root, project, model)
    records = [
        {
            "segment": view.segment.name,
            "id": view.segment.id,
            "start": view.segment.range.start,
            "end": view.segment.range.end,
            "status": str(view.status),
            "source_rows": view.source_rows,
        }
        for view in listing.segments
    ]
    print_records(fmt, records, SEGMENT_COLUMNS, title=f"{listing.model.alias}: {listing.dataflow.status}")


COMMANDS: dict[str, Callable[..., None]] = {"build": build, "refresh": refresh, "merge": merge, "segments": segments}

segment_app = typer.Typer(help="A model's segments: list, delete, rolling refresh.", no_args_is_help=True)
segment_app.command("list")(segments)


@segment_app.command("delete")
def delete(
    ctx: typer.Context,
    targets: list[str] = typer.Argument(..., help="Segment ids or names."),
    project: str = PROJECT,
    model: str = MODEL,
    yes: bool = YES,
    dry_run: bool = DRY_RUN,
) -> None:
    """Delete segments (not one being refreshed or merged), after showing them and asking; their files go
    at the next GC."""
    from precube.jobs.removal import preview_segment_removal

    remote = state(ctx).remote()
    if remote is not None:
        from precube.cli import remote_jobs

        remote_jobs.delete_segments(remote, project, model, list(targets), yes, dry_run)
        return
    cli = project_state(ctx, project)
    preview = preview_segment_removal(cli.store(), cli.settings.warehouse_root, project, model, targets)
    if not confirm_drop(preview.describe(), yes, dry_run):
        return
    for segment in delete_segments(cli.store(), project, model, targets, cli.writer):
        console.print(f"deleted segment [bold]{segment.name}[/] ({segment.id}), {segment.range}")


@segment_app.command("rolling")
def rolling(
    ctx: typer.Context,
    days: int = typer.Option(..., "--days", min=0, help="Refresh the segments holding the last N days."),
    project: str = PROJECT,
    model: str = MODEL,
    segment_days: int | None = typer.Option(None, "--segment-days", min=1, help="Segment length; default N."),
    today: str | None = typer.Option(None, "--today", help="The day to build (UTC); default today."),
    priority: int = PRIORITY,
    wait: bool = WAIT,
) -> None:
    """Seed 001 §4.6: build the N-day segment holding today if it is missing, and refresh the segments that
    still hold data of the last N days, as one set of jobs."""
    cli = project_state(ctx, project)
    store = cli.store()
    day = dt.date.fromisoformat(today) if today else dt.datetime.now(dt.UTC).date()
    with store.read(project) as tx:
        m = require_model(tx, model)
        current = tx.require(Dataflow, m.uuid).segments
    if m.partition_desc is None:
        raise InvalidInputError(f"model {m.alias} has no partition column: rolling segments need one")
    plan = plan_rolling(day, current, days, segment_days or max(days, 1))
    jobs = [build_job(store, project, model, plan.build, priority)] if plan.build is not None else []
    by_range = {s.range: s.id for s in current}
    jobs += [refresh_job(store, project, model, by_range[r], priority) for r in plan.refresh]
    if not jobs:
        console.print("nothing to do")
        return
    run_jobs(cli, project, jobs, wait)
