"""The build operations the job engine calls (seed 003): build, refresh and merge segments, and build
newly added layouts into existing segments. Each is resumable: rerunning it after a crash finds its
NEW segment again and skips the layouts already recorded; nothing is queryable until the final
commit, which promotes the segment and removes the ones it replaces in one transaction."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from precube.engine.context import (
    LAYOUTS_STEP,
    BuildContext,
    ModelState,
    add_segment,
    built_layouts,
    load_state,
    record_layout,
)
from precube.engine.errors import BuildConflictError
from precube.engine.join_stats import duplicate_keys, join_stats, known_duplicates, merged_join_stats
from precube.engine.layers import build_into_segment, write_layout
from precube.engine.layout_build import compute_layout
from precube.engine.lookup_snapshot import newest_snapshots, take_snapshots
from precube.engine.segment_flat import SegmentFlat
from precube.engine.segment_stats import segment_stats
from precube.engine.source_reads import SourceReads
from precube.metadata import (
    Dataflow,
    DataflowStatus,
    Layout,
    LayoutInstance,
    Segment,
    SegmentDetails,
    SegmentStatus,
    TimeRange,
)
from precube.metadata import datatypes as dt
from precube.metadata.dataflow import DimensionRange, JoinStat
from precube.metadata.entity import now_ms
from precube.metadata.lookup_snapshot import LookupSnapshot
from precube.modeling.segments import new_segment, promote, validate_build, validate_merge, validate_refresh
from precube.storage.paths import layout_path

OPERATION = "operation"  # Segment.additional_info key: which operation created a NEW segment


def _layouts(state: ModelState, layout_ids: Iterable[int] | None) -> list[Layout]:
    layouts = state.plan.all_layouts()
    if layout_ids is None:
        return layouts
    wanted = set(layout_ids)
    unknown = wanted - {lay.id for lay in layouts}
    if unknown:
        raise BuildConflictError(f"model {state.model.alias} has no layouts {sorted(unknown)}")
    return [lay for lay in layouts if lay.id in wanted]


def _resume(state: ModelState, operation: str, rng: TimeRange) -> Segment | None:
    return next(
        (
            s
            for s in state.dataflow.segments
            if s.status is SegmentStatus.NEW and s.range == rng and s.additional_info.get(OPERATION) == operation
        ),
        None,
    )


def _start(ctx: BuildContext, state: ModelState, operation: str, rng: TimeRange) -> Segment:
    found = _resume(state, operation, rng)
    if found is not None:
        return found
    segment = new_segment(rng).model_copy(update={"additional_info": {OPERATION: operation}})
    return add_segment(ctx, state.model, segment)


def _built(ctx: BuildContext, state: ModelState, segment_id: str) -> dict[int, tuple[Layout, LayoutInstance]]:
    result = {}
    for i, li in built_layouts(ctx, state.model, segment_id).items():
        layout = state.plan.layout(i)
        if layout is not None:
            result[i] = (layout, li)
    return result


def _reads(ctx: BuildContext, state: ModelState, rng: TimeRange) -> SourceReads:
    """The source reads of one build of `rng`, with the lookups the process keeps."""
    return SourceReads(ctx.spark, state.model, state.tables, rng, ctx.lookups)


def _build_from_source(ctx: BuildContext, state: ModelState, segment: Segment, layouts: list[Layout]) -> Segment:
    """Build the layouts into the NEW segment from source, then commit it; each step timed in `ctx.report`."""
    report = ctx.report
    with report.step("source plan"):
        reads = _reads(ctx, state, segment.range)
    if reads.plan is not None:
        report.scans.append(reads.plan)
    flat = SegmentFlat(ctx, state, segment, layouts, reads)
    # What depends on the lookups alone (their snapshots, their duplicate keys) is small Spark jobs that wait
    # mostly on scheduling and file commits: they run beside the layouts, in the gaps of the layouts' jobs.
    with ThreadPoolExecutor(2, thread_name_prefix="precube-lookups") as beside:
        snapshotting = beside.submit(take_snapshots, ctx, state, reads)
        built_from_source = [s for s in state.dataflow.segments if s.additional_info.get(OPERATION) != "merge"]
        known = known_duplicates(state.model, state.tables, built_from_source)
        unknown = [j.alias for j in state.model.join_tables if j.alias not in known]
        counting = beside.submit(duplicate_keys, reads, state.model, unknown)
        try:
            built = _built(ctx, state, segment.id)
            with report.step("flat table"):  # a small segment's, counted; a larger one's is read by the layouts
                flat_rows = flat.small_rows() if any(lay.id not in built for lay in layouts) else None
            with report.step(LAYOUTS_STEP):
                estimate = reads.estimated_rows
                build_into_segment(ctx, state.model, segment.id, layouts, built, flat.read, None, flat_rows, estimate)
            info = {**segment.additional_info, **flat.dictionaries}
            path = functools.partial(layout_path, ctx.warehouse_root, ctx.project, state.model.uuid, segment.id)
            with report.step("segment stats"):
                stats = segment_stats(ctx.spark, state.model, built, path, flat.count, flat.null_counts)
            with report.step("join stats"):
                duplicates = {**known, **counting.result()}
                joins = join_stats(reads, state.model, segment.range, flat.orphans(), duplicates)
            with report.step("snapshots"):
                snapshots = snapshotting.result()
        finally:
            flat.close()
    record = SegmentRecord(
        source_count=stats.source_rows,
        ranges=stats.ranges,
        info=info,
        snapshots=snapshots,
        null_counts=stats.null_counts,
        joins=joins,
    )
    with report.step("commit"):
        return _commit(ctx, state, segment.id, record)


def build_segment(
    ctx: BuildContext, model_alias: str, time_range: TimeRange | None = None, layout_ids: Iterable[int] | None = None
) -> Segment:
    """Build a new segment of `time_range` (None: the full build of a non-partitioned model) from source."""
    state = load_state(ctx, model_alias)
    partition = state.model.partition_desc
    requested = time_range or (TimeRange.full() if partition is None else None)
    if requested is not None and _resume(state, "build", requested) is not None:
        rng = requested
    else:
        rng = validate_build(state.dataflow.segments, time_range, partition is not None)
    segment = _start(ctx, state, "build", rng)
    return _build_from_source(ctx, state, segment, _layouts(state, layout_ids))


def _own(state: ModelState, operation: str, targets: Sequence[str]) -> Segment | None:
    """The NEW segment this operation on `targets` (ids or names) left when it stopped (paused, failed,
    killed), which it resumes: its targets are LOCKED by it, so the segment rules, which refuse a LOCKED
    target, are not asked again."""
    chosen = [s for s in state.dataflow.segments if s.status is not SegmentStatus.NEW and {s.id, s.name} & set(targets)]
    if not chosen:
        return None
    return _resume(state, operation, TimeRange.of(min(s.range.start for s in chosen), max(s.range.end for s in chosen)))


def refresh_segment(ctx: BuildContext, model_alias: str, target: str) -> Segment:
    """Rebuild a segment's range from source into a new segment that replaces it atomically."""
    state = load_state(ctx, model_alias)
    segment = _own(state, "refresh", [target])
    if segment is None:
        [old] = validate_refresh(state.dataflow.segments, [target])
        segment = _start(ctx, state, "refresh", old.range)
    return _build_from_source(ctx, state, segment, _layouts(state, None))


def merge_segments(ctx: BuildContext, model_alias: str, targets: Sequence[str]) -> Segment:
    """Merge contiguous READY segments: union each layout's files and re-aggregate with the measures'
    merge functions. The source is never read."""
    state = load_state(ctx, model_alias)
    model = state.model
    held = {s.id: set(built_layouts(ctx, model, s.id)) for s in state.dataflow.segments}
    own = _own(state, "merge", targets)
    rng = own.range if own is not None else validate_merge(state.dataflow.segments, list(targets), held)
    sources = sorted(
        (s for s in state.dataflow.segments if s.status is not SegmentStatus.NEW and rng.contains(s.range)),
        key=lambda s: s.range,
    )
    segment = _start(ctx, state, "merge", rng)
    done = set(built_layouts(ctx, model, segment.id))
    per_source = {s.id: built_layouts(ctx, model, s.id) for s in sources}
    todo = [i for i in sorted(per_source[sources[0].id]) if i not in done]
    for n, layout_id in enumerate(todo, start=1):
        layout = state.plan.layout(layout_id)
        if layout is None:  # dropped from the plan since: nothing to merge it into
            continue
        paths = [layout_path(ctx.warehouse_root, ctx.project, model.uuid, s.id, layout_id) for s in sources]
        rows = sum(per_source[s.id][layout_id].rows for s in sources)
        df = compute_layout(ctx.spark.read.parquet(*paths), layout, model, from_flat=False, input_rows=rows)
        instance = write_layout(ctx, model, segment.id, layout_id, df, sum(s.source_count for s in sources))
        record_layout(ctx, model, segment.id, instance)
        ctx.progress("merge", n, len(todo))
    ranges = _merge_ranges(state, [s.dimension_range_info_map for s in sources])
    record = SegmentRecord(
        source_count=sum(s.source_count for s in sources),
        ranges=ranges,
        info=segment.additional_info,
        snapshots=newest_snapshots(sources),
        null_counts=_merge_null_counts([s.column_null_counts for s in sources]),
        joins=merged_join_stats(s.join_stats for s in sources),
    )
    return _commit(ctx, state, segment.id, record)


def build_layouts(
    ctx: BuildContext,
    model_alias: str,
    layout_ids: Iterable[int] | None = None,
    segment_ids: Iterable[str] | None = None,
) -> dict[str, list[int]]:
    """Build layouts missing from READY segments, each from its smallest parent already in the segment
    (the source only for layouts no built layout derives). Returns segment id → layouts built."""
    state = load_state(ctx, model_alias)
    wanted = _layouts(state, layout_ids)
    targets = set(segment_ids) if segment_ids is not None else None
    result: dict[str, list[int]] = {}
    for segment in state.dataflow.segments:
        if segment.status is SegmentStatus.NEW or (targets is not None and segment.id not in targets):
            continue
        built = _built(ctx, state, segment.id)
        missing = [lay for lay in wanted if lay.id not in built]
        if not missing:
            continue
        flat = SegmentFlat(ctx, state, segment, missing, _reads(ctx, state, segment.range))
        try:
            # the segment's source rows are known: the flat table is read only for rootless layouts
            with ctx.report.step(LAYOUTS_STEP):
                build_into_segment(ctx, state.model, segment.id, missing, built, flat.read, segment.source_count)
        finally:
            flat.close()
        result[segment.id] = [lay.id for lay in missing]
    return result


def _merge_ranges(state: ModelState, maps: list[dict[str, DimensionRange]]) -> dict[str, DimensionRange]:
    types = {str(c.id): c.datatype for c in state.model.all_named_columns}
    merged: dict[str, DimensionRange] = {}
    for ranges in maps:
        for key, rng in ranges.items():
            if key not in merged:
                merged[key] = rng
                continue
            numeric = dt.is_numeric(types.get(key, ""))
            sort_key = (lambda v: float(v)) if numeric else (lambda v: v)
            lo = min((v for v in (merged[key].min, rng.min) if v is not None), key=sort_key, default=None)
            hi = max((v for v in (merged[key].max, rng.max) if v is not None), key=sort_key, default=None)
            merged[key] = DimensionRange(min=lo, max=hi)
    return merged


def _merge_null_counts(maps: list[dict[str, int]]) -> dict[str, int]:
    """The merged segment's NULL counts: the sum, for the columns every source recorded."""
    common = set.intersection(*(set(m) for m in maps)) if maps else set()
    return {key: sum(m[key] for m in maps) for key in sorted(common)}


@dataclass(frozen=True)
class SegmentRecord:
    """What a build or a merge learnt about its segment, stored with it when it commits."""

    source_count: int
    ranges: dict[str, DimensionRange]  # each dimension's min/max
    info: dict[str, str]  # additional info (the operation, the dictionaries)
    snapshots: dict[str, LookupSnapshot]  # DB.TABLE → the lookup's snapshot
    null_counts: dict[str, int]  # measure input column → its NULLs
    joins: dict[str, JoinStat] | None  # lookup join → orphan rows and duplicate keys; None: unknown


def _commit(ctx: BuildContext, state: ModelState, segment_id: str, record: SegmentRecord) -> Segment:
    """Make the segment READY, with what was learnt about it, and drop the segments it replaces, in one
    transaction."""
    with ctx.store.transaction(ctx.project, ctx.writer) as tx:
        ctx.fence(tx)
        dataflow = tx.require(Dataflow, state.model.uuid)
        segment = dataflow.segment(segment_id)
        if segment is None:
            raise BuildConflictError(
                f"segment {segment_id} disappeared from model {state.model.alias} during the build"
            )
        segment.source_count = record.source_count
        segment.dimension_range_info_map = record.ranges
        segment.column_null_counts = record.null_counts
        segment.last_build_time = now_ms()
        segment.additional_info = record.info
        segment.lookup_snapshots = record.snapshots
        segment.join_stats = record.joins
        details = tx.require(SegmentDetails, state.model.uuid, segment_id)
        for li in details.layout_instances:  # a build learns its source rows only with its first job
            li.source_rows = li.source_rows or record.source_count
        tx.update(details)
        segments, removed = promote(dataflow.segments, segment_id)
        for old in removed:
            old_details = tx.get(SegmentDetails, state.model.uuid, old.id)
            if old_details is not None:
                tx.delete(old_details)
        dataflow.segments = segments
        dataflow.status = DataflowStatus.ONLINE
        tx.update(dataflow)
        ready = dataflow.segment(segment_id)
        assert ready is not None
        return ready
