"""Jobs (seed 002 "Task & Job"): one document per job at `/{project}/execute/{job_id}` (no suffix, as
in Kylin), and per-day job statistics at `/{project}/job_stats/{yyyy-MM-dd}.json`.

States and the moves between them are Kylin 5's `ExecutableState` (reference §2); the actions a user
takes (pause, resume, discard, restart) are defined on top of them in `JobAction`.
"""

from __future__ import annotations

import uuid as uuidlib
from enum import StrEnum
from typing import ClassVar

from pydantic import BaseModel, Field

from precube.metadata.dataflow import TimeRange
from precube.metadata.entity import Entity
from precube.metadata.errors import MetadataError


class JobType(StrEnum):
    FULL_BUILD = "FULL_BUILD"  # the whole range of a non-partitioned model
    INC_BUILD = "INC_BUILD"  # a new segment of a time range
    INDEX_BUILD = "INDEX_BUILD"  # newly added layouts into existing segments
    INDEX_REFRESH = "INDEX_REFRESH"  # rebuild a segment's range from source
    INDEX_MERGE = "INDEX_MERGE"  # contiguous segments into one
    TABLE_SAMPLING = "TABLE_SAMPLING"


class JobState(StrEnum):
    READY = "READY"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    ERROR = "ERROR"
    DISCARDED = "DISCARDED"
    SUCCEED = "SUCCEED"

    @property
    def is_final(self) -> bool:
        return self in (JobState.DISCARDED, JobState.SUCCEED)

    def can_move_to(self, target: JobState) -> bool:
        return target in _MOVES[self]


# Kylin 5 `ExecutableState.VALID_STATE_TRANSFER` (reference §2).
_MOVES: dict[JobState, frozenset[JobState]] = {
    JobState.READY: frozenset({JobState.RUNNING, JobState.ERROR, JobState.DISCARDED, JobState.PAUSED}),
    JobState.RUNNING: frozenset(
        {JobState.READY, JobState.SUCCEED, JobState.DISCARDED, JobState.ERROR, JobState.PAUSED}
    ),
    JobState.PAUSED: frozenset({JobState.READY, JobState.DISCARDED}),
    JobState.ERROR: frozenset({JobState.READY, JobState.DISCARDED}),
    JobState.DISCARDED: frozenset(),
    JobState.SUCCEED: frozenset({JobState.READY}),
}


class JobAction(StrEnum):
    """What a user asks of a job (Kylin's `JobActionEnum`): the state each leads to, and from where."""

    PAUSE = "PAUSE"
    RESUME = "RESUME"
    DISCARD = "DISCARD"
    RESTART = "RESTART"

    @property
    def target(self) -> JobState:
        return {
            JobAction.PAUSE: JobState.PAUSED,
            JobAction.RESUME: JobState.READY,
            JobAction.DISCARD: JobState.DISCARDED,
            JobAction.RESTART: JobState.READY,
        }[self]

    @property
    def sources(self) -> frozenset[JobState]:
        """States the action applies to (a finished job is never restarted: submit a new one)."""
        if self is JobAction.RESUME:
            return frozenset({JobState.PAUSED, JobState.ERROR})
        if self is JobAction.PAUSE:
            return frozenset({JobState.READY, JobState.RUNNING})
        return frozenset({JobState.READY, JobState.RUNNING, JobState.PAUSED, JobState.ERROR})


class InvalidJobStateError(MetadataError):
    """A job was asked to move to a state its current one does not lead to."""

    code = "JOB_STATE"


class JobStep(BaseModel):
    """One ordered step of a job: flat table, dictionaries, layers, commit, clean-up…"""

    name: str
    state: JobState = JobState.READY
    start_time: int | None = None
    end_time: int | None = None
    done: int = 0  # progress: units finished of `total` (layouts of a layer, …)
    total: int = 0
    output: str = ""  # the step's log
    error: str | None = None

    @property
    def fraction(self) -> float:
        """How much of the step is done, 0..1."""
        if self.state is JobState.SUCCEED:
            return 1.0
        return self.done / self.total if self.total else 0.0


def new_job_id(model_uuid: str | None) -> str:
    """Kylin-style: a random uuid, then the id of the model the job builds (if any)."""
    job = str(uuidlib.uuid4())
    return f"{job}-{model_uuid}" if model_uuid else job


class Job(Entity):
    """One scheduled unit of work on one model (or table, for sampling); `uuid` is the job id."""

    kind: ClassVar[str] = "execute"
    suffix: ClassVar[str] = ""

    job_type: JobType
    state: JobState = JobState.READY
    target_model: str | None = None  # model uuid
    model_alias: str | None = None
    target_table: str | None = None  # DB.TABLE, for TABLE_SAMPLING
    segment_ids: list[str] = Field(default_factory=list)
    layout_ids: list[int] = Field(default_factory=list)
    time_range: TimeRange | None = None
    priority: int = Field(default=3, ge=0, le=4)  # Kylin's: 0 is the most urgent
    submitter: str = "precube"
    params: dict[str, str] = Field(default_factory=dict)
    steps: list[JobStep] = Field(default_factory=list)
    start_time: int | None = None
    end_time: int | None = None
    error: str | None = None
    runner: str | None = None  # host:pid:token of the run that last started it (its writes are fenced by it)

    def move_to(self, target: JobState) -> None:
        """Change the state, refusing a move Kylin does not allow."""
        if target is not self.state and not self.state.can_move_to(target):
            raise InvalidJobStateError(f"job {self.uuid} cannot go from {self.state} to {target}")
        self.state = target

    def apply(self, action: JobAction) -> None:
        if self.state not in action.sources:
            raise InvalidJobStateError(f"cannot {action.value.lower()} job {self.uuid}: it is {self.state}")
        self.move_to(action.target)
        if action is JobAction.RESTART:  # from the first step again
            self.steps = [JobStep(name=s.name) for s in self.steps]
            self.start_time = self.end_time = None
            self.error = None

    @property
    def current_step(self) -> JobStep | None:
        """The first step not finished: where a resumed job continues."""
        return next((s for s in self.steps if s.state is not JobState.SUCCEED), None)

    @property
    def progress(self) -> float:
        """Finished share, 0..1: finished steps count fully, the current one by its done/total."""
        if not self.steps:
            return 1.0 if self.state is JobState.SUCCEED else 0.0
        finished = sum(
            1.0 if s.state is JobState.SUCCEED else (s.done / s.total if s.total else 0.0) for s in self.steps
        )
        return finished / len(self.steps)

    @property
    def duration_ms(self) -> int:
        if self.start_time is None:
            return 0
        return (self.end_time or self.last_modified or self.start_time) - self.start_time


class JobStats(Entity):
    """One day's successful jobs in a project (Kylin's `job_stats`); `uuid` is the day, `yyyy-MM-dd`."""

    kind: ClassVar[str] = "job_stats"

    count: int = 0
    duration_ms: int = 0
    source_rows: int = 0  # rows the builds among them read
    by_model: dict[str, int] = Field(default_factory=dict)  # model uuid → jobs

    def add(self, job: Job, source_rows: int = 0) -> None:
        self.count += 1
        self.duration_ms += job.duration_ms
        self.source_rows += source_rows
        if job.target_model:
            self.by_model[job.target_model] = self.by_model.get(job.target_model, 0) + 1


class JobLease(Entity):
    """Which process runs a project's jobs (DESIGN §8, like Kylin's epoch): one document,
    `/{project}/job_lease/scheduler.json`, renewed by its holder's heartbeat. Another process takes it
    over once it expires, or at once when its holder is a process of the same host that no longer runs.
    `epoch` counts the holders: it moves at every change of holder."""

    kind: ClassVar[str] = "job_lease"

    uuid: str = "scheduler"
    owner: str = ""  # host:pid:token of the holder
    host: str = ""
    machine: str = ""  # boot id and pid namespace of the holder's host: its pid means something only there
    pid: int = 0
    expires_at: int = 0  # epoch ms
    epoch: int = 0
