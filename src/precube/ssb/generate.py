"""Vectorized, deterministic Star Schema Benchmark (SSB, O'Neil et al.) generator writing Parquet.

Output: `out/{TABLE}/part-NNNNN.parquet` for every table in `TABLES` plus the manifest `out/_ssb.json`.
Values depend only on (scale, seed): each table is drawn in fixed-size blocks, every block from its own
stream `SeedSequence(seed, spawn_key=(table index, block index, stream))`, so buffering, row groups and
the split into files never change the data.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from precube.errors import InvalidInputError

TABLES: tuple[str, ...] = ("LINEORDER", "DATES", "CUSTOMER", "SUPPLIER", "PART")
MANIFEST_NAME = "_ssb.json"
FORMAT = 1
MAX_SCALE = 1000.0

Progress = Callable[[str, int, int], None]
IntArray = npt.NDArray[np.int64]
ByteMatrix = npt.NDArray[np.uint8]

# Granularity of the random streams: changing these changes the generated values.
_DIM_BLOCK_ROWS = 1 << 16
_LINEORDER_BLOCK_ORDERS = 1 << 16  # ~262k lines per block

# Physical layout only; the values do not depend on these.
_ROW_GROUP_ROWS = 250_000
_LINEORDER_ROWS_PER_FILE = 1_000_000

_FIRST_DAY = date(1992, 1, 1)
_LAST_DAY = date(1998, 12, 31)
_LAST_ORDER_DAY = date(1998, 8, 2)
_EPOCH = date(1970, 1, 1)
_DAYS = (_LAST_DAY - _FIRST_DAY).days + 1
_ORDER_DAYS = (_LAST_ORDER_DAY - _FIRST_DAY).days + 1

_NATIONS: tuple[tuple[str, str], ...] = (
    ("ALGERIA", "AFRICA"),
    ("ARGENTINA", "AMERICA"),
    ("BRAZIL", "AMERICA"),
    ("CANADA", "AMERICA"),
    ("EGYPT", "MIDDLE EAST"),
    ("ETHIOPIA", "AFRICA"),
    ("FRANCE", "EUROPE"),
    ("GERMANY", "EUROPE"),
    ("INDIA", "ASIA"),
    ("INDONESIA", "ASIA"),
    ("IRAN", "MIDDLE EAST"),
    ("IRAQ", "MIDDLE EAST"),
    ("JAPAN", "ASIA"),
    ("JORDAN", "MIDDLE EAST"),
    ("KENYA", "AFRICA"),
    ("MOROCCO", "AFRICA"),
    ("MOZAMBIQUE", "AFRICA"),
    ("PERU", "AMERICA"),
    ("CHINA", "ASIA"),
    ("ROMANIA", "EUROPE"),
    ("SAUDI ARABIA", "MIDDLE EAST"),
    ("VIETNAM", "ASIA"),
    ("RUSSIA", "EUROPE"),
    ("UNITED KINGDOM", "EUROPE"),
    ("UNITED STATES", "AMERICA"),
)
_COLORS: tuple[str, ...] = (
    "almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue", "blush",
    "brown", "burlywood", "burnished", "chartreuse", "chiffon", "chocolate", "coral", "cornflower",
    "cornsilk", "cream", "cyan", "dark", "deep", "dim", "dodger", "drab", "firebrick", "floral", "forest",
    "frosted", "gainsboro", "ghost", "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory",
    "khaki", "lace", "lavender", "lawn", "lemon", "light", "lime", "linen", "magenta", "maroon", "medium",
    "metallic", "midnight", "mint", "misty", "moccasin", "navajo", "navy", "olive", "orange", "orchid",
    "pale", "papaya", "peach", "peru", "pink", "plum", "powder", "puff", "purple", "red", "rose", "rosy",
    "royal", "saddle", "salmon", "sandy", "seashell", "sienna", "sky", "slate", "smoke", "snow", "spring",
    "steel", "tan", "thistle", "tomato", "turquoise", "violet", "wheat", "white", "yellow",
)  # fmt: skip
_TYPE_SYLLABLES = (
    ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"),
    ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"),
    ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER"),
)
_CONTAINER_SYLLABLES = (
    ("SM", "LG", "MED", "JUMBO", "WRAP"),
    ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"),
)
_SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD")
_PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW")
_SHIPMODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")  # isoweekday-1
_SEASONS = ("Winter",) * 2 + ("Spring",) * 3 + ("Summer",) * 3 + ("Fall",) * 3 + ("Christmas",)
_HOLIDAYS = frozenset({(1, 1), (7, 4), (12, 25)})
_ALNUM = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)

# Small dictionaries that string columns are gathered from with `take`.
_D_NATIONS = pa.array([name for name, _ in _NATIONS])
_D_NATION_REGIONS = pa.array([region for _, region in _NATIONS])
_D_CITIES = pa.array([f"{name[:9]:<9}{digit}" for name, _ in _NATIONS for digit in range(10)])
_D_COLORS = pa.array(_COLORS)
_D_MFGRS = pa.array([f"MFGR#{m}" for m in range(1, 6)])
_D_CATEGORIES = pa.array([f"MFGR#{m}{c}" for m in range(1, 6) for c in range(1, 6)])
_D_BRANDS = pa.array([f"MFGR#{m}{c}{b:02d}" for m in range(1, 6) for c in range(1, 6) for b in range(1, 41)])
_D_TYPES = pa.array(
    [f"{a} {b} {c}" for a in _TYPE_SYLLABLES[0] for b in _TYPE_SYLLABLES[1] for c in _TYPE_SYLLABLES[2]]
)
_D_CONTAINERS = pa.array([f"{a} {b}" for a in _CONTAINER_SYLLABLES[0] for b in _CONTAINER_SYLLABLES[1]])
_D_SEGMENTS = pa.array(_SEGMENTS)
_D_PRIORITIES = pa.array(_PRIORITIES)
_D_SHIPMODES = pa.array(_SHIPMODES)
_D_SHIPPRIORITY = pa.array(["0"])

_STR, _I32, _I64, _DATE = pa.string(), pa.int32(), pa.int64(), pa.date32()


def _schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(name, dtype) for name, dtype in fields])


_PARTY_FIELDS = ("ADDRESS", _STR), ("CITY", _STR), ("NATION", _STR), ("REGION", _STR), ("PHONE", _STR)
_SCHEMAS: dict[str, pa.Schema] = {
    "LINEORDER": _schema(
        ("LO_ORDERKEY", _I64), ("LO_LINENUMBER", _I32), ("LO_CUSTKEY", _I32), ("LO_PARTKEY", _I32),
        ("LO_SUPPKEY", _I32), ("LO_ORDERDATE", _DATE), ("LO_ORDERPRIORITY", _STR), ("LO_SHIPPRIORITY", _STR),
        ("LO_QUANTITY", _I64), ("LO_EXTENDEDPRICE", _I64), ("LO_ORDTOTALPRICE", _I64), ("LO_DISCOUNT", _I64),
        ("LO_REVENUE", _I64), ("LO_SUPPLYCOST", _I64), ("LO_TAX", _I64), ("LO_COMMITDATE", _DATE),
        ("LO_SHIPMODE", _STR),
    ),
    "DATES": _schema(
        ("D_DATEKEY", _DATE), ("D_DATE", _STR), ("D_DAYOFWEEK", _STR), ("D_MONTH", _STR), ("D_YEAR", _I32),
        ("D_YEARMONTHNUM", _I32), ("D_YEARMONTH", _STR), ("D_DAYNUMINWEEK", _I32), ("D_DAYNUMINMONTH", _I32),
        ("D_DAYNUMINYEAR", _I32), ("D_MONTHNUMINYEAR", _I32), ("D_WEEKNUMINYEAR", _I32),
        ("D_SELLINGSEASON", _STR), ("D_LASTDAYINWEEKFL", _I32), ("D_LASTDAYINMONTHFL", _I32),
        ("D_HOLIDAYFL", _I32), ("D_WEEKDAYFL", _I32),
    ),
    "CUSTOMER": _schema(
        ("C_CUSTKEY", _I32), ("C_NAME", _STR), *((f"C_{n}", t) for n, t in _PARTY_FIELDS),
        ("C_MKTSEGMENT", _STR),
    ),
    "SUPPLIER": _schema(("S_SUPPKEY", _I32), ("S_NAME", _STR), *((f"S_{n}", t) for n, t in _PARTY_FIELDS)),
    "PART": _schema(
        ("P_PARTKEY", _I32), ("P_NAME", _STR), ("P_MFGR", _STR), ("P_CATEGORY", _STR), ("P_BRAND", _STR),
        ("P_COLOR", _STR), ("P_TYPE", _STR), ("P_SIZE", _I32), ("P_CONTAINER", _STR),
    ),
}  # fmt: skip


def _check_scale(scale: float) -> float:
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not 0 < scale <= MAX_SCALE:
        raise InvalidInputError(f"SSB scale factor must be > 0 and <= {MAX_SCALE:g}, got {scale!r}")
    return float(scale)


def row_counts(scale: float) -> dict[str, int]:
    """Rows per table at scale factor `scale`, keyed by lower-case table name."""
    sf = _check_scale(scale)
    part = 200_000 * math.floor(1 + math.log2(sf)) if sf >= 1 else max(1, round(200_000 * sf))
    return {
        "lineorder": round(6_000_000 * sf),
        "dates": _DAYS,
        "customer": max(1, round(30_000 * sf)),
        "supplier": max(1, round(2_000 * sf)),
        "part": part,
    }


def read_manifest(out: Path) -> dict[str, Any] | None:
    """The manifest of the data in `out`, or None unless it is complete (manifest and every table dir)."""
    try:
        manifest = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return None
    if not all((out / table).is_dir() for table in TABLES):
        return None
    return manifest


def generate(
    scale: float, out: Path, seed: int = 1, progress: Progress | None = None, orphans: int = 0
) -> dict[str, int]:
    """Write the five SSB tables and `_ssb.json` under `out`; returns rows per table (as `row_counts`).
    `orphans`: extra LINEORDER rows whose customer, supplier or part key (in turn) has no lookup row."""
    counts = row_counts(scale)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidInputError(f"SSB seed must be a non-negative integer, got {seed!r}")
    if isinstance(orphans, bool) or not isinstance(orphans, int) or orphans < 0:
        raise InvalidInputError(f"SSB orphan rows must be a non-negative integer, got {orphans!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # Drop the manifest first so an interrupted run is never mistaken for complete data,
    # and old part files so a smaller run does not leave extra LINEORDER files behind.
    (out / MANIFEST_NAME).unlink(missing_ok=True)
    for table in TABLES:
        for stale in (out / table).glob("part-*.parquet"):
            stale.unlink()
    report: Progress = progress or (lambda _table, _done, _total: None)

    _write_lineorder(out, seed, counts, report, orphans)
    report("DATES", 0, _DAYS)
    sink = _ParquetSink(out / "DATES", _SCHEMAS["DATES"], rows_per_file=None)
    sink.write(_dates_table())
    sink.close()
    report("DATES", _DAYS, _DAYS)
    _write_dimension("CUSTOMER", counts["customer"], _customer_block, out, seed, report)
    _write_dimension("SUPPLIER", counts["supplier"], _supplier_block, out, seed, report)
    _write_dimension("PART", counts["part"], _part_block, out, seed, report)

    manifest: dict[str, Any] = {"scale": float(scale), "seed": seed, "rows": counts, "format": FORMAT}
    if orphans:
        manifest["orphans"] = orphans
    tmp = out / f"{MANIFEST_NAME}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / MANIFEST_NAME)
    return dict(counts)


class _ParquetSink:
    """Streams tables into `part-NNNNN.parquet` files of fixed-size row groups, independent of input sizes."""

    def __init__(self, directory: Path, schema: pa.Schema, rows_per_file: int | None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._directory = directory
        self._schema = schema
        self._rows_per_file = rows_per_file
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._files = 0
        self._file_rows = 0

    def write(self, table: pa.Table) -> None:
        self._pending.append(table)
        self._pending_rows += table.num_rows
        self._drain(final=False)

    def close(self) -> None:
        self._drain(final=True)
        if self._writer is None:  # an empty table still gets a file, so readers see its schema
            self._open_next()
        assert self._writer is not None
        self._writer.close()
        self._writer = None

    def _open_next(self) -> None:
        if self._writer is not None:
            self._writer.close()
        path = self._directory / f"part-{self._files:05d}.parquet"
        self._writer = pq.ParquetWriter(path, self._schema)
        self._files += 1
        self._file_rows = 0

    def _drain(self, final: bool) -> None:
        while self._pending_rows >= _ROW_GROUP_ROWS or (final and self._pending_rows > 0):
            if self._writer is None or self._file_rows == self._rows_per_file:
                self._open_next()
            assert self._writer is not None
            n = min(_ROW_GROUP_ROWS, self._pending_rows)
            if self._rows_per_file is not None:
                n = min(n, self._rows_per_file - self._file_rows)
            buffered = pa.concat_tables(self._pending)
            self._writer.write_table(buffered.slice(0, n), row_group_size=n)
            rest = buffered.slice(n)
            self._pending = [rest] if rest.num_rows else []
            self._pending_rows -= n
            self._file_rows += n


def _rng(table: str, block: int, stream: int, seed: int) -> np.random.Generator:
    sequence = np.random.SeedSequence(seed, spawn_key=(TABLES.index(table), block, stream))
    return np.random.Generator(np.random.PCG64(sequence))


def _pick(dictionary: pa.Array, indices: npt.NDArray[Any]) -> pa.Array:
    return dictionary.take(pa.array(indices))


def _dates(days_since_first: npt.NDArray[Any]) -> pa.Array:
    offset = (_FIRST_DAY - _EPOCH).days
    return pa.array((days_since_first + offset).astype(np.int32), type=_DATE)


def _digits(values: npt.NDArray[Any], width: int) -> ByteMatrix:
    """Zero-padded decimal digits of `values` as an (n, width) byte matrix."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return (values.astype(np.int64)[:, None] // powers % 10 + ord("0")).astype(np.uint8)


def _literal(text: str, n: int) -> ByteMatrix:
    return np.broadcast_to(np.frombuffer(text.encode(), dtype=np.uint8), (n, len(text)))


def _fixed_width(*parts: ByteMatrix) -> pa.Array:
    """A string array whose row i is the concatenation of row i of every byte matrix."""
    chars = np.ascontiguousarray(np.concatenate(parts, axis=1))
    n, width = chars.shape
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars))


def _random_strings(rng: np.random.Generator, n: int, min_len: int, max_len: int) -> pa.Array:
    lengths = rng.integers(min_len, max_len + 1, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    offsets[1:] = np.cumsum(lengths)
    chars = _ALNUM[rng.integers(0, len(_ALNUM), int(offsets[-1]))]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars))


def _party_columns(rng: np.random.Generator, n: int) -> list[pa.Array]:
    """ADDRESS, CITY, NATION, REGION, PHONE shared by customers and suppliers."""
    address = _random_strings(rng, n, 10, 25)
    nation = rng.integers(0, len(_NATIONS), n)
    city = nation * 10 + rng.integers(0, 10, n)
    dash = _literal("-", n)
    phone = _fixed_width(
        _digits(nation + 10, 2),
        dash,
        _digits(rng.integers(100, 1000, n), 3),
        dash,
        _digits(rng.integers(100, 1000, n), 3),
        dash,
        _digits(rng.integers(1000, 10000, n), 4),
    )
    return [
        address,
        _pick(_D_CITIES, city),
        _pick(_D_NATIONS, nation),
        _pick(_D_NATION_REGIONS, nation),
        phone,
    ]


def _keys(start: int, n: int) -> IntArray:
    return np.arange(start + 1, start + n + 1, dtype=np.int64)


def _customer_block(seed: int, block: int, start: int, n: int) -> pa.Table:
    rng = _rng("CUSTOMER", block, 0, seed)
    keys = _keys(start, n)
    party = _party_columns(rng, n)
    segment = _pick(_D_SEGMENTS, rng.integers(0, len(_SEGMENTS), n))
    name = _fixed_width(_literal("Customer#", n), _digits(keys, 9))
    return pa.Table.from_arrays([pa.array(keys.astype(np.int32)), name, *party, segment], schema=_SCHEMAS["CUSTOMER"])


def _supplier_block(seed: int, block: int, start: int, n: int) -> pa.Table:
    rng = _rng("SUPPLIER", block, 0, seed)
    keys = _keys(start, n)
    party = _party_columns(rng, n)
    name = _fixed_width(_literal("Supplier#", n), _digits(keys, 9))
    return pa.Table.from_arrays([pa.array(keys.astype(np.int32)), name, *party], schema=_SCHEMAS["SUPPLIER"])


def _part_block(seed: int, block: int, start: int, n: int) -> pa.Table:
    rng = _rng("PART", block, 0, seed)
    colors = len(_COLORS)
    first = rng.integers(0, colors, n)
    second = (first + rng.integers(1, colors, n)) % colors  # never the same word twice
    name = pc.binary_join_element_wise(_pick(_D_COLORS, first), _pick(_D_COLORS, second), " ")
    mfgr = rng.integers(0, 5, n)
    category = mfgr * 5 + rng.integers(0, 5, n)
    brand = category * 40 + rng.integers(0, 40, n)
    columns = [
        pa.array(_keys(start, n).astype(np.int32)),
        name,
        _pick(_D_MFGRS, mfgr),
        _pick(_D_CATEGORIES, category),
        _pick(_D_BRANDS, brand),
        _pick(_D_COLORS, rng.integers(0, colors, n)),
        _pick(_D_TYPES, rng.integers(0, len(_D_TYPES), n)),
        pa.array(rng.integers(1, 51, n, dtype=np.int32)),
        _pick(_D_CONTAINERS, rng.integers(0, len(_D_CONTAINERS), n)),
    ]
    return pa.Table.from_arrays(columns, schema=_SCHEMAS["PART"])


def _write_dimension(
    table: str,
    total: int,
    make_block: Callable[[int, int, int, int], pa.Table],
    out: Path,
    seed: int,
    report: Progress,
) -> None:
    report(table, 0, total)
    sink = _ParquetSink(out / table, _SCHEMAS[table], rows_per_file=None)
    for block, start in enumerate(range(0, total, _DIM_BLOCK_ROWS)):
        n = min(_DIM_BLOCK_ROWS, total - start)
        sink.write(make_block(seed, block, start, n))
        if start + n < total:
            report(table, start + n, total)
    sink.close()
    report(table, total, total)


def _dates_table() -> pa.Table:
    """One row per calendar day; a loop over the 2557 days is cheap and easy to check."""
    columns: dict[str, list[Any]] = {field.name: [] for field in _SCHEMAS["DATES"]}
    for i in range(_DAYS):
        day = _FIRST_DAY + timedelta(days=i)
        weekday = day.isoweekday()  # Monday=1 .. Sunday=7
        day_of_year = day.timetuple().tm_yday
        month = _MONTHS[day.month - 1]
        row = {
            "D_DATEKEY": day,
            "D_DATE": f"{month} {day.day}, {day.year}",
            "D_DAYOFWEEK": _WEEKDAYS[weekday - 1],
            "D_MONTH": month,
            "D_YEAR": day.year,
            "D_YEARMONTHNUM": day.year * 100 + day.month,
            "D_YEARMONTH": f"{month[:3]}{day.year}",
            "D_DAYNUMINWEEK": weekday % 7 + 1,  # SSB counts from Sunday=1
            "D_DAYNUMINMONTH": day.day,
            "D_DAYNUMINYEAR": day_of_year,
            "D_MONTHNUMINYEAR": day.month,
            "D_WEEKNUMINYEAR": (day_of_year - 1) // 7 + 1,
            "D_SELLINGSEASON": _SEASONS[day.month - 1],
            "D_LASTDAYINWEEKFL": int(weekday == 6),
            "D_LASTDAYINMONTHFL": int((day + timedelta(days=1)).month != day.month),
            "D_HOLIDAYFL": int((day.month, day.day) in _HOLIDAYS),
            "D_WEEKDAYFL": int(weekday <= 5),
        }
        for name, value in row.items():
            columns[name].append(value)
    return pa.Table.from_pydict(columns, schema=_SCHEMAS["DATES"])


# The block of the orphan rows' random stream: past any real block (a block holds 65,536 orders).
_ORPHAN_BLOCK = 1 << 30
# Orphan row i misses the lookup row of _ORPHAN_KEYS[i % 3]: (LINEORDER column index, lookup).
_ORPHAN_KEYS = ((2, "customer"), (4, "supplier"), (3, "part"))


def _write_lineorder(out: Path, seed: int, counts: dict[str, int], report: Progress, orphans: int = 0) -> None:
    total = counts["lineorder"]
    report("LINEORDER", 0, total)
    sink = _ParquetSink(out / "LINEORDER", _SCHEMAS["LINEORDER"], rows_per_file=_LINEORDER_ROWS_PER_FILE)
    done = orders = block = 0
    while done < total:
        table, block_orders = _lineorder_block(seed, block, orders, total - done, counts)
        sink.write(table)
        done += table.num_rows
        orders += block_orders
        block += 1
        if done < total:
            report("LINEORDER", done, total)
    if orphans:
        sink.write(_orphan_rows(seed, orders, orphans, counts))
    sink.close()
    report("LINEORDER", total, total)


def _orphan_rows(seed: int, orders: int, n: int, counts: dict[str, int]) -> pa.Table:
    """`n` lines of new orders after the `orders` generated, each with one key past its lookup's keys."""
    table, _ = _lineorder_block(seed, _ORPHAN_BLOCK, orders, n, counts)
    rows = np.arange(n)
    for turn, (column, lookup) in enumerate(_ORPHAN_KEYS):
        keys = table.column(column).to_numpy().copy()
        own = rows % len(_ORPHAN_KEYS) == turn
        keys[own] = counts[lookup] + 1 + rows[own]  # no lookup row has a key above its row count
        field = table.schema.field(column)
        table = table.set_column(column, field, pa.array(keys, type=field.type))
    return table


def _lineorder_block(
    seed: int, block: int, first_order: int, remaining: int, counts: dict[str, int]
) -> tuple[pa.Table, int]:
    """Lines of orders `first_order+1 ..`, at most `remaining` rows; returns the table and its order count."""
    # Line counts have their own stream so that block offsets could be computed without the rest.
    lines = _rng("LINEORDER", block, 0, seed).integers(1, 8, _LINEORDER_BLOCK_ORDERS)
    ends = np.cumsum(lines)
    if ends[-1] >= remaining:  # last block: keep the orders needed and cut the last one short
        n_orders = int(np.searchsorted(ends, remaining)) + 1
        lines = lines[:n_orders]
        ends = ends[:n_orders].copy()
        ends[-1] = remaining
        lines[-1] = remaining - (ends[-2] if n_orders > 1 else 0)
    n_orders, rows = len(lines), int(ends[-1])
    starts = ends - lines

    rng = _rng("LINEORDER", block, 1, seed)
    # Per-order attributes, spread over the order's lines.
    order_of_row = np.repeat(np.arange(n_orders), lines)
    custkey = rng.integers(1, counts["customer"] + 1, n_orders, dtype=np.int32)[order_of_row]
    orderdate = rng.integers(0, _ORDER_DAYS, n_orders)[order_of_row]
    priority = rng.integers(0, len(_PRIORITIES), n_orders)[order_of_row]
    # Per-line attributes.
    partkey = rng.integers(1, counts["part"] + 1, rows, dtype=np.int32)
    suppkey = rng.integers(1, counts["supplier"] + 1, rows, dtype=np.int32)
    quantity = rng.integers(1, 51, rows)
    discount = rng.integers(0, 11, rows)
    tax = rng.integers(0, 9, rows)
    commitdate = orderdate + rng.integers(30, 91, rows)
    shipmode = rng.integers(0, len(_SHIPMODES), rows)

    pk = partkey.astype(np.int64)
    retail = 90_000 + (pk // 10) % 20_001 + 100 * (pk % 1000)  # TPC-H P_RETAILPRICE in cents
    extended = quantity * retail
    charged = extended * (100 - discount) * (100 + tax) // 10_000
    order_total = np.add.reduceat(charged, starts)[order_of_row]
    columns = [
        pa.array(first_order + 1 + order_of_row),
        pa.array((np.arange(rows) - starts[order_of_row] + 1).astype(np.int32)),
        pa.array(custkey),
        pa.array(partkey),
        pa.array(suppkey),
        _dates(orderdate),
        _pick(_D_PRIORITIES, priority),
        _D_SHIPPRIORITY.take(pa.array(np.zeros(rows, dtype=np.int32))),
        pa.array(quantity),
        pa.array(extended),
        pa.array(order_total),
        pa.array(discount),
        pa.array(extended * (100 - discount) // 100),
        pa.array(6 * retail // 10),
        pa.array(tax),
        _dates(commitdate),
        _pick(_D_SHIPMODES, shipmode),
    ]
    return pa.Table.from_arrays(columns, schema=_SCHEMAS["LINEORDER"]), n_orders
