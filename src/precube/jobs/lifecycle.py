"""The segment lifecycle around jobs (reference §1.2, §1.5, §2): deleting segments, and what follows a
successful job: retention, then auto-merge.

Segments leave the metadata here in one transaction; their files stay until garbage collection
(`jobs.gc`) removes directories nothing references, after a grace period that lets queries already
reading them finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from precube.jobs.errors import JobConflictError, JobError
from precube.jobs.plans import merge_job
from precube.jobs.segment_removal import remove_segments
from precube.jobs.submission import busy_jobs, submit
from precube.metadata import (
    Dataflow,
    Job,
    JobState,
    MetadataStore,
    Model,
    Project,
    Segment,
    SegmentConfig,
    SegmentStatus,
)
from precube.modeling.auto_merge import plan_auto_merge
from precube.modeling.errors import SegmentRuleError
from precube.modeling.model_edits import segment_config_in_force
from precube.modeling.model_store import require_model
from precube.modeling.retention import segments_to_remove_by_retention
from precube.modeling.segments import validate_delete

FIRST_DAY_OF_WEEK = "kylin.metadata.first-day-of-week"  # project property, as in Kylin; default monday
AUTO_MERGE = "auto-merge"  # the submitter of the merge jobs auto-merge submits


def first_day_of_week(project: Project) -> str:
    """Where WEEK merge windows start: the project property, else Kylin's default, monday."""
    return project.override_kylin_properties.get(FIRST_DAY_OF_WEEK, "monday")


def segment_config(project: Project, model: Model) -> SegmentConfig:
    """The settings in force for `model`: its own `segment_config` fields, the project's for the rest."""
    return segment_config_in_force(project, model)


def delete_segments(
    store: MetadataStore, project: str, alias: str, targets: Sequence[str], writer: str = "precube"
) -> list[Segment]:
    """A user's delete (ids or names): refused for a segment being built, refreshed or merged (LOCKED or
    NEW, `validate_delete`) or covered by an unfinished job (an index build adding layouts to it)."""
    with store.transaction(project, writer) as tx:
        model = require_model(tx, alias)
        chosen = validate_delete(tx.require(Dataflow, model.uuid).segments, targets)
        for segment in chosen:
            for job in busy_jobs(tx, model.uuid):
                if (job.time_range is None or job.time_range.overlaps(segment.range)) or segment.id in job.segment_ids:
                    raise JobConflictError(
                        f'Can\'t remove segment "{segment.name}": job {job.uuid} ({job.job_type}, {job.state}) '
                        "works on it; wait for it, or discard it"
                    )
        return remove_segments(tx, model, [s.id for s in chosen])


@dataclass(frozen=True)
class Aftermath:
    """What followed a successful job: segments retention removed, the merge job auto-merge submitted,
    and why auto-merge submitted none when it found a range."""

    removed: list[Segment] = field(default_factory=list)
    merge: Job | None = None
    skipped: str | None = None


def after_success(store: MetadataStore, project: str, job: Job, writer: str = "precube") -> Aftermath:
    """Kylin's `SegmentAutoMergeUtil.autoMergeSegments`, run after every successful job on a model:
    retention first (READY segments only: a NEW one belongs to a running job), then at most one auto-merge
    job. Kylin runs it after builds only; precube also after a merge, as seed 001 §4.4 and Kylin's doc
    describe, so that daily segments roll up week by week, then month by month, without another build."""
    try:
        return _after_success(store, project, job, writer)
    finally:  # whatever happened, it has: a `build --wait` watching this job may now return (`followed`)
        with store.transaction(project, writer) as tx:
            done = tx.get(Job, job.uuid)
            if done is not None:
                done.params[AFTERMATH_DONE] = "true"
                tx.update(done)


AFTERMATH_DONE = "aftermath_done"  # a job param: retention and auto-merge have run after this job


def followed(job: Job) -> bool:
    """Whether what follows an ended job has been done: retention and auto-merge after a success."""
    return job.state is not JobState.SUCCEED or job.params.get(AFTERMATH_DONE) == "true"


def _after_success(store: MetadataStore, project: str, job: Job, writer: str) -> Aftermath:
    if job.target_model is None:
        return Aftermath()
    with store.transaction(project, writer) as tx:
        model = tx.get(Model, job.target_model)
        if model is None:  # deleted meanwhile
            return Aftermath()
        project_doc = tx.project()
        config = segment_config(project_doc, model)
        segments = tx.require(Dataflow, model.uuid).segments
        doomed = segments_to_remove_by_retention(segments, config.retention_range)
        expired = {s.id for s in doomed if s.status is not SegmentStatus.NEW}
        removed = remove_segments(tx, model, list(expired)) if expired else []
        segments = [s for s in segments if s.id not in expired]
        rng = plan_auto_merge(segments, config, first_day_of_week(project_doc))
    if rng is None:
        return Aftermath(removed)
    targets = [s.id for s in segments if s.status is not SegmentStatus.NEW and rng.contains(s.range)]
    try:
        merge = merge_job(store, project, model.alias, targets, submitter=AUTO_MERGE)
        return Aftermath(removed, submit(store, project, merge, writer))
    except (SegmentRuleError, JobError) as err:  # e.g. segments with different layouts: Kylin skips too
        return Aftermath(removed, skipped=f"auto-merge of {rng} skipped: {err}")
