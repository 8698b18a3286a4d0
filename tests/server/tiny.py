"""A small model of its own for the job tests (its builds take seconds): LINEORDER joined to DATES, three
dimensions, two measures, partitioned by LO_ORDERDATE; and the polling of a job through the API."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from precube.metadata import Project, SourceType, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.settings import Settings
from precube.sources.tables import load_file_table
from tests.query.conftest import day
from tests.query.oracle import Oracle
from tests.server.conftest import data

TINY: dict[str, Any] = {
    "alias": "tiny",
    "fact_table": "SSB.LINEORDER",
    "join_tables": [
        {
            "table": "SSB.DATES",
            "alias": "DATES",
            "join": {"type": "LEFT", "foreign_key": ["LINEORDER.LO_ORDERDATE"], "primary_key": ["DATES.D_DATEKEY"]},
        }
    ],
    "partition_desc": {"partition_date_column": "LINEORDER.LO_ORDERDATE", "partition_date_format": "yyyy-MM-dd"},
    "simplified_dimensions": ["LINEORDER.LO_ORDERDATE", "LINEORDER.LO_DISCOUNT", "DATES.D_YEAR"],
    "simplified_measures": [
        {"name": "COUNT_ALL", "expression": "COUNT"},
        {"name": "REVENUE", "expression": "SUM", "column": "LINEORDER.LO_REVENUE"},
    ],
    "aggregation_groups": [
        {"includes": ["LO_ORDERDATE", "LO_DISCOUNT", "D_YEAR"], "measures": ["COUNT_ALL", "REVENUE"]}
    ],
}
MODEL = "tiny"
QUERY = (
    "SELECT D_YEAR, LO_DISCOUNT, COUNT(*) AS N, SUM(LO_REVENUE) AS REVENUE FROM SSB.LINEORDER "
    "LEFT JOIN SSB.DATES ON LO_ORDERDATE = D_DATEKEY {where} GROUP BY D_YEAR, LO_DISCOUNT"
)


def make_project(settings: Settings, ssb_dir: Path, name: str) -> None:
    """Project `name` with LINEORDER and DATES loaded and model `tiny` (no segment)."""
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        store.create_project(Project(name=name, default_database="SSB"))
        for table in ("LINEORDER", "DATES"):
            load_file_table(store, name, ssb_dir / table, SourceType.PARQUET)
        create_model(store, name, parse_spec(TINY))


def ms(text: str) -> str:
    """A `yyyy-MM-dd` day as Kylin's REST API takes times: a string of epoch ms."""
    return str(day(text))


def build(client: httpx.Client, project: str, start: str | None, end: str | None) -> str:
    """Submit a build of `[start, end)` (days; None: leave it out); the job id."""
    body = {"project": project, **({"start": ms(start)} if start else {}), **({"end": ms(end)} if end else {})}
    [job] = data(client.post(f"/kylin/api/models/{MODEL}/segments", json=body))["jobs"]
    return str(job["job_id"])


def wait_job(
    client: httpx.Client, project: str, job_id: str, until: tuple[str, ...] = ("FINISHED",), timeout: float = 600
) -> dict[str, Any]:
    """Poll the job's detail until its status is one of `until` (or it ends otherwise: then it fails)."""
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = data(client.get(f"/kylin/api/jobs/{job_id}/detail", params={"project": project}))
        # a finished job is over once retention and auto-merge ran after it (they write the metadata)
        over = job["job_status"] != "FINISHED" or job["params"].get("aftermath_done") == "true"
        if job["job_status"] in until and over:
            return job
        assert job["job_status"] not in ("FINISHED", "ERROR", "DISCARDED") or job["job_status"] in until, job
        assert time.monotonic() < deadline, f"job {job_id} still {job['job_status']} after {timeout} s"
        time.sleep(0.2)


def rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(float(v) if isinstance(v, (int, float)) else v for v in r.values()) for r in table.to_pylist())


def oracle_rows(ssb_dir: Path, before: str) -> list[tuple[Any, ...]]:
    """The answer to QUERY over the raw files, for orders before the day `before`."""
    oracle = Oracle(ssb_dir)
    try:
        return rows(oracle.run(QUERY.format(where=f"WHERE LO_ORDERDATE < DATE '{before}'")))
    finally:
        oracle.close()
