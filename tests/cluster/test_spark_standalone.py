"""Builds on a Spark standalone cluster: a master and a worker on loopback (`deploy.services.SparkStandalone`,
started with `spark-class` from the installed pyspark), and `precube build --wait` with `[spark] master` naming
it. The segment is built by the worker's executor — the precise COUNT DISTINCT's bitmaps are made by Python UDFs
there, in this virtual environment's interpreter — into the warehouse directory the worker shares, and it answers
like the oracle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deploy.services import ServiceError, SparkStandalone, free_port
from precube.api import session_on
from precube.metadata import Project, SourceType, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.settings import load_settings
from precube.sources.tables import load_file_table
from tests.cluster.conftest import need
from tests.query.oracle import Oracle
from tests.server.tiny import TINY, rows

pytestmark = pytest.mark.spark
PROJECT = "standalone"
SPEC = {
    **TINY,
    "simplified_measures": [
        *TINY["simplified_measures"],
        {
            "name": "CUSTOMERS",
            "expression": "COUNT_DISTINCT",
            "column": "LINEORDER.LO_CUSTKEY",
            "return_type": "bitmap",
        },
    ],
    "aggregation_groups": [{"includes": ["D_YEAR", "LO_DISCOUNT"], "measures": ["COUNT_ALL", "REVENUE", "CUSTOMERS"]}],
    "base_index_type": [],
}
SQL = (
    "SELECT D_YEAR, LO_DISCOUNT, COUNT(*) AS N, SUM(LO_REVENUE) AS REVENUE, COUNT(DISTINCT LO_CUSTKEY) AS CUSTOMERS "
    "FROM SSB.LINEORDER LEFT JOIN SSB.DATES ON LO_ORDERDATE = D_DATEKEY {where} GROUP BY D_YEAR, LO_DISCOUNT"
)


def test_a_segment_built_on_a_standalone_master_and_worker(tmp_path: Path, ssb_dir: Path) -> None:
    cluster = SparkStandalone(str(tmp_path / "spark"), free_port(), free_port(), cores=1, memory="1g")
    try:
        processes = cluster.start()
    except ServiceError as err:
        need("a Spark standalone master and worker", err)
    try:
        config = tmp_path / "precube.toml"
        config.write_text(
            f'[spark]\nmaster = "{cluster.master_url}"\ndriver_memory = "1g"\nshuffle_partitions = 2\n'
            'conf = { "spark.cores.max" = "1", "spark.executor.memory" = "1g" }\n'
        )
        settings = load_settings(config, home=tmp_path / "home")
        with open_store(settings.metadata_url) as store:
            store.create_project(Project(name=PROJECT, default_database="SSB"))
            for table in ("LINEORDER", "DATES"):
                load_file_table(store, PROJECT, ssb_dir / table, SourceType.PARQUET)
            create_model(store, PROJECT, parse_spec(SPEC))
        command = [sys.executable, "-m", "precube", "--config", str(config), "--home", str(settings.home)]
        command += ["build", "-p", PROJECT, "-m", "tiny", "--start", "1992-01-01", "--end", "1994-01-01", "--wait"]
        built = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
        assert built.returncode == 0, built.stdout + built.stderr
        [app] = cluster.state()["completedapps"] or cluster.state()["activeapps"]
        assert app["name"] == settings.spark.app_name
        executor_logs = list((tmp_path / "spark" / "spark-work" / app["id"]).glob("*/stderr"))
        assert executor_logs and "Finished task" in executor_logs[0].read_text(errors="replace")
        with open_store(settings.metadata_url) as store:
            session = session_on(settings, store, PROJECT, history=None, cache=None)
            answer = session.sql(SQL.format(where=""), pushdown=False)
        oracle = Oracle(ssb_dir)
        try:
            expected = oracle.run(SQL.format(where="WHERE LO_ORDERDATE < DATE '1994-01-01'"))
        finally:
            oracle.close()
        assert answer.layout_ids and rows(answer.table) == rows(expected)
    finally:
        for process in reversed(processes):
            process.stop()
