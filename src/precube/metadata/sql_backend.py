"""The metadata store on a SQL database through SQLAlchemy: SQLite (default) and PostgreSQL.

Two tables: `{table}` holds the current documents (key, project, content, ts, mvcc) and
`{table}_audit_log` every change. Optimistic concurrency: an update only matches the row at the
expected `mvcc`, so a stale writer changes nothing and its whole transaction rolls back.
"""

from __future__ import annotations

import contextlib
import copy
import sqlite3
import threading
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    create_engine,
    event,
    insert,
    select,
    text,
)
from sqlalchemy import delete as sql_delete
from sqlalchemy import update as sql_update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError

from precube.errors import InvalidInputError
from precube.metadata import paths
from precube.metadata.documents import AuditRecord, Document
from precube.metadata.entity import now_ms
from precube.metadata.errors import (
    AlreadyExistsError,
    NotFoundError,
    StoreUnavailableError,
    VersionConflictError,
)


def _tables(name: str) -> tuple[Table, Table]:
    meta = MetaData()
    docs = Table(
        name,
        meta,
        Column("meta_key", String(512), primary_key=True),
        Column("project", String(128), nullable=False, index=True),
        Column("meta_content", LargeBinary, nullable=False),
        Column("meta_ts", BigInteger, nullable=False),
        Column("meta_mvcc", BigInteger, nullable=False),
    )
    audit = Table(
        f"{name}_audit_log",
        meta,
        # SQLite only auto-increments INTEGER PRIMARY KEY columns.
        Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
        Column("meta_key", String(512), nullable=False, index=True),
        Column("meta_content", LargeBinary, nullable=True),
        Column("meta_ts", BigInteger, nullable=False),
        Column("meta_mvcc", BigInteger, nullable=False),
        Column("unit_id", String(64), nullable=False),
        Column("operator", String(128), nullable=False),
    )
    return docs, audit


def engine_url(url: str) -> str:
    """Use psycopg 3 for plain `postgresql://` URLs (SQLAlchemy would pick psycopg2)."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+psycopg://" + url[len(plain) :]
    return url


def _reason(err: BaseException) -> str:
    orig = getattr(err, "orig", None) or err
    text = str(orig).strip().splitlines()
    return text[0] if text else type(orig).__name__


# The writes this process committed to each database, counted across all its backends on it: a store that
# reuses a recent `last_change` reading (`MetadataStore.last_change(max_age_s)`) sees this process's own
# changes at once, whichever store object made them. Process-wide by nature, as the database is.
_COMMITS: dict[str, int] = {}
_COMMITS_LOCK = threading.Lock()


class SqlBackend:
    """`StoreBackend` on SQLAlchemy."""

    def __init__(self, url: str, table: str) -> None:
        try:
            sa_url = make_url(engine_url(url))
        except ArgumentError as err:
            raise InvalidInputError(f"malformed metadata URL {url!r}: {err}") from err
        self.display_url = sa_url.render_as_string(hide_password=True)
        self._docs, self._audit = _tables(table)
        self._local = threading.local()  # each thread's own connection for `last_change`
        self._database = f"{self.display_url}#{table}"  # what `local_commits` counts
        self._probes: list[Any] = []
        self._probes_lock = threading.Lock()
        # PostgreSQL: write transactions take this transaction-scoped advisory lock first (SQLite's BEGIN
        # IMMEDIATE does the same), so audit ids are handed out in commit order and `last_change` (their max)
        # never passes over a change that commits later with a smaller id: other servers would miss it.
        self._write_lock: int | None = None
        self._url = sa_url
        try:
            self._engine = self._new_engine()
            if sa_url.get_backend_name() != "sqlite":
                self._write_lock = zlib.crc32(f"precube:{table}".encode())
            self._docs.metadata.create_all(self._engine)
        except NoSuchModuleError as err:
            raise InvalidInputError(f"unsupported metadata URL {self.display_url}: {err}") from err
        except DBAPIError as err:
            raise StoreUnavailableError(f"cannot open metadata store {self.display_url}: {_reason(err)}") from err

    def _new_engine(self, **pool: Any) -> Engine:
        if self._url.get_backend_name() == "sqlite":
            return self._sqlite_engine(self._url.database, **pool)
        return create_engine(self._url, pool_pre_ping=True, **pool)

    def dedicated(self) -> SqlBackend:
        """This database through a pool of one connection of its own; an in-memory SQLite database (one per
        engine) is shared instead."""
        if self._url.get_backend_name() == "sqlite" and self._url.database in (None, "", ":memory:"):
            return self
        clone = copy.copy(self)
        clone._engine = self._new_engine(pool_size=1, max_overflow=0)
        clone._local = threading.local()
        clone._probes, clone._probes_lock = [], threading.Lock()
        return clone

    def _sqlite_engine(self, database: str | None, **pool: Any) -> Engine:
        if database and database != ":memory:":
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(f"sqlite:///{database or ':memory:'}", **pool)

        # pysqlite's own transaction handling defers BEGIN; take control so that a write
        # transaction holds the write lock from its start (BEGIN IMMEDIATE) and readers use WAL.
        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            mode = "DEFERRED" if conn.get_execution_options().get("precube_readonly") else "IMMEDIATE"
            conn.exec_driver_sql(f"BEGIN {mode}")

        return engine

    def close(self) -> None:
        with self._probes_lock:
            for conn in self._probes:
                conn.close()
            self._probes.clear()
        self._engine.dispose()

    def last_change(self) -> int:
        """The id of the newest audit record: it moves on every committed change. Asked before every query,
        so it runs on a DBAPI connection of the calling thread's own in autocommit mode (each statement sees
        the latest commit), without a pool checkout or statement compilation: microseconds, not a
        millisecond. A kept connection that fails (the database restarted since its last use) is replaced and
        the question asked once more, as the pool's pre-ping does for its own connections."""
        kept = getattr(self._local, "conn", None) is not None
        try:
            return self._ask_last_change()
        except StoreUnavailableError:
            if not kept:
                raise
            return self._ask_last_change()

    def _ask_last_change(self) -> int:
        conn = getattr(self._local, "conn", None)
        try:
            if conn is None:
                conn = self._engine.raw_connection()
                conn.detach()  # ours for the thread's life, closed by close()
                if self._engine.dialect.name != "sqlite":  # sqlite3 ones already are (isolation_level None)
                    conn.dbapi_connection.autocommit = True  # type: ignore[union-attr]
                self._local.conn = conn
                with self._probes_lock:
                    self._probes.append(conn)
            cursor = conn.cursor()
            try:
                cursor.execute(f"SELECT max(id) FROM {self._audit.name}")
                row = cursor.fetchone()
            finally:
                cursor.close()
        except Exception as err:  # SQLAlchemy's DBAPIError, or a driver error of the raw connection
            self._drop_probe(conn)
            raise StoreUnavailableError(f"metadata store {self.display_url} failed: {_reason(err)}") from err
        return int(row[0] or 0) if row else 0

    def _drop_probe(self, conn: Any) -> None:
        """Forget the thread's `last_change` connection after a failure (the database restarted, the network
        dropped): the next call opens a new one, so the server reconnects by itself."""
        self._local.conn = None
        if conn is None:
            return
        with self._probes_lock:
            if conn in self._probes:
                self._probes.remove(conn)
        with contextlib.suppress(Exception):  # a connection already broken: closing it may fail too
            conn.close()

    def local_commits(self) -> int:
        return _COMMITS.get(self._database, 0)

    @contextmanager
    def begin(self, writer: str, readonly: bool) -> Iterator[_SqlTransaction]:
        try:
            with self._engine.connect() as conn:
                conn = conn.execution_options(precube_readonly=readonly)
                with conn.begin():
                    if not readonly and self._write_lock is not None:
                        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": self._write_lock})
                    yield _SqlTransaction(conn, self._docs, self._audit, writer)
            if not readonly:
                with _COMMITS_LOCK:
                    _COMMITS[self._database] = _COMMITS.get(self._database, 0) + 1
        except DBAPIError as err:
            if isinstance(err, IntegrityError):
                raise VersionConflictError(f"concurrent write conflict: {_reason(err)}") from err
            raise StoreUnavailableError(f"metadata store {self.display_url} failed: {_reason(err)}") from err

    def audit_log(self, prefix: str, limit: int) -> list[AuditRecord]:
        a = self._audit.c
        query = select(self._audit).where(a.meta_key.startswith(prefix, autoescape=True))
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(a.id.desc()).limit(limit)).all()
        return [
            AuditRecord(r.id, r.meta_key, r.meta_content, r.meta_mvcc, r.meta_ts, r.unit_id, r.operator)
            for r in reversed(rows)
        ]


class _SqlTransaction:
    """`RawTransaction` on one SQLAlchemy connection inside `begin()`."""

    def __init__(self, conn: Connection, docs: Table, audit: Table, writer: str) -> None:
        self._conn = conn
        self._docs = docs
        self._audit = audit
        self._writer = writer
        self._unit_id = str(uuid.uuid4())

    def get(self, key: str) -> Document | None:
        row = self._conn.execute(select(self._docs).where(self._docs.c.meta_key == key)).first()
        return None if row is None else Document(row.meta_key, row.meta_content, row.meta_mvcc, row.meta_ts)

    def scan(self, prefix: str) -> list[Document]:
        c = self._docs.c
        rows = self._conn.execute(select(self._docs).where(c.meta_key.startswith(prefix, autoescape=True)))
        docs = [Document(r.meta_key, r.meta_content, r.meta_mvcc, r.meta_ts) for r in rows]
        return sorted(docs, key=lambda d: d.key)  # by code point, whatever the database collation

    def put(self, key: str, content: bytes, expected_mvcc: int) -> Document:
        c = self._docs.c
        ts = now_ms()
        if expected_mvcc < 0:
            if self.get(key) is not None:
                raise AlreadyExistsError(f"cannot create {key}: it already exists")
            mvcc = 0
            self._conn.execute(
                insert(self._docs).values(
                    meta_key=key, project=_project(key), meta_content=content, meta_ts=ts, meta_mvcc=0
                )
            )
        else:
            mvcc = expected_mvcc + 1
            result = self._conn.execute(
                sql_update(self._docs)
                .where(c.meta_key == key, c.meta_mvcc == expected_mvcc)
                .values(meta_content=content, meta_ts=ts, meta_mvcc=mvcc)
            )
            if result.rowcount != 1:
                raise self._stale(key, expected_mvcc)
        self._log(key, content, mvcc, ts)
        return Document(key, content, mvcc, ts)

    def delete(self, key: str, expected_mvcc: int) -> None:
        c = self._docs.c
        result = self._conn.execute(sql_delete(self._docs).where(c.meta_key == key, c.meta_mvcc == expected_mvcc))
        if result.rowcount != 1:
            raise self._stale(key, expected_mvcc)
        self._log(key, None, expected_mvcc + 1, now_ms())

    def _stale(self, key: str, expected_mvcc: int) -> Exception:
        current = self.get(key)
        if current is None:
            return NotFoundError(f"cannot change {key}: it does not exist")
        return VersionConflictError(
            f"version conflict on {key}: written at mvcc {expected_mvcc} but the store has {current.mvcc}; "
            "reload and retry"
        )

    def _log(self, key: str, content: bytes | None, mvcc: int, ts: int) -> None:
        self._conn.execute(
            insert(self._audit).values(
                meta_key=key,
                meta_content=content,
                meta_ts=ts,
                meta_mvcc=mvcc,
                unit_id=self._unit_id,
                operator=self._writer,
            )
        )


def _project(key: str) -> str:
    return "" if key == paths.UUID_KEY else paths.parse_key(key).project
