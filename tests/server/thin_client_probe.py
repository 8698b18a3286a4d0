"""Run by `test_thin_client.py` with the thin venv's Python (the thin client and Superset's pins, nothing of
precube's): `python thin_client_probe.py URL PROJECT USER PASSWORD QUERIES.json OUT_DIR`.

Writes OUT_DIR/probe.json: the distributions installed, what SQLAlchemy's inspector reflects through the dialect,
each query's rows as fetched through SQLAlchemy (`exec_driver_sql`) and through pandas (`read_sql`) counted,
and OUT_DIR/NAME.arrow: each query's answer as the DB-API's Arrow table, for the test to compare with the oracle.
Imports only what the thin venv has."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import sqlalchemy as sa

from precube_client.time_grains import TIME_GRAIN_EXPRESSIONS


def main(url: str, project: str, user: str, password: str, queries_file: str, out: str) -> None:
    out_dir = Path(out)
    queries: dict[str, str] = json.loads(Path(queries_file).read_text())
    host = url.split("://", 1)[1]
    engine = sa.create_engine(f"precube+http://{user}:{password}@{host}/{project}")
    found: dict[str, Any] = {
        "distributions": sorted(d.metadata["Name"].lower() for d in metadata.distributions()),
        "versions": {"sqlalchemy": sa.__version__, "pandas": pd.__version__, "pyarrow": pa.__version__},
        "dialect": f"{type(engine.dialect).__module__}.{type(engine.dialect).__name__}",
    }
    inspector = sa.inspect(engine)
    found["schemas"] = inspector.get_schema_names()
    found["default_schema"] = inspector.default_schema_name
    found["tables"] = {
        table: [
            {
                "name": c["name"],
                "type": type(c["type"]).__name__,
                "nullable": c["nullable"],
                "computed": (c.get("computed") or {}).get("sqltext"),
            }
            for c in inspector.get_columns(table)
        ]
        for table in inspector.get_table_names()
    }
    found["rows"], found["pandas_shapes"] = {}, {}
    with engine.connect() as connection:
        for name, sql in queries.items():
            found["rows"][name] = [[_json(v) for v in row] for row in connection.exec_driver_sql(sql).fetchall()]
            found["pandas_shapes"][name] = list(pd.read_sql(sa.text(sql), connection).shape)
        year = sa.text("select count(*) from ssb.dates where d_year = :year and d_month = :month")
        found["bound"] = connection.execute(year, {"year": 1995, "month": "May"}).scalar()
        found["grains"] = {
            grain or "none": connection.exec_driver_sql(
                f"select count(distinct {expression.format(col='d_datekey')}) from ssb.dates"
            ).scalar()
            for grain, expression in TIME_GRAIN_EXPRESSIONS.items()
        }
    raw = engine.raw_connection()
    try:
        for name, sql in queries.items():
            cursor = raw.cursor()
            cursor.execute(sql)
            table = cursor.fetch_arrow_table()
            with pa.ipc.new_file(str(out_dir / f"{name}.arrow"), table.schema) as writer:
                writer.write_table(table)
    finally:
        raw.close()
    (out_dir / "probe.json").write_text(json.dumps(found, indent=1))


def _json(value: Any) -> Any:
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


if __name__ == "__main__":
    main(*sys.argv[1:])
