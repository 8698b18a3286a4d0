"""CSV sources with a declared schema and read options: parsing the declaration, the checks a load makes
(encoding, column count, a sample cast to the types) with their one-line errors, the CLI, and — on Spark —
a header-less latin-1 CSV with DECIMAL prices, `;` and a null marker, whose sums are exact and equal on the
build (Spark) and pushdown (DuckDB and Spark) to the sums of the values written."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from precube.cli.app import run
from precube.errors import InvalidInputError
from precube.metadata import MetadataStore, Project, SourceType, Table, open_store
from precube.metadata.csv_options import CsvOptions
from precube.sources.csv_files import parse_columns, read_schema_file
from precube.sources.errors import UnreadableSourceError, UnsupportedTypeError
from precube.sources.tables import load_file_table, reload_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

COLUMNS = "ID bigint, NAME string, PRICE decimal(19,4), QTY int"
NAMES = ["Zoë", "Ångström", "café", "naïve", "plain"]


def _rows(n: int) -> list[tuple[int, str | None, Decimal | None, int | None]]:
    """Rows with prices whose double sum drifts; a NULL in every column but ID now and then."""
    rows = []
    for i in range(n):
        price = Decimal(f"{(i * 7919) % 1_000_000}.{(i * 104729) % 10_000:04d}")
        rows.append(
            (i, None if i % 17 == 3 else NAMES[i % 5], None if i % 13 == 5 else price, None if i % 11 == 7 else i % 9)
        )
    return rows


def _csv(path: Path, rows: list[tuple[Any, ...]], encoding: str = "latin-1", null: str = "NA") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(";".join(null if v is None else str(v) for v in row) + "\n" for row in rows)
    path.write_bytes(text.encode(encoding))
    return path.parent


def _options(**kwargs: Any) -> dict[str, str]:
    base: dict[str, Any] = {"header": False, "delimiter": ";", "escape": '"', "null": "NA", "encoding": "latin-1"}
    base.update(kwargs)
    if "columns" not in kwargs:
        base["columns"] = tuple(parse_columns(COLUMNS))
    return CsvOptions(**base).properties()


@pytest.fixture
def project(store: MetadataStore) -> str:
    store.create_project(Project(name="p", default_database="C"))
    return "p"


def test_declared_columns_follow_the_type_rules(tmp_path: Path) -> None:
    assert parse_columns("id BIGINT, Price Decimal(19, 4), n string, d DECIMAL, x numeric(5)") == [
        ("ID", "bigint"),
        ("PRICE", "decimal(19,4)"),
        ("N", "varchar(4096)"),
        ("D", "decimal(10,0)"),
        ("X", "decimal(5,0)"),
    ]
    with pytest.raises(UnsupportedTypeError, match="unknown column type 'money'"):
        parse_columns("a money")
    with pytest.raises(UnsupportedTypeError, match="precision <= 38"):
        parse_columns("a decimal(40,2)")
    with pytest.raises(InvalidInputError, match="declares A more than once"):
        parse_columns("a int, A bigint")
    with pytest.raises(InvalidInputError, match="is not `NAME type`"):
        parse_columns("a int, b")
    schema = tmp_path / "schema.yaml"
    schema.write_text(json.dumps([{"name": "id", "type": "bigint"}, {"name": "price", "type": "decimal(19,4)"}]))
    assert read_schema_file(schema) == [("ID", "bigint"), ("PRICE", "decimal(19,4)")]
    schema.write_text("- {name: id}\n")
    with pytest.raises(InvalidInputError, match="must hold a list of"):
        read_schema_file(schema)


def test_load_checks_the_file_against_the_schema(store: MetadataStore, project: str, tmp_path: Path) -> None:
    path = _csv(tmp_path / "sales" / "part-0.csv", _rows(50))
    with pytest.raises(UnreadableSourceError) as raised:  # latin-1 bytes read as UTF-8
        load_file_table(store, project, path, SourceType.CSV, options=_options(encoding="utf-8"))
    message = str(raised.value)
    assert "\n" not in message and str(path / "part-0.csv") in message
    assert "is not valid utf-8 at byte 4 (line 1)" in message, message  # `0;Zoë`: bytes 0-3 are `0;Zo`
    with pytest.raises(UnreadableSourceError, match="has 4 fields per row, the schema declares 3 columns"):
        load_file_table(
            store,
            project,
            path,
            SourceType.CSV,
            options=_options(columns=tuple(parse_columns("a int, b string, c int"))),
        )
    with pytest.raises(UnreadableSourceError, match="Could not convert string"):  # NAME as a number
        load_file_table(
            store,
            project,
            path,
            SourceType.CSV,
            options=_options(columns=tuple(parse_columns("a int, b int, c int, d int"))),
        )
    assert store.scan(f"/{project}/table/") == []  # nothing registered by a refused load

    later = tmp_path / "later" / "a.csv"  # inferred columns: the encoding is checked before inference
    later.parent.mkdir()
    later.write_bytes("1;ab\n2;cd\n3;caf\u00e9\n".encode("latin-1"))
    with pytest.raises(UnreadableSourceError, match=r"a.csv is not valid utf-8 at byte 15 \(line 3\)"):
        load_file_table(store, project, later.parent, SourceType.CSV, options={"header": "false", "delimiter": ";"})
    inferred = {"header": "false", "delimiter": ";", "encoding": "latin-1"}
    assert [
        c.datatype for c in load_file_table(store, project, later.parent, SourceType.CSV, options=inferred).columns
    ] == ["bigint", "varchar(4096)"]

    table = load_file_table(store, project, path, SourceType.CSV, options=_options())
    assert [(c.name, c.datatype) for c in table.columns] == parse_columns(COLUMNS)
    assert reload_table(store, project, table.identity, lambda: None)[1].changed is False  # type: ignore[arg-type,return-value]


def test_cli_loads_a_declared_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _csv(tmp_path / "sales" / "part-0.csv", _rows(20))
    home = ["--home", str(tmp_path / "home")]
    assert run([*home, "project", "create", "p", "-d", "C"]) == 0
    load = [*home, "table", "load", "-p", "p", str(path), "--no-header", "--delimiter", ";", "--null", "NA"]
    capsys.readouterr()
    assert run([*load, "--columns", COLUMNS]) == 1  # latin-1 without --encoding
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "is not valid utf-8 at byte" in err and len(err.splitlines()) == 1, err
    assert run([*load, "--columns", "ID bigint, NAME string", "--encoding", "latin-1"]) == 1
    assert "the schema declares 2 columns" in capsys.readouterr().err
    assert run([*load, "--columns", COLUMNS, "--encoding", "latin1", "--quote", "'"]) == 0
    with open_store(f"sqlite:///{tmp_path / 'home' / 'metadata.db'}") as store, store.read("p") as tx:
        table = tx.require(Table, "C.SALES")
    assert CsvOptions.of(table.source_properties) == CsvOptions(
        header=False,
        delimiter=";",
        quote="'",
        escape="'",
        null="NA",
        encoding="latin-1",
        columns=tuple(parse_columns(COLUMNS)),
    )
    assert run([*home, "table", "load", "-p", "p", str(path), "--name", "X", "--encoding", "ebcdic"]) == 1
    assert "not one both engines read" in capsys.readouterr().err


SPEC: dict[str, Any] = {
    "alias": "csv_sales",
    "fact_table": "C.SALES",
    "simplified_dimensions": ["SALES.NAME", "SALES.QTY"],
    "simplified_measures": [
        {"name": "ROWS", "expression": "COUNT"},
        {"name": "PRICE_SUM", "expression": "SUM", "column": "SALES.PRICE"},
    ],
    "aggregation_groups": [{"includes": ["NAME", "QTY"]}],
}


@pytest.mark.spark
def test_declared_decimals_are_exact_on_build_and_pushdown(tmp_path: Path, spark: SparkSession) -> None:
    from precube.engine.context import BuildContext
    from precube.engine.operations import build_segment
    from precube.modeling.model_spec import parse_spec
    from precube.modeling.model_store import create_model
    from precube.query.session import Session

    rows = _rows(3000)
    path = _csv(tmp_path / "sales" / "part-0.csv", rows[:1500])
    _csv(tmp_path / "sales" / "part-1.csv", rows[1500:])
    expected: dict[str | None, Decimal] = {}
    for _, name, price, _ in rows:
        if price is not None:
            expected[name] = expected.get(name, Decimal(0)) + price
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        store.create_project(Project(name="p", default_database="C"))
        load_file_table(store, "p", path, SourceType.CSV, options=_options())
        utf16 = _csv(tmp_path / "sales16" / "part-0.csv", rows, encoding="utf-16")
        load_file_table(store, "p", utf16, SourceType.CSV, options=_options(encoding="utf-16"))
        create_model(store, "p", parse_spec(SPEC))
        warehouse = str(tmp_path / "warehouse")
        build_segment(BuildContext(spark, store, "p", warehouse, writer="test"), "csv_sales")
        sql = "select name, sum(price) as total, count(*) as n, count(qty) as qtys from c.sales group by name"
        counts = {
            n: (sum(1 for r in rows if r[1] == n), sum(1 for r in rows if r[1] == n and r[3] is not None))
            for n in expected
        }
        with Session(store, "p", warehouse, spark=lambda: spark) as session:
            answers = {
                "layout": session.sql(sql),
                "duckdb pushdown": session.sql(sql, force_pushdown=True),
                "spark pushdown": session.sql(sql, engine="spark", force_pushdown=True),
            }
            assert not answers["layout"].pushdown and answers["duckdb pushdown"].pushdown
            for how, result in answers.items():
                assert str(result.table.schema.field("total").type) == "decimal128(29, 4)", how
                got = {r[0]: (r[1], r[2], r[3]) for r in result.rows}
                assert got == {n: (total, *counts[n]) for n, total in expected.items()}, how
            latin = session.sql("select count(*) from c.sales where name in ('Zoë', 'café')", force_pushdown=True)
            assert latin.rows == [(sum(1 for r in rows if r[1] in ("Zoë", "café")),)]
            for engine in ("duckdb", "spark"):  # UTF-16: Spark reads it only as multi-line CSV
                result = session.sql(sql.replace("c.sales", "c.sales16"), engine=engine)
                assert {r[0]: (r[1], r[2], r[3]) for r in result.rows} == {
                    n: (total, *counts[n]) for n, total in expected.items()
                }, engine
