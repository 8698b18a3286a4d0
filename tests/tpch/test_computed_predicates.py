"""Row-level predicates read from boolean computed columns (`matching.folded`): `index recommend` proposes them
for the TPC-H queries (Q12's date comparisons, Q9's LIKE, Q4's EXISTS) and the model built in `conftest` holds
them. An
expression equal to one — in WHERE, under NOT, written the other way round, in a CASE, in GROUP BY — is read
from the column, so the layout holds it instead of the columns it reads; each answer equals DuckDB's on the raw
files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

from precube import tpch
from precube.metadata import Project, SourceType, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import add_to_model, create_model
from precube.query.contexts import contexts
from precube.query.frontend import normalise
from precube.query.matching import requirements
from precube.query.project_metadata import read_metadata
from precube.query.recommend import recommend
from precube.query.reshape import lookup_keys, reshape
from precube.query.session import Session
from precube.sources.tables import load_file_table
from tests.tpch.conftest import TpchModel

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LATE = "L_COMMITDATE_LT_L_RECEIPTDATE"
EARLY = "L_SHIPDATE_LT_L_COMMITDATE"
GREEN = "P_NAME_LIKE_GREEN"


def test_recommend_proposes_boolean_computed_columns_for_row_level_predicates(tpch_data: Path, tmp_path: Path) -> None:
    """Q12's comparisons of two dates and Q9's LIKE become BOOLEAN computed columns, dimensions once applied; the
    layouts then hold them and not the dates or P_NAME. A comparison whose columns are both read elsewhere in its
    block gets none (the layout would hold the columns anyway), nor does a LIKE of a column read elsewhere."""
    both_read = "select l_commitdate, l_receiptdate, count(*) from tpch.lineitem where l_commitdate = l_receiptdate group by 1, 2"
    named = "select p_name, count(*) from tpch.lineitem join tpch.part on l_partkey = p_partkey where p_name like '%red%' group by 1"
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        store.create_project(Project(name="tpch", default_database=tpch.DATABASE))
        for name in tpch.TABLES:
            load_file_table(store, "tpch", tpch_data / name, SourceType.PARQUET)
        create_model(store, "tpch", parse_spec(tpch.model_spec()))
        queries = tpch.queries()
        # a function of a column and literals under NOT; another pattern whose name is taken
        more = (
            "select o_orderpriority, count(*) from tpch.lineitem join tpch.orders on l_orderkey = o_orderkey "
            "join tpch.part on l_partkey = p_partkey where not startswith(p_brand, 'Brand#1') "
            "and (p_name like 'green%' or o_orderpriority = '1-URGENT') group by 1"
        )
        statements = [*queries.values(), both_read, named, more]
        found = recommend(read_metadata(store, "tpch"), tpch.MODEL, statements)
        assert {(c.column_name, c.expression) for c in found.computed_columns} == {
            (LATE, "LINEITEM.L_COMMITDATE < LINEITEM.L_RECEIPTDATE"),
            (EARLY, "LINEITEM.L_SHIPDATE < LINEITEM.L_COMMITDATE"),
            (GREEN, "PART.P_NAME LIKE '%green%'"),
            ("STARTS_WITH_P_BRAND", "STARTSWITH(PART.P_BRAND, 'Brand#1')"),
            (f"{GREEN}_2", "PART.P_NAME LIKE 'green%'"),
        }
        assert not found.skipped
        saved = add_to_model(store, "tpch", tpch.MODEL, found.measures, found.computed_columns)
        types = {cc.column_name: cc.datatype for cc in saved.model.computed_columns}
        assert set(types.values()) >= {"boolean"} and all(
            types[c.column_name] == "boolean" for c in found.computed_columns
        )
        assert {LATE, EARLY, GREEN} <= {c.name for c in saved.model.dimensions()}
        metadata = read_metadata(store, "tpch")
        [model] = metadata.models

        def dims(sql: str) -> set[str]:
            keys = lookup_keys(m.model for m in metadata.models)
            [ctx] = [c for c in contexts(reshape(normalise(sql, metadata.catalog), keys)) if c.aggregating]
            need = requirements(ctx, model)
            assert not isinstance(need, str), need
            return {model.column_names[c].split(".", 1)[1] for c in need[0]}

        assert dims(queries["q12"]) == {"L_SHIPMODE", "L_RECEIPTDATE", LATE, EARLY, "O_ORDERPRIORITY"}
        assert dims(queries["q09"]) == {GREEN, "O_ORDERDATE", "N_NAME"}
        # Q4's EXISTS as a count of distinct order keys over LINEITEM joined to ORDERS (`reshape`), from a bitmap
        assert dims(queries["q04"]) == {LATE, "O_ORDERDATE", "O_ORDERPRIORITY"}
        assert ("COUNT_DISTINCT", "LINEITEM.L_ORDERKEY", "bitmap") in {
            (x.expression, x.column, x.return_type) for x in found.measures
        }
        # matched however it is written, and only where it is the whole expression
        assert dims("select count(*) from tpch.lineitem where l_receiptdate > l_commitdate") == {LATE}
        assert dims("select count(*) from tpch.lineitem where l_receiptdate >= l_commitdate") == {
            "L_RECEIPTDATE",
            "L_COMMITDATE",
        }


# each shape over the layout recommended for Q12 (L_SHIPMODE, the two comparisons, L_RECEIPTDATE, O_ORDERPRIORITY)
SHAPES = {
    "where": "select l_shipmode, count(*) as n from lineitem where l_commitdate < l_receiptdate group by l_shipmode",
    "not": "select l_shipmode, count(*) as n from lineitem where not (l_commitdate < l_receiptdate) group by l_shipmode",
    "reversed": "select l_shipmode, count(*) as n from lineitem where l_receiptdate > l_commitdate "
    "and l_shipdate < l_commitdate group by l_shipmode",
    "or": "select l_shipmode, count(*) as n from lineitem where l_shipdate < l_commitdate or l_shipmode = 'AIR' "
    "group by l_shipmode",
    "case": "select case when l_commitdate < l_receiptdate then 'late' else 'on time' end as status, count(*) as n "
    "from lineitem group by case when l_commitdate < l_receiptdate then 'late' else 'on time' end",
    "group_by": "select l_shipdate < l_commitdate as early, l_commitdate < l_receiptdate as late, count(*) as n "
    "from lineitem join orders on l_orderkey = o_orderkey where o_orderpriority = '1-URGENT' "
    "group by l_shipdate < l_commitdate, l_commitdate < l_receiptdate",
    "having": "select l_shipmode, count(*) as n from lineitem group by l_shipmode, l_commitdate < l_receiptdate "
    "having l_commitdate < l_receiptdate",
}


@pytest.fixture(scope="module")
def session(tpch_model: TpchModel, spark: SparkSession) -> Iterator[Session]:
    with Session(*tpch_model.session_args, spark=lambda: spark) as found:
        yield found


@pytest.fixture(scope="module")
def raw(tpch_model: TpchModel) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    for table in tpch.TABLES:
        files = str(tpch_model.data / table / "*.parquet").replace("'", "''")
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{files}')")
    yield con
    con.close()


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_predicates_are_read_from_their_computed_columns(
    name: str, session: Session, raw: duckdb.DuckDBPyConnection
) -> None:
    sql = SHAPES[name]
    ours = session.sql(sql, pushdown=False)
    [match] = ours.matches
    held = {match.model.column_names[c].split(".", 1)[1] for c in match.layout.dimensions}
    assert "L_COMMITDATE" not in held and "L_SHIPDATE" not in held, held
    theirs = raw.execute(sql).fetchall()
    assert sorted(map(tuple, zip(*(c.to_pylist() for c in ours.table.columns), strict=True))) == sorted(theirs)


@pytest.mark.spark
def test_a_literal_read_from_a_computed_column_is_part_of_the_plans_key(
    session: Session, raw: duckdb.DuckDBPyConnection
) -> None:
    """The plan for `like '%green%'` reads P_NAME_LIKE_GREEN: a statement of the same shape with another pattern
    is planned afresh (another layout holds P_NAME), not answered from that column — even when the literal is also one
    the plan keeps (`n_name <> '%green%'`: one parameter, whose value the template would otherwise substitute)."""
    shape = (
        "select sum(l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity) as profit from lineitem "
        "join part on l_partkey = p_partkey join partsupp on ps_partkey = l_partkey and ps_suppkey = l_suppkey "
        "join supplier on l_suppkey = s_suppkey join nation on s_nationkey = n_nationkey "
        "where p_name like '{0}' and n_name <> '{0}'"
    )
    green = session.sql(shape.format("%green%"))
    assert not green.pushdown
    assert green.table.column(0).to_pylist() == [raw.execute(shape.format("%green%")).fetchone()[0]]  # type: ignore[index]
    red = session.sql(shape.format("%red%"))
    assert red.layout_ids != green.layout_ids  # (the base layout's P_NAME, or the source tables)
    assert red.table.column(0).to_pylist() == [raw.execute(shape.format("%red%")).fetchone()[0]]  # type: ignore[index]
