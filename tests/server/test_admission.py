"""Admission control through a real server with small limits: slow pushdowns fill their lane and the queue,
the next statement is refused with 503 and `Retry-After` on REST and SQLSTATE 53300 on the wire, a layout
answer is given at once meanwhile, and a client that leaves while its statement waits takes it out of the
queue."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import httpx
import psycopg
import pytest

from precube.server.state import ServerState
from tests.server.conftest import ServerHome, server_settings
from tests.server.live import ADMIN, LiveServer, free_port, live_server

pytestmark = [pytest.mark.spark]

QUERY = "/kylin/api/query"
# answered from the model's layouts
SSB_Q = (
    "select d_year, sum(lo_revenue) as revenue from ssb.lineorder "
    "join ssb.dates on lo_orderdate = d_datekey group by d_year order by d_year"
)
# runs for many seconds on DuckDB: every pair of order lines (pushed down to the source tables)
SLOW = "select sum(a.lo_revenue * b.lo_quantity) as s from ssb.lineorder a cross join ssb.lineorder b"
WAIT_S = 10.0


@pytest.fixture(scope="module")
def busy(server_home: ServerHome) -> Iterator[LiveServer]:
    """A server with 3 slots, 1 of them for pushdowns, and a queue of 2; no result cache (every statement runs)."""
    limits = {"max_running": 3, "max_running_pushdown": 1, "max_queued": 2, "queue_timeout_s": 60}
    settings = server_settings(server_home.settings.home, query=limits, cache={"enabled": False})
    settings.server.pg_port = free_port()
    with live_server(settings, run_jobs=False) as server:
        server.wait_warm()
        yield server


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


class Posted:
    """A REST query in a thread of its own: `response` once answered."""

    def __init__(self, server: LiveServer, project: str, sql: str, timeout: float = 120) -> None:
        self.response: httpx.Response | None = None
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._post, args=(server, project, sql, timeout), daemon=True)
        self._thread.start()

    def _post(self, server: LiveServer, project: str, sql: str, timeout: float) -> None:
        try:
            with httpx.Client(base_url=server.url, auth=ADMIN, timeout=timeout) as client:
                self.response = client.post(QUERY, json={"sql": sql, "project": project})
        except Exception as err:  # noqa: BLE001 (the test reads it)
            self.error = err

    def join(self) -> None:
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive()


def _tagged(sql: str, marker: str, n: int) -> str:
    """`sql` told apart from every other statement by a comment (no statement shares a cache or flight)."""
    return f"{sql} /* {marker} {n} */"


def _stop_all(state: ServerState, marker: str) -> None:
    """Cancel this test's statements (`marker` in their text) and wait until none is left."""
    for handle in state.queries.running():
        if marker in handle.statement:
            state.queries.cancel(handle)
    _until(lambda: not any(marker in h.statement for h in state.queries.running()), "a statement ran on")


def test_a_full_queue_is_refused_and_a_layout_answer_is_not_held_up(busy: LiveServer, server_home: ServerHome) -> None:
    state, project = busy.state, server_home.project
    marker = uuid.uuid4().hex
    slow = [Posted(busy, project, _tagged(SLOW, marker, i)) for i in range(3)]  # one runs, two wait
    try:
        _until(lambda: state.queries.stats().queued["pushdown"] == 2, "the slow statements did not fill the queue")
        assert state.queries.stats().running["pushdown"] == 1
        with busy.client() as client:
            started = time.monotonic()
            answered = client.post(QUERY, json={"sql": _tagged(SSB_Q, marker, 9), "project": project})
            assert time.monotonic() - started < 5  # not behind the pushdowns: its own lane and DuckDB cursor
            assert answered.status_code == 200, answered.text
            assert answered.json()["data"]["results"]
            refused = client.post(QUERY, json={"sql": _tagged(SLOW, marker, 3), "project": project})
        assert refused.status_code == 503, refused.text
        assert refused.headers["Retry-After"] == "1"
        body = refused.json()
        assert (body["code"], body["sqlstate"], body["retryable"]) == ("999", "53300", True)
        assert "max_queued = 2" in body["msg"] and "\n" not in body["msg"]
        with (
            psycopg.connect(
                host="127.0.0.1", port=busy.pg_port, dbname=project, user=ADMIN[0], password=ADMIN[1], autocommit=True
            ) as con,
            con.cursor() as cur,
        ):
            with pytest.raises(psycopg.Error) as wire:
                cur.execute(_tagged(SLOW, marker, 4).encode())
            assert wire.value.sqlstate == "53300"
            cur.execute(_tagged(SSB_Q, marker, 5).encode())  # the same connection answers the next statement
            assert cur.fetchall()
    finally:
        _stop_all(state, marker)
        for posted in slow:
            posted.join()
    for posted in slow:  # cancelled: running or waiting, each ended with a one-line error
        assert posted.response is not None and posted.response.status_code == 400, posted.error
        assert posted.response.json()["sqlstate"] == "57014"
    assert state.queries.stats().running == {"layout": 0, "pushdown": 0}


def test_a_client_that_leaves_takes_its_statement_out_of_the_queue(busy: LiveServer, server_home: ServerHome) -> None:
    state, project = busy.state, server_home.project
    marker = uuid.uuid4().hex
    running = Posted(busy, project, _tagged(SLOW, marker, 0))
    try:
        _until(lambda: state.queries.stats().running["pushdown"] == 1, "the slow statement did not start")
        leaving = Posted(busy, project, _tagged(SLOW, marker, 1), timeout=1.5)  # waits for the lane, then leaves
        _until(lambda: state.queries.stats().queued["pushdown"] == 1, "the second statement did not queue")
        leaving.join()
        assert isinstance(leaving.error, httpx.ReadTimeout)
        _until(lambda: state.queries.stats().queued["pushdown"] == 0, "the statement stayed in the queue")
        assert [h for h in state.queries.running() if h.statement == _tagged(SLOW, marker, 1)] == []
        assert state.queries.stats().running["pushdown"] == 1  # the running one was left alone
    finally:
        _stop_all(state, marker)
        running.join()
