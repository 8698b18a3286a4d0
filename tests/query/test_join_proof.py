"""Join proofs (issue 18 §1): INNER queries over a LEFT model, LEFT queries over an INNER model and queries
leaving out a model's INNER join are answered from layouts exactly when the scanned segments' join
statistics show every fact row found one lookup row; otherwise refused with the numbers. Every answer
equals the oracle's (DuckDB on the raw files)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.metadata import MetadataStore, Project, Segment, SourceType, TimeRange
from precube.metadata.dataflow import JoinStat
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.query.errors import NoLayoutError
from precube.query.join_proof import DROPS, KEEPS, LEAVES_OUT, JoinProof, Obligation
from precube.query.session import Session
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES, generate
from precube.ssb.queries import SSB_QUERIES, SSB_QUERIES_COMMA
from tests.query.conftest import SEGMENT_BOUNDS, SPEC, QueryModel, day
from tests.query.oracle import Case, Oracle, assert_same

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ORPHAN_ROWS = 6  # LINEORDER rows without their customer, supplier or part (two each)


def _case(sql: str, answer: str = "layout") -> Case:
    return Case("join_proof", "", answer, False, 0.0, False, False, sql)  # type: ignore[arg-type]


def _segment(name: str, stats: dict[str, JoinStat] | None) -> Segment:
    return Segment(name=name, seg_range=TimeRange.of(0, 1), join_stats=stats)


# --- the proof alone ---------------------------------------------------------------------------------


def test_proof_names_the_rows_the_join_would_drop() -> None:
    proof = JoinProof((Obligation("DATES", "DATES", DROPS),))
    clean = _segment("s1", {"DATES": JoinStat()})
    orphans = _segment("s2", {"DATES": JoinStat(orphans=12)})
    assert proof.check([clean]) is None
    assert proof.check([clean, orphans]) == f"12 fact rows of segment s2 have no DATES row ({DROPS})"
    assert not JoinProof() and JoinProof().check([orphans]) is None


def test_proof_refuses_unknown_stats_and_duplicate_keys_but_ancestors_need_no_unique_key() -> None:
    proof = JoinProof((Obligation("C", "CUSTOMER (C)", KEEPS), Obligation("N", "NATION (N)", "x", exact=False)))
    assert proof.check([_segment("old", None)]) == "join statistics of segment old are unknown: refresh it"
    assert "refresh it" in str(proof.check([_segment("partly", {"C": JoinStat()})]))
    dup = proof.check([_segment("s", {"C": JoinStat(duplicate_keys=2), "N": JoinStat()})])
    assert dup is not None and dup.startswith("CUSTOMER (C) holds 2 duplicate join keys in segment s")
    assert proof.check([_segment("s", {"C": JoinStat(), "N": JoinStat(duplicate_keys=3)})]) is None
    assert "3 fact rows of segment s have no NATION (N) row" in str(
        proof.check([_segment("s", {"C": JoinStat(), "N": JoinStat(orphans=3)})])
    )


# --- the SSB test model (LEFT joins, no orphan rows) ---------------------------------------------------


@pytest.fixture(scope="module")
def session(query_model: QueryModel) -> Iterator[Session]:
    with Session(*query_model.session_args) as found:
        yield found


@pytest.mark.spark
def test_build_records_join_stats_per_segment(query_model: QueryModel, oracle: Oracle) -> None:
    for seg, (start, end) in zip(query_model.segments, itertools.pairwise(SEGMENT_BOUNDS), strict=True):
        assert seg.join_stats is not None and set(seg.join_stats) == {"DATES", "CUSTOMER", "SUPPLIER", "PART"}
        for alias, (fk, table, pk) in {
            "DATES": ("lo_orderdate", "dates", "d_datekey"),
            "CUSTOMER": ("lo_custkey", "customer", "c_custkey"),
            "SUPPLIER": ("lo_suppkey", "supplier", "s_suppkey"),
            "PART": ("lo_partkey", "part", "p_partkey"),
        }.items():
            [[expected]] = oracle.con.sql(
                f"select count(*) from lineorder where lo_orderdate >= date '{start}' and lo_orderdate < date '{end}'"
                f" and {fk} not in (select {pk} from {table})"
            ).fetchall()
            assert seg.join_stats[alias] == JoinStat(orphans=expected, duplicate_keys=0)


@pytest.mark.spark
@pytest.mark.parametrize("name", list(SSB_QUERIES_COMMA))
def test_ssb_queries_in_comma_form_are_answered_from_layouts(name: str, session: Session, oracle: Oracle) -> None:
    sql = SSB_QUERIES_COMMA[name]
    assert " join " not in sql and "," in sql.split(" from ")[1].split(" where ")[0]
    result = session.sql(sql, pushdown=False)
    assert not result.pushdown and result.layout_ids
    assert_same(_case(sql), oracle.run(sql), result.table)
    assert_same(_case(sql), oracle.run(SSB_QUERIES[name]), result.table)


@pytest.mark.spark
def test_derived_lookup_is_joined_back_with_the_querys_join_type(session: Session, oracle: Oracle) -> None:
    sql = (
        "select s_address, d_year, sum(lo_revenue) as revenue from ssb.lineorder "
        "join ssb.supplier on lo_suppkey = s_suppkey join ssb.dates on lo_orderdate = d_datekey group by 1, 2"
    )
    result = session.sql(sql, pushdown=False)
    assert [(d.table, d.kind) for m in result.matches for d in m.derived] == [("SSB.SUPPLIER", "INNER")]
    assert_same(_case(sql), oracle.run(sql), result.table)


# --- an SSB model over data with orphan fact rows ------------------------------------------------------


@dataclass(frozen=True)
class Built:
    name: str
    session: Session
    oracle: Oracle
    segments: list[Segment]


def _build(
    spark: SparkSession,
    store: MetadataStore,
    warehouse: str,
    project: str,
    tables: dict[str, Path],
    spec: dict[str, Any],
    bounds: tuple[str, ...],
) -> list[Segment]:
    store.create_project(Project(name=project, default_database="SSB"))
    for path in tables.values():
        load_file_table(store, project, path, SourceType.PARQUET, database="SSB")
    create_model(store, project, parse_spec(spec))
    ctx = BuildContext(spark, store, project, warehouse, writer="test")
    return [build_segment(ctx, spec["alias"], TimeRange.of(day(a), day(b))) for a, b in itertools.pairwise(bounds)]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MetadataStore, str, Path]]:
    from precube.metadata import open_store

    root = tmp_path_factory.mktemp("join-proof")
    with open_store(f"sqlite:///{root / 'meta.db'}") as store:
        yield store, str(root / "warehouse"), root


# The SSB model with one small aggregation group (two segments, like the test model's).
ORPHAN_SPEC: dict[str, Any] = {
    **copy.deepcopy(SPEC),
    "aggregation_groups": [
        {
            "includes": ["D_YEAR", "C_REGION", "C_NATION", "S_REGION", "P_MFGR"],
            "measures": ["REVENUE", "COUNT_ALL"],
            "select_rule": {"mandatory_dims": ["D_YEAR"], "joint_dims": [["C_REGION", "C_NATION"]]},
        }
    ],
}


@pytest.fixture(scope="module")
def orphan_model(spark: SparkSession, workspace: tuple[MetadataStore, str, Path]) -> Iterator[Built]:
    store, warehouse, root = workspace
    data = root / "ssb-orphans"
    generate(0.01, data, seed=7, orphans=ORPHAN_ROWS)
    segments = _build(spark, store, warehouse, "orphans", {t: data / t for t in TABLES}, ORPHAN_SPEC, SEGMENT_BOUNDS)
    oracle = Oracle(data)
    with Session(store, "orphans", warehouse) as session:
        yield Built("orphans", session, oracle, segments)
    oracle.close()


def _orphans(built: Built, alias: str) -> list[int]:
    stats = [s.join_stats for s in built.segments]
    return [s[alias].orphans if s is not None else -1 for s in stats]


@pytest.mark.spark
def test_orphan_rows_are_counted_per_segment(orphan_model: Built) -> None:
    for alias in ("CUSTOMER", "SUPPLIER", "PART"):
        assert sum(_orphans(orphan_model, alias)) == ORPHAN_ROWS // 3
    assert _orphans(orphan_model, "DATES") == [0, 0]


CUSTOMER_INNER = (
    "select c_region, d_year, sum(lo_revenue) as revenue, count(*) as n "
    "from ssb.lineorder, ssb.customer, ssb.dates where lo_custkey = c_custkey and lo_orderdate = d_datekey "
    "group by c_region, d_year"
)


@pytest.mark.spark
def test_inner_join_dropping_orphans_is_refused_with_the_rows_and_pushed_down(orphan_model: Built) -> None:
    explained = orphan_model.session.explain(CUSTOMER_INNER).as_dict()
    assert explained["pushdown"]
    [reason] = [r["reason"] for c in explained["contexts"] for r in c["rejected"]]
    first = next(s for s in orphan_model.segments if s.join_stats and s.join_stats["CUSTOMER"].orphans)
    count = first.join_stats["CUSTOMER"].orphans if first.join_stats else 0
    assert reason == f"{count} fact rows of segment {first.name} have no CUSTOMER row ({DROPS})"
    result = orphan_model.session.sql(CUSTOMER_INNER)
    assert result.pushdown
    assert_same(_case(CUSTOMER_INNER), orphan_model.oracle.run(CUSTOMER_INNER), result.table)
    with pytest.raises(NoLayoutError, match="have no CUSTOMER row"):
        orphan_model.session.sql(CUSTOMER_INNER, pushdown=False)


@pytest.mark.spark
def test_left_join_and_exact_inner_joins_still_come_from_layouts(orphan_model: Built) -> None:
    left = (
        CUSTOMER_INNER.replace("ssb.customer, ", "")
        .replace("from ssb.lineorder", "from ssb.lineorder left join ssb.customer on lo_custkey = c_custkey")
        .replace("lo_custkey = c_custkey and ", "")
    )
    dates_only = (
        "select d_year, sum(lo_revenue) as revenue from ssb.lineorder join ssb.dates on lo_orderdate = d_datekey "
        "group by d_year"
    )
    for sql in (left, dates_only):
        result = orphan_model.session.sql(sql, pushdown=False)
        assert not result.pushdown
        assert_same(_case(sql), orphan_model.oracle.run(sql), result.table)
    assert (
        "joins proven exact by the scanned segments' join stats: DATES"
        in orphan_model.session.explain(dates_only).text()
    )


@pytest.mark.spark
def test_the_proof_is_checked_on_the_segments_scanned_and_again_on_a_plan_cache_hit(orphan_model: Built) -> None:
    """Supplier orphans lie in some segments only: a year in a clean segment is answered from layouts, a year
    in the other by pushdown, whichever the plan cache saw first."""
    per_segment = _orphans(orphan_model, "SUPPLIER")
    assert 0 in per_segment and any(n > 0 for n in per_segment), per_segment  # the data has both kinds
    sql = (
        "select s_region, sum(lo_revenue) as revenue from ssb.lineorder, ssb.supplier, ssb.dates "
        "where lo_suppkey = s_suppkey and lo_orderdate = d_datekey and d_year = {year} group by s_region"
    )
    years = {0: (1993, 1994), 1: (1996, 1997)}  # the segments' years (SEGMENT_BOUNDS)
    session = orphan_model.session
    for order in ((0, 1, 0), (1, 0, 1)):
        session.plans.clear()
        for step, i in enumerate(order):
            year = years[i][step // 2]
            query = sql.format(year=year)
            result = session.sql(query)
            assert result.pushdown == (per_segment[i] > 0), (year, result.pushdown_reason)
            if step == 2:
                assert result.plan_cached
            assert_same(_case(query), orphan_model.oracle.run(query), result.table)


# --- a snowflake with INNER joins: LINEORDER → CUSTOMER → NATION --------------------------------------------

SNOW_SPEC: dict[str, Any] = {
    "alias": "snow",
    "fact_table": "SSB.LINEORDER",
    "join_tables": [
        {
            "table": "SSB.CUSTOMER",
            "alias": "CUSTOMER",
            "join": {"type": "INNER", "foreign_key": ["LINEORDER.LO_CUSTKEY"], "primary_key": ["CUSTOMER.C_CUSTKEY"]},
        },
        {
            "table": "SSB.NATION",
            "alias": "NATION",
            "join": {"type": "INNER", "foreign_key": ["CUSTOMER.C_NATION"], "primary_key": ["NATION.N_NAME"]},
        },
    ],
    "partition_desc": {"partition_date_column": "LINEORDER.LO_ORDERDATE", "partition_date_format": "yyyy-MM-dd"},
    "simplified_dimensions": [
        "LINEORDER.LO_ORDERDATE",
        "LINEORDER.LO_DISCOUNT",
        "CUSTOMER.C_NATION",
        "NATION.N_REGION",
    ],
    "simplified_measures": [
        {"name": "COUNT_ALL", "expression": "COUNT"},
        {"name": "REVENUE", "expression": "SUM", "column": "LINEORDER.LO_REVENUE"},
    ],
    "aggregation_groups": [{"includes": ["LO_DISCOUNT", "C_NATION", "N_REGION"], "measures": ["REVENUE", "COUNT_ALL"]}],
}


def _nation_table(ssb_dir: Path, out: Path, drop: int) -> str | None:
    """NATION (N_NAME, N_REGION) from CUSTOMER's nations, without the first `drop` of them (by name);
    returns the first dropped nation."""
    customer = pq.read_table(ssb_dir / "CUSTOMER", columns=["C_NATION", "C_REGION"])
    pairs = sorted(set(zip(customer["C_NATION"].to_pylist(), customer["C_REGION"].to_pylist(), strict=True)))
    kept = pairs[drop:]
    (out / "NATION").mkdir(parents=True)
    names, regions = [p[0] for p in kept], [p[1] for p in kept]
    pq.write_table(pa.table({"N_NAME": names, "N_REGION": regions}), out / "NATION" / "part-00000.parquet")
    return pairs[0][0] if drop else None


@pytest.fixture(scope="module", params=["complete", "orphans"])
def snowflake(
    request: pytest.FixtureRequest,
    spark: SparkSession,
    workspace: tuple[MetadataStore, str, Path],
    ssb_dir: Path,
) -> Iterator[Built]:
    store, warehouse, root = workspace
    project = f"snow_{request.param}"
    data = root / project
    _nation_table(ssb_dir, data, drop=0 if request.param == "complete" else 1)
    tables = {"LINEORDER": ssb_dir / "LINEORDER", "CUSTOMER": ssb_dir / "CUSTOMER", "NATION": data / "NATION"}
    segments = _build(spark, store, warehouse, project, tables, SNOW_SPEC, SEGMENT_BOUNDS)
    oracle = Oracle(ssb_dir)
    nation = str(data / "NATION" / "*.parquet").replace("'", "''")
    oracle.con.execute(f"CREATE VIEW ssb.nation AS SELECT * FROM read_parquet('{nation}')")
    with Session(store, project, warehouse) as session:
        yield Built(request.param, session, oracle, segments)
    oracle.close()


SNOW_QUERIES = {
    # the model's own joins: from layouts whatever the orphans (the build dropped the same rows)
    "same joins": (
        "select n_region, sum(lo_revenue) as revenue, count(*) as n from ssb.lineorder "
        "join ssb.customer on lo_custkey = c_custkey join ssb.nation on c_nation = n_name group by n_region",
        None,
    ),
    # the same joins as comma joins (a snowflake: CUSTOMER related to LINEORDER and to NATION)
    "comma": (
        "select n_region, c_nation, count(*) as n from ssb.lineorder, ssb.customer, ssb.nation "
        "where lo_custkey = c_custkey and c_nation = n_name and n_region <> 'ASIA' group by n_region, c_nation",
        None,
    ),
    # leaves out the deep INNER join to NATION
    "partial": (
        "select c_nation, lo_discount, sum(lo_revenue) as revenue from ssb.lineorder, ssb.customer "
        "where lo_custkey = c_custkey and lo_discount < 4 group by c_nation, lo_discount",
        LEAVES_OUT,
    ),
    # the fact table alone: leaves out both INNER joins
    "fact only": ("select lo_discount, count(*) as n from ssb.lineorder group by lo_discount", LEAVES_OUT),
    # LEFT joins over the INNER model
    "left": (
        "select n_region, c_nation, sum(lo_revenue) as revenue from ssb.lineorder "
        "left join ssb.customer on lo_custkey = c_custkey left join ssb.nation on c_nation = n_name "
        "group by n_region, c_nation",
        KEEPS,
    ),
}


@pytest.mark.spark
@pytest.mark.parametrize("name", list(SNOW_QUERIES))
def test_snowflake_partial_and_left_queries_need_a_clean_deep_join(name: str, snowflake: Built) -> None:
    sql, why = SNOW_QUERIES[name]
    stats = [s.join_stats for s in snowflake.segments]
    assert all(s is not None and s["CUSTOMER"] == JoinStat() for s in stats)
    nation = [s["NATION"].orphans for s in stats if s is not None]
    [[expected]] = snowflake.oracle.con.sql(
        "select count(*) from lineorder join customer on lo_custkey = c_custkey "
        "where c_nation not in (select n_name from nation)"
    ).fetchall()
    assert sum(nation) == expected
    assert (expected > 0) == (snowflake.name == "orphans")  # the data has orphans on the deep join, or none
    result = snowflake.session.sql(sql)
    assert_same(_case(sql), snowflake.oracle.run(sql), result.table)
    refused = why is not None and sum(nation) > 0
    assert result.pushdown == refused, result.pushdown_reason
    if refused:
        assert f"have no NATION row ({why})" in str(result.pushdown_reason)
