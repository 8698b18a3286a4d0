"""Query history (issue 6 §8): every query of a project — SQL, user, duration, engine, layouts, rows,
success or error — in a table beside the metadata (`{metadata table}_query_history`, same database).

Rows are written by a background thread in batches, so recording never adds a commit to a query's
latency; `flush` waits for them (tests, the CLI before it exits).
"""

from __future__ import annotations

import queue
import threading
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

from precube.metadata.sql_backend import engine_url


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
    def __init__(self, url: str, metadata_table: str) -> None:
        self.engine: Engine = create_engine(engine_url(url))
        self.table = _table(f"{metadata_table}_query_history")
        self.table.create(self.engine, checkfirst=True)
        self._queue: queue.Queue[QueryRecord | None] = queue.Queue()
        self._thread = threading.Thread(target=self._drain, name="precube-query-history", daemon=True)
        self._thread.start()

    def record(self, rec: QueryRecord) -> None:
        self._queue.put(rec)

    def _drain(self) -> None:
        while True:
            batch = [self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            rows = [asdict(r) for r in batch if r is not None]
            if rows:
                with self.engine.begin() as conn:
                    conn.execute(insert(self.table), rows)
            for _ in batch:
                self._queue.task_done()
            if None in batch:
                return

    def flush(self) -> None:
        self._queue.join()

    def close(self) -> None:
        self._queue.put(None)
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
