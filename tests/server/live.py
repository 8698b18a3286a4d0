"""A real `precube serve` for tests: uvicorn on a free loopback port, in a thread of the test process (it
shares the test run's Spark session) or as a child process (for SIGTERM and kill -9)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from precube.server.app import create_app
from precube.server.connections import uvicorn_options
from precube.settings import Settings

ADMIN = ("ADMIN", "Adm1n-test!")  # set through [server] admin_password in the test settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """A server in a thread: `url`, `client(user)`, `stop()`."""

    def __init__(self, settings: Settings, run_jobs: bool = True, hot_path: bool = True) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.settings = settings
        self.pg_port = settings.server.pg_port  # the Postgres wire protocol's, when set
        self.app = create_app(settings, name=f"127.0.0.1:{self.port}", run_jobs=run_jobs, hot_path=hot_path)
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=self.port,
            log_config=None,
            access_log=False,
            **uvicorn_options(settings.server),  # as `precube serve` bounds its connections
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="precube-test-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)

    @property
    def state(self) -> Any:
        return self.app.state.server

    def wait_warm(self, timeout: float = 300) -> None:
        """Until the start-up preload of layouts has finished."""
        warmer = self.state._warmer
        if warmer is not None:
            warmer.join(timeout)

    def client(self, auth: tuple[str, str] | None = ADMIN, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=auth, timeout=120, **kwargs)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=60)


@contextmanager
def live_server(settings: Settings, run_jobs: bool = True, hot_path: bool = True) -> Iterator[LiveServer]:
    server = LiveServer(settings, run_jobs, hot_path)
    try:
        yield server
    finally:
        server.stop()


class ServerProcess:
    """`precube serve` as a child process (its own JVM when it builds): for SIGTERM and kill -9."""

    def __init__(self, home: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / f"server-{self.port}.log"
        environ = {**os.environ, "PRECUBE__SERVER__ADMIN_PASSWORD": ADMIN[1], **(env or {})}
        command = [sys.executable, "-m", "precube", "--home", str(home), "serve", "--port", str(self.port), *args]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, env=environ, stdout=out, stderr=subprocess.STDOUT)
        self.wait_ready()

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the server did not start within {timeout} s")

    def client(self, auth: tuple[str, str] | None = ADMIN) -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=auth, timeout=120)

    def terminate(self, timeout: float = 60) -> int:
        """SIGTERM, and wait for a clean exit."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(30)
