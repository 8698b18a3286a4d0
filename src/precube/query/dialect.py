"""precube's SQL dialect: Spark's grammar with Calcite's (Kylin's) quoting, `"name"` and `` `name` `` for
identifiers and `'text'` for strings, and case-insensitive names. Its own module, needing only sqlglot, so a
client (the DB-API's parameter binding) can use it without the query engine."""

from __future__ import annotations

from sqlglot.dialects.dialect import NormalizationStrategy
from sqlglot.dialects.spark import Spark


class Precube(Spark):
    """Spark SQL, with double quotes for identifiers (as Calcite and ANSI) and case-insensitive names."""

    NORMALIZATION_STRATEGY = NormalizationStrategy.CASE_INSENSITIVE

    class Tokenizer(Spark.Tokenizer):
        IDENTIFIERS = ["`", '"']  # noqa: RUF012 (sqlglot's tokenizer settings are class attributes)
        QUOTES = ["'"]  # noqa: RUF012


DIALECT = Precube
