"""One set of cases through every door to the query service (the ibis backend-matrix idea): REST, the Postgres
wire, the DB-API (in process, and over HTTP) and Arrow Flight SQL (ADBC's driver) answer the same statements the
same way, refuse the same statements with the same message, stop the next statement of a connection whose grant
was revoked, and answer a statement longer than the shape memo."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import httpx
import psycopg
import pytest

import precube.dbapi as db
from precube.auth import Permission
from precube.errors import PrecubeError
from precube.query.errors import QueryCancelledError
from precube.query.session import SHAPE_MEMO_CHARS
from precube.service.errors import disposition
from precube.service.principal import Principal
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("warm_live")]

PASSWORD = "Passw0rd!"
QUERY = "/kylin/api/query"
SSB_Q = (
    "select d_year, sum(lo_revenue) as revenue from ssb.lineorder "
    "join ssb.dates on lo_orderdate = d_datekey group by d_year order by d_year"
)
# runs for many seconds on DuckDB: every pair of order lines (pushed down to the source tables)
SLOW = "select sum(a.lo_revenue * b.lo_quantity) as s from ssb.lineorder a cross join ssb.lineorder b"


class RefusedError(Exception):
    """A door's refusal: its one-line message and SQLSTATE."""

    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class Door:
    """One front end: `rows(sql)` the answer as tuples of text, `RefusedError(message)` on a failure."""

    name: str

    def rows(self, sql: str) -> list[tuple[str | None, ...]]:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float | Decimal):
        return format(Decimal(str(value)).normalize(), "f")
    return str(value)


class Rest(Door):
    name = "rest"

    def __init__(self, live: LiveServer, project: str, user: tuple[str, str]) -> None:
        self.client, self.project = live.client(auth=user), project

    def rows(self, sql: str) -> list[tuple[str | None, ...]]:
        response = self.client.post(QUERY, json={"sql": sql, "project": self.project})
        body = response.json()
        if response.status_code != 200:
            raise RefusedError(body["msg"], body.get("sqlstate"))
        return [tuple(_text(v) for v in row) for row in body["data"]["results"]]

    def close(self) -> None:
        self.client.close()


class Wire(Door):
    name = "wire"

    def __init__(self, live: LiveServer, project: str, user: tuple[str, str]) -> None:
        self.con = psycopg.connect(
            host="127.0.0.1", port=live.pg_port, dbname=project, user=user[0], password=user[1], autocommit=True
        )

    def rows(self, sql: str) -> list[tuple[str | None, ...]]:
        try:
            with self.con.cursor() as cur:
                cur.execute(sql.encode())  # as text, not a psycopg template: no placeholders
                return [tuple(_text(v) for v in row) for row in cur.fetchall()]
        except psycopg.Error as err:
            raise RefusedError(str(err.diag.message_primary), err.sqlstate) from err

    def close(self) -> None:
        self.con.close()


class DbApi(Door):
    def __init__(self, con: db.Connection, name: str) -> None:
        self.con, self.name = con, name

    def rows(self, sql: str) -> list[tuple[str | None, ...]]:
        cur = self.con.cursor()
        try:
            cur.execute(sql)
            return [tuple(_text(v) for v in row) for row in cur.fetchall()]
        except db.Error as err:
            raise RefusedError(err.message, err.sqlstate) from err

    def close(self) -> None:
        self.con.close()


class FlightSql(Door):
    name = "flight"

    def __init__(self, live: LiveServer, project: str, user: tuple[str, str]) -> None:
        options = {
            "username": user[0],
            "password": user[1],
            "adbc.flight.sql.rpc.call_header.x-precube-project": project,
        }
        address = f"grpc://127.0.0.1:{live.settings.server.flight_port}"
        self.con = flightsql.connect(address, db_kwargs=options, autocommit=True)

    def rows(self, sql: str) -> list[tuple[str | None, ...]]:
        try:
            with self.con.cursor() as cur:
                cur.execute(sql)
                return [tuple(_text(v) for v in row) for row in cur.fetchall()]
        except adbc_driver_manager.Error as err:
            # the one-line message and the SQLSTATE travel in the failed call's trailers (the error's details)
            details = dict(err.details or [])
            message = details.get(b"x-arrow-status-message-bin", str(err).encode()).decode()
            raise RefusedError(message, details.get(b"x-precube-sqlstate", b"").decode() or None) from err

    def close(self) -> None:
        self.con.close()


def _user(live: LiveServer, project: str) -> tuple[str, str]:
    name = f"cf_{uuid.uuid4().hex[:8]}"
    live.state.directory.add_user(name, PASSWORD, [])
    live.state.directory.grant(project, name, Permission.QUERY)
    return name, PASSWORD


DoorMaker = Callable[[tuple[str, str]], Door]


@pytest.fixture(params=["rest", "wire", "dbapi-remote", "dbapi-local", "flight"])
def door_of(request: pytest.FixtureRequest, live: LiveServer, server_home: ServerHome) -> Iterator[DoorMaker]:
    """How to open the door for a user (the in-process DB-API runs as the machine's user: it has no users)."""
    project, opened = server_home.project, []

    def make(user: tuple[str, str]) -> Door:
        kind = request.param
        if kind == "rest":
            door: Door = Rest(live, project, user)
        elif kind == "wire":
            door = Wire(live, project, user)
        elif kind == "flight":
            door = FlightSql(live, project, user)
        elif kind == "dbapi-remote":
            door = DbApi(db.connect(live.url, project=project, user=user[0], password=user[1]), kind)
        else:
            door = DbApi(db.connect(project=project, settings=server_home.settings), kind)
        opened.append(door)
        return door

    yield make
    for door in opened:
        door.close()


def _expected(live: LiveServer, project: str, sql: str) -> list[tuple[str | None, ...]]:
    """The service's own answer, as text: what every door must give."""
    result = live.state.queries.execute(Principal(ADMIN[0], project), sql)
    return [tuple(_text(v) for v in row) for row in result.rows]


def test_every_door_answers_as_the_service(door_of: DoorMaker, live: LiveServer, server_home: ServerHome) -> None:
    door = door_of(ADMIN)
    assert door.rows(SSB_Q) == _expected(live, server_home.project, SSB_Q) != []


def test_a_statement_longer_than_the_shape_memo(door_of: DoorMaker, live: LiveServer, server_home: ServerHome) -> None:
    years = ", ".join(str(1900 + i % 200) for i in range(SHAPE_MEMO_CHARS // 5))
    sql = SSB_Q.replace("group by", f"where d_year in ({years}) group by")
    assert len(sql) > SHAPE_MEMO_CHARS
    door = door_of(ADMIN)
    assert door.rows(sql) == _expected(live, server_home.project, sql) != []
    assert door.rows(sql) == door.rows(SSB_Q)  # the list holds every year of the data


@pytest.mark.parametrize(
    ("sql", "said", "same_on_the_wire"),
    [
        ("select nope from ssb.lineorder", "nope", True),
        ("select from where", "parse", True),
        # the wire reads PostgreSQL: the table function becomes Spark's file read, refused in its own words
        ("select * from read_parquet('/etc/passwd')", "not allowed", False),
        ("select * from ssb.no_such_table", "no_such_table", True),
    ],
    ids=["unknown-column", "syntax", "forbidden-function", "unknown-table"],
)
def test_every_door_refuses_as_the_service(
    door_of: DoorMaker, live: LiveServer, server_home: ServerHome, sql: str, said: str, same_on_the_wire: bool
) -> None:
    """Each door refuses with the service's one-line message and the SQLSTATE of the one error map."""
    with pytest.raises(PrecubeError) as raised:
        live.state.queries.execute(Principal(ADMIN[0], server_home.project), sql)
    door = door_of(ADMIN)
    with pytest.raises(RefusedError) as refused:
        door.rows(sql)
    assert refused.value.sqlstate == disposition(raised.value).sqlstate
    assert said.lower() in str(refused.value).lower()
    if door.name != "wire" or same_on_the_wire:
        assert str(refused.value) == raised.value.message.splitlines()[0]


def test_a_grant_revoked_mid_connection_stops_the_next_statement(
    door_of: DoorMaker, live: LiveServer, server_home: ServerHome
) -> None:
    user = _user(live, server_home.project)
    door = door_of(user)
    if door.name == "dbapi-local":
        pytest.skip("the in-process DB-API runs as the machine's user: there is no grant to revoke")
    assert door.rows(SSB_Q)
    live.state.directory.revoke(server_home.project, user[0])
    with pytest.raises(RefusedError) as refused:
        door.rows(SSB_Q)
    assert "permission" in str(refused.value).lower()


def test_a_cancel_interrupts_the_engine_and_frees_it(live: LiveServer, server_home: ServerHome) -> None:
    """The service's cancel stops a statement running on the engine at once; the project's engine then answers
    the next statement (it was not left running until the time-out)."""
    queries, principal = live.state.queries, Principal(ADMIN[0], server_home.project)
    handle = queries.run(principal, SLOW)
    time.sleep(1.0)
    assert not handle.future.done(), "the slow statement ended before the cancel: it is not slow enough"
    started = time.monotonic()
    queries.cancel(handle)
    with pytest.raises(QueryCancelledError):
        handle.result(timeout=30)
    assert time.monotonic() - started < 5
    started = time.monotonic()
    assert queries.execute(principal, SSB_Q).rows
    assert time.monotonic() - started < 10


def test_a_rest_client_that_leaves_cancels_its_statement(live: LiveServer, server_home: ServerHome) -> None:
    """A client that closes the connection before the answer (a BI tool's tab closed) stops the statement: it
    leaves the service's running statements at once instead of holding the engine until the time-out."""
    marker = f"/* {uuid.uuid4().hex} */"
    sql = f"{SLOW} {marker}"
    with httpx.Client(base_url=live.url, auth=ADMIN, timeout=1.5) as client, pytest.raises(httpx.ReadTimeout):
        client.post(QUERY, json={"sql": sql, "project": server_home.project})
    deadline = time.monotonic() + 10
    while any(h.statement == sql for h in live.state.queries.running()):
        assert time.monotonic() < deadline, "the statement ran on after its client left"
        time.sleep(0.05)


def test_a_wire_cancel_request_interrupts_the_engine(live: LiveServer, server_home: ServerHome) -> None:
    with psycopg.connect(
        host="127.0.0.1", port=live.pg_port, dbname=server_home.project, user=ADMIN[0], password=ADMIN[1]
    ) as con:
        # cancel_safe: cancel() holds the GIL while libpq waits for the server, which runs in this process
        timer = threading.Timer(1.0, con.cancel_safe)
        timer.start()
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled), con.cursor() as cur:
            cur.execute(SLOW.encode())
        timer.join()
        con.rollback()
        assert time.monotonic() - started < 10
        started = time.monotonic()
        with con.cursor() as cur:
            cur.execute(SSB_Q.encode())
            assert cur.fetchall()
        assert time.monotonic() - started < 10  # the engine was freed, not left running the cross join


def test_rest_and_wire_see_the_same_user(live: LiveServer, server_home: ServerHome) -> None:
    """Each door passes the signed-in user to the service: the history records them."""
    user = _user(live, server_home.project)
    marker = f"/* {uuid.uuid4().hex} */"
    for door in (Rest(live, server_home.project, user), Wire(live, server_home.project, user)):
        try:
            door.rows(f"{SSB_Q} {marker}")
        finally:
            door.close()
    with httpx.Client(base_url=live.url, auth=ADMIN) as admin:
        found = admin.get(f"{QUERY}/history_queries", params={"project": server_home.project, "sql": marker}).json()
    assert [h["submitter"] for h in found["data"]["query_histories"]] == [user[0], user[0]]
