"""The lease that makes one process at a time run a project's jobs (DESIGN §8, Kylin's epoch).

Several processes may share the metadata store (a server, CLI commands): whoever holds a project's lease
runs its jobs; the others submit jobs and watch them. The holder renews the lease with a heartbeat; once
it expires, or at once when its holder was a process of this host that has gone (a crash, SIGKILL),
another process takes it over, and only then treats the jobs it finds RUNNING as dead (`queue.recover`, or a
server's `shutdown.take_over`).

"This host" is the host name *and* the machine's boot id and pid namespace: two containers (or two machines)
that share a host name do not see each other's processes, so neither may judge the other dead by its pid.
A holder that stalled past its expiry (a long pause, a partition from the database) may still be running a job
when another process takes over: a job's start and writes are fenced by its run (`jobs.runner`) and by the
stored lease (`Lease.fence`), so the stalled run's next write fails and it stops.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid
from pathlib import Path

from precube.jobs.errors import JobError
from precube.metadata import AlreadyExistsError, JobLease, MetadataStore, Transaction, VersionConflictError
from precube.metadata.entity import now_ms

TTL_S = 30.0  # a holder that has not renewed for this long is taken for dead


class LeaseLostError(JobError):
    """Another process took the project's job lease over (this one stalled past the lease's expiry)."""

    code = "JOB_LEASE_LOST"


@functools.cache
def machine() -> str:
    """This process's machine as far as pids go: the kernel's boot id and the pid namespace ("" off Linux)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{Path('/proc/self/ns/pid').readlink()}"
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class Lease:
    """This process's claim on running `project`'s jobs."""

    def __init__(self, store: MetadataStore, project: str, ttl_s: float = TTL_S, writer: str = "precube") -> None:
        self.store, self.project, self.ttl_ms, self.writer = store, project, int(ttl_s * 1000), writer
        self.host, self.machine, self.pid = socket.gethostname(), machine(), os.getpid()
        self.owner = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:8]}"
        self.held = False
        self.epoch = 0  # the lease's epoch while this process holds it

    def _free(self, lease: JobLease) -> bool:
        if lease.owner in ("", self.owner) or lease.expires_at <= now_ms():
            return True
        same_machine = lease.host == self.host and lease.machine == self.machine
        return same_machine and not _alive(lease.pid)

    def acquire(self) -> bool:
        """Take the lease if it is free (never held, released, expired, or its holder is gone); True if
        this process holds it now."""
        try:
            with self.store.transaction(self.project, self.writer) as tx:
                tx.project()  # raises for a project deleted meanwhile: no lease document may outlive it
                lease = tx.get(JobLease, "scheduler") or JobLease()
                if not self._free(lease):
                    return False
                if lease.owner != self.owner:
                    lease.epoch += 1
                lease.owner, lease.host, lease.machine, lease.pid = self.owner, self.host, self.machine, self.pid
                lease.expires_at = now_ms() + self.ttl_ms
                tx.save(lease)
                self.epoch = lease.epoch
        except (VersionConflictError, AlreadyExistsError):  # another process took it in the same instant
            return False
        self.held = True
        return True

    def holder(self) -> JobLease | None:
        """The current holder's lease, None when nobody (alive) holds it."""
        with self.store.read(self.project) as tx:
            lease = tx.get(JobLease, "scheduler")
        if lease is None or lease.owner == "" or (lease.owner != self.owner and self._free(lease)):
            return None
        return lease

    def renew(self) -> None:
        """The heartbeat: push the expiry back; raises LeaseLostError if another process holds it."""
        try:
            with self.store.transaction(self.project, self.writer) as tx:
                lease = tx.get(JobLease, "scheduler")
                if lease is None or lease.owner != self.owner:
                    self.held = False
                    holder = lease.owner if lease is not None else "nobody"
                    raise LeaseLostError(f"the job lease of project {self.project} is now held by {holder}")
                lease.expires_at = now_ms() + self.ttl_ms
                tx.update(lease)
        except VersionConflictError as err:  # taken over between our read and our write
            self.held = False
            raise LeaseLostError(f"the job lease of project {self.project} was taken over: {err}") from err

    def fence(self, tx: Transaction) -> None:
        """Inside a transaction that starts a job or records its work: refuse (LeaseLostError) unless the stored
        lease is this process's, so a process that lost it without knowing yet — it stalled past its expiry, or
        its project was deleted and made again between two renewals — starts and publishes nothing."""
        lease = tx.get(JobLease, "scheduler")
        if lease is None or lease.owner != self.owner:
            holder = lease.owner if lease is not None and lease.owner else "nobody"
            raise LeaseLostError(f"the job lease of project {self.project} is held by {holder}, not by this process")

    def release(self) -> None:
        """Give the lease up (at a clean exit), so the next process need not wait for it to expire."""
        if not self.held:
            return
        try:
            with self.store.transaction(self.project, self.writer) as tx:
                lease = tx.get(JobLease, "scheduler")  # gone with its project: nothing to give up
                if lease is not None and lease.owner == self.owner:
                    lease.owner, lease.expires_at = "", 0
                    tx.update(lease)
        except VersionConflictError:  # taken over meanwhile: nothing of ours left to give up
            pass
        self.held = False
