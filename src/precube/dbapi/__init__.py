"""precube's Python DB-API (PEP 249, level 2), in this process or through a server:

    import precube.dbapi
    con = precube.dbapi.connect(project="ssb", home="~/.precube")            # a query session here
    con = precube.dbapi.connect("http://host:7070", project="ssb", user="alice", password="…")  # a server
    cur = con.cursor()
    cur.execute("select d_year, sum(lo_revenue) from lineorder join dates on lo_orderdate = d_datekey "
                "where d_year >= ? group by d_year", (1995,))
    cur.fetchall(); cur.description; cur.fetch_arrow_table(); cur.fetch_df()

Parameters are `?` marks (paramstyle qmark), bound as SQL literals through the parsed statement (the service's
binder: here, or by the server). Errors are PEP 249's classes carrying precube's one-line message and error
`code`. Everything but the in-process backend (`local`) is the thin client's (`precube_client`, its own
distribution under `clients/python`): one implementation, installable without the engine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from precube_client import (
    BINARY,
    DATETIME,
    NUMBER,
    ROWID,
    STRING,
    Backend,
    Binary,
    Connection,
    Cursor,
    DatabaseError,
    DataError,
    Date,
    DateFromTicks,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Time,
    TimeFromTicks,
    Timestamp,
    TimestampFromTicks,
    Warning,
    apilevel,
    paramstyle,
    threadsafety,
)
from precube_client import connect as connect_server

if TYPE_CHECKING:
    from precube.settings import Settings


def connect(
    url: str | None = None,
    *,
    project: str,
    home: str | Path | None = None,
    config: str | Path | None = None,
    settings: Settings | None = None,
    engine: str | None = None,
    user: str | None = None,
    password: str | None = None,
    timeout: float = 600.0,
) -> Connection:
    """A connection to `project`: through the server at `url` (`http://host:7070`, signed in as `user`), or,
    without one, in this process on the settings that `home`, `config` or `settings` give (as
    `precube.connect`; `engine` duckdb or spark, `user` the name the query history records)."""
    if not isinstance(project, str) or not project:
        raise InterfaceError("connect needs project=NAME")
    if url is not None:
        if any(v is not None for v in (home, config, settings, engine)):
            raise InterfaceError("home, config, settings and engine are for an in-process connection, not a server's")
        return connect_server(url, project=project, user=user, password=password, timeout=timeout)
    if password is not None:
        raise InterfaceError("password is for a server: give its URL (connect('http://host:7070', …))")
    from precube.dbapi.local import LocalBackend

    return Connection(LocalBackend(project, home=home, config=config, settings=settings, engine=engine, user=user))


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
