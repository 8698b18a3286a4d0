"""Query history (issue 6 §8): every query of a project — SQL, user, duration, engine, layouts, rows,
success or error — in a table beside the metadata (`{metadata table}_query_history`, same database).

Rows are written by a background thread in batches, so recording never adds a commit to a query's
latency; `flush` waits for them (tests, the CLI before it exits).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import asdict, dataclass

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    insert,
    select,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from precube.metadata.sql_backend import engine_url

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueryRecord:
    project: str
    sql: str
    user: str
    start_ms: int
    duration_ms: float
    engine: str
    pushdown: bool
    model: str | None
    layouts: str  # layout ids, comma-separated
    rows: int
    succeeded: bool
    error: str | None = None


def _table(name: str) -> Table:
    return Table(
        name,
        MetaData(),
        Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
        Column("project", String(128), nullable=False, index=True),
        Column("sql", Text, nullable=False),
        Column("user", String(128), nullable=False),
        Column("start_ms", BigInteger, nullable=False),
        Column("duration_ms", Float, nullable=False),
        Column("engine", String(16), nullable=False),
        Column("pushdown", Boolean, nullable=False),
        Column("model", String(256), nullable=True),
        Column("layouts", String(1024), nullable=False),
        Column("rows", BigInteger, nullable=False),
        Column("succeeded", Boolean, nullable=False),
        Column("error", Text, nullable=True),
    )


class QueryHistory:
    """Records are written by one thread, in batches, each in one transaction. `record` only appends to a
    buffer (no lock, no wake-up: waking a thread per query hands the GIL over twice, which cost more than a
    result-cache hit's whole answer); the thread writes what gathered every `linger_s`, and at once on
    `flush` (which every read calls) or `close`. History is best effort: a batch the database refuses is
    logged and dropped."""

    def __init__(self, url: str, metadata_table: str, linger_s: float = 0.2) -> None:
        self.engine: Engine = create_engine(engine_url(url))
        self.table = _table(f"{metadata_table}_query_history")
        self.table.create(self.engine, checkfirst=True)
        self.linger_s = linger_s
        self._pending: deque[QueryRecord | threading.Event] = deque()  # appends and pops are thread-safe
        self._wake = threading.Event()
        self._closing = False
        self._thread = threading.Thread(target=self._drain, name="precube-query-history", daemon=True)
        self._thread.start()

    def record(self, rec: QueryRecord) -> None:
        self._pending.append(rec)

    def _drain(self) -> None:
        while True:
            self._wake.wait(self.linger_s)
            self._wake.clear()
            closing = self._closing
            batch: list[QueryRecord] = []
            flushed: list[threading.Event] = []
            while self._pending:
                item = self._pending.popleft()
                if isinstance(item, threading.Event):
                    flushed.append(item)
                else:
                    batch.append(item)
            if batch:
                try:
                    with self.engine.begin() as conn:
                        conn.execute(insert(self.table), [asdict(r) for r in batch])
                except SQLAlchemyError as err:
                    log.warning("query history: %d records lost: %s", len(batch), str(err).splitlines()[0])
            for done in flushed:
                done.set()
            if closing:
                return

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until every record made so far is written (or `timeout` seconds)."""
        if not self._thread.is_alive():
            return
        done = threading.Event()
        self._pending.append(done)
        self._wake.set()
        done.wait(timeout)

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        self._thread.join(timeout=10)
        self.engine.dispose()

    def search(
        self,
        project: str,
        *,
        start_from: int | None = None,
        start_to: int | None = None,
        min_ms: float | None = None,
        max_ms: float | None = None,
        sql: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[list[QueryRecord], int]:
        """A page of the project's queries, latest first, started in [start_from, start_to) (epoch ms),
        taking [min_ms, max_ms] ms, whose SQL contains `sql` (case-insensitive); and how many match."""
        from sqlalchemy import func

        self.flush()
        t = self.table.c
        where = [t.project == project]
        if start_from is not None:
            where.append(t.start_ms >= start_from)
        if start_to is not None:
            where.append(t.start_ms < start_to)
        if min_ms is not None:
            where.append(t.duration_ms >= min_ms)
        if max_ms is not None:
            where.append(t.duration_ms <= max_ms)
        if sql:
            escaped = sql.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append(func.lower(t.sql).like(f"%{escaped}%", escape="\\"))
        query = select(self.table).where(*where).order_by(t.id.desc()).offset(offset).limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
            total = int(conn.execute(select(func.count()).select_from(self.table).where(*where)).scalar_one())
        fields = QueryRecord.__dataclass_fields__
        return [QueryRecord(**{k: v for k, v in r.items() if k in fields}) for r in rows], total

    def recent(self, project: str, limit: int = 50) -> list[QueryRecord]:
        self.flush()
        t = self.table.c
        query = select(self.table).where(t.project == project).order_by(t.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        fields = QueryRecord.__dataclass_fields__
        return [QueryRecord(**{k: v for k, v in r.items() if k in fields}) for r in rows]
