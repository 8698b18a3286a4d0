"""The root of every error precube raises on purpose.

Each domain package defines one base class under `PrecubeError` and its specific errors below that.
Every error has a stable `code` (for the CLI, the REST API and tests) and says whether retrying the
same call may succeed (`retryable`), e.g. a version conflict or an unreachable server, and whether it follows
from the call alone (`deterministic`), e.g. a syntax error, so an identical call fails the same way.
"""

from __future__ import annotations


class PrecubeError(Exception):
    """Base of all precube errors; `str(err)` is one line a user can act on."""

    code: str = "PRECUBE_ERROR"
    retryable: bool = False
    # The failure follows from the statement and what it names (its text, the metadata, the caller's rights), not
    # from the run (an engine failure, a timeout, a bound, a cancel): an identical concurrent statement would fail
    # the same way, so the result cache's single flight hands it to the waiters instead of running it again.
    deterministic: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInputError(PrecubeError):
    """A value given by the user is malformed or refers to something that does not exist."""

    code = "INVALID_INPUT"
    deterministic = True


class UnsupportedError(PrecubeError):
    """A feature a client asked for that precube does not offer (a Flight SQL update, a transaction)."""

    code = "NOT_SUPPORTED"
    deterministic = True


class ConfigError(PrecubeError):
    """The settings cannot be loaded or are inconsistent."""

    code = "CONFIG_ERROR"


class EnvironmentMissingError(PrecubeError):
    """Something precube needs from the machine (Java, a server) is missing; the message gives the fix."""

    code = "ENVIRONMENT_MISSING"
