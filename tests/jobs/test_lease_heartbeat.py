"""Leases that hold under load (`Lease.keep_alive`): a holder whose process is busy — Python threads hogging the
GIL — keeps its lease, renewed on a thread of its own; a killed holder is replaced at once, a stopped one once its
lease expired; a holder whose renewals fail stops its own jobs (`fence`) before anyone may take the lease."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from precube.jobs.lease import Lease, LeaseLostError
from precube.metadata import JobLease, MetadataStore, Project, StoreUnavailableError, open_store
from precube.metadata.sql_backend import SqlBackend

PROJECT = "ssb"
TTL_S = 2.5

# Another process holding the lease, with `hogs` threads (and its main thread) spinning Python bytecode: each
# holds the GIL for its whole switch interval, as a build's Python or a busy scheduler turn would.
HOLDER = textwrap.dedent(
    """
    import sys, threading
    from precube.jobs.lease import Lease
    from precube.metadata import open_store

    url, ttl, hogs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    lease = Lease(open_store(url), "ssb", ttl_s=ttl)
    assert lease.acquire()
    lease.keep_alive()

    def spin():
        n = 0
        while True:
            n += 1

    for _ in range(hogs):
        threading.Thread(target=spin, daemon=True).start()
    print(lease.owner, flush=True)
    spin()
    """
)


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    with open_store(url) as store:
        store.create_project(Project(name=PROJECT, default_database="SSB"))
    yield url


@contextlib.contextmanager
def _holder(url: str, hogs: int) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, str(TTL_S), str(hogs)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        owner = proc.stdout.readline().strip()
        assert owner, "the holder did not start"
        yield proc, owner
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def _stored(store: MetadataStore) -> JobLease:
    with store.read(PROJECT) as tx:
        return tx.require(JobLease, "scheduler")


def _contend(store: MetadataStore, for_s: float) -> float | None:
    """Try to take the lease every 0.1 s for `for_s`: the seconds it took, None if it never could."""
    contender, started = Lease(store, PROJECT, ttl_s=TTL_S), time.monotonic()
    while time.monotonic() - started < for_s:
        if contender.acquire():
            contender.release()
            return time.monotonic() - started
        time.sleep(0.1)
    return None


def test_a_holder_busy_with_gil_hogging_threads_keeps_its_lease_and_is_replaced_at_once_when_killed(url: str) -> None:
    with open_store(url) as store, _holder(url, hogs=4) as (proc, owner):
        assert _stored(store).owner == owner
        first = _stored(store).expires_at
        assert _contend(store, for_s=3 * TTL_S) is None  # three TTLs of starvation: never free
        assert proc.poll() is None and _stored(store).owner == owner
        assert _stored(store).expires_at > first  # renewed meanwhile
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        took = _contend(store, for_s=TTL_S)
        assert took is not None and took < TTL_S / 2  # dead on this machine: at once, not at its expiry


def test_a_stopped_holder_is_taken_over_once_its_lease_expired(url: str) -> None:
    """SIGSTOP: its pid is alive, but it has truly stopped renewing: the lease is free at its expiry, not before."""
    with open_store(url) as store, _holder(url, hogs=0) as (proc, _owner):
        renewed = _stored(store).expires_at
        deadline = time.monotonic() + 2 * TTL_S
        while _stored(store).expires_at == renewed:  # stop it just after a renewal: not inside one (its write lock)
            assert time.monotonic() < deadline, "the holder does not renew"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            expiry = _stored(store).expires_at
            took = _contend(store, for_s=2 * TTL_S)
            assert took is not None and took > TTL_S / 2  # not at once: its process is alive
            assert time.time() * 1000 >= expiry  # taken once the stopped holder's lease expired
        finally:
            os.kill(proc.pid, signal.SIGCONT)


def test_a_holder_whose_renewals_fail_fences_itself_then_recovers(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(url) as store:
        lease = Lease(store, PROJECT, ttl_s=0.6)
        assert lease.acquire()
        lease.keep_alive()
        real = SqlBackend.begin
        failing = [True]

        @contextlib.contextmanager
        def begin(backend: SqlBackend, writer: str, readonly: bool) -> Iterator[Any]:
            if failing[0] and not readonly:
                raise StoreUnavailableError("metadata store failed: database or disk is full")
            with real(backend, writer, readonly) as tx:
                yield tx

        monkeypatch.setattr(SqlBackend, "begin", begin)  # every connection's: the heartbeat has one of its own
        try:
            time.sleep(0.8)  # a whole TTL of failed renewals
            assert lease.held and not lease.fresh
            assert lease.renew_error is not None and "disk is full" in lease.renew_error
            with store.read(PROJECT) as tx, pytest.raises(LeaseLostError, match="was not renewed for 0.6 s"):
                lease.fence(tx)
            failing[0] = False  # the store takes writes again: the heartbeat (retrying every TTL/10) renews
            deadline = time.monotonic() + 5
            while not lease.fresh:
                assert time.monotonic() < deadline, "never renewed again"
                time.sleep(0.05)
            with store.read(PROJECT) as tx:
                lease.fence(tx)
        finally:
            failing[0] = False
            lease.release()
        assert _stored(store).owner == ""


def test_the_heartbeat_renews_while_the_stores_connections_are_all_taken(url: str) -> None:
    """Its own connection: a process whose other threads hold every connection of the store's pool (a query
    burst) still renews; through the shared pool the renewal would wait for one."""
    with open_store(url) as store, open_store(url) as watcher, contextlib.ExitStack() as held:
        lease = Lease(store, PROJECT, ttl_s=1.0)
        assert lease.acquire()
        engine = store.backend._engine  # type: ignore[attr-defined]
        taken = engine.pool.size() + engine.pool._max_overflow
        for _ in range(taken):
            held.enter_context(engine.connect())
        assert engine.pool.checkedout() == taken
        first = _stored(watcher).expires_at
        lease.keep_alive()
        try:
            time.sleep(1.5)  # past the TTL: without renewals the lease would be stale
            assert lease.fresh and lease.renew_error is None
            assert _stored(watcher).expires_at > first
        finally:
            held.close()  # the pool's connections back: `release` writes through it
            lease.release()
