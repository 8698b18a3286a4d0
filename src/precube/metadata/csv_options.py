"""How a CSV source is read (`Table.source_properties`), in one place for every reader: Spark for the build
(`spark_options`), DuckDB for pushdown (`duckdb_arguments`), pyarrow when a table is loaded. Both engines get
the same delimiter, quote, escape, null marker, header and encoding, and read the columns by position with
the registered names and types, so a build and a pushdown see the same rows.

Null fields are those of Spark's CSV reader: an empty unquoted field and the null marker are NULL, a quoted
empty field (`""`) is an empty string.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# encodings both engines read natively: canonical name → (Spark's name, DuckDB's name, Python's codec)
ENCODINGS = {
    "utf-8": ("UTF-8", "utf-8", "utf-8"),
    "latin-1": ("ISO-8859-1", "latin-1", "latin-1"),
    "utf-16": ("UTF-16", "utf-16", "utf-16"),
}
_ENCODING_ALIASES = {
    "utf8": "utf-8",
    "latin1": "latin-1",
    "iso-8859-1": "latin-1",
    "iso8859-1": "latin-1",
    "iso_8859_1": "latin-1",
    "l1": "latin-1",
    "utf16": "utf-16",
}


def encoding_name(text: str) -> str | None:
    """The canonical name of an encoding both engines read, or None."""
    lowered = text.strip().lower()
    name = _ENCODING_ALIASES.get(lowered, lowered)
    return name if name in ENCODINGS else None


@dataclass(frozen=True)
class CsvOptions:
    header: bool = True
    delimiter: str = ","
    quote: str = '"'
    escape: str | None = None  # None: each engine's default (tables loaded before the option existed)
    null: str | None = None  # a marker read as NULL besides the empty field
    encoding: str = "utf-8"
    columns: tuple[tuple[str, str], ...] | None = None  # declared (name, type), by position; None: inferred

    @classmethod
    def of(cls, properties: dict[str, str]) -> CsvOptions:
        declared = properties.get("columns")
        return cls(
            header=properties.get("header", "true").lower() == "true",
            delimiter=properties.get("delimiter", ","),
            quote=properties.get("quote", '"'),
            escape=properties.get("escape"),
            null=properties.get("null"),
            encoding=encoding_name(properties.get("encoding", "utf-8")) or "utf-8",
            columns=tuple((str(n), str(t)) for n, t in json.loads(declared)) if declared else None,
        )

    def properties(self) -> dict[str, str]:
        found = {
            "header": str(self.header).lower(),
            "delimiter": self.delimiter,
            "quote": self.quote,
            "encoding": self.encoding,
        }
        if self.escape is not None:
            found["escape"] = self.escape
        if self.null is not None:
            found["null"] = self.null
        if self.columns is not None:
            found["columns"] = json.dumps([list(c) for c in self.columns])
        return found

    def spark_options(self) -> dict[str, str]:
        """Options of Spark's CSV reader (besides the schema)."""
        found = {
            "header": str(self.header).lower(),
            "sep": self.delimiter,
            "quote": self.quote,
            "encoding": ENCODINGS[self.encoding][0],
        }
        if self.escape is not None:
            found["escape"] = self.escape
        if self.null is not None:
            found["nullValue"] = self.null
        if self.encoding == "utf-16":  # Spark splits lines of UTF-16 wrongly (rows lost or shifted) otherwise
            found["multiLine"] = "true"
        return found

    def duckdb_arguments(self) -> str:
        """The arguments of DuckDB's `read_csv` after the file list and before `names` (all text is read as
        VARCHAR and cast to the registered types by the caller)."""
        nulls = ", ".join(_sql_string(v) for v in ([self.null] if self.null is not None else []) + [""])
        parts = [
            f"header={str(self.header).lower()}",
            f"delim={_sql_string(self.delimiter)}",
            f"quote={_sql_string(self.quote)}",
            f"nullstr=[{nulls}]",
            "allow_quoted_nulls=false",
            f"encoding={_sql_string(ENCODINGS[self.encoding][1])}",
        ]
        if self.escape is not None:
            parts.append(f"escape={_sql_string(self.escape)}")
        return ", ".join(parts)


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
