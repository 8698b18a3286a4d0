"""precube's thin client: PEP 249's DB-API (level 2) over a precube server's REST API, the SQLAlchemy dialect
(`precube+http://`, `precube+https://`; SQLAlchemy 1.4 and 2.x, the `sqlalchemy` extra) and Apache Superset's
engine spec; no engine, SQL parser or JVM. The full `precube` package re-exports this as `precube.dbapi` (and
adds in-process connections):

    import precube_client
    con = precube_client.connect("http://host:7070", project="ssb", user="alice", password="…")
    cur = con.cursor()
    cur.execute("select d_year, sum(lo_revenue) from lineorder join dates on lo_orderdate = d_datekey "
                "where d_year >= ? group by d_year", (1995,))
    cur.fetchall(); cur.description; cur.fetch_arrow_table(); cur.fetch_df()

Parameters are `?` marks (paramstyle qmark), sent with the statement and bound as SQL literals by the server
(`params`). Errors are PEP 249's classes carrying precube's one-line message and error `code` (`errors`)."""

from __future__ import annotations

from precube_client.connection import Backend, Connection
from precube_client.cursor import Cursor
from precube_client.errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Warning,
)
from precube_client.types import (
    BINARY,
    DATETIME,
    NUMBER,
    ROWID,
    STRING,
    Binary,
    Date,
    DateFromTicks,
    Time,
    TimeFromTicks,
    Timestamp,
    TimestampFromTicks,
)

__version__ = "0.1.0"
apilevel = "2.0"
threadsafety = 1  # threads may share the module, not connections
paramstyle = "qmark"


def connect(
    url: str,
    *,
    project: str,
    user: str | None = None,
    password: str | None = None,
    timeout: float = 600.0,
) -> Connection:
    """A connection to `project` through the server at `url` (`http://host:7070`), signed in as `user`."""
    if not isinstance(project, str) or not project:
        raise InterfaceError("connect needs project=NAME")
    from precube_client.http import HttpBackend

    return Connection(HttpBackend(url, project, user, password, timeout))


__all__ = [
    "BINARY",
    "DATETIME",
    "NUMBER",
    "ROWID",
    "STRING",
    "Backend",
    "Binary",
    "Connection",
    "Cursor",
    "DataError",
    "DatabaseError",
    "Date",
    "DateFromTicks",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "Time",
    "TimeFromTicks",
    "Timestamp",
    "TimestampFromTicks",
    "Warning",
    "apilevel",
    "connect",
    "paramstyle",
    "threadsafety",
]
