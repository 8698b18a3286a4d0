"""A statement over layouts that fails on the engine (here: a layout's files removed, as after a restore that
lost them) is an error naming the layout and segment, never a silent answer from the source tables; only
`query.pushdown_on_failure` lets the source tables answer it, and the answer then says why."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from precube.metadata import open_store
from precube.query.errors import LayoutReadError
from precube.query.session import Session
from precube.settings import QuerySettings
from precube.storage.paths import layout_path
from tests.query.conftest import QueryModel
from tests.query.oracle import Case, Oracle, assert_same

pytestmark = pytest.mark.spark

SQL = "select d_year, sum(lo_revenue) as revenue from ssb.lineorder left join ssb.dates on lo_orderdate = d_datekey group by d_year"


@pytest.fixture
def damaged(query_model: QueryModel, tmp_path: Path) -> Iterator[tuple[Session, int, str, QueryModel]]:
    """A copy of the built model (metadata and warehouse) with the files of the layout that answers SQL removed
    in one segment; the shared model is never touched."""
    shutil.copytree(query_model.warehouse_root, tmp_path / "warehouse")
    meta = query_model.store.url.removeprefix("sqlite:///")
    with sqlite3.connect(meta) as source, sqlite3.connect(tmp_path / "meta.db") as target:
        source.backup(target)  # consistent even while the shared store is open
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        copy = dataclasses.replace(query_model, store=store, warehouse_root=str(tmp_path / "warehouse"))
        with Session(*copy.session_args) as s:
            first = s.sql(SQL)
        assert not first.pushdown and first.pushdown_reason is None and len(first.layout_ids) == 1
        layout, segment = first.layout_ids[0], first.segments[-1]
        files = Path(layout_path(copy.warehouse_root, copy.project, copy.model.uuid, segment, layout))
        for part in files.glob("*.parquet"):
            part.unlink()
        with Session(*copy.session_args) as s:  # a new session: nothing of the layout is held in memory
            yield s, layout, segment, copy


def test_a_layout_that_cannot_be_read_is_an_error(damaged: tuple[Session, int, str, QueryModel]) -> None:
    session, layout, segment, copy = damaged
    for pushdown in (None, True, False):  # allowing pushdown per query does not allow it on failure
        with pytest.raises(LayoutReadError) as failed:
            session.sql(SQL, pushdown=pushdown)
        message = str(failed.value)
        assert f"layout {layout} of model {copy.model.alias} in segment {segment} could not be read: " in message
        assert "\n" not in message and failed.value.code == "LAYOUT_FAILED"


def test_pushdown_on_failure_answers_from_the_source_and_says_so(
    damaged: tuple[Session, int, str, QueryModel], oracle: Oracle
) -> None:
    _, layout, segment, copy = damaged
    allowed = QuerySettings(pushdown_on_failure=True)
    with Session(*copy.session_args, settings=allowed) as s:
        result = s.sql(SQL)
        assert result.pushdown and result.pushdown_reason is not None
        assert "pushdown on failure" in result.pushdown_reason and f"layout {layout}" in result.pushdown_reason
        assert segment in result.pushdown_reason
        assert_same(
            Case("pushdown on failure", "", "pushdown", False, 0.0, False, False, SQL), oracle.run(SQL), result.table
        )
        with pytest.raises(LayoutReadError):  # forbidden for this query: still the error, not the source
            s.sql(SQL, pushdown=False)
