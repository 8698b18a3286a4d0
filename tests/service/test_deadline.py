"""One deadline per statement, from its arrival (`[query] timeout_s`): waiting for a slot, waiting on an
identical statement's run and a waiter's run after that one timed out all count against it, so every statement
ends within its time limit wherever the time goes."""

from __future__ import annotations

import threading
import time

import pytest

from precube.query.cancel import Cancellation
from precube.query.errors import QueryTimeoutError
from precube.service.admission import Admission, AdmissionError, Limits
from precube.service.errors import disposition
from precube.service.principal import Principal
from tests.service.conftest import CHEAP, ROWS, SLOW, ServiceOf

SLACK_S = 1.0  # how far past its deadline a statement may end (an interrupt, a thread's wake-up)


def test_a_cancellation_past_its_deadline_names_the_time_limit_and_where_the_time_went() -> None:
    cancel = Cancellation(2.0, arrived=time.monotonic() - 3.0)
    assert cancel.remaining() is not None and cancel.remaining() < 0  # type: ignore[operator]
    cancel.spent("waiting for a slot", 2.5)
    with pytest.raises(QueryTimeoutError) as raised:
        cancel.check()
    message = str(raised.value)
    assert "time limit of 2 s ([query] timeout_s)" in message and "\n" not in message
    assert "2.5 s waiting for a slot, 0.5 s running" in message
    assert Cancellation().remaining() is None  # no deadline: never times out
    Cancellation().check()


def test_an_embedded_statement_gets_a_deadline_from_its_entry() -> None:
    given = Cancellation()
    assert Cancellation.of(given, 5.0) is given and given.deadline is not None
    assert abs(given.deadline - (time.monotonic() + 5.0)) < 0.5
    earlier = Cancellation(1.0)
    assert Cancellation.of(earlier, 5.0).deadline == earlier.deadline  # a deadline set at arrival stays
    assert Cancellation.of(None, None).deadline is None


def test_a_wait_for_a_slot_ends_at_the_statements_deadline_as_a_timeout() -> None:
    admission = Admission(Limits(1, 1, 1, 2, queue_timeout_s=30))
    with admission.slot("a", False):
        started = time.monotonic()
        with pytest.raises(QueryTimeoutError) as raised, admission.slot("b", False, Cancellation(0.4)):
            pass
        assert 0.3 < time.monotonic() - started < 0.4 + SLACK_S
        assert admission.stats().queued == {"layout": 0, "pushdown": 0}
    assert "waiting for a slot" in str(raised.value)
    how = disposition(raised.value)
    assert (how.http_status, how.sqlstate) == (503, "57014")
    busy = Admission(Limits(1, 1, 1, 2, queue_timeout_s=0.2))  # queue_timeout_s first: a busy server's refusal
    with (
        busy.slot("a", False),
        pytest.raises(AdmissionError, match="queue_timeout_s = 0.2"),
        busy.slot("b", False, Cancellation(30)),
    ):
        pass


def test_a_statement_queued_until_its_deadline_times_out(service_of: ServiceOf) -> None:
    service = service_of(timeout_s=1.0, max_running=2, max_running_pushdown=1, queue_timeout_s=30)
    with service.admission.slot("holder", True):  # the pushdown lane is full for the statement's whole time
        started = time.monotonic()
        handle = service.run(Principal("a", "tiny", trusted=True), CHEAP)
        with pytest.raises(QueryTimeoutError, match=r"\[query\] timeout_s.*waiting for a slot"):
            handle.result(10)
        assert time.monotonic() - started < 1.0 + SLACK_S
    assert service.stats().queued == {"layout": 0, "pushdown": 0}
    assert service.execute(Principal("a", "tiny", trusted=True), CHEAP).rows == [(ROWS,)]


def test_identical_slow_statements_all_end_within_their_time_limit(service_of: ServiceOf) -> None:
    """One statement runs (single flight), the others wait on it; it times out, and a waiter that takes it over
    runs it only for what is left of its own deadline (before: a full `timeout_s` more)."""
    timeout_s = 2.0
    service = service_of(cached=True, timeout_s=timeout_s, max_running=4, max_running_pushdown=4)
    took: list[float] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def one(delay: float) -> None:
        time.sleep(delay)  # later arrivals wait on the first run, then take it over with less time left
        started = time.monotonic()
        try:
            service.execute(Principal("a", "tiny", trusted=True), SLOW)
        except BaseException as err:  # noqa: BLE001 (the test reads it)
            with lock:
                errors.append(err)
        with lock:
            took.append(time.monotonic() - started)

    threads = [threading.Thread(target=one, args=(0.25 * i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(took) == 4 and all(isinstance(e, QueryTimeoutError) for e in errors) and len(errors) == 4
    assert max(took) < timeout_s + SLACK_S, took
