"""The SSB generator: row counts, determinism, value domains, formulas and referential integrity."""

from __future__ import annotations

import calendar
import math
import re
import shutil
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from precube.errors import InvalidInputError
from precube.ssb import generate as ssb
from precube.ssb.generate import TABLES, generate, read_manifest, row_counts

SCALE = 0.01
SEED = 7  # the seed of the shared `ssb_dir` fixture in tests/conftest.py

REGION_OF = {
    "ALGERIA": "AFRICA", "ARGENTINA": "AMERICA", "BRAZIL": "AMERICA", "CANADA": "AMERICA",
    "EGYPT": "MIDDLE EAST", "ETHIOPIA": "AFRICA", "FRANCE": "EUROPE", "GERMANY": "EUROPE",
    "INDIA": "ASIA", "INDONESIA": "ASIA", "IRAN": "MIDDLE EAST", "IRAQ": "MIDDLE EAST", "JAPAN": "ASIA",
    "JORDAN": "MIDDLE EAST", "KENYA": "AFRICA", "MOROCCO": "AFRICA", "MOZAMBIQUE": "AFRICA",
    "PERU": "AMERICA", "CHINA": "ASIA", "ROMANIA": "EUROPE", "SAUDI ARABIA": "MIDDLE EAST",
    "VIETNAM": "ASIA", "RUSSIA": "EUROPE", "UNITED KINGDOM": "EUROPE", "UNITED STATES": "AMERICA",
}  # fmt: skip
NATION_INDEX = {name: i for i, name in enumerate(REGION_OF)}
KEY_COLUMN = {
    "LINEORDER": "LO_ORDERKEY",
    "CUSTOMER": "C_CUSTKEY",
    "SUPPLIER": "S_SUPPKEY",
    "PART": "P_PARTKEY",
}


def read(out: Path, table: str) -> pa.Table:
    """All part files of a table, in file order."""
    files = sorted((out / table).glob("part-*.parquet"))
    assert files, f"no files for {table}"
    return pa.concat_tables([pq.read_table(f) for f in files])


def col(table: pa.Table, name: str) -> list[object]:
    return list(table.column(name).to_pylist())


@pytest.fixture(scope="module")
def data(ssb_dir: Path) -> dict[str, pa.Table]:
    return {table: read(ssb_dir, table) for table in TABLES}


def test_row_counts_formula() -> None:
    assert row_counts(1) == {
        "lineorder": 6_000_000,
        "dates": 2557,
        "customer": 30_000,
        "supplier": 2_000,
        "part": 200_000,
    }
    assert row_counts(10)["part"] == 800_000  # 200k * floor(1 + log2 10)
    assert row_counts(1000)["part"] == 2_000_000
    assert row_counts(0.01) == {
        "lineorder": 60_000,
        "dates": 2557,
        "customer": 300,
        "supplier": 20,
        "part": 2000,
    }
    tiny = row_counts(1e-6)
    assert (tiny["customer"], tiny["supplier"], tiny["part"], tiny["lineorder"]) == (1, 1, 1, 6)


def test_files_hold_row_counts(ssb_dir: Path, data: dict[str, pa.Table]) -> None:
    expected = row_counts(SCALE)
    assert {table: data[table].num_rows for table in TABLES} == {t: expected[t.lower()] for t in TABLES}
    for table, key in KEY_COLUMN.items():
        keys = np.unique(data[table].column(key).to_numpy())
        assert keys[0] == 1 and keys[-1] == len(keys), f"{table} keys are not 1..n"


def test_schema_types(data: dict[str, pa.Table]) -> None:
    types = {name: data[t].schema.field(name).type for t in TABLES for name in data[t].schema.names}
    assert all(name == name.upper() for name in types)
    assert types["D_DATEKEY"] == pa.date32() and types["LO_ORDERDATE"] == pa.date32()
    assert types["LO_COMMITDATE"] == pa.date32()
    assert types["LO_ORDERKEY"] == pa.int64() and types["LO_REVENUE"] == pa.int64()
    for name in ("LO_LINENUMBER", "LO_CUSTKEY", "LO_PARTKEY", "LO_SUPPKEY", "C_CUSTKEY", "D_YEAR", "P_SIZE"):
        assert types[name] == pa.int32(), name
    for name in ("C_CITY", "P_BRAND", "LO_SHIPMODE", "LO_SHIPPRIORITY", "D_YEARMONTH"):
        assert types[name] == pa.string(), name


def test_same_seed_same_data_other_seed_differs(tmp_path: Path, data: dict[str, pa.Table]) -> None:
    generate(SCALE, tmp_path / "same", seed=SEED)
    for table in TABLES:
        assert read(tmp_path / "same", table).equals(data[table]), table
    generate(SCALE, tmp_path / "other", seed=SEED + 1)
    for table in ("LINEORDER", "CUSTOMER", "SUPPLIER", "PART"):
        assert not read(tmp_path / "other", table).equals(data[table]), table
    assert read(tmp_path / "other", "DATES").equals(data["DATES"])  # the calendar is not random


def test_file_layout_does_not_change_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: dict[str, pa.Table]
) -> None:
    monkeypatch.setattr(ssb, "_LINEORDER_ROWS_PER_FILE", 7_000)
    monkeypatch.setattr(ssb, "_ROW_GROUP_ROWS", 3_000)
    generate(SCALE, tmp_path, seed=SEED)
    files = sorted((tmp_path / "LINEORDER").glob("part-*.parquet"))
    assert len(files) == math.ceil(60_000 / 7_000)
    assert pq.ParquetFile(files[0]).metadata.num_row_groups == 3
    for table in TABLES:
        assert read(tmp_path, table).equals(data[table]), table


def test_regenerating_removes_stale_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(ssb, "_LINEORDER_ROWS_PER_FILE", 7_000)
        generate(SCALE, tmp_path)
    generate(SCALE, tmp_path)
    assert [f.name for f in (tmp_path / "LINEORDER").iterdir()] == ["part-00000.parquet"]
    assert read(tmp_path, "LINEORDER").num_rows == 60_000


def test_dates(data: dict[str, pa.Table]) -> None:
    dates = data["DATES"]
    first, last = date(1992, 1, 1), date(1998, 12, 31)
    expected_days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    assert col(dates, "D_DATEKEY") == expected_days
    rows = dates.to_pylist()
    seasons = {12: "Christmas", 6: "Summer", 7: "Summer", 8: "Summer", 1: "Winter", 2: "Winter"}
    seasons |= {3: "Spring", 4: "Spring", 5: "Spring", 9: "Fall", 10: "Fall", 11: "Fall"}
    for row, d in zip(rows, expected_days, strict=True):
        month = calendar.month_name[d.month]
        assert row["D_DATE"] == f"{month} {d.day}, {d.year}"
        assert row["D_DAYOFWEEK"] == calendar.day_name[d.weekday()]
        assert row["D_MONTH"] == month
        assert row["D_YEAR"] == d.year
        assert row["D_YEARMONTHNUM"] == int(d.strftime("%Y%m"))
        assert row["D_YEARMONTH"] == calendar.month_abbr[d.month] + str(d.year)
        assert row["D_DAYNUMINWEEK"] == (d.weekday() + 1) % 7 + 1  # Sunday=1 .. Saturday=7
        assert row["D_DAYNUMINMONTH"] == d.day
        day_of_year = (d - date(d.year, 1, 1)).days + 1
        assert row["D_DAYNUMINYEAR"] == day_of_year
        assert row["D_MONTHNUMINYEAR"] == d.month
        assert row["D_WEEKNUMINYEAR"] == (day_of_year + 6) // 7
        assert row["D_SELLINGSEASON"] == seasons[d.month]
        assert row["D_LASTDAYINWEEKFL"] == (1 if d.weekday() == 5 else 0)
        assert row["D_LASTDAYINMONTHFL"] == (1 if d.day == calendar.monthrange(d.year, d.month)[1] else 0)
        assert row["D_WEEKDAYFL"] == (1 if d.weekday() < 5 else 0)
    assert rows[0]["D_DAYOFWEEK"] == "Wednesday" and rows[0]["D_DAYNUMINWEEK"] == 4
    holidays = {r["D_DATEKEY"] for r in rows if r["D_HOLIDAYFL"] == 1}
    for year in range(1992, 1999):
        assert {date(year, 1, 1), date(year, 7, 4), date(year, 12, 25)} <= holidays
    assert 0 < len(holidays) < 100


@pytest.mark.parametrize("prefix", ["C", "S"])
def test_geography(data: dict[str, pa.Table], prefix: str) -> None:
    table = data["CUSTOMER" if prefix == "C" else "SUPPLIER"]
    key_name = "CUSTKEY" if prefix == "C" else "SUPPKEY"
    fields = (key_name, "NAME", "ADDRESS", "CITY", "NATION", "REGION", "PHONE")
    key, name, address, city, nation, region, phone = (col(table, f"{prefix}_{f}") for f in fields)
    word = "Customer" if prefix == "C" else "Supplier"
    for k, n, a, c, nat, reg, ph in zip(key, name, address, city, nation, region, phone, strict=True):
        assert n == f"{word}#{k:09d}"
        assert re.fullmatch(r"[A-Za-z0-9]{10,25}", str(a))
        assert re.fullmatch(r".{9}[0-9]", str(c)), c
        assert str(c)[:9] == str(nat)[:9].ljust(9)
        assert REGION_OF[str(nat)] == reg
        assert re.fullmatch(r"\d\d-\d\d\d-\d\d\d-\d\d\d\d", str(ph)), ph
        assert int(str(ph)[:2]) == NATION_INDEX[str(nat)] + 10
    if prefix == "C":  # 300 customers cover every nation and region
        assert set(nation) == set(REGION_OF)
        assert set(region) == {"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}
        assert set(col(table, "C_MKTSEGMENT")) <= {
            "AUTOMOBILE",
            "BUILDING",
            "FURNITURE",
            "MACHINERY",
            "HOUSEHOLD",
        }
    assert len(set(city)) > 1


def test_city_space_is_250() -> None:
    out = {f"{n[:9]:<9}{d}" for n in REGION_OF for d in range(10)}
    assert len(out) == 250
    assert {"UNITED KI1", "PERU     0", "UNITED ST3"} <= out


def test_part_hierarchy(data: dict[str, pa.Table]) -> None:
    part = data["PART"]
    categories = {f"MFGR#{m}{c}" for m in range(1, 6) for c in range(1, 6)}
    for row in part.to_pylist():
        assert row["P_MFGR"] in {f"MFGR#{m}" for m in range(1, 6)}
        assert row["P_CATEGORY"] in categories and row["P_CATEGORY"].startswith(row["P_MFGR"])
        brand = row["P_BRAND"]
        assert brand.startswith(row["P_CATEGORY"]) and len(brand) == 9 and 1 <= int(brand[7:]) <= 40
        assert 1 <= row["P_SIZE"] <= 50
        words = row["P_NAME"].split(" ")
        assert len(words) == 2 and all(w.isalpha() and w.islower() for w in words)
        assert row["P_COLOR"].isalpha()
        assert len(row["P_TYPE"].split(" ")) == 3
        assert re.fullmatch(r"(SM|LG|MED|JUMBO|WRAP) [A-Z]+", row["P_CONTAINER"])
    assert len(set(col(part, "P_CATEGORY"))) == 25
    assert len(set(col(part, "P_BRAND"))) > 500


def test_lineorder_formulas(data: dict[str, pa.Table]) -> None:
    lo = data["LINEORDER"]
    pk = data["PART"].column("P_PARTKEY").to_numpy().astype(np.int64)
    price_of = np.zeros(pk.max() + 1, dtype=np.int64)
    price_of[pk] = 90_000 + (pk // 10) % 20_001 + 100 * (pk % 1000)

    def a(name: str) -> np.ndarray:
        return np.asarray(lo.column(name).to_numpy())

    price = price_of[a("LO_PARTKEY")]
    qty, disc, tax, ext = a("LO_QUANTITY"), a("LO_DISCOUNT"), a("LO_TAX"), a("LO_EXTENDEDPRICE")
    assert qty.min() >= 1 and qty.max() <= 50
    assert disc.min() >= 0 and disc.max() <= 10
    assert tax.min() >= 0 and tax.max() <= 8
    assert np.array_equal(ext, qty * price)
    assert np.array_equal(a("LO_REVENUE"), ext * (100 - disc) // 100)
    assert np.array_equal(a("LO_SUPPLYCOST"), 6 * price // 10)

    charged = pa.table({"k": lo.column("LO_ORDERKEY"), "v": pa.array(ext * (100 - disc) * (100 + tax) // 10_000)})
    totals = charged.group_by("k").aggregate([("v", "sum")])
    expected = dict(zip(col(totals, "k"), col(totals, "v_sum"), strict=True))
    assert col(lo, "LO_ORDTOTALPRICE") == [expected[k] for k in col(lo, "LO_ORDERKEY")]

    order_day = lo.column("LO_ORDERDATE")
    assert pc.min(order_day).as_py() >= date(1992, 1, 1)
    assert pc.max(order_day).as_py() <= date(1998, 8, 2)
    lag = (a("LO_COMMITDATE") - a("LO_ORDERDATE")).astype("timedelta64[D]").astype(int)
    assert lag.min() >= 30 and lag.max() <= 90
    assert set(col(lo, "LO_ORDERPRIORITY")) == {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW"}
    assert set(col(lo, "LO_SHIPMODE")) == {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}
    assert set(col(lo, "LO_SHIPPRIORITY")) == {"0"}


def test_referential_integrity(data: dict[str, pa.Table]) -> None:
    lo = data["LINEORDER"]
    for fk, table, key in (
        ("LO_CUSTKEY", "CUSTOMER", "C_CUSTKEY"),
        ("LO_PARTKEY", "PART", "P_PARTKEY"),
        ("LO_SUPPKEY", "SUPPLIER", "S_SUPPKEY"),
        ("LO_ORDERDATE", "DATES", "D_DATEKEY"),
        ("LO_COMMITDATE", "DATES", "D_DATEKEY"),
    ):
        assert pc.all(pc.is_in(lo.column(fk), value_set=data[table].column(key))).as_py(), fk


def test_orders_are_contiguous(data: dict[str, pa.Table]) -> None:
    check_orders(data["LINEORDER"])


def test_many_small_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys, line numbers and row counts stay consistent when a table spans many random-stream blocks."""
    monkeypatch.setattr(ssb, "_LINEORDER_BLOCK_ORDERS", 1_000)
    monkeypatch.setattr(ssb, "_DIM_BLOCK_ROWS", 64)
    rows = generate(SCALE, tmp_path, seed=SEED)
    data = {table: read(tmp_path, table) for table in TABLES}
    assert {t: data[t].num_rows for t in TABLES} == {t: rows[t.lower()] for t in TABLES}
    check_orders(data["LINEORDER"])
    for table in ("CUSTOMER", "SUPPLIER", "PART"):
        assert col(data[table], KEY_COLUMN[table]) == list(range(1, rows[table.lower()] + 1)), table
    names = col(data["CUSTOMER"], "C_NAME")
    assert len(set(names)) == len(names) and len(set(col(data["CUSTOMER"], "C_ADDRESS"))) > 250


def check_orders(lo: pa.Table) -> None:
    keys = lo.column("LO_ORDERKEY").to_numpy()
    assert keys[0] == 1 and np.all(np.diff(keys) >= 0) and np.all(np.diff(keys) <= 1)
    per_order = lo.group_by("LO_ORDERKEY").aggregate(
        [
            ("LO_LINENUMBER", "min"),
            ("LO_LINENUMBER", "max"),
            ("LO_LINENUMBER", "count"),
            ("LO_LINENUMBER", "count_distinct"),
            ("LO_ORDERDATE", "count_distinct"),
            ("LO_CUSTKEY", "count_distinct"),
            ("LO_ORDERPRIORITY", "count_distinct"),
        ]
    )
    assert set(col(per_order, "LO_LINENUMBER_min")) == {1}
    count = col(per_order, "LO_LINENUMBER_count")
    assert col(per_order, "LO_LINENUMBER_max") == count
    assert col(per_order, "LO_LINENUMBER_count_distinct") == count
    assert set(count[:-1]) == set(range(1, 8))  # the last order may be cut short
    for per_order_attribute in ("LO_ORDERDATE", "LO_CUSTKEY", "LO_ORDERPRIORITY"):
        assert set(col(per_order, f"{per_order_attribute}_count_distinct")) == {1}
    # Rows are in (order, line) order, so line numbers restart at every new order key.
    lines = lo.column("LO_LINENUMBER").to_numpy()
    new_order = np.r_[True, np.diff(keys) == 1]
    assert np.all(lines[new_order] == 1) and np.all(np.diff(lines)[~new_order[1:]] == 1)


def test_manifest(ssb_dir: Path, tmp_path: Path) -> None:
    assert read_manifest(ssb_dir) == {"scale": SCALE, "seed": SEED, "rows": row_counts(SCALE), "format": 1}
    assert read_manifest(tmp_path) is None
    generate(0.001, tmp_path, seed=3)
    manifest = read_manifest(tmp_path)
    assert manifest is not None and manifest["rows"] == row_counts(0.001) and manifest["seed"] == 3
    shutil.rmtree(tmp_path / "SUPPLIER")
    assert read_manifest(tmp_path) is None


def test_generate_returns_counts_and_reports_progress(tmp_path: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    rows = generate(0.001, tmp_path, progress=lambda t, done, total: calls.append((t, done, total)))
    assert rows == row_counts(0.001)
    for table in TABLES:
        mine = [c for c in calls if c[0] == table]
        total = rows[table.lower()]
        assert mine[-1] == (table, total, total)
        done = [c[1] for c in mine]
        assert done == sorted(done) and all(c[2] == total for c in mine)


@pytest.mark.parametrize("scale", [0, -1, 1001, float("nan")])
def test_invalid_scale(tmp_path: Path, scale: float) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(repr(scale))):
        generate(scale, tmp_path)
    with pytest.raises(InvalidInputError):
        row_counts(scale)
    assert not (tmp_path / "_ssb.json").exists()


def test_invalid_seed(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="-5"):
        generate(SCALE, tmp_path, seed=-5)


def test_orphan_rows_miss_their_lookup_row_and_leave_the_rest_unchanged(
    tmp_path: Path, data: dict[str, pa.Table]
) -> None:
    n = 7
    generate(SCALE, tmp_path / "a", seed=SEED, orphans=n)
    generate(SCALE, tmp_path / "b", seed=SEED, orphans=n)
    lineorder = read(tmp_path / "a", "LINEORDER")
    assert lineorder.equals(read(tmp_path / "b", "LINEORDER"))  # deterministic by seed
    base = data["LINEORDER"]
    assert lineorder.slice(0, base.num_rows).equals(base)
    extra = lineorder.slice(base.num_rows)
    assert extra.num_rows == n
    assert min(col(extra, "LO_ORDERKEY")) > max(col(base, "LO_ORDERKEY"))  # new orders
    missing = 0
    for fk, table, pk in (
        ("LO_CUSTKEY", "CUSTOMER", "C_CUSTKEY"),
        ("LO_SUPPKEY", "SUPPLIER", "S_SUPPKEY"),
        ("LO_PARTKEY", "PART", "P_PARTKEY"),
    ):
        keys = set(col(data[table], pk))
        assert set(col(base, fk)) <= keys  # the default data has none
        missing += sum(k not in keys for k in col(extra, fk))
    assert missing == n  # each orphan row misses exactly one lookup row
    dates = set(col(data["DATES"], "D_DATEKEY"))
    assert set(col(extra, "LO_ORDERDATE")) <= dates
    assert read_manifest(tmp_path / "a")["orphans"] == n  # type: ignore[index]
    with pytest.raises(InvalidInputError, match="orphan"):
        generate(SCALE, tmp_path / "c", seed=SEED, orphans=-1)
