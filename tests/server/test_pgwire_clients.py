"""The Postgres wire front end with other clients: Debian's `psql` (a query against the oracle, `\\dt` and
`\\d TABLE` from the project's metadata, a wrong password), psycopg's catalog reads, the protocol as a raw
client drives it (Execute with a row limit, a NUL parameter, a bad message, a stranger's cancel request, an
oversized message, a newer protocol version), and TLS when a certificate is configured."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pygwire.messages as m
import pytest
from pygwire import FrontendConnection

from precube.metadata import Model, Table, open_store
from precube.server.pgwire.catalog_tables import deparsed
from tests.query.oracle import Oracle
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer, free_port, live_server
from tests.server.test_pgwire import connect, fetch, values

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("warm_live")]  # see warm_live


PSQL = shutil.which("psql")
needs_psql = pytest.mark.skipif(PSQL is None, reason="psql is not installed (./dev installs postgresql-client)")


def psql(live: LiveServer, project: str, command: str, password: str = ADMIN[1]) -> subprocess.CompletedProcess[str]:
    assert PSQL is not None
    dsn = f"host=127.0.0.1 port={live.pg_port} dbname={project} user={ADMIN[0]} sslmode=disable"
    env = {**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": "30", "PSQLRC": os.devnull}
    return subprocess.run(
        [PSQL, dsn, "-X", "-A", "-F", "|", "-c", command], env=env, capture_output=True, text=True, timeout=120
    )


@needs_psql
def test_psql_queries_and_lists_the_projects_tables(live: LiveServer, server_home: ServerHome, oracle: Oracle) -> None:
    project = server_home.project
    sql = "select d_year, count(*) as days from ssb.dates group by d_year order by d_year"
    done = psql(live, project, sql)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "d_year|days"
    assert lines[1:-1] == [f"{y}|{n}" for y, n in values(oracle.run(sql))]  # (the last line counts the rows)

    listed = psql(live, project, "\\dt")
    assert listed.returncode == 0, listed.stderr
    settings = server_home.settings
    with open_store(settings.metadata_url, settings.metadata.table) as store, store.read(project) as tx:
        tables = tx.list(Table)
    rows = [line.split("|") for line in listed.stdout.strip().splitlines()[2:-1]]  # (title, header; the count)
    assert sorted((s, n) for s, n, *_ in rows) == sorted((t.database.lower(), t.name.lower()) for t in tables)
    assert {kind for _, _, kind, _ in rows} == {"table"}

    lineorder = next(t for t in tables if t.name == "LINEORDER")
    described = psql(live, project, "\\d lineorder")
    assert described.returncode == 0, described.stderr
    shown = [line.split("|") for line in described.stdout.strip().splitlines()[2:]]
    with open_store(settings.metadata_url, settings.metadata.table) as store, store.read(project) as tx:
        computed = [cc for m in tx.list(Model) for cc in m.computed_columns if cc.table_identity == "SSB.LINEORDER"]
    assert computed  # a model's computed columns follow the table's own, as stored generated columns
    assert [r[0] for r in shown] == [c.name.lower() for c in lineorder.columns] + [
        cc.column_name.lower() for cc in computed
    ]
    assert [r[4] for r in shown[len(lineorder.columns) :]] == [
        f"generated always as ({deparsed(cc.expression)}) stored" for cc in computed
    ]  # an operator expression in parentheses, as pg_get_expr gives it

    wrong = psql(live, project, "select 1", password="Wr0ng-password!")
    assert wrong.returncode != 0 and "wrong user name or password" in wrong.stderr


def test_catalog_reads_of_psycopg_and_jdbc(live: LiveServer, server_home: ServerHome) -> None:
    """What drivers and BI tools read: tables and columns with their Postgres types, from the metadata."""
    with connect(live, server_home.project, autocommit=True) as conn:
        tables = fetch(conn, "select table_schema, table_name from information_schema.tables order by 2").to_pylist()
        assert {"table_schema": "ssb", "table_name": "lineorder"} in tables
        columns = fetch(
            conn,
            "select a.attname, format_type(a.atttypid, a.atttypmod) as type from pg_catalog.pg_attribute a "
            "join pg_catalog.pg_class c on c.oid = a.attrelid join pg_catalog.pg_namespace n on n.oid = "
            "c.relnamespace where n.nspname = %s and c.relname = %s and a.attnum > 0 order by a.attnum",
            ("ssb", "dates"),
        ).to_pylist()
        assert columns[0]["attname"] == "d_datekey" and all(c["type"] for c in columns)
        oid = fetch(conn, "select 'ssb.dates'::regclass::oid as oid").column(0)[0].as_py()
        assert fetch(conn, "select %s::regclass::text as name", (oid,)).to_pylist() == [{"name": "dates"}]
        info = psycopg.types.TypeInfo.fetch(conn, "int4")
        assert info is not None and info.oid == 23 and info.array_oid == 1007


class Raw:
    """A client speaking the protocol message by message (pygwire's frontend side)."""

    def __init__(self, port: int, project: str, version: int = 0x00030000, **extra: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.conn = FrontendConnection(strict=False)
        self.pending: list[m.PGMessage] = []
        params = {"user": ADMIN[0], "database": project, **extra}
        self.send(m.StartupMessage(params=params, protocol_version=version))
        self.received = self.until(m.AuthenticationCleartextPassword)
        self.send(m.PasswordMessage(password=ADMIN[1]))
        self.received += self.until(m.ReadyForQuery)

    def send(self, *messages: m.PGMessage) -> None:
        self.sock.sendall(b"".join(self.conn.send(message) for message in messages))

    def until(self, kind: type[m.PGMessage]) -> list[m.PGMessage]:
        """The messages up to the next `kind`, that one included (those after it wait for the next call)."""
        found: list[m.PGMessage] = []
        while not found or not isinstance(found[-1], kind):
            if not self.pending:
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError(f"closed after {found}")
                self.pending += self.conn.receive(data)
            found.append(self.pending.pop(0))
        return found

    def close(self) -> None:
        self.sock.close()


def _of(kind: type[m.PGMessage], messages: list[m.PGMessage]) -> list[Any]:
    return [x for x in messages if isinstance(x, kind)]


def test_the_protocol_message_by_message(live: LiveServer, server_home: ServerHome, oracle: Oracle) -> None:
    assert live.pg_port is not None
    days = oracle.run("select count(*) from ssb.dates").column(0)[0].as_py()
    raw = Raw(live.pg_port, server_home.project)
    try:
        key = _of(m.BackendKeyData, raw.received)[0]
        raw.send(
            m.Parse(query="select d_datekey from ssb.dates order by d_datekey"),
            m.Bind(),
            m.Execute(max_rows=10),
            m.Flush(),
        )
        first = raw.until(m.PortalSuspended)  # a row limit suspends the portal
        assert len(_of(m.DataRow, first)) == 10
        raw.send(m.Execute(max_rows=0), m.Sync())
        rest = raw.until(m.ReadyForQuery)
        assert len(_of(m.DataRow, rest)) == days - 10 and _of(m.CommandComplete, rest)[0].tag == f"SELECT {days - 10}"

        raw.send(
            m.Parse(query="select $1 as v", param_types=[25]), m.Bind(param_values=[b"a\x00b"]), m.Execute(), m.Sync()
        )
        refused = raw.until(m.ReadyForQuery)  # the error, then nothing until Sync
        assert [e.code for e in _of(m.ErrorResponse, refused)] == ["22021"] and not _of(m.DataRow, refused)

        stranger = socket.create_connection(("127.0.0.1", live.pg_port), timeout=30)
        stranger.sendall(m.CancelRequest(process_id=key.process_id, secret_key=b"\x00\x00\x00\x00").to_wire())
        assert stranger.recv(1) == b""  # a cancel request gets no answer, and a wrong key cancels nothing
        stranger.close()
        raw.send(m.Query(query_string="select 1 as one"))
        assert [r.columns for r in _of(m.DataRow, raw.until(m.ReadyForQuery))] == [[b"1"]]

        raw.sock.sendall(b"y\x00\x00\x00\x04")  # no such message
        closed = raw.until(m.ErrorResponse)
        assert closed[-1].code == "08P01" and closed[-1].severity == "FATAL"
        assert raw.sock.recv(1) == b""
    finally:
        raw.close()

    newer = Raw(live.pg_port, server_home.project, version=0x00030002, **{"_pq_.future": "1"})
    negotiated = _of(m.NegotiateProtocolVersion, newer.received)
    assert negotiated and negotiated[0].newest_minor == 0 and negotiated[0].unrecognized == ["_pq_.future"]
    newer.sock.sendall(b"Q\x7f\x00\x00\x00")  # announces a 2 GiB message
    assert newer.until(m.ErrorResponse)[-1].code == "54000"
    newer.close()


def test_tls_when_a_certificate_is_configured(server_home: ServerHome, tmp_path: Path, live: LiveServer) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    subprocess.run(
        [openssl, *request, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    settings = server_home.settings.model_copy(deep=True)
    settings.server.pg_port, settings.server.preload = free_port(), False
    settings.server.pg_tls_cert, settings.server.pg_tls_key = str(cert), str(key)
    with (
        live_server(settings, run_jobs=False) as tls,
        connect(tls, server_home.project, sslmode="require", autocommit=True) as conn,
    ):
        assert conn.pgconn.ssl_in_use
        assert fetch(conn, "select count(*) as n from ssb.part").num_rows == 1
    with pytest.raises(psycopg.OperationalError, match="SSL"):  # the shared server has no certificate
        connect(live, server_home.project, sslmode="require")
