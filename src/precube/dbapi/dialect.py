"""`precube:///PROJECT?home=/var/lib/precube` (or `?config=FILE`): precube's SQLAlchemy dialect over a query
session in this process. Its SQL, types and inspector are the thin client's (`precube_client.dialect`, where
`precube+http://` and `precube+https://` live); this adds the in-process connection."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from sqlalchemy.engine import URL

from precube_client.dialect import PrecubeBaseDialect


class PrecubeDialect(PrecubeBaseDialect):
    """`precube:///PROJECT?home=…`: a session in this process."""

    driver = "local"
    supports_statement_cache = True  # SQLAlchemy asks each subclass to say so itself

    @classmethod
    def import_dbapi(cls) -> ModuleType:
        import precube.dbapi

        return precube.dbapi

    def create_connect_args(self, url: URL) -> tuple[list[Any], dict[str, Any]]:
        project = (url.database or "").strip("/")
        options = {k: v for k, v in url.query.items() if k in ("home", "config", "engine", "user")}
        unknown = sorted(set(url.query) - set(options))
        if unknown:
            raise ValueError(f"unknown option {unknown[0]!r} in the URL: precube:/// takes home, config, engine, user")
        return [], {"project": project, **options}
