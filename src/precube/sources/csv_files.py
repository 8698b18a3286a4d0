"""CSV sources as a user has them: a declared schema (`--columns "ID bigint, PRICE decimal(19,4)"` or a
JSON/YAML file), and the checks a load makes so that a file the engines cannot read fails at load, in one
line naming the file, never at query time:

- the encoding: every byte of every file is decoded (a file that is not valid in it fails with the byte
  offset and line of the first bad sequence);
- the column count: the first rows must have as many fields as the schema has columns;
- the types: a sample of rows is cast to the declared types as pushdown casts them (DuckDB).
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
from sqlglot import exp

from precube.errors import InvalidInputError
from precube.metadata import datatypes
from precube.metadata.csv_options import ENCODINGS, CsvOptions, encoding_name
from precube.sources.errors import UnreadableSourceError, UnsupportedTypeError

SAMPLE_ROWS = 10_000  # rows cast to the declared types at load
COUNT_ROWS = 1_000  # rows whose field count is checked
_CHUNK = 1 << 20
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TYPES = {"tinyint", "smallint", "integer", "bigint", "float", "double", "decimal", "varchar", "char"}
_TYPES |= {"boolean", "date", "timestamp", "binary"}


def check_type(text: str) -> str:
    """The Kylin name of a declared column type (`datatypes.normalize`), or an error naming it."""
    normalized = datatypes.normalize(text)
    base = normalized.split("(", 1)[0]
    if base not in _TYPES or not re.fullmatch(r"[a-z]+(\(\d+(,\d+)?\))?", normalized):
        raise UnsupportedTypeError(f"unknown column type {text.strip()!r}")
    params = [int(p) for p in re.findall(r"\d+", normalized)]
    if base == "decimal":
        precision = params[0] if params else 10  # Spark's DECIMAL is DECIMAL(10,0), DECIMAL(p) is DECIMAL(p,0)
        scale = params[1] if len(params) > 1 else 0
        if not 1 <= precision <= 38 or scale > precision:
            raise UnsupportedTypeError(f"{text.strip()}: a decimal needs 1 <= precision <= 38 and scale <= precision")
        return f"decimal({precision},{scale})"
    if base in ("varchar", "char"):
        return datatypes.STRING if not params else normalized
    if params:
        raise UnsupportedTypeError(f"{text.strip()}: type {base} takes no parameters")
    return normalized


def check_columns(pairs: list[tuple[str, str]], where: str) -> list[tuple[str, str]]:
    """Declared (name, type) pairs, names upper-cased and types normalized; `where` names them in errors."""
    if not pairs:
        raise InvalidInputError(f"{where} declares no column")
    found = []
    for name, datatype in pairs:
        if not _NAME.match(name):
            raise InvalidInputError(f"{where}: invalid column name {name!r} (letters, digits and underscores)")
        found.append((name.upper(), check_type(datatype)))
    names = [n for n, _ in found]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidInputError(f"{where} declares {', '.join(dupes)} more than once")
    return found


def parse_columns(text: str) -> list[tuple[str, str]]:
    """`"ID bigint, PRICE decimal(19,4)"` → [(ID, bigint), (PRICE, decimal(19,4))]."""
    pairs = []
    for part in re.split(r",(?![^(]*\))", text):
        words = part.strip().split(None, 1)
        if len(words) != 2:
            raise InvalidInputError(f"--columns: {part.strip()!r} is not `NAME type`")
        pairs.append((words[0], words[1]))
    return check_columns(pairs, "--columns")


def read_schema_file(path: Path) -> list[tuple[str, str]]:
    """A JSON or YAML list of `{name, type}`."""
    import yaml  # a server imports this module but reads no schema file

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise InvalidInputError(f"cannot read the schema file {path}: {str(err).splitlines()[0]}") from err
    if not isinstance(loaded, list) or not all(isinstance(c, dict) and {"name", "type"} <= set(c) for c in loaded):
        raise InvalidInputError(f"the schema file {path} must hold a list of {{name, type}}")
    return check_columns([(str(c["name"]), str(c["type"])) for c in loaded], f"the schema file {path}")


def check_encoding(text: str) -> str:
    found = encoding_name(text)
    if found is None:
        raise InvalidInputError(f"encoding {text!r} is not one both engines read: use one of {', '.join(ENCODINGS)}")
    return found


def check_decodes(files: list[Path], options: CsvOptions) -> None:
    """Every byte of the files decodes in their encoding, else an UnreadableSourceError of one line (checked
    before anything parses them, which would fail with a less telling message)."""
    for path in files:
        _check_decodes(path, options.encoding)


def check_rows(files: list[Path], options: CsvOptions, columns: list[tuple[str, str]]) -> None:
    """The first rows have as many fields as `columns`, and a sample casts to their types; the first failure
    is an UnreadableSourceError of one line."""
    for path in files:
        _check_field_count(path, options, len(columns))
    _check_types(files, options, columns)


def _check_decodes(path: Path, encoding: str) -> None:
    decoder = codecs.getincrementaldecoder(ENCODINGS[encoding][2])()
    offset, lines = 0, 0
    with path.open("rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as err:
                at = offset + max(err.start, 0)
                line = lines + chunk[: max(err.start, 0)].count(b"\n") + 1
                raise UnreadableSourceError(
                    f"{path} is not valid {encoding} at byte {at} (line {line}): give its encoding (--encoding)"
                ) from err
            if not chunk:
                return
            offset, lines = offset + len(chunk), lines + chunk.count(b"\n")


def _parse_options(options: CsvOptions) -> pacsv.ParseOptions:
    escape = options.escape if options.escape not in (None, options.quote) else False
    return pacsv.ParseOptions(delimiter=options.delimiter, quote_char=options.quote, escape_char=escape)


def _check_field_count(path: Path, options: CsvOptions, expected: int) -> None:
    read = pacsv.ReadOptions(encoding=ENCODINGS[options.encoding][2], autogenerate_column_names=True)
    convert = pacsv.ConvertOptions(column_types={}, check_utf8=False)
    try:
        reader = pacsv.open_csv(
            str(path), read_options=read, parse_options=_parse_options(options), convert_options=convert
        )
        found = len(reader.schema)
        rows = 0
        while rows < COUNT_ROWS:
            rows += reader.read_next_batch().num_rows
    except StopIteration:
        pass
    except pa.ArrowInvalid as err:
        message = str(err).splitlines()[0]
        if "Empty CSV file" in message:
            return
        raise UnreadableSourceError(f"{path}: {message}") from err
    if found != expected:
        raise UnreadableSourceError(f"{path} has {found} fields per row, the schema declares {expected} columns")


def _duck_type(datatype: str) -> str:
    return exp.DataType.build(datatypes.to_spark(datatype), dialect="spark").sql("duckdb")


def _check_types(files: list[Path], options: CsvOptions, columns: list[tuple[str, str]]) -> None:
    """A sample of rows cast to the declared types exactly as pushdown casts them."""
    names = "[" + ", ".join("'" + n.replace("'", "''") + "'" for n, _ in columns) + "]"
    paths = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
    casts = ", ".join(f'CAST("{n}" AS {_duck_type(t)})' for n, t in columns)
    sql = (
        f"SELECT {casts} FROM (SELECT * FROM read_csv({paths}, {options.duckdb_arguments()}, names={names}, "
        f"all_varchar=true) LIMIT {SAMPLE_ROWS})"
    )
    con = duckdb.connect()
    try:
        con.execute(sql).fetchall()
    except duckdb.Error as err:
        where = str(files[0]) if len(files) == 1 else f"the files at {files[0].parent}"
        raise UnreadableSourceError(f"{where}: {str(err).splitlines()[0]}") from err
    finally:
        con.close()
