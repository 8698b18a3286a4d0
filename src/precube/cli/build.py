"""`precube build|refresh|merge|segments`: run builds synchronously, with a progress bar per stage."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

from precube.build.context import BuildContext
from precube.build.operations import build_layouts, build_segment, merge_segments, refresh_segment
from precube.cli.context import MODEL, PROJECT, CliContext, console, err_console, project_state, when
from precube.errors import InvalidInputError, PrecubeError
from precube.metadata import Dataflow, Segment, TimeRange
from precube.modeling.model_store import require_model
from precube.modeling.partition_format import to_epoch_ms
from precube.modeling.segments import default_build_start, display_status


def parse_time(value: str) -> int:
    """Epoch ms from `2024-01-31`, `2024-01-31 12:00:00` or a number of milliseconds (UTC)."""
    text = value.strip()
    if text.isdigit() and len(text) > 8:
        return int(text)
    for fmt in ("yyyy-MM-dd", "yyyy-MM-dd HH:mm:ss", "yyyyMMdd"):
        try:
            return to_epoch_ms(text, fmt)
        except PrecubeError:  # not this spelling: try the next one
            continue
    raise InvalidInputError(f"cannot read time {value!r}: use YYYY-MM-DD, 'YYYY-MM-DD HH:MM:SS' or epoch milliseconds")


@contextmanager
def _running(cli: CliContext, project: str) -> Iterator[BuildContext]:
    columns = (TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    spark = cli.spark()
    with Progress(*columns, console=err_console) as bars:
        tasks: dict[str, TaskID] = {}

        def report(stage: str, done: int, total: int) -> None:
            key = stage.split("/")[0] if stage.startswith("layer") else stage
            if key not in tasks:
                tasks[key] = bars.add_task(stage, total=total)
            bars.update(tasks[key], completed=done, total=total, description=stage)

        yield BuildContext(spark, cli.store(), project, cli.settings.warehouse_root, cli.writer, progress=report)


def _done(segment: Segment, verb: str) -> None:
    console.print(
        f"{verb} segment [bold]{segment.name}[/] ({segment.id}): {segment.source_count:,} source rows, "
        f"[{when(segment.range.start)}, {when(segment.range.end)})"
    )


def build(
    ctx: typer.Context,
    project: str = PROJECT,
    model: str = MODEL,
    start: str | None = typer.Option(None, "--start", help="Start (inclusive); default: the last segment's end."),
    end: str | None = typer.Option(None, "--end", help="End (exclusive); required for a partitioned model."),
    full: bool = typer.Option(False, "--full", help="Full build (non-partitioned models)."),
    add_layouts: bool = typer.Option(False, "--add-layouts", help="Build layouts missing from existing segments."),
) -> None:
    """Build a segment from source (incremental: it starts where the last segment ends)."""
    cli = project_state(ctx, project)
    with _running(cli, project) as bctx:
        if add_layouts:
            built = build_layouts(bctx, model)
            count = sum(len(v) for v in built.values())
            console.print(f"built {count} layouts into {len(built)} segments")
            return
        rng = None if full else _range(cli, project, model, start, end)
        _done(build_segment(bctx, model, rng), "built")


def _range(cli: CliContext, project: str, model: str, start: str | None, end: str | None) -> TimeRange | None:
    with cli.store().read(project) as tx:
        m = require_model(tx, model)
        segments = tx.require(Dataflow, m.uuid).segments
    if m.partition_desc is None:
        if start or end:
            raise InvalidInputError(f"model {m.alias} has no partition column: build it with --full")
        return None
    if end is None:
        raise InvalidInputError(f"model {m.alias} is partitioned: give --end (and --start for the first segment)")
    begin = parse_time(start) if start else default_build_start(segments)
    if begin is None:
        raise InvalidInputError(f"model {m.alias} has no segment yet: give --start")
    return TimeRange.of(begin, parse_time(end))


def refresh(
    ctx: typer.Context,
    segment: str = typer.Argument(..., help="Segment id or name."),
    project: str = PROJECT,
    model: str = MODEL,
) -> None:
    """Rebuild a segment from source and swap it in atomically."""
    cli = project_state(ctx, project)
    with _running(cli, project) as bctx:
        _done(refresh_segment(bctx, model, segment), "refreshed")


def merge(
    ctx: typer.Context,
    segments: list[str] = typer.Argument(..., help="Two or more contiguous segments (ids or names)."),
    project: str = PROJECT,
    model: str = MODEL,
) -> None:
    """Merge contiguous segments into one (no source read)."""
    cli = project_state(ctx, project)
    with _running(cli, project) as bctx:
        _done(merge_segments(bctx, model, segments), "merged into")


def segments(ctx: typer.Context, project: str = PROJECT, model: str = MODEL) -> None:
    """List a model's segments."""
    store = project_state(ctx, project).store()
    with store.read(project) as tx:
        m = require_model(tx, model)
        dataflow = tx.require(Dataflow, m.uuid)
    view = RichTable("segment", "id", "start", "end", "status", "source rows", title=f"{m.alias}: {dataflow.status}")
    for seg in sorted(dataflow.segments, key=lambda s: s.range):
        view.add_row(
            seg.name,
            seg.id,
            when(seg.range.start),
            when(seg.range.end),
            str(display_status(seg, dataflow.segments)),
            f"{seg.source_count:,}",
        )
    console.print(view)


COMMANDS: dict[str, Callable[..., None]] = {"build": build, "refresh": refresh, "merge": merge, "segments": segments}
