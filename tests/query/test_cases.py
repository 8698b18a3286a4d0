"""Every case in `cases/` answered by precube equals the oracle's answer, and is answered the way the
case says: from layouts, or by pushdown to the source tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from precube.query.errors import NoLayoutError
from precube.query.session import Session
from tests.query.conftest import QueryModel
from tests.query.oracle import Oracle, assert_same, load_case

CASES = sorted((Path(__file__).parent / "cases").glob("*.sql"))


@pytest.fixture(scope="session")
def session(query_model: QueryModel) -> Iterator[Session]:
    with Session(*query_model.session_args) as found:
        yield found


def test_case_files_are_well_formed() -> None:
    """Every case file has its headers (a malformed one raises), and the cases are all there."""
    cases = [load_case(path) for path in CASES]
    assert len(cases) >= 40, f"expected the query cases in {Path(__file__).parent / 'cases'}"
    assert {c.answer for c in cases} == {"layout", "snapshot", "pushdown"}


@pytest.mark.spark
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path, query_model: QueryModel, session: Session, oracle: Oracle) -> None:
    case = load_case(path)
    expected = oracle.run(case.sql)
    # an empty answer proves little: only cases about empty results may have one
    assert (expected.num_rows == 0) == case.empty, f"{case.name}: the oracle returns {expected.num_rows} rows"

    result = session.sql(case.sql)
    assert_same(case, expected, result.table)
    assert result.engine in ("duckdb", "spark")
    built = {s.id for s in query_model.segments}
    assert set(result.segments) <= built, f"{case.name}: unknown segments {set(result.segments) - built}"
    if case.answer in ("layout", "snapshot"):
        assert result.pushdown is False, f"{case.name} was pushed down: {result.pushdown_reason}\n{case.sql}"
        if case.answer == "layout":
            assert result.layout_ids or not result.segments, f"{case.name}: segments scanned without a layout"
        else:  # lookup snapshots alone: no layout, the segment that recorded them
            assert result.snapshots and not result.layout_ids, f"{case.name}: not from snapshots alone"
            assert result.segments, f"{case.name}: no segment recorded the snapshots it read"
        strict = session.sql(case.sql, pushdown=False)
        assert strict.pushdown is False
        assert_same(case, expected, strict.table)
        for scan in result.plan.scans if result.plan is not None else []:
            assert session.duckdb.hold(scan)  # held: answered from DuckDB's copy, or its numpy columns (`direct`)
        assert_same(case, expected, session.sql(case.sql).table)
    else:
        assert result.pushdown is True, f"{case.name} was answered from layouts {result.layout_ids}\n{case.sql}"
        assert result.layout_ids == [] and result.segments == []
        with pytest.raises(NoLayoutError) as raised:
            session.sql(case.sql, pushdown=False)
        assert str(raised.value).strip(), "NoLayoutError needs a message saying why no layout answers"
