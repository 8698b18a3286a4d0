"""Admission control: slots per server, per lane and per user, the bounded queue and its time-out, a cancel of
a waiting statement; then the query service over a tiny project whose slow statements are real DuckDB cross
joins of a small table (pushed down: the project has no model)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from precube.query.cancel import Cancellation
from precube.query.errors import QueryCancelledError
from precube.service.admission import Admission, AdmissionError, AdmissionStats, Limits
from precube.service.errors import disposition
from precube.service.principal import Principal
from precube.service.queries import Handle, QueryService
from tests.service.conftest import CHEAP, ROWS, SLOW, ServiceOf

WAIT_S = 5.0  # the bound of every wait in these tests: a wait that ends sooner proves nothing failed


def _limits(
    running: int = 2, pushdown: int = 1, per_user: int = 2, queued: int = 2, timeout_s: float = WAIT_S
) -> Limits:
    return Limits(running, pushdown, per_user, queued, timeout_s)


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


class Holder:
    """A statement that takes a slot in a thread of its own and holds it until `release()`; `error` is what
    taking it raised."""

    def __init__(self, admission: Admission, user: str, pushdown: bool, cancel: Cancellation | None = None) -> None:
        self.taken = threading.Event()
        self.error: BaseException | None = None
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(admission, user, pushdown, cancel), daemon=True)
        self._thread.start()

    def _run(self, admission: Admission, user: str, pushdown: bool, cancel: Cancellation | None) -> None:
        try:
            with admission.slot(user, pushdown, cancel):
                self.taken.set()
                self._release.wait(WAIT_S * 4)
        except BaseException as err:  # noqa: BLE001 (the test reads it)
            self.error = err

    def release(self) -> None:
        self._release.set()

    def join(self) -> None:
        self._release.set()
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive()


def test_slots_up_to_max_running_then_a_queue_then_refusals() -> None:
    admission = Admission(_limits(running=2, pushdown=2, queued=1, timeout_s=WAIT_S))
    first, second = Holder(admission, "a", False), Holder(admission, "b", False)
    assert first.taken.wait(WAIT_S) and second.taken.wait(WAIT_S)
    waiting = Holder(admission, "c", False)
    _until(lambda: admission.stats().queued["layout"] == 1, "the third statement did not queue")
    assert not waiting.taken.is_set()
    started = time.monotonic()
    with pytest.raises(AdmissionError, match=r"max_queued = 1"), admission.slot("d", False):
        pass
    assert time.monotonic() - started < 1  # a full queue refuses at once
    first.release()  # its slot goes to the waiting statement
    assert waiting.taken.wait(WAIT_S)
    assert admission.stats() == AdmissionStats({"layout": 2, "pushdown": 0}, {"layout": 0, "pushdown": 0})
    for holder in (first, second, waiting):
        holder.join()
        assert holder.error is None
    assert admission.stats() == AdmissionStats({"layout": 0, "pushdown": 0}, {"layout": 0, "pushdown": 0})


def test_a_wait_longer_than_queue_timeout_fails_busy_and_leaves_the_queue() -> None:
    admission = Admission(_limits(running=1, timeout_s=0.3))
    holder = Holder(admission, "a", False)
    assert holder.taken.wait(WAIT_S)
    started = time.monotonic()
    with pytest.raises(AdmissionError, match=r"queue_timeout_s = 0.3") as refused, admission.slot("b", False):
        pass
    assert 0.25 < time.monotonic() - started < 2
    assert admission.stats().queued == {"layout": 0, "pushdown": 0}
    how = disposition(refused.value)
    assert (how.http_status, how.sqlstate, how.retryable) == (503, "53300", True)
    holder.join()


def test_pushdowns_hold_only_their_lane_and_layout_answers_pass_their_queue() -> None:
    admission = Admission(_limits(running=3, pushdown=1, queued=4))
    slow = Holder(admission, "a", True)
    assert slow.taken.wait(WAIT_S)
    queued = Holder(admission, "a", True)  # the pushdown lane is full: it waits
    _until(lambda: admission.stats().queued["pushdown"] == 1, "the second pushdown did not queue")
    started = time.monotonic()
    with admission.slot("b", False):  # a layout answer behind the queued pushdown takes a free slot at once
        assert admission.stats().running == {"layout": 1, "pushdown": 1}
    assert time.monotonic() - started < 1
    assert not queued.taken.is_set()
    slow.release()
    assert queued.taken.wait(WAIT_S)
    for holder in (slow, queued):
        holder.join()
        assert holder.error is None


def test_one_user_runs_at_most_max_running_per_user() -> None:
    admission = Admission(_limits(running=4, pushdown=4, per_user=1, queued=4))
    first = Holder(admission, "alice", True)
    assert first.taken.wait(WAIT_S)
    second = Holder(admission, "alice", False)
    _until(lambda: admission.stats().queued["layout"] == 1, "alice's second statement did not queue")
    other = Holder(admission, "bob", True)  # another user runs at once
    assert other.taken.wait(WAIT_S)
    assert not second.taken.is_set()
    first.release()
    assert second.taken.wait(WAIT_S)
    for holder in (first, second, other):
        holder.join()
        assert holder.error is None


def test_a_cancel_takes_a_waiting_statement_out_of_the_queue() -> None:
    admission = Admission(_limits(running=1, queued=2, timeout_s=WAIT_S * 4))
    holder = Holder(admission, "a", False)
    assert holder.taken.wait(WAIT_S)
    cancel = Cancellation()
    waiting = Holder(admission, "b", False, cancel)
    _until(lambda: admission.stats().queued["layout"] == 1, "the statement did not queue")
    started = time.monotonic()
    cancel.cancel()
    _until(lambda: waiting.error is not None, "the cancelled statement kept waiting")
    assert time.monotonic() - started < 1
    assert isinstance(waiting.error, QueryCancelledError)
    assert admission.stats().queued == {"layout": 0, "pushdown": 0}
    holder.join()
    waiting.join()
    assert admission.stats().running == {"layout": 0, "pushdown": 0}  # the cancelled one took no slot


# -- the query service over a tiny project: slow statements are real cross joins on DuckDB -------------------

# `SLOW`, `CHEAP`, `tiny` and `service_of`: `tests/service/conftest.py`


def _principal(user: str) -> Principal:
    return Principal(user, "tiny", trusted=True)


def _stop(service: QueryService, *handles: Handle) -> None:
    """Cancel the handles and wait for each to end (a cross join interrupted ends at once)."""
    for handle in handles:
        service.cancel(handle)
    for handle in handles:
        with pytest.raises((QueryCancelledError, AdmissionError)):
            handle.result(WAIT_S)


def test_the_service_queues_statements_beyond_its_slots_and_refuses_a_full_queue(service_of: ServiceOf) -> None:
    service = service_of(max_running=2, max_running_pushdown=1, max_queued=1, queue_timeout_s=30)
    running = service.run(_principal("a"), SLOW)
    _until(lambda: service.stats().running["pushdown"] == 1, "the slow statement did not start")
    queued = service.run(_principal("b"), SLOW)
    _until(lambda: service.stats().queued["pushdown"] == 1, "the second slow statement did not queue")
    started = time.monotonic()
    refused = service.run(_principal("c"), CHEAP)  # a pushdown too: its lane is full, and so is the queue
    with pytest.raises(AdmissionError, match="max_queued = 1"):
        refused.result(WAIT_S)
    assert time.monotonic() - started < 2
    _stop(service, running, queued)
    assert service.stats() == AdmissionStats({"layout": 0, "pushdown": 0}, {"layout": 0, "pushdown": 0})
    assert service.execute(_principal("c"), CHEAP).rows == [(ROWS,)]  # the engine was freed


def test_a_service_beyond_its_threads_refuses_at_once(service_of: ServiceOf) -> None:
    service = service_of(max_running=1, max_running_pushdown=1, max_queued=0)
    running = service.run(_principal("a"), SLOW)
    _until(lambda: service.stats().running["pushdown"] == 1, "the slow statement did not start")
    with pytest.raises(AdmissionError, match=r"max_running \+ max_queued"):
        service.run(_principal("a"), CHEAP)
    _stop(service, running)


def test_the_service_times_out_a_waiting_statement(service_of: ServiceOf) -> None:
    service = service_of(max_running=2, max_running_pushdown=1, queue_timeout_s=0.5)
    running = service.run(_principal("a"), SLOW)
    _until(lambda: service.stats().running["pushdown"] == 1, "the slow statement did not start")
    started = time.monotonic()
    with pytest.raises(AdmissionError, match="queue_timeout_s = 0.5"):
        service.execute(_principal("b"), CHEAP)
    assert 0.4 < time.monotonic() - started < 3
    _stop(service, running)


def test_the_service_bounds_each_user(service_of: ServiceOf) -> None:
    service = service_of(max_running=4, max_running_pushdown=4, max_running_per_user=1)
    running = service.run(_principal("alice"), SLOW)
    _until(lambda: service.stats().running["pushdown"] == 1, "alice's slow statement did not start")
    waiting = service.run(_principal("alice"), CHEAP)
    _until(lambda: service.stats().queued["pushdown"] == 1, "alice's second statement did not queue")
    started = time.monotonic()
    assert service.execute(_principal("bob"), CHEAP).rows == [(ROWS,)]  # bob is not held up by alice
    assert time.monotonic() - started < WAIT_S
    assert not waiting.future.done()
    service.cancel(running)
    assert waiting.result(WAIT_S).rows == [(ROWS,)]  # alice's slot freed: her next statement runs
    with pytest.raises(QueryCancelledError):
        running.result(WAIT_S)


def test_a_cancel_of_a_queued_statement_removes_it(service_of: ServiceOf) -> None:
    service = service_of(max_running=2, max_running_pushdown=1, queue_timeout_s=60)
    running = service.run(_principal("a"), SLOW)
    _until(lambda: service.stats().running["pushdown"] == 1, "the slow statement did not start")
    queued = service.run(_principal("b"), SLOW)
    _until(lambda: service.stats().queued["pushdown"] == 1, "the second slow statement did not queue")
    started = time.monotonic()
    service.cancel(queued)
    with pytest.raises(QueryCancelledError):
        queued.result(WAIT_S)
    assert time.monotonic() - started < 2
    assert service.stats().queued == {"layout": 0, "pushdown": 0}
    assert queued not in service.running()
    _stop(service, running)


def test_run_here_answers_in_the_callers_thread_and_counts_against_the_capacity(service_of: ServiceOf) -> None:
    service = service_of(max_running=1, max_running_pushdown=1, max_queued=0)
    threads: list[str] = []
    handle = service.run_here(_principal("a"), CHEAP, started=lambda h: threads.append(threading.current_thread().name))
    assert handle.result().rows == [(ROWS,)]
    assert threads == [threading.current_thread().name]  # its handle came before it ran, in this thread
    assert not service._executor._threads  # it ran here: the executor never started a thread
    assert service.running() == []  # done: out of the service
    running = service.run(_principal("a"), SLOW)
    _until(lambda: service.stats().running["pushdown"] == 1, "the slow statement did not start")
    with pytest.raises(AdmissionError, match=r"max_running \+ max_queued"):  # the one place is taken
        service.run_here(_principal("b"), CHEAP)
    _stop(service, running)


def test_a_statement_run_here_is_cancelled_from_another_thread(service_of: ServiceOf) -> None:
    service = service_of(max_running=2, max_running_pushdown=1)
    handles: list[Handle] = []
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            service.run_here(_principal("a"), SLOW, started=handles.append).result()
        except BaseException as err:  # noqa: BLE001 (the test reads it)
            outcome.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    _until(lambda: service.stats().running["pushdown"] == 1, "the slow statement did not start")
    assert [h.statement for h in service.running()] == [SLOW]
    started = time.monotonic()
    service.cancel(handles[0])
    thread.join(WAIT_S)
    assert not thread.is_alive() and time.monotonic() - started < 2
    assert len(outcome) == 1 and isinstance(outcome[0], QueryCancelledError)
    assert service.running() == []
    assert service.execute(_principal("b"), CHEAP).rows == [(ROWS,)]  # the engine was freed
