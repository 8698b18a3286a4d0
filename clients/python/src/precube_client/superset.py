"""Apache Superset's engine spec for precube, found by Superset through the `superset.db_engine_specs` entry
point: engine `precube`, its SQLAlchemy URLs, time grains (`time_grains`), datetime literals. Imported only by
Superset (precube does not depend on it)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from superset.db_engine_specs.base import BaseEngineSpec

from precube_client.time_grains import EPOCH_MS_TO_DATETIME, EPOCH_TO_DATETIME, TIME_GRAIN_EXPRESSIONS, datetime_literal


class PrecubeEngineSpec(BaseEngineSpec):  # type: ignore[misc]  # (Superset is untyped here)
    engine = "precube"
    engine_name = "precube"
    engine_aliases = {"precube+http", "precube+https"}  # noqa: RUF012 (Superset's class settings)
    default_driver = "http"
    sqlalchemy_uri_placeholder = "precube+http://USER:PASSWORD@HOST:7070/PROJECT"
    allows_joins = True
    allows_subqueries = True
    allows_alias_in_select = True
    allows_alias_in_orderby = True
    allows_sql_comments = True
    supports_file_upload = False
    supports_dynamic_schema = False
    _time_grain_expressions = TIME_GRAIN_EXPRESSIONS

    @classmethod
    def epoch_to_dttm(cls) -> str:
        return EPOCH_TO_DATETIME

    @classmethod
    def epoch_ms_to_dttm(cls) -> str:
        return EPOCH_MS_TO_DATETIME

    @classmethod
    def convert_dttm(cls, target_type: str, dttm: datetime, db_extra: dict[str, Any] | None = None) -> str | None:
        return datetime_literal(target_type, dttm.isoformat(sep="T", timespec="microseconds"))
