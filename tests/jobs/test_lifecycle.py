"""The segment lifecycle around jobs (reference §1.2, §1.5, §2): the settings in force, retention and
auto-merge after a successful job, a user's segment delete, and the NEW segment a discarded or restarted
job leaves behind. Segments are fabricated in the metadata: no Spark."""

from __future__ import annotations

import pytest

from precube.jobs.errors import JobConflictError
from precube.jobs.lifecycle import AUTO_MERGE, after_success, delete_segments, segment_config
from precube.jobs.plans import build_job, merge_job, refresh_job
from precube.jobs.submission import act, jobs_of, submit
from precube.metadata import (
    AutoMergeTimeRange,
    Dataflow,
    DataflowStatus,
    Job,
    JobAction,
    JobState,
    JobType,
    LayoutInstance,
    MetadataStore,
    Model,
    Project,
    RetentionRange,
    Segment,
    SegmentConfig,
    SegmentConfigOverride,
    SegmentDetails,
    SegmentStatus,
    VolatileRange,
    new_job_id,
)
from precube.modeling.errors import SegmentRuleError
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from tests.modeling.conftest import ssb_spec_data
from tests.modeling.times import DAY, rng, seg, ts

P = "ssb"  # project and model alias


# -- helpers --------------------------------------------------------------------------------------


def _create_model(store: MetadataStore, segment_config: dict[str, object] | None = None) -> MetadataStore:
    data = ssb_spec_data()
    if segment_config is not None:
        data["segment_config"] = segment_config
    create_model(store, P, parse_spec(data))
    return store


def _configure(store: MetadataStore, **fields: object) -> None:
    """Change the project's segment settings (the project document lives in `/_global`)."""
    with store.transaction(P) as tx:
        project = tx.project()
        project.segment_config = project.segment_config.model_copy(update=fields)
        tx.update(project)


def _put(store: MetadataStore, segments: list[Segment], layouts: list[set[int]] | None = None) -> list[Segment]:
    """Add segments to the model's dataflow, each with SegmentDetails holding these READY layouts."""
    held = layouts if layouts is not None else [{1, 2}] * len(segments)
    with store.transaction(P) as tx:
        dataflow = tx.list(Dataflow)[0]
        for segment, ids in zip(segments, held, strict=True):
            dataflow.segments.append(segment)
            instances = [LayoutInstance(layout_id=i, is_ready=True, rows=10) for i in sorted(ids)]
            tx.create(SegmentDetails(uuid=segment.id, dataflow=dataflow.uuid, layout_instances=instances))
        dataflow.status = DataflowStatus.ONLINE
        tx.update(dataflow)
    return segments


def _daily(first: str, days: int, status: SegmentStatus = SegmentStatus.READY) -> list[Segment]:
    start = ts(first)
    return [seg(start + i * DAY, start + (i + 1) * DAY, status) for i in range(days)]


def _dataflow(store: MetadataStore) -> Dataflow:
    with store.read(P) as tx:
        return tx.list(Dataflow)[0]


def _state(store: MetadataStore) -> list[tuple[str, SegmentStatus]]:
    """(id, status) of the model's segments, in range order."""
    return [(s.id, s.status) for s in sorted(_dataflow(store).segments, key=lambda s: s.seg_range)]


def _has_details(store: MetadataStore, segment_id: str) -> bool:
    with store.read(P) as tx:
        dataflow = tx.list(Dataflow)[0]
        return tx.get(SegmentDetails, dataflow.uuid, segment_id) is not None


def _model_uuid(store: MetadataStore) -> str:
    with store.read(P) as tx:
        return tx.list(Model)[0].uuid


def _succeeded(store: MetadataStore) -> Job:
    """The build job that just succeeded (as the scheduler hands it to `after_success`)."""
    uuid = _model_uuid(store)
    return Job(uuid=new_job_id(uuid), job_type=JobType.INC_BUILD, target_model=uuid, state=JobState.SUCCEED)


def _index_build(store: MetadataStore, segment: Segment) -> Job:
    """An unfinished (READY) job adding layouts to `segment`."""
    uuid = _model_uuid(store)
    job = Job(
        uuid=new_job_id(uuid),
        job_type=JobType.INDEX_BUILD,
        target_model=uuid,
        model_alias=P,
        segment_ids=[segment.id],
        layout_ids=[3],
        time_range=segment.seg_range,
    )
    return submit(store, P, job)


@pytest.fixture
def model(ssb_store: MetadataStore) -> MetadataStore:
    return _create_model(ssb_store)


# -- segment_config -------------------------------------------------------------------------------


def test_model_settings_override_the_project_field_by_field(model: MetadataStore) -> None:
    with model.read(P) as tx:
        saved = tx.list(Model)[0]
    project = Project(
        name=P,
        segment_config=SegmentConfig(
            auto_merge_enabled=True,
            auto_merge_time_ranges=[AutoMergeTimeRange.DAY, AutoMergeTimeRange.WEEK],
            retention_range=RetentionRange(
                retention_range_enabled=True, retention_range_number=3, retention_range_type=AutoMergeTimeRange.DAY
            ),
            create_empty_segment_enabled=True,
        ),
    )
    volatile = VolatileRange(
        volatile_range_enabled=True, volatile_range_number=2, volatile_range_type=AutoMergeTimeRange.HOUR
    )
    override = SegmentConfigOverride(auto_merge_enabled=False, volatile_range=volatile)
    effective = segment_config(project, saved.model_copy(update={"segment_config": override}))
    assert effective == SegmentConfig(
        auto_merge_enabled=False,  # the model's
        auto_merge_time_ranges=[AutoMergeTimeRange.DAY, AutoMergeTimeRange.WEEK],  # the project's
        volatile_range=volatile,  # the model's
        retention_range=project.segment_config.retention_range,  # the project's
        create_empty_segment_enabled=True,  # the project's
    )
    assert project.segment_config.auto_merge_enabled  # the project is not changed

    only_levels = SegmentConfigOverride(auto_merge_time_ranges=[AutoMergeTimeRange.MONTH])
    effective = segment_config(project, saved.model_copy(update={"segment_config": only_levels}))
    assert effective.auto_merge_time_ranges == [AutoMergeTimeRange.MONTH]
    assert effective.auto_merge_enabled
    assert effective.retention_range.retention_range_number == 3

    for none_set in (None, SegmentConfigOverride()):
        effective = segment_config(project, saved.model_copy(update={"segment_config": none_set}))
        assert effective == project.segment_config
        effective.retention_range.retention_range_number = 99  # a copy: the project keeps its own
        assert project.segment_config.retention_range.retention_range_number == 3


# -- after_success: auto-merge --------------------------------------------------------------------


def test_auto_merge_submits_one_merge_job_like_kylin_a2(model: MetadataStore) -> None:
    _configure(model, auto_merge_enabled=True)
    daily = _put(model, _daily("2010-01-01", 4))  # 01-01 (a Friday) .. 01-05
    before = _state(model)
    aftermath = after_success(model, P, _succeeded(model))
    assert aftermath.skipped is None
    assert aftermath.removed == []
    merge = aftermath.merge
    assert merge is not None
    assert (merge.job_type, merge.submitter, merge.state) == (JobType.INDEX_MERGE, AUTO_MERGE, JobState.READY)
    assert merge.submitter == "auto-merge"
    assert merge.time_range == rng("2010-01-01", "2010-01-04")  # the week ends on Monday 01-04
    assert merge.segment_ids == [s.id for s in daily[:3]]
    assert merge.model_alias == P
    assert [j.uuid for j in jobs_of(model, P)] == [merge.uuid]  # stored
    assert _state(model) == before  # submitting changes no segment

    again = after_success(model, P, _succeeded(model))  # the merge job now covers the range
    assert again.merge is None
    assert again.skipped is not None
    assert merge.uuid in again.skipped
    assert "already covers" in again.skipped
    assert len(jobs_of(model, P)) == 1


def test_no_merge_while_auto_merge_is_off(model: MetadataStore) -> None:
    _put(model, _daily("2010-01-01", 4))
    before = _state(model)
    aftermath = after_success(model, P, _succeeded(model))  # project default: off
    assert (aftermath.merge, aftermath.skipped, aftermath.removed) == (None, None, [])
    assert jobs_of(model, P) == []
    assert _state(model) == before
    job = Job(uuid=new_job_id(None), job_type=JobType.TABLE_SAMPLING, target_table="SSB.DATES")
    assert after_success(model, P, job).merge is None  # no model: nothing to do


def test_the_model_setting_decides_over_the_project(ssb_store: MetadataStore) -> None:
    store = _create_model(ssb_store, {"auto_merge_enabled": False})
    _configure(store, auto_merge_enabled=True)
    _put(store, _daily("2010-01-01", 4))
    assert after_success(store, P, _succeeded(store)).merge is None
    assert jobs_of(store, P) == []


def test_a_model_may_enable_auto_merge_the_project_leaves_off(ssb_store: MetadataStore) -> None:
    store = _create_model(ssb_store, {"auto_merge_enabled": True, "auto_merge_time_ranges": ["DAY"]})
    _put(store, [seg("2010-01-01", "2010-01-01 12:00"), seg("2010-01-01 12:00", "2010-01-02")])
    merge = after_success(store, P, _succeeded(store)).merge
    assert merge is not None
    assert merge.time_range == rng("2010-01-01", "2010-01-02")  # the DAY level: the project has no DAY


def test_segments_with_different_layouts_are_not_merged(model: MetadataStore) -> None:
    _configure(model, auto_merge_enabled=True)
    _put(model, _daily("2010-01-01", 4), [{1, 2}, {1}, {1, 2}, {1, 2}])
    aftermath = after_success(model, P, _succeeded(model))
    assert aftermath.merge is None
    assert aftermath.skipped is not None
    assert "auto-merge of" in aftermath.skipped
    assert "not consistent" in aftermath.skipped
    assert jobs_of(model, P) == []


def test_an_unfinished_job_over_the_range_blocks_the_merge(model: MetadataStore) -> None:
    _configure(model, auto_merge_enabled=True)
    daily = _put(model, _daily("2010-01-01", 4))
    index_build = _index_build(model, daily[1])
    aftermath = after_success(model, P, _succeeded(model))
    assert aftermath.merge is None
    assert aftermath.skipped is not None
    assert index_build.uuid in aftermath.skipped
    assert [j.uuid for j in jobs_of(model, P)] == [index_build.uuid]

    act(model, P, index_build.uuid, JobAction.DISCARD)  # once it is gone, the next success merges
    merge = after_success(model, P, _succeeded(model)).merge
    assert merge is not None
    assert merge.time_range == rng("2010-01-01", "2010-01-04")


def test_a_new_segment_keeps_its_neighbours_out_of_the_merge(model: MetadataStore) -> None:
    _configure(model, auto_merge_enabled=True)
    daily = _put(model, _daily("2010-01-01", 4))
    _put(model, [seg("2010-01-01", "2010-01-02", SegmentStatus.NEW)])  # 01-01 is being refreshed
    merge = after_success(model, P, _succeeded(model)).merge
    assert merge is not None
    assert merge.time_range == rng("2010-01-02", "2010-01-04")
    assert merge.segment_ids == [daily[1].id, daily[2].id]


# -- after_success: retention ---------------------------------------------------------------------


def test_retention_removes_old_segments_then_auto_merge_runs(model: MetadataStore) -> None:
    retention = RetentionRange(
        retention_range_enabled=True, retention_range_number=1, retention_range_type=AutoMergeTimeRange.MONTH
    )
    _configure(model, auto_merge_enabled=True, retention_range=retention)
    [november] = _put(model, [seg("2009-11-01", "2009-12-01")])
    [building] = _put(model, [seg("2009-12-01", "2009-12-02", SegmentStatus.NEW)])  # a running job's
    daily = _put(model, _daily("2010-01-01", 4))
    # retention end = 2010-01-05 - 1 month = 2009-12-05: [2009-11-01, 2009-12-05) holds November
    aftermath = after_success(model, P, _succeeded(model))
    assert [s.id for s in aftermath.removed] == [november.id]
    assert not _has_details(model, november.id)
    assert _state(model) == [(building.id, SegmentStatus.NEW)] + [(s.id, SegmentStatus.READY) for s in daily]
    assert _has_details(model, building.id)  # NEW segments belong to their job
    assert all(_has_details(model, s.id) for s in daily)
    assert _dataflow(model).status is DataflowStatus.ONLINE
    merge = aftermath.merge
    assert merge is not None  # auto-merge ran after retention, over what is left
    assert merge.time_range == rng("2010-01-01", "2010-01-04")
    assert merge.segment_ids == [s.id for s in daily[:3]]
    assert november.id not in merge.segment_ids


def test_retention_in_days_alone(model: MetadataStore) -> None:
    retention = RetentionRange(
        retention_range_enabled=True, retention_range_number=2, retention_range_type=AutoMergeTimeRange.DAY
    )
    _configure(model, retention_range=retention)  # auto-merge stays off
    daily = _put(model, _daily("2010-01-01", 7))  # 01-01 .. 01-08
    aftermath = after_success(model, P, _succeeded(model))
    # retention end = 01-08 - 2 days = 01-06: the five segments inside [01-01, 01-06) go
    assert [s.id for s in aftermath.removed] == [s.id for s in daily[:5]]
    assert _state(model) == [(s.id, SegmentStatus.READY) for s in daily[5:]]
    assert not any(_has_details(model, s.id) for s in daily[:5])
    assert all(_has_details(model, s.id) for s in daily[5:])
    assert aftermath.merge is None
    assert jobs_of(model, P) == []
    assert after_success(model, P, _succeeded(model)).removed == []  # nothing more is old enough


def test_a_quarter_retention_removes_every_segment_and_the_model_goes_offline(model: MetadataStore) -> None:
    # Kylin's quirk, kept (reference §1.5): QUARTER does not shift the retention end, so the range is
    # [first.start, last.end) and every READY segment lies inside it
    retention = RetentionRange(
        retention_range_enabled=True, retention_range_number=1, retention_range_type=AutoMergeTimeRange.QUARTER
    )
    _configure(model, auto_merge_enabled=True, retention_range=retention)
    daily = _put(model, _daily("2010-01-01", 4))
    assert _dataflow(model).status is DataflowStatus.ONLINE
    aftermath = after_success(model, P, _succeeded(model))
    assert [s.id for s in aftermath.removed] == [s.id for s in daily]
    assert aftermath.merge is None
    dataflow = _dataflow(model)
    assert dataflow.segments == []
    assert dataflow.status is DataflowStatus.OFFLINE
    assert not any(_has_details(model, s.id) for s in daily)


def test_retention_disabled_keeps_everything(model: MetadataStore) -> None:
    retention = RetentionRange(
        retention_range_enabled=False, retention_range_number=1, retention_range_type=AutoMergeTimeRange.DAY
    )
    _configure(model, retention_range=retention)
    daily = _put(model, _daily("2010-01-01", 5))
    assert after_success(model, P, _succeeded(model)).removed == []
    assert [i for i, _ in _state(model)] == [s.id for s in daily]


# -- delete_segments ------------------------------------------------------------------------------


def test_delete_by_name_or_id_removes_the_details(model: MetadataStore) -> None:
    first, second, third = _put(model, _daily("2010-01-01", 3))
    removed = delete_segments(model, P, P, [third.id, first.name])
    assert [s.id for s in removed] == [first.id, third.id]  # range order
    assert _state(model) == [(second.id, SegmentStatus.READY)]
    assert not _has_details(model, first.id)
    assert not _has_details(model, third.id)
    assert _has_details(model, second.id)
    assert _dataflow(model).status is DataflowStatus.ONLINE

    assert [s.id for s in delete_segments(model, P, P, [second.name])] == [second.id]
    dataflow = _dataflow(model)
    assert dataflow.segments == []
    assert dataflow.status is DataflowStatus.OFFLINE  # its last segment went


def test_delete_refuses_locked_and_new_segments(model: MetadataStore) -> None:
    first, second = _put(model, _daily("2010-01-01", 2))
    [refreshing] = _put(model, [seg("2010-01-01", "2010-01-02", SegmentStatus.NEW)])  # same range as first
    [loading] = _put(model, [seg("2010-01-05", "2010-01-06", SegmentStatus.NEW)])
    before = _state(model)
    with pytest.raises(SegmentRuleError, match="LOCKED"):
        delete_segments(model, P, P, [first.name])  # the name of the READY one (and of its NEW copy)
    with pytest.raises(SegmentRuleError, match="LOCKED"):
        delete_segments(model, P, P, [second.id, first.id])  # all or nothing
    with pytest.raises(SegmentRuleError, match='REFRESHING".*discard its job'):
        delete_segments(model, P, P, [refreshing.id])
    with pytest.raises(SegmentRuleError, match='LOADING".*discard its job'):
        delete_segments(model, P, P, [loading.name])
    with pytest.raises(SegmentRuleError, match='"no-such-segment"'):
        delete_segments(model, P, P, [second.id, "no-such-segment"])
    assert _state(model) == before
    assert all(_has_details(model, s) for s, _ in before)


def test_delete_refuses_a_segment_an_unfinished_job_works_on(model: MetadataStore) -> None:
    first, second = _put(model, _daily("2010-01-01", 2))
    job = _index_build(model, first)
    with pytest.raises(JobConflictError, match=f'"{first.name}": job {job.uuid} \\(INDEX_BUILD, READY\\)'):
        delete_segments(model, P, P, [first.name])
    assert _has_details(model, first.id)
    act(model, P, job.uuid, JobAction.PAUSE)
    with pytest.raises(JobConflictError, match="PAUSED"):  # paused is not finished
        delete_segments(model, P, P, [first.id])
    assert [s.id for s in delete_segments(model, P, P, [second.id])] == [second.id]  # not its segment
    act(model, P, job.uuid, JobAction.DISCARD)
    assert [s.id for s in delete_segments(model, P, P, [first.id])] == [first.id]
    assert _dataflow(model).status is DataflowStatus.OFFLINE


def test_delete_names_an_unknown_segment(model: MetadataStore) -> None:
    _put(model, _daily("2010-01-01", 1))
    with pytest.raises(SegmentRuleError, match='Can\'t find the segment "20990101000000_20990102000000"'):
        delete_segments(model, P, P, ["20990101000000_20990102000000"])
    with pytest.raises(SegmentRuleError, match="at least one segment"):
        delete_segments(model, P, P, [])


# -- discard / restart drop the job's NEW segment -------------------------------------------------


@pytest.mark.parametrize("action", [JobAction.DISCARD, JobAction.RESTART])
def test_discard_and_restart_drop_the_build_segment(model: MetadataStore, action: JobAction) -> None:
    ready = _put(model, _daily("2010-01-01", 2))
    job = submit(model, P, build_job(model, P, P, rng("2010-01-03", "2010-01-04")))
    [building] = _put(model, [seg("2010-01-03", "2010-01-04", SegmentStatus.NEW)])  # as the runner adds it
    assert building.seg_range == job.time_range

    after = act(model, P, job.uuid, action)
    assert after.state is action.target
    assert _state(model) == [(s.id, SegmentStatus.READY) for s in ready]
    assert not _has_details(model, building.id)
    assert all(_has_details(model, s.id) for s in ready)
    assert _dataflow(model).status is DataflowStatus.ONLINE


@pytest.mark.parametrize("action", [JobAction.DISCARD, JobAction.RESTART])
def test_discard_and_restart_of_a_refresh_keep_the_refreshed_segment(model: MetadataStore, action: JobAction) -> None:
    first, second = _put(model, _daily("2010-01-01", 2))
    job = submit(model, P, refresh_job(model, P, P, second.name))
    [copy] = _put(model, [seg("2010-01-02", "2010-01-03", SegmentStatus.NEW)], [{1}])
    act(model, P, job.uuid, action)
    assert _state(model) == [(first.id, SegmentStatus.READY), (second.id, SegmentStatus.READY)]
    assert not _has_details(model, copy.id)
    with model.read(P) as tx:
        details = tx.require(SegmentDetails, _model_uuid(model), second.id)
    assert sorted(li.layout_id for li in details.layout_instances) == [1, 2]


def test_pause_keeps_the_build_segment(model: MetadataStore) -> None:
    ready = _put(model, _daily("2010-01-01", 1))
    job = submit(model, P, build_job(model, P, P, rng("2010-01-02", "2010-01-03")))
    [building] = _put(model, [seg("2010-01-02", "2010-01-03", SegmentStatus.NEW)])
    before = _state(model)
    assert before == [(ready[0].id, SegmentStatus.READY), (building.id, SegmentStatus.NEW)]
    assert act(model, P, job.uuid, JobAction.PAUSE).state is JobState.PAUSED
    assert _state(model) == before
    assert _has_details(model, building.id)
    assert act(model, P, job.uuid, JobAction.RESUME).state is JobState.READY
    assert _state(model) == before


def test_discard_leaves_a_new_segment_of_another_range(model: MetadataStore) -> None:
    job = submit(model, P, build_job(model, P, P, rng("2010-01-01", "2010-01-02")))
    [other] = _put(model, [seg("2010-01-05", "2010-01-06", SegmentStatus.NEW)])  # not this job's
    assert act(model, P, job.uuid, JobAction.DISCARD).state is JobState.DISCARDED
    assert _state(model) == [(other.id, SegmentStatus.NEW)]
    assert _has_details(model, other.id)


def test_discarding_a_merge_unlocks_the_merged_segments(model: MetadataStore) -> None:
    daily = _put(model, _daily("2010-01-01", 3))
    job = submit(model, P, merge_job(model, P, P, [s.name for s in daily[:2]]))
    [merged] = _put(model, [seg("2010-01-01", "2010-01-03", SegmentStatus.NEW)], [{1}])
    assert merged.seg_range == job.time_range
    with pytest.raises(SegmentRuleError, match="LOCKED"):
        delete_segments(model, P, P, [daily[0].id])
    act(model, P, job.uuid, JobAction.DISCARD)
    assert _state(model) == [(s.id, SegmentStatus.READY) for s in daily]
    assert not _has_details(model, merged.id)
    assert [s.id for s in delete_segments(model, P, P, [daily[0].id])] == [daily[0].id]  # no longer LOCKED


def test_after_success_marks_the_job_followed(model: MetadataStore) -> None:
    """`build --wait` watching another runner returns once retention and auto-merge have run after its job:
    the job's document says so."""
    from precube.jobs.lifecycle import followed

    _configure(model, auto_merge_enabled=True)
    _put(model, _daily("2010-01-01", 4))
    job = _succeeded(model)
    with model.transaction(P) as tx:
        tx.create(job)
        assert not followed(tx.require(Job, job.uuid))
    aftermath = after_success(model, P, job)
    assert aftermath.merge is not None
    with model.read(P) as tx:
        assert followed(tx.require(Job, job.uuid))
        assert followed(tx.require(Job, aftermath.merge.uuid))  # READY: nothing follows it yet
