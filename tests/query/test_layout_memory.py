"""Layouts read where they lie (issue 40): a first statement reads a layout's files through a view, never waiting
for a copy; the background loader holds in memory what the history says earns it, within the budget, swapped in
for later statements; eviction never drops what a running statement reads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from precube.query.duckdb_engine import DuckDBEngine
from precube.query.layout_memory import TABLE_BYTES, LayoutMemory, default_budget_bytes, held_bytes
from precube.query.rewrite import LayoutScan
from precube.query.session import Session
from precube.storage.paths import layout_path
from tests.query.conftest import QueryModel
from tests.query.oracle import Oracle, assert_same, load_case

CASES = Path(__file__).parent / "cases"
COUNT = 'SELECT "1", count(*) n, sum("100001") s FROM "{t}" GROUP BY "1" ORDER BY "1" NULLS FIRST'


def _layout(root: Path, engine: DuckDBEngine, layout_id: int, rows: int = 4000) -> LayoutScan:
    """A layout of one file: `1` a string of 7 values, `2` an int, `100001` a sum cell."""
    folder = Path(layout_path(str(root), "p", "m", "s", layout_id))
    folder.mkdir(parents=True)
    engine.con.execute(
        f"""COPY (SELECT 'v' || (i % 7)::varchar AS "1", (i % 97)::integer AS "2", i::bigint AS "100001"
        FROM range({rows}) t(i)) TO '{folder}/part-0.parquet'"""
    )
    return LayoutScan(f"layout_{layout_id}_x", "m", layout_id, ("s",), "s", rows, ("1", "2"))


def _kind(engine: DuckDBEngine, name: str) -> str:
    found = engine.con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?", [name])
    return str(found.fetchall()[0][0])


def _until(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def _expected(engine: DuckDBEngine, root: Path, layout_id: int) -> list[tuple[object, ...]]:
    files = f"read_parquet('{layout_path(str(root), 'p', 'm', 's', layout_id)}/*.parquet')"
    return engine.con.execute(COUNT.replace('"{t}"', files)).fetchall()


def test_a_first_statement_reads_the_files_and_the_loader_swaps_the_copy_in(tmp_path: Path) -> None:
    engine = DuckDBEngine(str(tmp_path), "p", layout_memory=64 * 2**20)
    try:
        scan = _layout(tmp_path, engine, 1)
        expected = _expected(engine, tmp_path, 1)
        first = engine.execute(COUNT.format(t=scan.name), [scan], [])
        assert _reads(engine, scan.name) == (1, 0)  # it read the view, not a copy
        assert [tuple(r.values()) for r in first.to_pylist()] == expected
        # the reads pay the copy: the loader holds it, and the answers stay equal
        assert _until(lambda: engine.execute(COUNT.format(t=scan.name), [scan], []) is not None and _held(engine, scan))
        assert _kind(engine, scan.name) == "BASE TABLE"
        again = engine.execute(COUNT.format(t=scan.name), [scan], [])
        assert [tuple(r.values()) for r in again.to_pylist()] == expected
    finally:
        engine.close()


def _reads(engine: DuckDBEngine, name: str) -> tuple[int, int]:
    """How many statements read the relation's view, and its copy in memory."""
    use = engine.memory._uses[name]
    return use.view_n, use.held_n


def _held(engine: DuckDBEngine, scan: LayoutScan) -> bool:
    return bool(engine._db.layouts.get(scan.name))


def test_a_first_statement_waits_for_no_copy(tmp_path: Path) -> None:
    """With no budget nothing is copied: the relation stays a view and answers as the files."""
    engine = DuckDBEngine(str(tmp_path), "p", layout_memory=0)
    try:
        scan = _layout(tmp_path, engine, 1)
        for _ in range(5):
            found = engine.execute(COUNT.format(t=scan.name), [scan], [])
        assert [tuple(r.values()) for r in found.to_pylist()] == _expected(engine, tmp_path, 1)
        time.sleep(0.2)  # the loader had its chance
        assert _kind(engine, scan.name) == "VIEW" and not _held(engine, scan)
    finally:
        engine.close()


def test_the_budget_bounds_what_is_held_and_a_read_relation_is_never_evicted(tmp_path: Path) -> None:
    engine = DuckDBEngine(str(tmp_path), "p", layout_memory=0)
    try:
        a, b = _layout(tmp_path, engine, 1), _layout(tmp_path, engine, 2)
        for scan in (a, b):
            engine.execute(COUNT.format(t=scan.name), [scan], [])
        engine.memory.budget = engine.memory.size(a.name) + TABLE_BYTES  # room for one of them
        engine.memory.read([a.name] * 50, 1.0, [False] * 50)  # both are the model's largest: they earn it by use
        assert engine._load_step() and _held(engine, a) and not _held(engine, b)
        engine.memory.read([b.name] * 500, 1.0, [False] * 500)  # b is worth more per byte now
        engine._db.reading[a.name] += 1  # a statement reads a: it stays, b waits for the room
        assert not engine._load_step() and _held(engine, a) and not _held(engine, b)
        engine._db.reading[a.name] -= 1
        assert engine._load_step() and _held(engine, b) and not _held(engine, a)
        assert _kind(engine, a.name) == "VIEW"  # evicted: read from its files again
        assert sum(engine._db.layouts.values()) <= engine.memory.budget
        for scan in (a, b):
            found = engine.execute(COUNT.format(t=scan.name), [scan], [])
            assert [tuple(r.values()) for r in found.to_pylist()] == _expected(engine, tmp_path, scan.layout_id)
    finally:
        engine.close()


def test_answers_stay_right_while_layouts_are_swapped_and_evicted(tmp_path: Path) -> None:
    """Readers of two layouts run while the loader holds one, then the other, evicting the first."""
    engine = DuckDBEngine(str(tmp_path), "p", layout_memory=0, connections=3)
    try:
        scans = [_layout(tmp_path, engine, i, rows=20_000) for i in (1, 2)]
        expected = {s.name: _expected(engine, tmp_path, s.layout_id) for s in scans}
        for scan in scans:  # registered: their sizes are known
            engine.execute(COUNT.format(t=scan.name), [scan], [])
        engine.memory.budget = max(engine.memory.size(s.name) for s in scans) + TABLE_BYTES
        wrong: list[str] = []
        stop = threading.Event()

        def read(scan: LayoutScan) -> None:
            while not stop.is_set():
                found = engine.execute(COUNT.format(t=scan.name), [scan], [])
                if [tuple(r.values()) for r in found.to_pylist()] != expected[scan.name]:
                    wrong.append(scan.name)
                time.sleep(0.02)  # moments when no statement reads it: eviction waits for one

        readers = [threading.Thread(target=read, args=(s,)) for s in scans]
        for reader in readers:
            reader.start()
        try:
            for step, scan in enumerate((*scans, scans[0])):
                reads = 1000 * 10**step  # the best per byte now, by more than twice the value of the one held
                engine.memory.read([scan.name] * reads, 1.0, [False] * reads)
                assert _until(lambda scan=scan: _held(engine, scan) or engine._load_step())
                assert _held(engine, scan)
        finally:
            stop.set()
            for reader in readers:
                reader.join(30)
        assert not wrong
    finally:
        engine.close()


def test_holding_is_earned_and_a_near_fact_layout_must_earn_more() -> None:
    memory = LayoutMemory(budget=2**30)
    memory.know("small", "m", 10_000, 100_000)
    memory.know("base", "m", 1_000_000, 10_000_000)
    memory.know("other", "n", 600_000, 1_000_000)  # another model's largest: near its own fact
    assert memory.wanted(set()) == []  # never read
    for name in ("small", "base", "other"):
        memory.offer(name)  # warming: enough for all but the near-fact ones
    assert memory.wanted(set()) == ["small"]
    memory.read(["base"] * 30, 0.5, [False] * 30)  # 30 reads x 0.375 s saved: more than 4 x its 1 s copy
    assert set(memory.wanted(set())) == {"small", "base"}
    memory.budget = held_bytes(10_000_000)  # room for one: the best value per byte
    assert memory.wanted(set()) == ["base"]


def test_the_default_budget_is_a_share_of_the_machine() -> None:
    assert default_budget_bytes(total=8 * 2**30) == 2**30
    assert default_budget_bytes(total=4 * 2**30, processes=2) == 256 * 2**20
    assert default_budget_bytes(total=2**30) == 128 * 2**20
    assert default_budget_bytes(total=2**28) == 64 * 2**20


@pytest.mark.spark
def test_an_ssb_query_reads_the_files_first_and_equals_the_oracle(query_model: QueryModel, oracle: Oracle) -> None:
    case = load_case(CASES / "ssb_q3_1.sql")
    with Session(*query_model.session_args) as session:
        first = session.sql(case.sql)
        names = [s.name for s in first.plan.scans]
        assert names and all(_reads(session.duckdb, n) == (1, 0) for n in names)  # not copied before answering
        assert_same(case, oracle.run(case.sql), first.table)
        for scan in first.plan.scans:
            assert session.duckdb.hold(scan)
        assert all(_kind(session.duckdb, n) == "BASE TABLE" for n in names)
        assert_same(case, oracle.run(case.sql), session.sql(case.sql).table)
