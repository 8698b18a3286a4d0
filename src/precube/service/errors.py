"""The one map from precube's errors to what every door answers: an HTTP status (REST), a SQLSTATE (the
Postgres wire, and through it the PEP 249 class of the DB-API), a gRPC status code (Arrow Flight SQL) and
whether retrying may succeed.

`disposition(err)` walks `type(err).__mro__` to the nearest class in `_TABLE`: a domain's base class gives
every error below it its answer, and only the specific errors that differ are listed. `PrecubeError` itself is
the default, input a user can change (400, 42000). SQLSTATEs keep PostgreSQL's meaning, so a Postgres driver
raises its own matching exception; the DB-API derives its PEP 249 class from the SQLSTATE by psycopg's rule
(`precube_client.errors.class_of`). `retryable` is the error's own attribute (its class's, or the instance's
when it sets one), never a second table.

How `retryable` shows per door:
- REST: a retryable failure is answered with `Retry-After: 1` and `"retryable": true` in the failure
  envelope, beside `"sqlstate"` (`precube.server.envelope.error`).
- The Postgres wire: the ErrorResponse's SQLSTATE alone, as PostgreSQL does it; its class already tells a
  driver or pool to retry (40001 serialization_failure, 53300 too_many_connections,
  57014 query_canceled, 58000 system_error).
- The DB-API: the error's `.retryable` and `.sqlstate`, from this map in process and from the envelope's
  fields through a server.
- Arrow Flight SQL: the gRPC code, as closely as pyarrow's server can send it (`precube.server.flight.errors`);
  the retryable errors are UNAVAILABLE, the code gRPC clients retry.
"""

from __future__ import annotations

from dataclasses import dataclass

from precube.auth.errors import (
    AccessDeniedError,
    AuthenticationError,
    SignInLockedError,
    SignInThrottledError,
    UnknownUserError,
    UserExistsError,
)
from precube.cache.errors import CacheError
from precube.engine.errors import BuildConflictError, BuildError
from precube.errors import ConfigError, EnvironmentMissingError, PrecubeError, UnsupportedError
from precube.jobs.errors import InsufficientDiskSpaceError, JobConflictError, JobError, ModelNotBuildableError
from precube.metadata.errors import (
    AlreadyExistsError,
    InvalidKeyError,
    MetadataError,
    NotFoundError,
    StoreUnavailableError,
    VersionConflictError,
)
from precube.metadata.job import InvalidJobStateError
from precube.query.errors import (
    AmbiguousColumnError,
    DivisionByZeroError,
    EngineError,
    ForbiddenSqlError,
    InvalidTextError,
    LayoutReadError,
    NestingTooDeepError,
    NoLayoutError,
    NumericRangeError,
    OperatorTypeError,
    PushdownError,
    QueryCancelledError,
    QueryMemoryError,
    QueryTimeoutError,
    ReadOnlyStatementError,
    ResultTooLargeError,
    SqlSyntaxError,
    StatementTooLargeError,
    TypeMismatchError,
    UnknownColumnError,
    UnknownFunctionError,
    UnknownObjectError,
    UnknownTableError,
)
from precube.service.admission import AdmissionError
from precube.service.parameters import ParameterError, ParameterMarksError
from precube.sources.errors import UnreadableSourceError, UnsupportedTypeError
from precube.sources.roots import SourceAccessError

# gRPC's status codes by name (Arrow Flight SQL answers with one of them)
GRPC_CODES = frozenset(
    {
        "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
        "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
        "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Disposition:
    """How every door answers one error."""

    http_status: int
    sqlstate: str
    grpc: str
    retryable: bool


# By error class: (HTTP status, SQLSTATE with PostgreSQL's condition name, gRPC code). 4xx: the caller can fix
# it; 5xx: the server or the store failed.
_TABLE: dict[type[PrecubeError], tuple[int, str, str]] = {
    PrecubeError: (400, "42000", "INVALID_ARGUMENT"),  # syntax_error_or_access_rule_violation
    ConfigError: (500, "F0000", "INTERNAL"),  # config_file_error: the server's settings, not the request
    EnvironmentMissingError: (503, "58000", "FAILED_PRECONDITION"),  # system_error; needs a fix, not a retry
    UnsupportedError: (400, "0A000", "UNIMPLEMENTED"),  # feature_not_supported
    # metadata
    MetadataError: (500, "XX000", "INTERNAL"),  # internal_error: a malformed document, a misused transaction
    NotFoundError: (404, "3D000", "NOT_FOUND"),  # invalid_catalog_name: on the wire, the project connected to
    AlreadyExistsError: (409, "42710", "ALREADY_EXISTS"),  # duplicate_object
    VersionConflictError: (409, "40001", "ABORTED"),  # serialization_failure: a retry reads the new version
    InvalidKeyError: (400, "42602", "INVALID_ARGUMENT"),  # invalid_name
    StoreUnavailableError: (503, "58000", "UNAVAILABLE"),  # system_error
    InvalidJobStateError: (409, "55000", "FAILED_PRECONDITION"),  # object_not_in_prerequisite_state
    # users and permissions
    AuthenticationError: (401, "28P01", "UNAUTHENTICATED"),  # invalid_password
    SignInLockedError: (401, "28000", "UNAUTHENTICATED"),  # invalid_authorization_specification: until it ends
    SignInThrottledError: (429, "08004", "UNAVAILABLE"),  # sqlserver_rejected_establishment_of_sqlconnection
    AccessDeniedError: (403, "42501", "PERMISSION_DENIED"),  # insufficient_privilege
    UnknownUserError: (404, "42704", "NOT_FOUND"),  # undefined_object
    UserExistsError: (409, "42710", "ALREADY_EXISTS"),  # duplicate_object
    # queries
    SqlSyntaxError: (400, "42601", "INVALID_ARGUMENT"),  # syntax_error
    StatementTooLargeError: (400, "54000", "INVALID_ARGUMENT"),  # program_limit_exceeded
    NestingTooDeepError: (400, "54001", "INVALID_ARGUMENT"),  # statement_too_complex
    UnknownObjectError: (400, "42704", "NOT_FOUND"),  # undefined_object
    UnknownTableError: (400, "42P01", "NOT_FOUND"),  # undefined_table
    UnknownColumnError: (400, "42703", "NOT_FOUND"),  # undefined_column
    AmbiguousColumnError: (400, "42702", "INVALID_ARGUMENT"),  # ambiguous_column
    UnknownFunctionError: (400, "42883", "NOT_FOUND"),  # undefined_function
    ReadOnlyStatementError: (400, "25006", "INVALID_ARGUMENT"),  # read_only_sql_transaction
    NoLayoutError: (400, "55000", "FAILED_PRECONDITION"),  # object_not_in_prerequisite_state: build one first
    PushdownError: (400, "0A000", "UNIMPLEMENTED"),  # feature_not_supported
    ForbiddenSqlError: (400, "42501", "PERMISSION_DENIED"),  # insufficient_privilege
    QueryTimeoutError: (503, "57014", "DEADLINE_EXCEEDED"),  # query_canceled
    QueryCancelledError: (400, "57014", "CANCELLED"),  # query_canceled: the client asked for it
    ResultTooLargeError: (400, "54000", "RESOURCE_EXHAUSTED"),  # program_limit_exceeded: [query] max_result_*
    QueryMemoryError: (503, "53200", "RESOURCE_EXHAUSTED"),  # out_of_memory: past the engine's memory bound
    AdmissionError: (503, "53300", "UNAVAILABLE"),  # too_many_connections: no slot to run it now; retry
    EngineError: (400, "22000", "INVALID_ARGUMENT"),  # data_exception: an overflow, a bad value in the SQL
    TypeMismatchError: (400, "42804", "INVALID_ARGUMENT"),  # datatype_mismatch: CASE/COALESCE/BETWEEN types
    OperatorTypeError: (400, "42883", "INVALID_ARGUMENT"),  # undefined_function: no operator takes these types
    InvalidTextError: (400, "22P02", "INVALID_ARGUMENT"),  # invalid_text_representation: 'abc' as a number
    DivisionByZeroError: (400, "22012", "INVALID_ARGUMENT"),  # division_by_zero
    NumericRangeError: (400, "22003", "OUT_OF_RANGE"),  # numeric_value_out_of_range
    LayoutReadError: (500, "58030", "INTERNAL"),  # io_error: the server's layout files
    # parameters bound as literals
    ParameterError: (400, "0A000", "UNIMPLEMENTED"),  # feature_not_supported: a value with no SQL literal
    ParameterMarksError: (400, "42P02", "INVALID_ARGUMENT"),  # undefined_parameter: marks and values disagree
    # the result cache
    CacheError: (503, "58000", "UNAVAILABLE"),  # system_error
    # builds and jobs
    BuildError: (500, "XX000", "INTERNAL"),  # internal_error
    BuildConflictError: (409, "55000", "FAILED_PRECONDITION"),  # object_not_in_prerequisite_state
    JobError: (500, "XX000", "INTERNAL"),  # internal_error
    JobConflictError: (409, "55006", "FAILED_PRECONDITION"),  # object_in_use: an unfinished job covers it
    ModelNotBuildableError: (400, "55000", "FAILED_PRECONDITION"),  # object_not_in_prerequisite_state
    InsufficientDiskSpaceError: (507, "53100", "RESOURCE_EXHAUSTED"),  # disk_full
    # sources
    UnreadableSourceError: (400, "58030", "FAILED_PRECONDITION"),  # io_error, as PostgreSQL's COPY of a bad file
    UnsupportedTypeError: (400, "0A000", "UNIMPLEMENTED"),  # feature_not_supported
    SourceAccessError: (403, "42501", "PERMISSION_DENIED"),  # insufficient_privilege: outside source_roots
}

# An exception precube did not raise on purpose (a bug): the server logs it and answers this
UNEXPECTED = Disposition(500, "XX000", "INTERNAL", retryable=False)


def disposition(err: PrecubeError) -> Disposition:
    """How every door answers `err`: its nearest listed class's status, SQLSTATE and gRPC code, and its own
    `retryable`."""
    # every PrecubeError has PrecubeError, which is listed, in its MRO
    status, sqlstate, grpc = next(_TABLE[kind] for kind in type(err).__mro__ if kind in _TABLE)
    return Disposition(status, sqlstate, grpc, bool(err.retryable))
