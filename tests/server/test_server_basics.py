"""The server's frame: health without credentials, everything else behind them, Kylin's envelope on
errors, the request id, the body limit."""

from __future__ import annotations

import httpx

from tests.server.conftest import data, error
from tests.server.live import ADMIN, LiveServer


def test_health_needs_no_credentials_and_ready_does(live: LiveServer) -> None:
    with live.client(auth=None) as anonymous:
        assert data(anonymous.get("/health"))["status"] == "UP"
        assert "credentials" in error(anonymous.get("/ready"), 401)
    with live.client() as admin:
        assert data(admin.get("/ready"))["status"] == "READY"


def test_wrong_password_and_malformed_credentials_are_401(live: LiveServer) -> None:
    with live.client(auth=(ADMIN[0], "not-it-1!")) as wrong:
        assert error(wrong.get("/ready"), 401) == "wrong user name or password"
    with live.client(auth=None, headers={"Authorization": "Basic !!!"}) as garbled:
        assert "malformed" in error(garbled.get("/ready"), 401)


def test_request_id_is_returned_and_unknown_paths_get_the_envelope(live: LiveServer) -> None:
    with live.client() as admin:
        given = admin.get("/ready", headers={"X-Request-ID": "abc-123"})
        assert given.headers["x-request-id"] == "abc-123"
        made = admin.get("/ready", headers={"X-Request-ID": "bad id with spaces"})
        assert made.headers["x-request-id"] != "bad id with spaces" and len(made.headers["x-request-id"]) == 16
        error(admin.get("/kylin/api/no_such_thing"), 404)


def test_a_body_over_the_limit_is_413(live: LiveServer) -> None:
    limit = live.settings.server.max_body_bytes
    with live.client() as admin:
        big = b"x" * (limit + 1)
        assert "exceeds" in error(admin.post("/kylin/api/query", content=big), 413)

        def chunks():  # streamed: no Content-Length
            for _ in range(limit // 65536 + 2):
                yield b"y" * 65536

        assert "exceeds" in error(admin.post("/kylin/api/query", content=chunks()), 413)


def test_envelope_http_client_smoke(live: LiveServer) -> None:
    assert httpx.get(f"{live.url}/health").json() == {"code": "000", "data": {"status": "UP"}, "msg": ""}
