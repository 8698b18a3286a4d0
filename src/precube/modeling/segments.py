"""Kylin 5 segment rules (reference §2): invariants, holes, displayed status, and the checks before a build,
refresh, merge or delete; then the to-be segment list once a job succeeds.

Segments are `precube.metadata.dataflow.Segment`s; functions never mutate them and return new lists. Segment
targets given by users are ids or names (an id wins; for a name shared by a READY segment and the NEW one
refreshing it, the READY one is meant).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from enum import StrEnum

from precube.metadata.dataflow import MAX_TIME, Segment, SegmentStatus, TimeRange
from precube.modeling.errors import SegmentRuleError
from precube.modeling.partition_format import from_epoch_ms, segment_name

_READY = (SegmentStatus.READY, SegmentStatus.WARNING)


class SegmentDisplayStatus(StrEnum):
    """Kylin's `SegmentStatusEnumToDisplay` (without the storage variants)."""

    ONLINE = "ONLINE"
    LOCKED = "LOCKED"  # READY/WARNING, overlapped by a NEW segment refreshing or merging it
    REFRESHING = "REFRESHING"  # NEW with exactly the range of an existing segment
    MERGING = "MERGING"  # NEW covering several existing segments
    LOADING = "LOADING"  # NEW over time no other segment covers (a build)
    WARNING = "WARNING"
    OVERLAP = "OVERLAP"  # READY/WARNING overlapped only by READY/WARNING: the invariants are broken


_BUSY = frozenset(
    {
        SegmentDisplayStatus.LOCKED,
        SegmentDisplayStatus.REFRESHING,
        SegmentDisplayStatus.MERGING,
        SegmentDisplayStatus.LOADING,
        SegmentDisplayStatus.OVERLAP,
    }
)


def _key(s: Segment) -> TimeRange:
    return s.seg_range


def _label(s: Segment) -> str:
    return f'"{s.name}" {s.seg_range}'


def _sorted(segments: Iterable[Segment]) -> list[Segment]:
    return sorted(segments, key=_key)  # stable: equal ranges keep their list order, as Java's Collections.sort


def check_invariants(segments: Sequence[Segment]) -> None:
    """Kylin 5 `Segments.validate`: every range has start < end; READY/WARNING segments pairwise do not overlap
    (holes are allowed); NEW segments pairwise do not overlap; a NEW segment overlapping a READY/WARNING one
    contains it. Raises SegmentRuleError naming the two segments."""
    for s in segments:
        if s.seg_range.start >= s.seg_range.end:
            raise SegmentRuleError(f"Segment {_label(s)} has an empty range: start must be before end")

    def no_overlap(group: list[Segment]) -> None:
        widest: Segment | None = None  # the segment reaching furthest right so far
        for s in group:
            if widest is not None and s.seg_range.start < widest.seg_range.end:
                raise SegmentRuleError(f"Segments overlap: {_label(widest)} and {_label(s)}")
            if widest is None or s.seg_range.end > widest.seg_range.end:
                widest = s

    ordered = _sorted(segments)
    ready = [s for s in ordered if s.status in _READY]
    news = [s for s in ordered if s.status is SegmentStatus.NEW]
    no_overlap(ready)
    no_overlap(news)
    for n in news:
        for r in ready:
            if n.seg_range.overlaps(r.seg_range) and not n.seg_range.contains(r.seg_range):
                raise SegmentRuleError(
                    f"Segments overlap: NEW segment {_label(n)} overlaps {r.status.value} segment {_label(r)} "
                    "without containing it"
                )


def holes(segments: Sequence[Segment]) -> list[TimeRange]:
    """Kylin 5 `NDataflowManager.calculateHoles`: the gaps between segments (any status) sorted by range.

    Deviation: Kylin compares only neighbours in sort order, so a NEW segment covering a later-sorted READY one
    can yield a false hole; precube sweeps the covered time instead. Kylin's own cases give the same holes.
    """
    found: list[TimeRange] = []
    covered_to: int | None = None
    for s in _sorted(segments):
        if covered_to is not None and s.seg_range.start > covered_to:
            found.append(TimeRange.of(covered_to, s.seg_range.start))
        covered_to = s.seg_range.end if covered_to is None else max(covered_to, s.seg_range.end)
    return found


def display_status(segment: Segment, segments: Sequence[Segment]) -> SegmentDisplayStatus:
    """Kylin 5 `SegmentUtil.getSegmentStatusToDisplay`, without job and multi-partition information.

    NEW: REFRESHING if an overlapping segment has the identical range, LOADING if nothing overlaps it, else
    MERGING. READY/WARNING: LOCKED if a NEW segment overlaps it (OVERLAP if only READY ones do: broken
    invariants), else WARNING or ONLINE. The job-based LOADING cases (an index build or incremental build job
    running on the segment) are the caller's to add.
    """
    others = [s for s in segments if s.id != segment.id and s.seg_range.overlaps(segment.seg_range)]
    if segment.status is SegmentStatus.NEW:
        if any(s.seg_range == segment.seg_range for s in others):
            return SegmentDisplayStatus.REFRESHING
        return SegmentDisplayStatus.MERGING if others else SegmentDisplayStatus.LOADING
    if others:
        if any(s.status is SegmentStatus.NEW for s in others):
            return SegmentDisplayStatus.LOCKED
        return SegmentDisplayStatus.OVERLAP
    return SegmentDisplayStatus.WARNING if segment.status is SegmentStatus.WARNING else SegmentDisplayStatus.ONLINE


def display_source_rows(segment: Segment, segments: Sequence[Segment]) -> int | None:
    """The source rows to show for a segment: its own once built; while it is being built, those of the
    segments it replaces (a refresh: the one of the same range; a merge: the merged ones, which it adds up
    without reading the source); None when nothing tells yet (a new range loading)."""
    if segment.status is not SegmentStatus.NEW:
        return segment.source_count if segment.source_count >= 0 else None
    replaced = [
        s
        for s in segments
        if s.id != segment.id and s.status is not SegmentStatus.NEW and s.seg_range.overlaps(segment.seg_range)
    ]
    if not replaced or any(s.source_count < 0 for s in replaced):
        return None
    return sum(s.source_count for s in replaced)


def default_build_start(segments: Sequence[Segment]) -> int | None:
    """Where the next incremental build starts: the end of the last segment, of any status (seed 001 §4.3,
    Kylin's UI pre-fills it). None when there is no segment or the last one is open-ended (a full build)."""
    if not segments:
        return None
    end = max(s.seg_range.end for s in segments)
    return None if end >= MAX_TIME else end


def validate_build(
    segments: Sequence[Segment], rng: TimeRange | None, partitioned: bool, fmt: str | None = None
) -> TimeRange:
    """Check a build request and return the range of the segment to append (Kylin 5 `ModelBuildService`,
    `DataRangeUtils.validateRange`, `ModelService.checkSegmentToBuildOverlapsBuilt`).

    Without a partition column only the full range `[0, MAX)` can be built, once: afterwards it is refreshed.
    With one, `rng` is required, `0 <= start < end`, and, given the partition format `fmt`, the range must stay
    non-empty once its ends are written in that format (Kylin formats before comparing). It must not overlap
    any existing segment of any status (Kylin's default `kylin.build.segment-overlap-enabled=false`).
    """
    if not partitioned:
        if rng is not None and not rng.is_full:
            raise SegmentRuleError(
                f"The model has no partition column: only a full build {TimeRange.full()} is possible, not {rng}"
            )
        if segments:
            names = ", ".join(f'"{s.name}"' for s in _sorted(segments))
            raise SegmentRuleError(
                f"Can not add a new segment on full build model: segment {names} exists; refresh it instead."
            )
        return TimeRange.full()
    if rng is None:
        raise SegmentRuleError("A model with a partition column needs a start and an end to build a segment")
    if rng.start < 0:
        raise SegmentRuleError(f"Segment start {rng.start} must be >= 0")
    if rng.start >= rng.end:
        raise SegmentRuleError(f"Segment end {rng.end} must be after its start {rng.start}")
    if fmt is not None and rng.end < MAX_TIME:
        # Written as text: every supported format is zero-padded, so text order is time order.
        text_start = str(from_epoch_ms(rng.start, fmt, "varchar"))
        text_end = str(from_epoch_ms(rng.end, fmt, "varchar"))
        if text_start >= text_end:
            raise SegmentRuleError(
                f'The range {rng} is empty in the partition format "{fmt}": "{text_start}" is not before "{text_end}"'
            )
    overlapped = [s for s in _sorted(segments) if s.seg_range.overlaps(rng)]
    if overlapped:
        names = ", ".join(f'"{s.name}"' for s in overlapped)
        raise SegmentRuleError(
            f"Can't build segment {rng}. The specified data range overlaps with the built "
            f"segments {names}. Please modify and try again."
        )
    return rng


def _resolve(segments: Sequence[Segment], targets: Sequence[str]) -> list[Segment]:
    """The segments named by ids or names, in the given order, without repeats."""
    found: list[Segment] = []
    for target in targets:
        match = next((s for s in segments if s.id == target), None)
        if match is None:
            by_name = [s for s in segments if s.name == target]
            # A refreshed segment and its NEW copy share a name: the user means the existing (READY) one.
            match = next((s for s in by_name if s.status in _READY), by_name[0] if by_name else None)
        if match is None:
            raise SegmentRuleError(f'Can\'t find the segment "{target}" by id or name. Please check and try again.')
        if all(m.id != match.id for m in found):
            found.append(match)
    return found


def _check_operable(segment: Segment, segments: Sequence[Segment], action: str) -> None:
    status = display_status(segment, segments)
    if status is SegmentDisplayStatus.LOCKED:
        raise SegmentRuleError(
            f"Can't {action} segment {_label(segment)}, as it's LOCKED by a segment being refreshed or merged. "
            "Please try again later."
        )
    if status in _BUSY or segment.status not in _READY:
        raise SegmentRuleError(f"Can't {action} segment {_label(segment)}, as it's in \"{status.value}\".")


def validate_refresh(segments: Sequence[Segment], targets: Sequence[str]) -> list[Segment]:
    """Segments to refresh (Kylin 5 `ModelService.checkSegmentsStatus` + `NDataflowManager.refreshSegment`): each
    target exists, is READY/WARNING and is not LOCKED/REFRESHING/MERGING/LOADING. Returns them in range order;
    each refresh then appends a NEW segment with the same range (`new_segment(s.seg_range)`)."""
    if not targets:
        raise SegmentRuleError("You should choose at least one segment to refresh!")
    chosen = _resolve(segments, targets)
    for s in chosen:
        _check_operable(s, segments, "refresh")
    return _sorted(chosen)


def validate_merge(
    segments: Sequence[Segment], targets: Sequence[str], layouts: Mapping[str, AbstractSet[int]]
) -> TimeRange:
    """The range of a manual merge (Kylin 5 `ModelService.checkMergeSegments` + `NDataflowManager.mergeSegments`):
    at least two segments, each READY/WARNING and not LOCKED/REFRESHING/MERGING/LOADING, contiguous once sorted,
    with identical built layout sets (`layouts`: segment id → layout ids; a missing id counts as none).
    Returns `[first.start, last.end)`."""
    chosen = _sorted(_resolve(segments, targets))
    if len(chosen) < 2:
        raise SegmentRuleError(f"Please select at least two segments to merge, not {len(chosen)}.")
    for s in chosen:
        _check_operable(s, segments, "merge")
    for a, b in itertools.pairwise(chosen):
        if not a.seg_range.connects(b.seg_range):
            raise SegmentRuleError(
                "Can't merge the selected segments, as there are gap(s) in between: "
                f"{TimeRange.of(a.seg_range.end, b.seg_range.start)} between {_label(a)} and {_label(b)}. "
                "Please check and try again."
            )
    first_layouts = set(layouts.get(chosen[0].id, set()))
    for s in chosen[1:]:
        other = set(layouts.get(s.id, set()))
        if other != first_layouts:
            diff = sorted(first_layouts ^ other)
            raise SegmentRuleError(
                f"The indexes included in the selected segments are not consistent: {_label(chosen[0])} and "
                f"{_label(s)} differ in layouts {diff}. Please build index first and try merging again."
            )
    return TimeRange.of(chosen[0].seg_range.start, chosen[-1].seg_range.end)


def validate_delete(segments: Sequence[Segment], targets: Sequence[str]) -> list[Segment]:
    """Segments to delete: each exists and is neither LOCKED (being refreshed or merged; Kylin `KE-010022216`)
    nor NEW (being built: discard its job instead). Returns them in range order."""
    if not targets:
        raise SegmentRuleError("You should choose at least one segment to drop!")
    chosen = _resolve(segments, targets)
    for s in chosen:
        status = display_status(s, segments)
        if status is SegmentDisplayStatus.LOCKED:
            raise SegmentRuleError(
                f"Can't remove segment {_label(s)}, as it's LOCKED by a segment being refreshed or merged. "
                "Please try again later."
            )
        if s.status is SegmentStatus.NEW:
            raise SegmentRuleError(
                f"Can't remove segment {_label(s)}, as it's in \"{status.value}\"; discard its job instead."
            )
    return _sorted(chosen)


def new_segment(rng: TimeRange, status: SegmentStatus = SegmentStatus.NEW) -> Segment:
    """A new segment over `rng`, named as Kylin names it (`segment_name`), with a fresh id."""
    return Segment(name=segment_name(rng), seg_range=rng, status=status)


def to_be_segments(segments: Sequence[Segment], new_seg: Segment) -> list[Segment]:
    """Kylin 5 `Segments.calculateToBeSegments(newSegment)`: the segments once `new_seg` is built (no gap, no
    overlap; new beats old, big beats small), sorted by range. `new_seg` is added if not in `segments`.

    Walks neighbours i, j of the sorted list: equal starts with the same status keep the longer; equal starts
    with different statuses keep `new_seg`; `new_seg` overlapping its right neighbour drops that neighbour.
    Raises SegmentRuleError when `new_seg` does not survive (it does not fit the current segments).
    """
    tobe = list(segments)
    if all(s.id != new_seg.id for s in tobe):
        tobe.append(new_seg)
    tobe = _sorted(tobe)
    i, j = 0, 1
    while j < len(tobe):
        a, b = tobe[i], tobe[j]
        ra, rb = a.seg_range, b.seg_range
        if ra.start == rb.start:
            if a.status == b.status:
                del tobe[i if ra.end <= rb.end else j]
                continue
            if a.status is SegmentStatus.NEW and a.id == new_seg.id:
                del tobe[j]
                continue
            if b.id == new_seg.id:
                del tobe[i]
                continue
        if ra.end <= rb.start:
            i, j = i + 1, j + 1
            continue
        if a.id == new_seg.id:  # b is covered by the new segment
            del tobe[j]
            continue
        i, j = i + 1, j + 1
    if all(s.id != new_seg.id for s in tobe):
        raise SegmentRuleError(f"Segment {_label(new_seg)} does not fit in its current segments")
    return tobe


def promote(segments: Sequence[Segment], new_seg_id: str) -> tuple[list[Segment], list[Segment]]:
    """After the job of `new_seg_id` succeeded (build, refresh or merge; Kylin `NDataflowManager`
    `getToRemoveSegs` + `updateDataflow`): returns (segments with that segment READY and those it replaces
    removed, the removed segments), both sorted by range. Input segments are not modified."""
    new_seg = next((s for s in segments if s.id == new_seg_id), None)
    if new_seg is None:
        raise SegmentRuleError(f'Can\'t find the segment "{new_seg_id}" to promote')
    keep = {s.id for s in to_be_segments(segments, new_seg)}
    after = [
        s.model_copy(update={"status": SegmentStatus.READY}) if s.id == new_seg_id else s
        for s in _sorted(segments)
        if s.id in keep
    ]
    removed = [s for s in _sorted(segments) if s.id not in keep]
    return after, removed
