"""Index recommendation: from the 13 SSB queries, one aggregation group per distinct need; once applied
and built, every query is answered from those layouts (pushdown forbidden) equal to the oracle, and a
detail query is reported as needing a table index."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from precube.cli.app import run
from precube.metadata import IndexPlan, Model, Project, SourceType, open_store
from precube.metadata.model import MEASURE_ID_BASE
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import apply_recommended, create_model
from precube.query.project_metadata import read_metadata
from precube.query.recommend import recommend
from precube.query.session import Session
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES
from precube.ssb.queries import SSB_QUERIES
from tests.cli.home import ssb_home
from tests.query.oracle import Oracle, assert_same, load_case

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CASES = Path(__file__).parent / "cases"
DETAIL = "select lo_orderkey, lo_revenue from ssb.lineorder where lo_orderdate = date '1994-03-01'"


@pytest.mark.spark
def test_recommended_layouts_answer_the_queries_they_came_from(
    spark: SparkSession, ssb_dir: Path, oracle: Oracle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = yaml.safe_load(resources.files("precube").joinpath("resources/ssb_model.yaml").read_text())
    spec.update(aggregation_groups=[], base_index_type=[])  # an empty index plan
    args = ssb_home(tmp_path / "home", ssb_dir, spec)
    queries = tmp_path / "queries.sql"
    queries.write_text(";\n".join([*SSB_QUERIES.values(), DETAIL]))
    rules = tmp_path / "rules.yaml"
    capsys.readouterr()
    assert run([*args, "index", "recommend", "-p", "ssb", "-m", "ssb", str(queries), "-o", str(rules), "--apply"]) == 0
    out = capsys.readouterr().out
    assert "a detail query needs a table index" in out and "answer 13 of 14 statements" in out
    written = yaml.safe_load(rules.read_text())
    groups = written["aggregation_groups"]
    store = open_store(f"sqlite:///{tmp_path / 'home' / 'metadata.db'}")
    with store.read("ssb") as tx:
        [model] = tx.list(Model)
        layouts = tx.require(IndexPlan, model.uuid).all_layouts()
    # one layout per group (all its dimensions mandatory), fewer than the 13 queries (some share one), and
    # not the rule's base layout over every dimension of the groups, which no statement needs
    assert len(groups) < 13 and len(layouts) == len(groups) and written["base_layout_enabled"] is False
    dims = {c.name: c.id for c in model.dimensions()}
    wanted = {frozenset(dims[d] for d in g["includes"]) for g in groups}
    assert {frozenset(i for i in lay.col_order if i < MEASURE_ID_BASE) for lay in layouts} == wanted
    assert len({frozenset(g["includes"]) | frozenset(g["measures"]) for g in groups}) == len(groups)

    build = [*args, "build", "-p", "ssb", "-m", "ssb", "--start", "1992-01-01", "--end", "1999-01-01", "--wait"]
    assert run(build) == 0
    with Session(store, "ssb", str(tmp_path / "home" / "warehouse")) as session:
        # the official queries and the variants whose constants select rows at this scale
        for path in sorted(CASES.glob("ssb_q*.sql")):
            case = load_case(path)
            result = session.sql(case.sql, pushdown=False)
            assert_same(case, oracle.run(case.sql), result.table)
    store.close()


def test_calls_no_measure_computes_get_the_measures_they_need(ssb_dir: Path, tmp_path: Path) -> None:
    """AVG of a column that is no dimension needs SUM and COUNT of it; the groups name them, and once added (as
    `--apply` does) the model holds them under those names."""
    spec = yaml.safe_load(resources.files("precube").joinpath("resources/ssb_model.yaml").read_text())
    spec.update(aggregation_groups=[], base_index_type=[])
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        store.create_project(Project(name="ssb", default_database="SSB"))
        for name in TABLES:
            load_file_table(store, "ssb", ssb_dir / name, SourceType.PARQUET)
        create_model(store, "ssb", parse_spec(spec))
        statements = [
            "select d_year, avg(lo_tax), sum(lo_revenue), max(lo_tax) from ssb.lineorder "
            "left join ssb.dates on lo_orderdate = d_datekey group by d_year",
            "select avg(lo_quantity) from ssb.lineorder",  # a dimension: not in the layout, a measure instead
        ]
        found = recommend(read_metadata(store, "ssb"), "ssb", statements)
        assert [(m.name, m.expression, m.column) for m in found.measures] == [
            ("COUNT_LO_QUANTITY", "COUNT", "LINEORDER.LO_QUANTITY"),  # SUM: the model's QUANTITY
            ("SUM_LO_TAX", "SUM", "LINEORDER.LO_TAX"),
            ("COUNT_LO_TAX", "COUNT", "LINEORDER.LO_TAX"),
            ("MAX_LO_TAX", "MAX", "LINEORDER.LO_TAX"),
        ]
        assert found.skipped == [] and len(found.answered) == 2
        used = {name for g in found.groups for name in g.measures}
        assert {"SUM_LO_TAX", "COUNT_LO_TAX", "MAX_LO_TAX", "REVENUE", "QUANTITY", "COUNT_LO_QUANTITY"} <= used
        assert not any("LO_QUANTITY" in g.includes for g in found.groups)
        apply_recommended(store, "ssb", "ssb", found.groups, found.measures)
        again = recommend(read_metadata(store, "ssb"), "ssb", statements)
        assert again.measures == [] and again.groups == found.groups
