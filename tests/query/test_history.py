"""The query history's writer: records are batched, `flush` and every read write what is queued at once, and a
database that refuses a batch loses that batch only (logged), never blocking the queries or a flush."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from precube.query.history import QueryHistory, QueryRecord


def _record(i: int, project: str = "p") -> QueryRecord:
    return QueryRecord(project, f"select {i}", "alice", 1_000 + i, 1.5, "duckdb", False, "m", "1,2", 1, True)


def test_records_wait_for_their_batch_and_a_read_flushes_them(tmp_path: Path) -> None:
    history = QueryHistory(f"sqlite:///{tmp_path / 'meta.db'}", "meta", linger_s=3600)  # never by the timer
    try:
        for i in range(5):
            history.record(_record(i))
        with history.engine.connect() as conn:  # nothing written yet: the batch lingers
            assert conn.execute(text("select count(*) from meta_query_history")).scalar_one() == 0
        started = time.monotonic()
        records, total = history.search("p", limit=3)  # a read flushes first
        assert time.monotonic() - started < 5
        assert total == 5 and [r.sql for r in records] == ["select 4", "select 3", "select 2"]
        assert history.search("other")[1] == 0
    finally:
        history.close()


def test_the_timer_writes_a_batch_and_close_writes_the_rest(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    history = QueryHistory(url, "meta", linger_s=0.05)
    history.record(_record(1))
    deadline = time.monotonic() + 30
    with history.engine.connect() as conn:
        while conn.execute(text("select count(*) from meta_query_history")).scalar_one() == 0:
            assert time.monotonic() < deadline, "the batch was never written"
            time.sleep(0.02)
    history.linger_s = 3600
    history.record(_record(2))
    history.close()
    reopened = QueryHistory(url, "meta")
    try:
        assert reopened.search("p")[1] == 2
    finally:
        reopened.close()


def test_a_refused_batch_is_logged_and_lost_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    history = QueryHistory(f"sqlite:///{tmp_path / 'meta.db'}", "meta", linger_s=3600)
    try:
        with history.engine.begin() as conn:
            conn.execute(text("alter table meta_query_history rename to moved"))
        history.record(_record(1))
        with caplog.at_level(logging.WARNING, logger="precube.query.history"):
            started = time.monotonic()
            history.flush()
            assert time.monotonic() - started < 5
        assert "query history: 1 records lost" in caplog.text
        with history.engine.begin() as conn:
            conn.execute(text("alter table moved rename to meta_query_history"))
        history.record(_record(2))
        assert [r.sql for r in history.search("p")[0]] == ["select 2"]
    finally:
        history.close()
