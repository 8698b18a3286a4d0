"""Jobs are checked against the model's segments before they exist: a refused request leaves no job."""

from __future__ import annotations

import pytest

from precube.jobs.plans import build_job, merge_job, refresh_job
from precube.jobs.submission import jobs_of, submit
from precube.metadata import (
    Dataflow,
    JobType,
    LayoutInstance,
    MetadataStore,
    SegmentDetails,
    SegmentStatus,
    TimeRange,
)
from precube.modeling.errors import SegmentRuleError
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.modeling.segments import new_segment
from tests.modeling.conftest import ssb_spec_data

DAY = 86_400_000
BASE = 8_035 * DAY  # 1992-01-01


def _ready(store: MetadataStore, days: list[tuple[int, int]], layouts: list[set[int]]) -> list[str]:
    """READY segments of the `ssb` model over these day ranges, holding these layouts."""
    with store.transaction("ssb") as tx:
        dataflow = tx.list(Dataflow)[0]
        ids = []
        for (a, b), held in zip(days, layouts, strict=True):
            segment = new_segment(TimeRange.of(BASE + a * DAY, BASE + b * DAY), SegmentStatus.READY)
            dataflow.segments.append(segment)
            instances = [LayoutInstance(layout_id=i, is_ready=True) for i in held]
            tx.create(SegmentDetails(uuid=segment.id, dataflow=dataflow.uuid, layout_instances=instances))
            ids.append(segment.id)
        tx.update(dataflow)
    return ids


@pytest.fixture
def model(ssb_store: MetadataStore) -> MetadataStore:
    create_model(ssb_store, "ssb", parse_spec(ssb_spec_data()))
    return ssb_store


def test_requests_become_checked_jobs(model: MetadataStore) -> None:
    first, second, third = _ready(model, [(0, 1), (1, 2), (2, 3)], [{1, 2}, {1, 2}, {1}])
    with pytest.raises(SegmentRuleError, match="overlap"):
        build_job(model, "ssb", "ssb", TimeRange.of(BASE + DAY, BASE + 5 * DAY))
    job = build_job(model, "ssb", "ssb", TimeRange.of(BASE + 3 * DAY, BASE + 4 * DAY), priority=1)
    assert (job.job_type, job.time_range, job.priority) == (
        JobType.INC_BUILD,
        TimeRange.of(BASE + 3 * DAY, BASE + 4 * DAY),
        1,
    )
    assert [s.name for s in job.steps] == ["dictionaries", "layers", "commit"]

    refresh = refresh_job(model, "ssb", "ssb", second)
    assert (refresh.job_type, refresh.segment_ids, refresh.time_range) == (
        JobType.INDEX_REFRESH,
        [second],
        TimeRange.of(BASE + DAY, BASE + 2 * DAY),
    )
    merge = merge_job(model, "ssb", "ssb", [second, first])
    assert (merge.job_type, merge.segment_ids, merge.time_range) == (
        JobType.INDEX_MERGE,
        [first, second],
        TimeRange.of(BASE, BASE + 2 * DAY),
    )
    with pytest.raises(SegmentRuleError):
        merge_job(model, "ssb", "ssb", [second, third])  # third lacks layout 2
    with pytest.raises(SegmentRuleError):
        refresh_job(model, "ssb", "ssb", "no-such-segment")
    assert jobs_of(model, "ssb") == []  # planning records nothing
    submit(model, "ssb", merge)
    assert [j.uuid for j in jobs_of(model, "ssb")] == [merge.uuid]


def test_a_broken_model_gets_no_job(model: MetadataStore) -> None:
    """Every kind of job for a BROKEN model is refused at submission with the reason, none left behind."""
    from precube.jobs.errors import ModelNotBuildableError
    from precube.jobs.plans import index_build_job
    from precube.metadata import DataflowStatus

    [segment] = _ready(model, [(0, 1)], [{1}])
    with model.transaction("ssb") as tx:
        dataflow = tx.list(Dataflow)[0]
        dataflow.status, dataflow.broken_detail = DataflowStatus.BROKEN, "column SSB.DATES.D_YEAR was dropped"
        tx.update(dataflow)
    requests = [
        lambda: build_job(model, "ssb", "ssb", TimeRange.of(BASE + DAY, BASE + 2 * DAY)),
        lambda: refresh_job(model, "ssb", "ssb", segment),
        lambda: merge_job(model, "ssb", "ssb", [segment]),
        lambda: index_build_job(model, "ssb", "ssb"),
    ]
    for request in requests:
        with pytest.raises(
            ModelNotBuildableError, match="model ssb is BROKEN \\(column SSB.DATES.D_YEAR was dropped\\)"
        ):
            request()
    assert jobs_of(model, "ssb") == []
