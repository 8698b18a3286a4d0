"""Admission control: how many statements run on the engines at once, per server and per user, and the
bounded queue the others wait in.

A statement takes a slot only for its engine run (`Admission.slot`, entered by the session once the
statement is planned): a result-cache answer, planning and a wait for an identical statement's answer take
none. A statement's lane is known then: one that is pushed down to the source tables takes a slot of the
pushdown lane, which has a smaller budget (`[query] max_running_pushdown`), so slow pushdowns never hold every
slot and a layout answer always finds one. Every running statement counts against `[query] max_running` and
its user's `max_running_per_user`.

A statement that finds no slot waits, first come first served among those a freed slot fits, at most
`queue_timeout_s`; a full queue (`max_queued`) or the end of that wait is an `AdmissionError` (503 with
`Retry-After`, SQLSTATE 53300). The wait never goes past the statement's deadline (its `Cancellation`'s): a
statement whose deadline comes first gets a `QueryTimeoutError` instead. A cancel of a waiting statement takes
it out of the queue at once. Slots are counters under one lock: taking and freeing one costs no thread and, with
no queue, no wake-up."""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from precube.errors import PrecubeError
from precube.query.cancel import CANCELLED, Cancellation
from precube.query.errors import QueryCancelledError
from precube.settings import QuerySettings

LAYOUT, PUSHDOWN = "layout", "pushdown"
LANES = (LAYOUT, PUSHDOWN)


class AdmissionError(PrecubeError):
    """The server runs as many statements as it may and the statement could not wait for a slot (the queue
    was full, or it waited `[query] queue_timeout_s`); retrying later may succeed."""

    code = "SERVER_BUSY"
    retryable = True


@dataclass(frozen=True)
class Limits:
    """The bounds admission enforces (`[query]` settings of the same names)."""

    max_running: int
    max_running_pushdown: int
    max_running_per_user: int
    max_queued: int
    queue_timeout_s: float

    @classmethod
    def of(cls, settings: QuerySettings) -> Limits:
        return cls(
            settings.max_running,
            settings.max_running_pushdown or max(1, settings.max_running // 4),
            settings.max_running_per_user or settings.max_running,
            settings.max_queued,
            settings.queue_timeout_s,
        )


@dataclass(frozen=True)
class AdmissionStats:
    """Statements running and waiting now, per lane (`layout`, `pushdown`)."""

    running: dict[str, int]
    queued: dict[str, int]


@dataclass(eq=False)
class _Waiter:
    user: str
    lane: str
    woken: threading.Event = field(default_factory=threading.Event)
    granted: bool = False


class Admission:
    """Slots for statements' engine runs under `limits`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._lanes: Counter[str] = Counter()
        self._users: Counter[str] = Counter()
        self._queue: deque[_Waiter] = deque()

    @contextmanager
    def slot(self, user: str, pushdown: bool, cancel: Cancellation | None = None) -> Iterator[None]:
        """Hold a slot of the statement's lane for the block: at once when one is free, else after waiting in
        the queue (an `AdmissionError` when it is full or the wait too long; `cancel` ends the wait)."""
        lane = PUSHDOWN if pushdown else LAYOUT
        with self._lock:
            full = self._full(user, lane)
            if full is None:
                self._take(user, lane)
                waiter = None
            elif len(self._queue) >= self.limits.max_queued:
                raise AdmissionError(
                    f"the server is busy: {full} and {len(self._queue)} statements wait "
                    f"([query] max_queued = {self.limits.max_queued}); retry later"
                )
            else:
                waiter = _Waiter(user, lane)
                self._queue.append(waiter)
        if waiter is not None:
            self._wait(waiter, full or "", cancel)
        try:
            yield
        finally:
            self._release(user, lane)

    def _wait(self, waiter: _Waiter, full: str, cancel: Cancellation | None) -> None:
        """Wait for `waiter` to be granted a slot, at most `queue_timeout_s` and never past the statement's
        deadline; out of the queue (and an error) on time-out or cancel: past the deadline a QueryTimeoutError,
        past `queue_timeout_s` an AdmissionError."""
        started = time.monotonic()
        left = cancel.remaining() if cancel is not None else None
        wait_s = self.limits.queue_timeout_s if left is None else max(0.0, min(self.limits.queue_timeout_s, left))
        cancelled = False
        try:
            if cancel is None:
                waiter.woken.wait(wait_s)
            else:
                with cancel.running_on(waiter.woken.set):
                    waiter.woken.wait(wait_s)
        except QueryCancelledError:  # cancelled before it could wait
            cancelled = True
        with self._lock:
            granted = waiter.granted
            if not granted:
                self._queue.remove(waiter)
        waited = time.monotonic() - started
        if cancel is not None:
            cancel.spent("waiting for a slot", waited)
        if cancelled or (cancel is not None and cancel.cancelled):
            if granted:
                self._release(waiter.user, waiter.lane)
            raise QueryCancelledError(CANCELLED)
        if not granted:
            if cancel is not None and left is not None and left <= self.limits.queue_timeout_s:
                raise cancel.timed_out()
            raise AdmissionError(
                f"the server is busy: {full}, and no slot freed within {waited:.3g} s "
                f"([query] queue_timeout_s = {self.limits.queue_timeout_s:g}); retry later"
            )

    def _full(self, user: str, lane: str) -> str | None:
        """What keeps a statement of `user` in `lane` from running now (None: nothing)."""
        limits = self.limits
        if sum(self._lanes.values()) >= limits.max_running:
            return f"{limits.max_running} statements run ([query] max_running)"
        if lane == PUSHDOWN and self._lanes[PUSHDOWN] >= limits.max_running_pushdown:
            return f"{limits.max_running_pushdown} pushdown statements run ([query] max_running_pushdown)"
        if self._users[user] >= limits.max_running_per_user:
            return f"user {user} runs {limits.max_running_per_user} statements ([query] max_running_per_user)"
        return None

    def _take(self, user: str, lane: str) -> None:
        self._lanes[lane] += 1
        self._users[user] += 1

    def _release(self, user: str, lane: str) -> None:
        with self._lock:
            self._lanes[lane] -= 1
            self._users[user] -= 1
            if not self._users[user]:
                del self._users[user]
            # every waiter a freed slot fits, in arrival order (one blocked by its lane or user does not hold
            # up the others)
            for waiter in list(self._queue):
                if sum(self._lanes.values()) >= self.limits.max_running:
                    break
                if self._full(waiter.user, waiter.lane) is None:
                    self._queue.remove(waiter)
                    self._take(waiter.user, waiter.lane)
                    waiter.granted = True
                    waiter.woken.set()

    def stats(self) -> AdmissionStats:
        """Running and queued statements per lane, now."""
        with self._lock:
            queued = Counter(w.lane for w in self._queue)
            return AdmissionStats({k: self._lanes[k] for k in LANES}, {k: queued[k] for k in LANES})
