"""The in-process backend: the query service over one session (`precube.api.connect`) on the settings' store
and warehouse, as the machine's user (an embedded caller: no directory of users to check)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from precube.api import connect
from precube.errors import PrecubeError
from precube.service.admission import Limits
from precube.service.errors import disposition
from precube.service.principal import Principal
from precube.service.queries import QueryService
from precube.service.sessions import Sessions
from precube.settings import Settings
from precube_client.errors import error_of

if TYPE_CHECKING:
    from precube.cache import CachedSession
    from precube.query.session import Session


@contextmanager
def _mapped() -> Iterator[None]:
    """precube's errors raised as PEP 249's, by the service's map (`precube.service.errors`)."""
    try:
        yield
    except PrecubeError as err:
        how = disposition(err)
        raise error_of(err.message, err.code, how.sqlstate, retryable=how.retryable) from err


class LocalBackend:
    """A session over `project`, opened as `precube.connect` opens one (home, config file or settings)."""

    def __init__(
        self,
        project: str,
        *,
        home: str | Path | None = None,
        config: str | Path | None = None,
        settings: Settings | None = None,
        engine: str | None = None,
        user: str | None = None,
        session: Session | CachedSession | None = None,
    ) -> None:
        self.project = project
        with _mapped():
            self.session = session or connect(
                project, home=home, config=config, settings=settings, engine=engine, user=user
            )
        self._owned = session is None
        self.principal = Principal(self.session.user, project, trusted=True)
        self.queries = QueryService(Sessions.of(self.session), None, Limits.of(self.session.settings))

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] | None = None) -> pa.Table:
        with _mapped():  # a parameter refused is mapped as every error: by its SQLSTATE
            return self.queries.execute(self.principal, sql, parameters).table

    def default_database(self) -> str:
        with _mapped():
            return str(self.queries.metadata(self.principal).default_database).upper()

    def close(self) -> None:
        self.queries.close()
        if self._owned:
            self.session.close()
