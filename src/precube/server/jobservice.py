"""The job service of a server process (to be filled by the jobs work): starts with the server, stops
with it."""

from __future__ import annotations

from typing import Any


class JobService:
    @classmethod
    def start(cls, state: Any) -> JobService:
        return cls()

    def stop(self) -> None:
        return None
