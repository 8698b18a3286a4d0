"""Kylin 5 segment rules (reference §2): invariants, holes, displayed status, build/refresh/merge/delete checks,
to-be segments and promotion (NDataflowManagerTest, CubeManagerTest, SegmentsTest cases)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precube.metadata.dataflow import MAX_TIME, Segment, SegmentStatus, TimeRange
from precube.modeling.errors import SegmentRuleError
from precube.modeling.segments import (
    SegmentDisplayStatus,
    check_invariants,
    default_build_start,
    display_source_rows,
    display_status,
    holes,
    new_segment,
    promote,
    to_be_segments,
    validate_build,
    validate_delete,
    validate_merge,
    validate_refresh,
)
from tests.modeling.times import seg, ts

NEW, READY, WARNING = SegmentStatus.NEW, SegmentStatus.READY, SegmentStatus.WARNING


def ranges(segments: list[Segment]) -> list[tuple[int, int]]:
    return [(s.seg_range.start, s.seg_range.end) for s in segments]


# --- invariants -----------------------------------------------------------------------------------------------


def test_valid_segments_pass() -> None:
    check_invariants([])
    check_invariants([seg(0, 1), seg(1, 2, WARNING), seg(5, 6), seg(0, 2, NEW), seg(7, 9, NEW)])


def test_overlapping_ready_segments_are_named() -> None:
    a, b = seg(0, 10), seg(5, 15, WARNING)
    with pytest.raises(SegmentRuleError, match="overlap") as err:
        check_invariants([b, a])
    assert a.name in str(err.value) and b.name in str(err.value)


def test_a_ready_overlap_hidden_behind_a_long_segment_is_found() -> None:
    with pytest.raises(SegmentRuleError, match="overlap"):
        check_invariants([seg(0, 100), seg(10, 20), seg(50, 60)])


def test_overlapping_new_segments_are_refused() -> None:
    with pytest.raises(SegmentRuleError, match="overlap"):
        check_invariants([seg(0, 10, NEW), seg(9, 12, NEW)])


def test_new_segment_must_contain_the_ready_ones_it_overlaps() -> None:
    with pytest.raises(SegmentRuleError, match="without containing it"):
        check_invariants([seg(0, 10), seg(5, 15, NEW)])
    check_invariants([seg(0, 10), seg(0, 15, NEW)])


def test_empty_range_is_refused() -> None:
    with pytest.raises(SegmentRuleError, match="empty range"):
        check_invariants([seg(5, 5)])


# --- holes ----------------------------------------------------------------------------------------------------


def test_calculate_holes_as_kylin() -> None:
    """NDataflowManagerTest.testCalculateHoles."""
    base = [seg(0, 1, NEW), seg(10, 100, NEW), seg(1000, 10000, NEW)]
    assert holes(base) == [TimeRange.of(1, 10), TimeRange.of(100, 1000)]
    assert len(holes([*base, seg(1, 9, NEW)])) == 2
    assert holes([*base, seg(1, 10, NEW)]) == [TimeRange.of(100, 1000)]
    assert holes([]) == [] and holes([seg(0, 1)]) == []


def test_holes_ignore_time_covered_by_a_merging_segment() -> None:
    assert holes([seg(0, 100, NEW), seg(10, 20), seg(100, 200)]) == []


# --- displayed status -----------------------------------------------------------------------------------------


def test_display_status() -> None:
    building = seg(0, 10, NEW)
    assert display_status(building, [building]) == SegmentDisplayStatus.LOADING == "LOADING"
    ready, warning = seg(0, 10), seg(10, 20, WARNING)
    assert display_status(ready, [ready, warning]) == "ONLINE"
    assert display_status(warning, [ready, warning]) == "WARNING"

    refreshing = seg(0, 10, NEW)
    assert display_status(refreshing, [ready, refreshing]) == "REFRESHING"
    assert display_status(ready, [ready, refreshing]) == "LOCKED"

    merging = seg(0, 20, NEW)
    assert display_status(merging, [ready, warning, merging]) == "MERGING"
    assert display_status(warning, [ready, warning, merging]) == "LOCKED"

    assert display_status(ready, [ready, seg(5, 15)]) == "OVERLAP"  # broken invariants


def test_a_segment_being_built_shows_the_source_rows_it_replaces() -> None:
    ready, warning = seg(0, 10).model_copy(update={"source_count": 7}), seg(10, 20, WARNING)
    warning = warning.model_copy(update={"source_count": 5})
    refreshing, merging, loading = seg(0, 10, NEW), seg(0, 20, NEW), seg(20, 30, NEW)
    assert refreshing.source_count == -1  # not counted until built
    assert display_source_rows(refreshing, [ready, refreshing]) == 7
    assert display_source_rows(merging, [ready, warning, merging]) == 12
    assert display_source_rows(loading, [ready, warning, loading]) is None
    assert display_source_rows(ready, [ready, refreshing]) == 7
    assert display_source_rows(seg(0, 5), []) is None  # a segment whose count was never recorded


def test_default_build_start_is_the_end_of_the_last_segment() -> None:
    assert default_build_start([]) is None
    assert default_build_start([seg("2024-01-01", "2024-01-02"), seg("2024-01-02", "2024-01-05", NEW)]) == ts(
        "2024-01-05"
    )
    assert default_build_start([new_segment(TimeRange.full(), READY)]) is None


# --- build ----------------------------------------------------------------------------------------------------


def test_full_build_model_builds_once_then_refreshes() -> None:
    assert validate_build([], None, partitioned=False) == TimeRange.full()
    assert validate_build([], TimeRange.full(), partitioned=False) == TimeRange.full()
    full = new_segment(TimeRange.full(), READY)
    assert full.name == "FULL_BUILD"
    with pytest.raises(SegmentRuleError, match=r"Can not add a new segment on full build model.*FULL_BUILD"):
        validate_build([full], None, partitioned=False)
    with pytest.raises(SegmentRuleError, match="no partition column"):
        validate_build([], TimeRange.of(0, 10), partitioned=False)


def test_incremental_build_range_rules() -> None:
    existing = [seg("2024-01-01", "2024-01-08"), seg("2024-01-08", "2024-01-15", NEW)]
    rng = TimeRange.of(ts("2024-01-15"), ts("2024-01-22"))
    assert validate_build(existing, rng, partitioned=True) == rng
    with pytest.raises(SegmentRuleError, match="needs a start and an end"):
        validate_build(existing, None, partitioned=True)
    with pytest.raises(SegmentRuleError, match=">= 0"):
        validate_build([], TimeRange.of(-1, 10), partitioned=True)
    with pytest.raises(SegmentRuleError, match="after its start"):
        validate_build([], TimeRange.of(10, 10), partitioned=True)


def test_build_overlapping_any_segment_names_them() -> None:
    a, b = seg("2024-01-01", "2024-01-08"), seg("2024-01-08", "2024-01-15", NEW)
    with pytest.raises(SegmentRuleError, match="overlaps with the built segments") as err:
        validate_build([a, b], TimeRange.of(ts("2024-01-05"), ts("2024-01-10")), partitioned=True)
    assert a.name in str(err.value) and b.name in str(err.value)


def test_build_range_must_survive_the_partition_format() -> None:
    rng = TimeRange.of(ts("2024-01-01 06:00"), ts("2024-01-01 18:00"))
    with pytest.raises(SegmentRuleError, match="yyyy-MM-dd"):
        validate_build([], rng, partitioned=True, fmt="yyyy-MM-dd")
    assert validate_build([], rng, partitioned=True, fmt="yyyy-MM-dd HH:mm:ss") == rng


# --- refresh, merge, delete -----------------------------------------------------------------------------------


def test_refresh_by_id_or_name() -> None:
    a, b = seg("2024-01-01", "2024-01-08"), seg("2024-01-08", "2024-01-15", WARNING)
    assert validate_refresh([a, b], [b.id, a.name, a.id]) == [a, b]
    with pytest.raises(SegmentRuleError, match="nope"):
        validate_refresh([a, b], ["nope"])
    with pytest.raises(SegmentRuleError, match="at least one"):
        validate_refresh([a, b], [])


def test_refresh_refuses_busy_segments() -> None:
    a, b = seg(0, 10), seg(10, 20)
    refreshing = seg(0, 10, NEW)
    segments = [a, b, refreshing]
    with pytest.raises(SegmentRuleError, match="LOCKED"):
        validate_refresh(segments, [a.id])
    with pytest.raises(SegmentRuleError, match="REFRESHING"):
        validate_refresh(segments, [refreshing.id])
    # By name, the READY segment is meant (it shares its name with the NEW copy): it is LOCKED.
    with pytest.raises(SegmentRuleError, match="LOCKED"):
        validate_refresh(segments, [a.name])
    loading = seg(20, 30, NEW)
    with pytest.raises(SegmentRuleError, match="LOADING"):
        validate_refresh([*segments, loading], [loading.id])
    assert validate_refresh(segments, [b.id]) == [b]


def test_merge_success_and_failures_as_ndataflowmanagertest() -> None:
    s1, s2, s3 = seg(0, 1), seg(1, 2), seg(5, 6)
    layouts = {s.id: {1, 10001} for s in (s1, s2, s3)}
    assert validate_merge([s1, s2, s3], [s2.id, s1.id], layouts) == TimeRange.of(0, 2)
    with pytest.raises(
        SegmentRuleError, match=r"gap\(s\) in between: \[1970-01-01 00:00:00.002, 1970-01-01 00:00:00.005\)"
    ):
        validate_merge([s1, s2, s3], [s1.id, s2.id, s3.id], layouts)
    with pytest.raises(SegmentRuleError, match="at least two"):
        validate_merge([s1, s2, s3], [s1.id], layouts)
    with pytest.raises(SegmentRuleError, match="at least two"):
        validate_merge([s1, s2, s3], [s1.id, s1.name], layouts)
    with pytest.raises(SegmentRuleError, match=r"not consistent.*\[10001\]"):
        validate_merge([s1, s2, s3], [s1.id, s2.id], {s1.id: {1, 10001}, s2.id: {1}})
    with pytest.raises(SegmentRuleError, match="not consistent"):
        validate_merge([s1, s2, s3], [s1.id, s2.id], {s1.id: {1}})


def test_merge_refuses_locked_and_new_segments() -> None:
    s1, s2, s3 = (
        seg("2024-01-01", "2024-01-02"),
        seg("2024-01-02", "2024-01-03", WARNING),
        seg("2024-01-03", "2024-01-04"),
    )
    merging = seg("2024-01-01", "2024-01-03", NEW)
    layouts: dict[str, set[int]] = {}
    with pytest.raises(SegmentRuleError, match="LOCKED"):
        validate_merge([s1, s2, s3, merging], [s2.id, s3.id], layouts)
    with pytest.raises(SegmentRuleError, match="MERGING"):
        validate_merge([s1, s2, s3, merging], [merging.id, s3.id], layouts)
    expected = TimeRange.of(ts("2024-01-01"), ts("2024-01-04"))
    assert validate_merge([s1, s2, s3], [s3.name, s1.name, s2.name], layouts) == expected


def test_delete_refuses_locked_and_new_segments() -> None:
    a, b, c = seg("2024-01-01", "2024-01-02"), seg("2024-01-02", "2024-01-03"), seg("2024-01-03", "2024-01-04", NEW)
    refreshing = seg("2024-01-01", "2024-01-02", NEW)
    with pytest.raises(SegmentRuleError, match="LOCKED"):
        validate_delete([a, b, c, refreshing], [a.id])
    with pytest.raises(SegmentRuleError, match="LOADING"):
        validate_delete([a, b, c], [c.id])
    with pytest.raises(SegmentRuleError, match="at least one"):
        validate_delete([a], [])
    assert validate_delete([a, b, c, refreshing], [b.name]) == [b]


# --- to-be segments and promotion -----------------------------------------------------------------------------


def test_new_segment() -> None:
    s = new_segment(TimeRange.of(ts("2024-01-01"), ts("2024-02-01")))
    assert s.status is NEW and s.name == "20240101000000_20240201000000"
    assert new_segment(s.seg_range).id != s.id


def test_promote_concurrent_build_and_merge() -> None:
    """CubeManagerTest.testConcurrentBuildAndMerge: promoting a build leaves the pending merge alone."""
    seg1, seg2 = seg(0, 1000), seg(1000, 2000)
    seg3 = seg(0, 2000, NEW)  # merge of seg1 + seg2, still running
    seg4 = seg(2000, 3000, NEW)
    seg5 = seg(3000, 4000)
    after, removed = promote([seg1, seg2, seg3, seg4, seg5], seg4.id)
    assert removed == []
    status = {s.id: s.status for s in after}
    assert status == {seg1.id: READY, seg2.id: READY, seg3.id: NEW, seg4.id: READY, seg5.id: READY}
    assert seg4.status is NEW  # inputs are not modified
    check_invariants(after)


def test_promote_concurrent_merge_and_merge() -> None:
    """CubeManagerTest.testConcurrentMergeAndMerge."""
    seg1, seg2, seg3, seg4 = seg(0, 1000), seg(1000, 2000), seg(2000, 3000), seg(3000, 4000)
    merge1, merge2 = seg(0, 2000, NEW), seg(2000, 4000, NEW)
    after, removed = promote([seg1, seg2, seg3, seg4, merge1, merge2], merge1.id)
    assert {s.id for s in removed} == {seg1.id, seg2.id}
    assert [(s.id, s.status) for s in after] == [
        (merge1.id, READY),
        (seg3.id, READY),
        (merge2.id, NEW),
        (seg4.id, READY),
    ]


@pytest.mark.parametrize("new_first", [True, False])
def test_promote_refresh_replaces_the_old_segment(new_first: bool) -> None:
    old, other = seg(0, 10), seg(10, 20)
    fresh = seg(0, 10, NEW)
    segments = [fresh, old, other] if new_first else [old, other, fresh]
    after, removed = promote(segments, fresh.id)
    assert removed == [old]
    assert [(s.id, s.status) for s in after] == [(fresh.id, READY), (other.id, READY)]


def test_promote_merge_removes_the_merged_segments() -> None:
    parts = [seg(0, 5), seg(5, 7, WARNING), seg(7, 10)]
    merged = seg(0, 10, NEW)
    after, removed = promote([*parts, seg(10, 11), merged], merged.id)
    assert removed == parts
    assert ranges(after) == [(0, 10), (10, 11)] and after[0].status is READY


def test_to_be_segments_adds_a_new_segment_not_in_the_list() -> None:
    a = seg(0, 10)
    b = seg(10, 20, NEW)
    assert [s.id for s in to_be_segments([a], b)] == [a.id, b.id]


def test_a_new_segment_that_does_not_fit_is_refused() -> None:
    bigger = seg(0, 10, NEW)
    smaller = seg(0, 5, NEW)  # same start, same status: the longer one wins
    with pytest.raises(SegmentRuleError, match="does not fit"):
        to_be_segments([bigger], smaller)
    with pytest.raises(SegmentRuleError, match="promote"):
        promote([bigger], "missing")


def test_promote_full_build_refresh() -> None:
    full = new_segment(TimeRange.full(), READY)
    fresh = new_segment(TimeRange.full())
    after, removed = promote([full, fresh], fresh.id)
    assert removed == [full] and [s.id for s in after] == [fresh.id] and after[0].seg_range.end == MAX_TIME


# --- properties -----------------------------------------------------------------------------------------------

HOUR = 3_600_000
BASE = ts("2020-01-01")


@st.composite
def valid_segments(draw: st.DrawFn) -> list[Segment]:
    """Random segments meeting the §2 invariants: READY/WARNING pieces and holes along a time line, plus NEW
    segments over disjoint runs of whole pieces (a build over holes, a refresh or merge over READY ones)."""
    lengths = draw(st.lists(st.integers(1, 72), min_size=1, max_size=14))
    kinds = draw(
        st.lists(st.sampled_from(["ready", "ready", "warning", "hole"]), min_size=len(lengths), max_size=len(lengths))
    )
    bounds = [BASE]
    for n in lengths:
        bounds.append(bounds[-1] + n * HOUR)
    out = [
        seg(bounds[i], bounds[i + 1], READY if k == "ready" else WARNING) for i, k in enumerate(kinds) if k != "hole"
    ]
    cuts = sorted(draw(st.sets(st.integers(0, len(lengths)), max_size=6)))
    for lo, hi in zip(cuts[::2], cuts[1::2], strict=False):
        if lo < hi and draw(st.booleans()):
            out.append(seg(bounds[lo], bounds[hi], NEW))
    return draw(st.permutations(out))


def covered(segments: list[Segment]) -> set[int]:
    """Covered hours (pieces are whole hours from BASE)."""
    return {h for s in segments for h in range((s.seg_range.start - BASE) // HOUR, (s.seg_range.end - BASE) // HOUR)}


@given(valid_segments())
def test_generated_segments_are_valid(segments: list[Segment]) -> None:
    check_invariants(segments)


@given(valid_segments(), st.data())
def test_promote_keeps_invariants_and_loses_no_time(segments: list[Segment], data: st.DataObject) -> None:
    news = [s for s in segments if s.status is NEW]
    if not news:
        return
    target = data.draw(st.sampled_from(news))
    ready_before = [s for s in segments if s.status is not NEW]
    after, removed = promote(segments, target.id)
    check_invariants(after)
    ready_after = [s for s in after if s.status is not NEW]
    assert covered(ready_after) == covered(ready_before) | covered([target])
    assert all(target.seg_range.contains(r.seg_range) for r in removed)
    assert {s.id for s in after} | {s.id for s in removed} == {s.id for s in segments}
    assert [s.id for s in after if s.status is NEW] == [
        s.id for s in sorted(news, key=lambda s: s.seg_range) if s.id != target.id
    ]


@given(valid_segments())
def test_holes_are_exactly_the_uncovered_time(segments: list[Segment]) -> None:
    if not segments:
        return
    found = holes(segments)
    assert covered([seg(h.start, h.end) for h in found]).isdisjoint(covered(segments))
    lo = min(s.seg_range.start for s in segments)
    hi = max(s.seg_range.end for s in segments)
    span = set(range((lo - BASE) // HOUR, (hi - BASE) // HOUR))
    assert covered([seg(h.start, h.end) for h in found]) | covered(segments) == span
