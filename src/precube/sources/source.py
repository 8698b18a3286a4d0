"""Where a table's rows come from: a directory of Parquet or CSV files, or a Spark catalog table.

Each kind implements `TableSource`; `source_for(table)` picks the implementation from the table's
`source_type` (`SOURCES` is the registry). File schemas are read with pyarrow, so registering a file
table needs no JVM. Rows are read through Spark, except the few rows of a tiny segment: a Parquet table whose
columns Spark and pyarrow read alike can also be read on the driver (`FileSource.read_arrow`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from precube.metadata import Column, SourceType, Table
from precube.metadata.csv_options import ENCODINGS, CsvOptions
from precube.sources import csv_files, types
from precube.sources.errors import UnreadableSourceError
from precube.sources.scan_plan import (
    ColumnRange,
    DataFile,
    ScanPlan,
    Value,
    hive_values,
    integer_ranges,
    plan_scan,
)

if TYPE_CHECKING:
    import pyarrow.dataset as pads
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

SparkProvider = Callable[[], "SparkSession"]


class TableSource(Protocol):
    source_type: SourceType

    def describe(self) -> str:
        """Where the rows are, for messages."""
        ...

    def schema(self, spark: SparkProvider) -> list[tuple[str, str]]:
        """Column names (upper case) and Kylin types, read from the source now."""
        ...

    def read(self, spark: SparkSession, columns: list[Column]) -> DataFrame:
        """The rows as a Spark DataFrame with the registered column names and types."""
        ...

    def plan(self, rng: ColumnRange | None, parse: Callable[[str], Value] | None) -> ScanPlan | None:
        """Which files can hold `rng` (None: all rows), from the files alone; None when the source cannot tell
        (read it all)."""
        ...

    def read_files(self, spark: SparkSession, columns: list[Column], files: Sequence[str]) -> DataFrame:
        """`read`, of a plan's files only (the source's schema even when there are none)."""
        ...

    def integer_ranges(self, columns: Sequence[str], files: Sequence[str] | None) -> dict[str, tuple[int, int]]:
        """(min, max) of the integer `columns` (upper case) that the source's own metadata bounds, over `files`
        (None: all), from the files alone; the others are left out."""
        ...

    def read_arrow(
        self, files: Sequence[str] | None, rng: ColumnRange | None, max_values: int | None = None
    ) -> tuple[pa.Table, StructType] | None:
        """The rows of `files` (None: all) that may fall in `rng`, read on the driver as Spark would read them,
        and their Spark schema; None when that cannot be promised (Spark must read them) or the files hold more
        than `max_values` values (rows times columns, before the range: none are read then)."""
        ...


class FileSource:
    """A directory (or single file) of Parquet or CSV files; a Parquet directory may be partitioned Hive-style
    (`COLUMN=value/` directories): the partition columns are columns of the table."""

    def __init__(self, source_type: SourceType, location: str, options: dict[str, str]) -> None:
        self.source_type = source_type
        self.location = location
        self.options = options

    @property
    def csv(self) -> CsvOptions:
        return CsvOptions.of(self.options)

    def describe(self) -> str:
        return f"{self.source_type.name.lower()} files at {self.location}"

    def _dataset(self) -> pads.Dataset:
        import pyarrow.dataset as pads  # 0.6 s to import: a server answering queries never needs it

        path = Path(self.location)
        if not path.exists():
            raise UnreadableSourceError(f"cannot read {self.describe()}: no such file or directory")
        fmt: str | pads.FileFormat = "parquet"
        if self.source_type is SourceType.CSV:
            csv = self.csv
            escape = csv.escape if csv.escape not in (None, csv.quote) else False
            fmt = pads.CsvFileFormat(
                parse_options=pacsv.ParseOptions(delimiter=csv.delimiter, quote_char=csv.quote, escape_char=escape),
                read_options=pacsv.ReadOptions(
                    autogenerate_column_names=not csv.header, encoding=ENCODINGS[csv.encoding][2]
                ),
            )
        # Hive-style directories give Parquet tables columns (typed int or string, as pyarrow infers them)
        partitioning = "hive" if self.source_type is SourceType.PARQUET and path.is_dir() else None
        try:
            dataset = pads.dataset(str(path), format=fmt, partitioning=partitioning)
            if not dataset.files:
                raise UnreadableSourceError(f"cannot read {self.describe()}: the directory holds no data files")
            return dataset
        except (pa.ArrowException, OSError) as err:
            reason = str(err).splitlines()[0]
            raise UnreadableSourceError(f"cannot read {self.describe()}: {reason}") from err

    def schema(self, spark: SparkProvider) -> list[tuple[str, str]]:
        """The declared columns of a CSV source, else those its files give; a CSV's files are checked
        against them first (`csv_files.check_files`), so what the engines cannot read fails now."""
        if self.source_type is not SourceType.CSV:
            return [(f.name.upper(), types.from_arrow(f.type)) for f in self._dataset().schema]
        csv, files = self.csv, self._csv_files()
        csv_files.check_decodes(files, csv)
        if csv.columns is not None:
            columns = list(csv.columns)  # declared: nothing to infer
        else:
            columns = [(f.name.upper(), types.from_arrow(f.type)) for f in self._dataset().schema]
        csv_files.check_rows(files, csv, columns)
        return columns

    def _csv_files(self) -> list[Path]:
        """The data files under the location (as a dataset finds them: names starting with `.` or `_` are
        not data)."""
        path = Path(self.location)
        if path.is_file():
            return [path]
        if not path.exists():
            raise UnreadableSourceError(f"cannot read {self.describe()}: no such file or directory")
        found = sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
        )
        if not found:
            raise UnreadableSourceError(f"cannot read {self.describe()}: the directory holds no data files")
        return found

    def read(self, spark: SparkSession, columns: list[Column]) -> DataFrame:
        if self.source_type is SourceType.PARQUET:
            return self._parquet(spark, columns, self.data_files())
        files = [str(f.resolve()) for f in self._csv_files()]
        ddl = ", ".join(f"`{c.case_sensitive_name or c.name}` {types.to_spark(c.datatype)}" for c in columns)
        return _rename_upper(spark.read.options(**self.csv.spark_options()).csv(files, schema=ddl))

    def data_files(self) -> list[DataFile]:
        """The data files of the table, with the partition values their directories give them."""
        root = Path(self.location).resolve()
        found = [Path(f).resolve() for f in self._dataset().files]
        return [DataFile(str(f), hive_values(root, f) if root.is_dir() else {}) for f in found]

    def plan(self, rng: ColumnRange | None, parse: Callable[[str], Value] | None) -> ScanPlan | None:
        if self.source_type is not SourceType.PARQUET:
            return None
        return plan_scan(self.describe(), self.data_files(), rng, parse)

    def integer_ranges(self, columns: Sequence[str], files: Sequence[str] | None) -> dict[str, tuple[int, int]]:
        if self.source_type is not SourceType.PARQUET:
            return {}
        return integer_ranges(files if files is not None else [f.path for f in self.data_files()], columns)

    def read_files(self, spark: SparkSession, columns: list[Column], files: Sequence[str]) -> DataFrame:
        from pyspark.sql import functions as F  # noqa: N812

        every = self.data_files()
        wanted = {str(Path(f).resolve()) for f in files}
        chosen = [f for f in every if f.path in wanted]
        if not chosen:  # nothing can hold the range: no rows, with the schema of one file (no data read)
            return self._parquet(spark, columns, every[:1]).where(F.lit(False))
        return self._parquet(spark, columns, chosen, keys={k for f in every for k in f.partition})

    def read_arrow(
        self, files: Sequence[str] | None, rng: ColumnRange | None, max_values: int | None = None
    ) -> tuple[pa.Table, StructType] | None:
        """The rows of `files` (None: all) that may fall in `rng` (None: all rows), read with pyarrow, and the
        Spark schema Spark's reader gives them (column names upper case, every column nullable); None when
        pyarrow could read them otherwise than Spark: CSV, partition directories, a column type Spark infers
        differently (`_spark_schema`), or a range it cannot compare the column with. The range is applied with the
        bounds the plan prunes row groups with: a superset of its rows, which Spark's own predicate narrows."""
        from pyspark.sql.types import StructField, StructType

        if self.source_type is not SourceType.PARQUET:
            return None
        every = self.data_files()
        if any(f.partition for f in every):
            return None
        paths = [f.path for f in every] if files is None else [str(Path(f).resolve()) for f in files]
        schema = _spark_schema(paths[0]) if paths else None
        if schema is None:
            return None
        if max_values is not None and sum(pq.read_metadata(p).num_rows for p in paths) * len(schema) > max_values:
            return None
        import pyarrow.dataset as pads

        dataset = pads.dataset(paths, format="parquet")
        where = _arrow_range(dataset.schema, rng) if rng is not None else pc.scalar(True)
        if where is None:
            return None
        try:
            table = dataset.to_table(filter=where)
        except pa.ArrowException:  # files of differing schemas, say: Spark copes or says why
            return None
        table = table.rename_columns([c.upper() for c in table.column_names])
        return table, StructType([StructField(f.name.upper(), f.dataType, True) for f in schema.fields])

    def _parquet(
        self, spark: SparkSession, columns: list[Column], files: Sequence[DataFile], keys: set[str] | None = None
    ) -> DataFrame:
        from pyspark.sql import functions as F  # noqa: N812

        paths = [f.path for f in files]
        keys = {k for f in files for k in f.partition} if keys is None else keys
        if not keys:
            schema = _spark_schema(paths[0]) if paths else None
            return _rename_upper((spark.read.schema(schema) if schema is not None else spark.read).parquet(*paths))
        # the partition directories' values typed as the table registered them, which is pyarrow's inference
        # (Spark's differs: a `1998-08-01` directory is a string to one and a date to the other)
        df = _rename_upper(spark.read.option("basePath", str(Path(self.location).resolve())).parquet(*paths))
        registered = {c.name: types.to_spark(c.datatype) for c in columns}
        return df.select(
            *[F.col(c).cast(registered[c]).alias(c) if c in keys & registered.keys() else c for c in df.columns]
        )


class CatalogSource:
    """A table of the Spark session's catalog, named `DB.TABLE`."""

    source_type = SourceType.SPARK

    def __init__(self, identity: str) -> None:
        self.identity = identity

    def describe(self) -> str:
        return f"Spark catalog table {self.identity}"

    def schema(self, spark: SparkProvider) -> list[tuple[str, str]]:
        session = spark()
        if not session.catalog.tableExists(self.identity):
            raise UnreadableSourceError(f"cannot read {self.describe()}: no such table in the catalog")
        fields = session.table(self.identity).schema.fields
        return [(f.name.upper(), types.from_spark(f.dataType.simpleString())) for f in fields]

    def read(self, spark: SparkSession, columns: list[Column]) -> DataFrame:
        return _rename_upper(spark.table(self.identity))

    def plan(self, rng: ColumnRange | None, parse: Callable[[str], Value] | None) -> ScanPlan | None:
        return None  # the catalog prunes its own partitions from the range filter

    def read_files(self, spark: SparkSession, columns: list[Column], files: Sequence[str]) -> DataFrame:
        raise UnreadableSourceError(f"{self.describe()} is read whole, not by files")

    def integer_ranges(self, columns: Sequence[str], files: Sequence[str] | None) -> dict[str, tuple[int, int]]:
        return {}  # only a query would tell

    def read_arrow(
        self, files: Sequence[str] | None, rng: ColumnRange | None, max_values: int | None = None
    ) -> tuple[pa.Table, StructType] | None:
        return None  # only Spark reads the catalog


# Arrow types whose Spark type is the one Spark infers from the Parquet column (INT96 timestamps, unsigned,
# dictionary and nested columns are left to Spark's inference).
_PLAIN = (
    pa.types.is_boolean,
    pa.types.is_signed_integer,
    pa.types.is_floating,
    pa.types.is_decimal,
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_date32,
)


def _spark_schema(path: str) -> StructType | None:
    """The Spark schema of a Parquet file from its footer, when every column is plain (else None: Spark
    infers it, which costs a job): given to the reader, it spares that job on every read."""
    from pyspark.sql.pandas.types import from_arrow_schema

    meta = pq.read_metadata(path)
    arrow = meta.schema.to_arrow_schema()
    physical = {meta.schema.column(i).name: meta.schema.column(i).physical_type for i in range(meta.num_columns)}
    for f in arrow:
        timestamp = pa.types.is_timestamp(f.type) and f.type.unit in ("ms", "us") and physical.get(f.name) == "INT64"
        if not (timestamp or any(plain(f.type) for plain in _PLAIN)) or f.name not in physical:
            return None
    schema: StructType = from_arrow_schema(arrow)
    return schema


def _arrow_range(schema: pa.Schema, rng: ColumnRange) -> pc.Expression | None:
    """`low <= column < high` for pyarrow, when the column's type compares with the bounds as Spark's does
    (an integer with an int, a string with a str, a date with a date); None otherwise."""
    field = next((f for f in schema if f.name.upper() == rng.column.upper()), None)
    if field is None:
        return None
    checks = {int: pa.types.is_integer, str: pa.types.is_string, dt.date: pa.types.is_date32}
    bounds = [b for b in (rng.low, rng.high) if b is not None]
    if not all(type(b) in checks and checks[type(b)](field.type) for b in bounds):
        return None
    where = pc.field(field.name) >= rng.low
    return where if rng.high is None else where & (pc.field(field.name) < rng.high)


def _rename_upper(df: DataFrame) -> DataFrame:
    return df.toDF(*[c.upper() for c in df.columns])


SOURCES: dict[SourceType, Callable[[Table], TableSource]] = {
    SourceType.PARQUET: lambda t: FileSource(SourceType.PARQUET, t.location or "", t.source_properties),
    SourceType.CSV: lambda t: FileSource(SourceType.CSV, t.location or "", t.source_properties),
    SourceType.SPARK: lambda t: CatalogSource(t.identity),
}


def source_for(table: Table) -> TableSource:
    factory = SOURCES.get(table.source_type)
    if factory is None:
        raise UnreadableSourceError(f"table {table.identity} has source type {table.source_type}, not readable")
    return factory(table)


PARQUET_SUFFIXES = frozenset({".parquet", ".parq"})
CSV_SUFFIXES = frozenset({".csv", ".tsv", ".txt"})


def detect_file_type(path: Path) -> SourceType:
    """PARQUET or CSV from the file names under `path`."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    suffixes = {p.suffix.lower() for p in files if not p.name.startswith(("_", "."))}
    if suffixes & PARQUET_SUFFIXES:
        return SourceType.PARQUET
    if suffixes & CSV_SUFFIXES:
        return SourceType.CSV
    if not path.exists():
        raise UnreadableSourceError(f"cannot read {path}: no such file or directory")
    raise UnreadableSourceError(f"cannot tell the format of {path}: give --format parquet or --format csv")
