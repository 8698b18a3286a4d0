"""The job log: what runners do, as Python `logging` records carrying the job's id, so a background runner's
log (`HOME/logs/jobs-PROJECT.log`) says when, how bad and which job on every line."""

from __future__ import annotations

import logging
from pathlib import Path
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


def log_to_file(path: Path) -> logging.Handler:
    """Also write the job log to `path` (a server's `logs/jobs-server.log`); `detach` the handler at the end."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(_JobField())
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    return handler


def detach(handler: logging.Handler) -> None:
    logger.removeHandler(handler)
    handler.close()


def job_lines(logs: Path, job_id: str) -> list[str]:
    """The lines of one job in the job logs under `logs` (`jobs-*.log`), oldest first."""
    marker = f" job={job_id} "
    found: list[str] = []
    for path in sorted(logs.glob("jobs-*.log")) if logs.is_dir() else []:
        with path.open(encoding="utf-8", errors="replace") as lines:
            found += [line.rstrip("\n") for line in lines if marker in line]
    return sorted(found)  # each line starts with its time
