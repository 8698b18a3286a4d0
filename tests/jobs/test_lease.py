"""The project job lease (DESIGN §8): one holder at a time, taken over after expiry or at once when the
holder was a process of this host that is gone; the old holder learns it lost the lease on renewal."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from precube.jobs.lease import Lease, LeaseLostError
from precube.metadata import JobLease, MetadataStore, Project, Transaction
from precube.metadata.entity import now_ms

PROJECT = "ssb"


@pytest.fixture
def project(store: MetadataStore) -> MetadataStore:
    store.create_project(Project(name=PROJECT, default_database="SSB"))
    return store


def _other_process(store: MetadataStore, pid: int | None = None, ttl_s: float = 30.0) -> Lease:
    """A Lease as another process of this host would hold it: by default the (live) parent process."""
    lease = Lease(store, PROJECT, ttl_s=ttl_s)
    lease.pid = os.getppid() if pid is None else pid
    return lease


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped (not a zombie: those still answer kill 0)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _interleave(monkeypatch: pytest.MonkeyPatch, store: MetadataStore, action: Callable[[], object]) -> None:
    """Run `action` right after the next read-write transaction reads the lease, before that transaction
    writes: another process contending for the lease in that instant."""
    assert "postgresql" in store.url
    real_get = Transaction.get
    fired: list[bool] = []

    def get(self: Transaction, cls: type, *names: str) -> object:
        found = real_get(self, cls, *names)
        if cls is JobLease and not self.readonly and not fired:
            fired.append(True)
            action()
        return found

    monkeypatch.setattr(Transaction, "get", get)


def _stored(store: MetadataStore) -> JobLease:
    with store.read(PROJECT) as tx:
        return tx.require(JobLease, "scheduler")


def test_first_acquire_holds_and_holder_names_the_owner(project: MetadataStore) -> None:
    first = Lease(project, PROJECT)
    assert first.holder() is None  # never held
    assert not first.held
    assert first.acquire()
    assert first.held
    for viewer in (first, Lease(project, PROJECT)):  # the holder itself and a bystander see the same
        holder = viewer.holder()
        assert holder is not None
        assert (holder.owner, holder.pid) == (first.owner, os.getpid())
    stored = _stored(project)
    assert stored.owner == first.owner
    assert stored.expires_at > now_ms() + 20_000  # the default 30 s TTL
    assert first.acquire()  # re-acquiring one's own lease is fine


def test_a_live_holder_keeps_the_lease(project: MetadataStore) -> None:
    holder = _other_process(project)  # the parent process: alive on this host
    assert holder.acquire()
    contender = Lease(project, PROJECT)
    assert not contender.acquire()
    assert not contender.held
    seen = contender.holder()
    assert seen is not None
    assert seen.owner == holder.owner
    holder.renew()  # still the holder
    assert _stored(project).owner == holder.owner


def test_a_holder_on_another_host_is_never_probed(project: MetadataStore) -> None:
    holder = _other_process(project, pid=_dead_pid())
    holder.host = "some-other-host"  # its pid means nothing here: only expiry frees the lease
    assert holder.acquire()
    contender = Lease(project, PROJECT)
    assert not contender.acquire()
    assert contender.holder() is not None


def test_an_expired_lease_is_taken_over(project: MetadataStore) -> None:
    holder = _other_process(project, ttl_s=1.0)
    assert holder.acquire()
    contender = Lease(project, PROJECT)
    assert not contender.acquire()  # not yet expired
    time.sleep(1.2)
    assert contender.holder() is None  # expired: nobody holds it
    assert contender.acquire()
    assert _stored(project).owner == contender.owner
    with pytest.raises(LeaseLostError, match=contender.owner):
        holder.renew()
    assert not holder.held
    assert _stored(project).owner == contender.owner  # the failed renewal changed nothing


def test_an_expiry_written_in_the_past_frees_the_lease(project: MetadataStore) -> None:
    holder = _other_process(project)
    assert holder.acquire()
    with project.transaction(PROJECT) as tx:
        lease = tx.require(JobLease, "scheduler")
        lease.expires_at = now_ms() - 1
        tx.update(lease)
    contender = Lease(project, PROJECT)
    assert contender.acquire()
    seen = contender.holder()
    assert seen is not None
    assert seen.owner == contender.owner


def test_a_dead_holder_on_this_host_is_replaced_at_once(project: MetadataStore) -> None:
    holder = _other_process(project, pid=_dead_pid())  # 30 s TTL: far from expiry
    assert holder.acquire()
    assert _stored(project).expires_at > now_ms() + 20_000
    contender = Lease(project, PROJECT)
    assert contender.holder() is None  # its holder is gone
    assert contender.acquire()
    stored = _stored(project)
    assert (stored.owner, stored.pid) == (contender.owner, os.getpid())
    with pytest.raises(LeaseLostError, match="is now held by"):
        holder.renew()
    assert not holder.held


def test_a_holder_on_another_machine_of_the_same_name_is_never_probed(project: MetadataStore) -> None:
    """A container (or a machine) sharing this host's name but not its kernel or pid namespace: its pid
    means nothing here, so only the expiry frees its lease; each change of holder moves the epoch."""
    holder = _other_process(project, pid=_dead_pid())
    holder.machine = "another-boot/pid:[1]"
    assert holder.acquire()
    first = _stored(project).epoch
    contender = Lease(project, PROJECT)
    assert contender.holder() is not None and not contender.acquire()
    assert holder.acquire() and _stored(project).epoch == first  # the same holder again: the same epoch
    with project.transaction(PROJECT) as tx:  # its heartbeat stops: expired
        lease = tx.require(JobLease, "scheduler")
        lease.expires_at = now_ms() - 1
        tx.update(lease)
    assert contender.acquire()
    assert _stored(project).epoch == contender.epoch == first + 1


def test_the_old_holder_cannot_release_a_lease_taken_over(project: MetadataStore) -> None:
    holder = _other_process(project, ttl_s=0.05)
    assert holder.acquire()
    time.sleep(0.2)
    contender = Lease(project, PROJECT)
    assert contender.acquire()
    holder.release()  # it still believes it holds the lease: must not free the new holder's
    assert not holder.held
    assert _stored(project).owner == contender.owner
    assert not Lease(project, PROJECT).acquire()


def test_release_lets_the_next_process_in_at_once(project: MetadataStore) -> None:
    holder = _other_process(project)
    assert holder.acquire()
    contender = Lease(project, PROJECT)
    assert not contender.acquire()
    contender.release()  # not the holder: nothing happens
    assert _stored(project).owner == holder.owner
    holder.release()
    assert not holder.held
    assert holder.holder() is None
    assert contender.holder() is None
    assert (_stored(project).owner, _stored(project).expires_at) == ("", 0)
    assert contender.acquire()
    assert _stored(project).owner == contender.owner
    with pytest.raises(LeaseLostError, match="held by"):
        holder.renew()


@pytest.mark.postgres
@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_takeover_waits_for_a_renewal_in_flight(project: MetadataStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writers are serialised on PostgreSQL too (an advisory lock, like SQLite's BEGIN IMMEDIATE): a takeover
    that starts while the holder's renewal has read the expired lease waits for the renewal to commit, then
    finds the lease renewed, and the holder keeps it."""
    import threading

    holder = _other_process(project, ttl_s=1.0)
    assert holder.acquire()
    time.sleep(1.2)  # expired: a takeover is allowed now
    contender = Lease(project, PROJECT)
    outcome: list[bool] = []
    contending = threading.Thread(target=lambda: outcome.append(contender.acquire()))

    def contend() -> None:
        contending.start()
        contending.join(0.5)
        assert contending.is_alive() and not outcome  # waiting for the renewal to commit

    _interleave(monkeypatch, project, contend)
    holder.renew()
    contending.join(30)
    assert outcome == [False]
    assert holder.held and _stored(project).owner == holder.owner


def test_the_fence_passes_only_the_stored_holder_also_after_the_project_is_made_again(
    project: MetadataStore,
) -> None:
    """A job starts and records its work only in a transaction whose stored lease is its process's: not another
    process's, nor once its project was deleted and made again between two renewals (`held` still says True)."""
    mine, other = Lease(project, PROJECT), _other_process(project)
    assert mine.acquire()
    with project.transaction(PROJECT) as tx:
        mine.fence(tx)
        with pytest.raises(LeaseLostError, match=f"held by {mine.owner}, not by this process"):
            other.fence(tx)
    project.delete_project(PROJECT)
    project.create_project(Project(name=PROJECT, default_database="SSB"))
    assert mine.held
    with project.transaction(PROJECT) as tx, pytest.raises(LeaseLostError, match="held by nobody"):
        mine.fence(tx)
