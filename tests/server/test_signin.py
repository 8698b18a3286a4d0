"""Sign-in throttling and connection hygiene on real servers (no Spark): wrong passwords slow down (429 with
Retry-After; on the wire 08004) and then lock the user (REST and psycopg), the lock is logged, listed for and
lifted by ADMIN (REST and CLI), and refuses the right password too; a client address is throttled the same
way; a flood of wrong passwords leaves a signed-in user's queries fast (bounded password checks); half-open
HTTP connections are dropped after the header timeout, connections past the cap get 503, and the wire drops
a silent start-up and refuses connections past its cap (53300)."""

from __future__ import annotations

import asyncio
import logging
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from precube.auth import Directory, Permission
from precube.auth.throttle import Throttle
from precube.cli.app import run
from precube.metadata import Project, open_store
from precube.server.signin import SignIn
from precube.settings import AuthSettings
from tests.server.conftest import data, error, server_settings
from tests.server.live import ADMIN, LiveServer, ServerProcess, free_port, live_server

API = "/kylin/api"
PROJECT = "signin"
PASSWORD = "Passw0rd!"
WRONG = "Wr0ng-pass!"
OTHER_ADDRESS = "127.0.0.2"  # loopback too: another client as far as the server can tell


@contextmanager
def _server(home: Path, **auth: Any) -> Iterator[LiveServer]:
    """A server of its own with the Postgres wire, fast throttling, and `auth` (`[auth]` settings)."""
    settings = server_settings(home, auth={"max_failures": 4, "delay_s": 0.5, "lock_s": 600, **auth})
    settings.server.pg_port = free_port()
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        store.create_project(Project(name=PROJECT))
    with live_server(settings, run_jobs=False) as live:
        yield live


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Users throttled and locked; not addresses (every test signs in from 127.0.0.1)."""
    with _server(tmp_path_factory.mktemp("signin-home"), address_max_failures=0) as live:
        yield live


def _user(server: LiveServer) -> str:
    name = f"u_{uuid.uuid4().hex[:8]}"
    server.state.directory.add_user(name, PASSWORD, [])
    server.state.directory.grant(PROJECT, name, Permission.QUERY)
    return name


def _until_answered(call: Any, deadline_s: float = 10) -> httpx.Response:
    """`call()`'s answer once it is no longer 429 (each 429 checked: a one-line envelope and Retry-After)."""
    deadline = time.monotonic() + deadline_s
    while True:
        response: httpx.Response = call()
        if response.status_code != 429:
            return response
        assert "retry in" in error(response, 429) and int(response.headers["retry-after"]) >= 1
        assert response.json()["error_code"] == "SIGN_IN_THROTTLED" and response.json()["retryable"] is True
        assert time.monotonic() < deadline, "still throttled"
        time.sleep(0.1)


def _me(client: httpx.Client) -> httpx.Response:
    return client.get(f"{API}/user/authentication")


def test_wrong_passwords_slow_down_then_lock_the_user_over_rest(
    server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    name = _user(server)
    with server.client((name, WRONG)) as wrong, server.client((name, PASSWORD)) as right:
        assert error(_me(wrong), 401) == "wrong user name or password"
        assert error(_me(wrong), 401) == "wrong user name or password"
        slowed = _me(wrong)  # at once: refused unchecked
        assert error(slowed, 429) == f"too many failed sign-ins of user {name}: retry in 1 s"
        assert slowed.headers["retry-after"] == "1" and slowed.json()["sqlstate"] == "08004"
        assert error(_me(right), 429)  # the right password waits too: a delay says nothing about it
        with caplog.at_level(logging.WARNING, logger="precube.auth"):
            assert error(_until_answered(lambda: _me(wrong)), 401) == "wrong user name or password"
            assert error(_until_answered(lambda: _me(wrong)), 401) == "wrong user name or password"  # the 4th
        assert f"sign-in: user {name} locked until" in caplog.text
        locked = error(_me(wrong), 401)
        assert locked.startswith(f"user {name} is locked until ") and "after 4 failed sign-ins" in locked
        assert error(_me(right), 401) == locked  # the same answer whatever the password
        assert _me(right).json()["error_code"] == "USER_LOCKED"
    with server.client() as admin:
        locks = data(admin.get(f"{API}/user/locked"))
        assert {"type": "user", "name": name, "wrong_time": 4} == {
            k: locks[0][k] for k in ("type", "name", "wrong_time")
        }
        assert locks[0]["locked_until"] - locks[0]["locked_time"] == 600_000
        listed = data(admin.get(f"{API}/user", params={"name": name}))["value"]
        assert [u["locked"] for u in listed] == [True]
        with server.client((_user(server), PASSWORD)) as other:
            error(other.get(f"{API}/user/locked"), 403)
            error(other.put(f"{API}/user/unlock", json={"username": name}), 403)
        assert "give either username or address" in error(admin.put(f"{API}/user/unlock", json={}), 400)
        assert data(admin.put(f"{API}/user/unlock", json={"username": name.upper()}))["name"] == name
        assert f"user {name} is not locked" in error(admin.put(f"{API}/user/unlock", json={"username": name}), 404)
        assert data(admin.get(f"{API}/user/locked")) == []
    with server.client((name, PASSWORD)) as right:
        assert data(_me(right))["username"] == name


def test_wrong_passwords_on_the_wire_lock_and_the_cli_unlocks(
    server: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    name = _user(server)

    def connect(password: str) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host="127.0.0.1", port=server.pg_port, dbname=PROJECT, user=name, password=password, connect_timeout=10
        )

    def refused(password: str) -> str:
        deadline = time.monotonic() + 10
        while True:
            with pytest.raises(psycopg.OperationalError) as caught:
                connect(password)
            if "too many failed sign-ins" not in str(caught.value) or time.monotonic() > deadline:
                return str(caught.value)
            time.sleep(0.1)

    for _ in range(2):
        with pytest.raises(psycopg.OperationalError, match="wrong user name or password"):
            connect(WRONG)
    with pytest.raises(psycopg.OperationalError, match=f"too many failed sign-ins of user {name}: retry in 1 s"):
        connect(WRONG)
    assert "wrong user name or password" in refused(WRONG)
    assert "wrong user name or password" in refused(WRONG)
    locked = refused(PASSWORD)
    assert f"user {name} is locked until" in locked and "precube user unlock" in locked
    home = ["--home", str(server.settings.home)]
    assert run([*home, "user", "locked", "--format", "json"]) == 0
    shown = capsys.readouterr().out
    assert f'"name": "{name}"' in shown and '"wrong_time": 4' in shown
    assert run([*home, "user", "unlock", name]) == 0
    assert f"unlocked user {name}" in capsys.readouterr().out
    assert run([*home, "user", "unlock", name]) == 1  # no longer locked
    assert f"user {name} is not locked" in " ".join(capsys.readouterr().err.split())
    deadline = time.monotonic() + 10  # the server sees the store's change within a second
    while True:
        try:
            with connect(PASSWORD) as conn:
                assert conn.execute("select 1").fetchone() == (1,)
            break
        except psycopg.OperationalError:
            assert time.monotonic() < deadline, "still locked"
            time.sleep(0.2)


def test_a_client_address_is_throttled_and_locked_not_its_neighbours(tmp_path: Path) -> None:
    with _server(tmp_path, address_max_failures=6) as server:
        _address_throttled(server)


def _address_throttled(server: LiveServer) -> None:
    signed_in = _user(server)
    transport = httpx.HTTPTransport(local_address=OTHER_ADDRESS)
    with (
        httpx.Client(base_url=server.url, transport=transport, timeout=30) as guesser,
        server.client((signed_in, PASSWORD)) as neighbour,
    ):
        data(_me(neighbour))
        for _ in range(6):  # a new name each time: only the address counts them
            name = f"nobody_{uuid.uuid4().hex[:6]}"
            response = _until_answered(lambda name=name: guesser.get(f"{API}/user/authentication", auth=(name, WRONG)))
            assert error(response, 401) == "wrong user name or password"
            data(_me(neighbour))  # another address is not slowed down
        locked = error(guesser.get(f"{API}/user/authentication", auth=ADMIN), 401)
        assert locked.startswith(f"sign-ins from {OTHER_ADDRESS} are locked until")
        with server.client() as admin:
            assert [(r["type"], r["name"]) for r in data(admin.get(f"{API}/user/locked"))] == [
                ("address", OTHER_ADDRESS)
            ]
            assert "not an IP address" in error(admin.put(f"{API}/user/unlock", json={"address": "x/../y"}), 400)
            data(admin.put(f"{API}/user/unlock", json={"address": OTHER_ADDRESS}))
        assert data(guesser.get(f"{API}/user/authentication", auth=ADMIN))["username"] == ADMIN[0]


def _query_seconds(client: httpx.Client, count: int) -> list[float]:
    took = []
    for _ in range(count):
        started = time.perf_counter()
        data(client.post(f"{API}/query", json={"project": PROJECT, "sql": "select 1 as one"}))
        took.append(time.perf_counter() - started)
    return took


def test_a_flood_of_wrong_passwords_does_not_slow_a_signed_in_user(tmp_path: Path) -> None:
    """8 threads of wrong passwords for 2 s, every one a bcrypt check (no address throttling, a new unknown
    name each time): a signed-in user's queries (its password remembered) stay fast, as checks are bounded."""
    settings = server_settings(tmp_path)
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        store.create_project(Project(name=PROJECT))
        Directory(store).add_user("good", PASSWORD, [])
        Directory(store).grant(PROJECT, "good", Permission.QUERY)
    env = {"PRECUBE__AUTH__ADDRESS_MAX_FAILURES": "0", "PRECUBE__AUTH__PASSWORD_CHECKS": "1"}
    server = ServerProcess(tmp_path, env=env, args=("--no-jobs",))
    try:
        with server.client(("good", PASSWORD)) as good:
            _query_seconds(good, 5)  # warm
            idle = statistics.median(_query_seconds(good, 30))
            stop = time.monotonic() + 2
            answers: list[int] = []

            def flood() -> None:
                with httpx.Client(base_url=server.url, timeout=30) as client:
                    while time.monotonic() < stop:
                        name = f"nobody_{uuid.uuid4().hex[:8]}"
                        answers.append(client.get(f"{API}/user/authentication", auth=(name, WRONG)).status_code)

            threads = [threading.Thread(target=flood) for _ in range(8)]
            for thread in threads:
                thread.start()
            time.sleep(0.3)
            during = statistics.median(_query_seconds(good, 30))
            for thread in threads:
                thread.join()
        assert answers and set(answers) <= {401, 429} and 401 in answers
        assert during <= 3 * idle + 0.1, (idle, during)  # generous: the checks hold one core of the machine
    finally:
        server.terminate()


@pytest.fixture
def hygienic(tmp_path: Path) -> Iterator[LiveServer]:
    """A server with small timeouts and caps."""
    settings = server_settings(tmp_path)
    settings.server.header_timeout_s = 1
    settings.server.max_connections = 20
    settings.server.pg_port = free_port()
    settings.server.pg_startup_timeout_s = 1
    settings.server.pg_max_connections = 3
    with live_server(settings, run_jobs=False) as live:
        yield live


def _closed(sock: socket.socket, within_s: float) -> bool:
    """Whether the server closes `sock` within `within_s` (what it sends first is read past)."""
    sock.settimeout(within_s)
    try:
        while sock.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_half_open_connections_are_dropped_and_connections_are_capped(hygienic: LiveServer) -> None:
    host, port = "127.0.0.1", hygienic.port
    idle = [socket.create_connection((host, port)) for _ in range(12)]
    partial = [socket.create_connection((host, port)) for _ in range(12)]
    for sock in partial:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # and the rest never comes
    try:
        with hygienic.client(auth=None) as client:
            assert client.get("/health").status_code == 503  # past max_connections
            started = time.monotonic()
            assert all(_closed(sock, 3) for sock in idle + partial)
            assert time.monotonic() - started < 3
            assert client.get("/health").status_code == 200
            # a connection that is answered stays open for its keep-alive, not cut by the header deadline
            with socket.create_connection((host, port)) as kept:
                kept.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                assert kept.recv(4096).startswith(b"HTTP/1.1 200")
    finally:
        for sock in idle + partial:
            sock.close()


def test_the_wire_drops_a_silent_start_up_and_caps_its_connections(hygienic: LiveServer) -> None:
    silent = [socket.create_connection(("127.0.0.1", hygienic.pg_port)) for _ in range(3)]
    try:
        time.sleep(0.2)
        with pytest.raises(psycopg.OperationalError, match="too many clients already"):
            psycopg.connect(
                host="127.0.0.1", port=hygienic.pg_port, dbname="x", user="ADMIN", password=ADMIN[1], connect_timeout=10
            )
        assert all(_closed(sock, 3) for sock in silent)  # the start-up timeout: 1 s
    finally:
        for sock in silent:
            sock.close()
    with pytest.raises(psycopg.OperationalError, match="does not exist|no_such"):
        psycopg.connect(
            host="127.0.0.1",
            port=hygienic.pg_port,
            dbname="no_such",
            user="ADMIN",
            password=ADMIN[1],
            connect_timeout=10,
        )


def test_password_checks_are_bounded_and_the_excess_refused_at_once(tmp_path: Path) -> None:
    """One check at a time on the pool, one waiting; the others are refused before any hashing (429)."""
    settings = server_settings(tmp_path)
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        directory = Directory(store, refresh_s=0)
        directory.add_user("bob", PASSWORD, [])
        signin = SignIn(directory, Throttle(store, AuthSettings(max_failures=0, address_max_failures=0)), 1, 1)
        running, peak = 0, 0
        authenticate = directory.authenticate

        def counted(username: str, password: str) -> Any:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            try:
                return authenticate(username, password)
            finally:
                running -= 1

        directory.authenticate = counted  # type: ignore[method-assign]

        async def five() -> list[Any]:
            return await asyncio.gather(*(signin("bob", WRONG, None) for _ in range(5)), return_exceptions=True)

        try:
            answers = asyncio.run(five())
        finally:
            signin.close()
    kinds = sorted(type(a).__name__ for a in answers)
    assert kinds == ["AuthenticationError"] * 2 + ["SignInThrottledError"] * 3, answers
    assert peak == 1
    assert all("too many sign-ins are being checked at once" in str(a) for a in answers[2:])
