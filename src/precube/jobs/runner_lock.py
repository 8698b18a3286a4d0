"""One background job runner per home and project: a lock file the runner holds for its life.

The job lease (`jobs.lease`) decides who runs a project's jobs, but a runner takes it only after it has started
Python and Spark; `build` calls made meanwhile saw no holder and started runners (and JVMs) of their own. So the
command that starts a runner takes this lock first (not blocking: held means a runner is starting or running,
which will run the job) and hands it to the runner, which inherits the open file: the lock lasts as long as the
runner, and ends with it however it ends. A runner releases it before its last look for READY jobs, so a job
submitted meanwhile is either seen by that look or finds the lock free and starts a runner.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

FD_ENV = "PRECUBE_RUNNER_LOCK_FD"  # the inherited lock's descriptor, in the runner's environment


class RunnerLock:
    """An exclusive lock on `home/run/jobs-PROJECT.lock`, held through an open file descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @staticmethod
    def path(home: Path, project: str) -> Path:
        return home / "run" / f"jobs-{project}.lock"

    @classmethod
    def try_take(cls, home: Path, project: str) -> RunnerLock | None:
        """The lock, or None when another process (a runner, or a command starting one) holds it."""
        path = cls.path(home, project)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return cls(fd)

    @classmethod
    def inherited(cls) -> RunnerLock | None:
        """The lock the command that started this runner handed down, if any."""
        fd = os.environ.pop(FD_ENV, None)
        return cls(int(fd)) if fd is not None and fd.isdigit() else None

    def handing_env(self) -> dict[str, str]:
        """The environment entry that tells a child runner (given `pass_fds=(lock.fd,)`) which fd is its lock."""
        return {FD_ENV: str(self.fd)}

    def close(self) -> None:
        """Stop holding the lock in this process (a child that inherited it still holds it)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def release(self) -> None:
        """Unlock for every process sharing the open file, then close it."""
        if self.fd >= 0:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            self.close()
