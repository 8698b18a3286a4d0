"""The job log: what runners do, as Python `logging` records carrying the job's id, so a background runner's
log (`HOME/logs/jobs-PROJECT.log`) says when, how bad and which job on every line."""

from __future__ import annotations

import logging
from typing import IO

logger = logging.getLogger("precube.jobs")
FORMAT = "%(asctime)s %(levelname)s job=%(job)s %(message)s"


class _JobField(logging.Filter):
    """Gives a record without a job (the runner's own) the `job` field the format names."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "job"):
            record.job = "-"
        return True


def for_job(job_id: str) -> logging.LoggerAdapter[logging.Logger]:
    """The logger of one job: every record carries its id."""
    return logging.LoggerAdapter(logger, {"job": job_id})


def log_to(stream: IO[str]) -> None:
    """Write the job log to `stream` (a background runner's output), with time, level and job id."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(_JobField())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
