"""Errors of the jobs domain."""

from __future__ import annotations

from precube.errors import PrecubeError


class JobError(PrecubeError):
    """Base of job errors."""

    code = "JOB_ERROR"


class JobConflictError(JobError):
    """A job cannot be submitted: an unfinished job of the same model covers part of its range
    (Kylin's KE-010032206)."""

    code = "JOB_CONFLICT"


class ModelNotBuildableError(JobError):
    """A job for a model that cannot be built now (BROKEN: its tables no longer fit it) is refused at
    submission, with the reason, instead of failing in the background."""

    code = "MODEL_NOT_BUILDABLE"


class InsufficientDiskSpaceError(JobError):
    """A build refused before it starts: the warehouse or the metadata store lacks the free space it needs
    (`jobs.disk`); resumable once space is freed (not `retryable`: a retry fails alike until someone frees it)."""

    code = "INSUFFICIENT_DISK_SPACE"
