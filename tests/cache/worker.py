"""A separate query process for the cache tests: `python -m tests.cache.worker '<json>'` runs one query on a
session with a Redis result cache and prints `{"from_cache", "rows"}` as one JSON line. With `delay_s`, each
statement the engine runs first prints `running` and sleeps (a slow query to kill mid-flight)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from precube.cache import CachedSession, ResultCache, open_backend
from precube.metadata import open_store
from precube.query.session import Session
from precube.settings import CacheSettings


def main(config: dict[str, Any]) -> None:
    settings = CacheSettings(
        url=config["redis_url"], min_duration_ms=0, min_scanned_rows=0, flight_expiry_s=config.get("expiry_s", 30.0)
    )
    store = open_store(config["meta_url"])
    session = Session(store, config["project"], config["warehouse"])
    with CachedSession(session, ResultCache(open_backend(settings.url), settings)) as s:
        delay = config.get("delay_s", 0.0)
        if delay:
            real = s.duckdb.execute

            def slow(*args: Any) -> Any:
                print("running", flush=True)
                time.sleep(delay)
                return real(*args)

            s.duckdb.execute = slow  # type: ignore[method-assign]
        result = s.sql(config["sql"])
        print(json.dumps({"from_cache": result.from_cache, "rows": [list(r) for r in result.rows]}), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
