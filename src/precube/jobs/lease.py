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

Renewal runs on a thread of its own (`Lease.keep_alive`), not in the loop that launches jobs, so the work the
lease guards (a build's Python, a busy scheduler turn, threads hogging the GIL) cannot starve it. The margin
against the TTL: the heartbeat renews every TTL/3 (after a failed renewal, every TTL/10), so a holder must miss
about three renewals in a row before another process may take the lease over; and a holder whose renewals have
failed for a whole TTL (counted from the start of its last successful one, so before the stored expiry passes)
takes itself for fenced: `fence` then refuses its writes and its jobs stop, before anyone else may start them.
A takeover thus needs the holder dead (a process of this machine: at once) or silent for a whole TTL; an alive
holder of this machine is still taken over once its lease expires, since a pid alone cannot tell a wedged or
stopped process, or a pid reused by another program, from a working holder, and the expired holder has
fenced itself by then.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
import uuid
from pathlib import Path

from precube.jobs.errors import JobError
from precube.metadata import AlreadyExistsError, JobLease, MetadataStore, Transaction, VersionConflictError
from precube.metadata.entity import now_ms

LOG = logging.getLogger("precube.jobs.lease")
TTL_S = 30.0  # a holder that has not renewed for this long is taken for dead
RENEW_EVERY = 1 / 3  # of the TTL: the heartbeat's period
RETRY_EVERY = 1 / 10  # of the TTL: how soon a failed renewal is tried again


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
        self.renewed_at = 0.0  # monotonic: when the last successful acquire or renewal began
        self.renew_error: str | None = None  # why the last renewal failed (None: it did not)
        self._beat: threading.Thread | None = None
        self._beat_stop = threading.Event()

    def _free(self, lease: JobLease) -> bool:
        if lease.owner in ("", self.owner) or lease.expires_at <= now_ms():
            return True
        same_machine = lease.host == self.host and lease.machine == self.machine
        return same_machine and not _alive(lease.pid)

    def acquire(self) -> bool:
        """Take the lease if it is free (never held, released, expired, or its holder is gone); True if
        this process holds it now."""
        began = time.monotonic()
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
        self.held, self.renewed_at, self.renew_error = True, began, None
        return True

    def holder(self) -> JobLease | None:
        """The current holder's lease, None when nobody (alive) holds it."""
        with self.store.read(self.project) as tx:
            lease = tx.get(JobLease, "scheduler")
        if lease is None or lease.owner == "" or (lease.owner != self.owner and self._free(lease)):
            return None
        return lease

    def renew(self, store: MetadataStore | None = None) -> None:
        """The heartbeat: push the expiry back (through `store`, by default the lease's); raises LeaseLostError if
        another process holds it."""
        began = time.monotonic()
        try:
            with (store or self.store).transaction(self.project, self.writer) as tx:
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
        self.renewed_at, self.renew_error = began, None

    @property
    def fresh(self) -> bool:
        """Held, and renewed within the TTL: past it, another process may take the lease over at any moment."""
        return self.held and time.monotonic() - self.renewed_at < self.ttl_ms / 1000

    def keep_alive(self) -> None:
        """Renew the lease while held, on a thread of its own through a store connection of its own, every TTL/3,
        until `release`."""
        if self._beat is not None and self._beat.is_alive():
            return
        self._beat_stop = threading.Event()
        self._beat = threading.Thread(
            target=self._heartbeat, args=(self._beat_stop,), name=f"precube-lease-{self.project}", daemon=True
        )
        self._beat.start()

    def _heartbeat(self, stop: threading.Event) -> None:
        try:
            store = self.store.dedicated()
        except Exception as err:  # noqa: BLE001 (cannot connect now: renew through the shared pool instead)
            LOG.warning("the job lease heartbeat of project %s shares the store's connections: %s", self.project, err)
            store = self.store
        try:
            self._beat_on(store, stop)
        finally:
            if store is not self.store:
                store.close()

    def _beat_on(self, store: MetadataStore, stop: threading.Event) -> None:
        """Until `release`: while the lease is held (a lost one may be acquired again), renew it."""
        period = self.ttl_ms / 1000 * RENEW_EVERY
        while not stop.wait(period):
            if not self.held:
                continue
            try:
                self.renew(store)
                period = self.ttl_ms / 1000 * RENEW_EVERY
            except LeaseLostError as err:  # another process holds it now: nothing to renew unless taken again
                self.renew_error = err.message
                LOG.warning("%s", err.message)
            except Exception as err:  # noqa: BLE001 (the store is unreachable or full: retry soon; `fresh` tells)
                self.renew_error = f"{type(err).__name__}: {err}"
                LOG.warning("renewing the job lease of project %s failed: %s", self.project, self.renew_error)
                period = self.ttl_ms / 1000 * RETRY_EVERY

    def _stop_heartbeat(self) -> None:
        self._beat_stop.set()
        beat = self._beat
        if beat is not None and beat is not threading.current_thread():
            beat.join(timeout=self.ttl_ms / 1000)
        self._beat = None

    def fence(self, tx: Transaction) -> None:
        """Inside a transaction that starts a job or records its work: refuse (LeaseLostError) unless the stored
        lease is this process's, so a process that lost it without knowing yet — it stalled past its expiry, or
        its project was deleted and made again between two renewals — starts and publishes nothing."""
        lease = tx.get(JobLease, "scheduler")
        if lease is None or lease.owner != self.owner:
            holder = lease.owner if lease is not None and lease.owner else "nobody"
            raise LeaseLostError(f"the job lease of project {self.project} is held by {holder}, not by this process")
        if not self.fresh:  # stored as ours, but past our TTL: another process may be starting the jobs now
            raise LeaseLostError(
                f"the job lease of project {self.project} was not renewed for {self.ttl_ms / 1000:g} s "
                f"({self.renew_error or 'no renewal'}): this process stops its jobs"
            )

    def release(self) -> None:
        """Give the lease up (at a clean exit), so the next process need not wait for it to expire."""
        self._stop_heartbeat()
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
