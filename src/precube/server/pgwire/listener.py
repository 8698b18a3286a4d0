"""The Postgres wire front end's listener: an asyncio server on `[server] pg_port`, started and stopped by the
HTTP application's lifespan on the same event loop (one process, one `ServerState`), with the connections it
serves and their cancel keys."""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import os
import secrets
import ssl
from dataclasses import dataclass, field

from precube.errors import ConfigError
from precube.query.bounds import ResultBounds
from precube.server.pgwire.catalog import Catalog
from precube.server.pgwire.connection import Connection
from precube.server.state import ServerState
from precube.settings import ServerSettings

LOG = logging.getLogger("precube.pgwire")


def tls_context(settings: ServerSettings) -> ssl.SSLContext | None:
    """The TLS context of `[server] pg_tls_cert` / `pg_tls_key` (None: SSLRequest is refused)."""
    if settings.pg_tls_cert is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(settings.pg_tls_cert, settings.pg_tls_key)
    except (OSError, ssl.SSLError) as err:
        raise ConfigError(f"[server] pg_tls_cert / pg_tls_key cannot be loaded: {err}") from err
    return context


@dataclass
class PgServer:
    state: ServerState
    tls: ssl.SSLContext | None
    max_message_bytes: int
    startup_timeout_s: float = 10.0  # start-up and sign-in, else the connection is closed (pg_startup_timeout_s)
    max_connections: int = 100  # more at once are refused with 53300 (as PostgreSQL's max_connections)
    catalog: Catalog = field(default_factory=Catalog)
    port: int = 0
    _server: asyncio.Server | None = None
    _connections: dict[int, tuple[Connection, asyncio.Task[None]]] = field(default_factory=dict)
    _pids: itertools.count[int] = field(default_factory=lambda: itertools.count((os.getpid() % 10_000) * 100_000 + 1))

    @classmethod
    async def start(cls, state: ServerState, host: str, port: int, reuse_port: bool = False) -> PgServer:
        """Listen on host:port (`reuse_port`: several `--workers` processes share it)."""
        settings = state.settings.server
        limits = state.settings.query
        catalog = Catalog(limits.timeout_s, ResultBounds.of(limits))  # catalog statements have a statement's bounds
        server = cls(
            state,
            tls_context(settings),
            settings.max_body_bytes,
            settings.pg_startup_timeout_s,
            settings.pg_max_connections,
            catalog=catalog,
        )
        server._server = await asyncio.start_server(server._accept, host, port, reuse_port=reuse_port or None)
        server.port = server._server.sockets[0].getsockname()[1]
        LOG.info("Postgres wire protocol on %s:%d%s", host, server.port, " (TLS)" if server.tls else "")
        return server

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        over_cap = len(self._connections) >= self.max_connections  # refused once its start-up message is read
        pid = next(self._pids) & 0x7FFFFFFF
        connection = Connection(self, reader, writer, pid, secrets.token_bytes(4), over_cap=over_cap)
        task = asyncio.current_task()
        assert task is not None
        self._connections[pid] = (connection, task)
        try:
            await connection.run()
        finally:
            self._connections.pop(pid, None)

    def cancel(self, pid: int, secret: bytes) -> None:
        """A CancelRequest: stop the statement the connection with this key is running (else nothing)."""
        found = self._connections.get(pid)
        if found is not None and hmac.compare_digest(found[0].secret, secret):
            LOG.info("pg connection %d: statement canceled by the client", pid)
            found[0].canceled.set()

    async def stop(self) -> None:
        """Stop listening and close every connection (the server is shutting down)."""
        if self._server is not None:
            self._server.close()
        tasks = [task for _, task in self._connections.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.catalog.close()
