"""PEP 249's exceptions, each carrying precube's one-line message (`str(err)`), its stable error `code`, its
SQLSTATE, whether retrying may succeed (`retryable`) and, for a server's answer, the HTTP `status`; and the rule
that picks the class from the SQLSTATE.

The SQLSTATE of one of precube's errors comes from the service's map (`precube.service.errors`): in process
from the error, through a server from the failure envelope's `sqlstate` and `retryable` (so this half needs
no engine or store). The class follows from the SQLSTATE's class as psycopg 3 derives it, so the DB-API and a
Postgres driver over the wire raise the same PEP 249 class for one error: 22 `DataError`; 23 `IntegrityError`;
0A `NotSupportedError`; 42, 3D, 3F and the other statement classes `ProgrammingError`; 08, 28 (the sign-in),
40 (a conflict a retry resolves), 53, 54 (a statement over a limit), 55 (no layout), 57 (a time-out), 58 (a
store, cache or file down) and F0 (configuration) `OperationalError`; XX `InternalError`; any other
`DatabaseError`. An answer without a SQLSTATE (an older server, a proxy's) goes by its HTTP status: 4xx
`ProgrammingError`, 5xx `InternalError`."""

from __future__ import annotations


class Warning(Exception):  # noqa: N818 (PEP 249's name)
    """PEP 249's warning (precube raises none)."""


class Error(Exception):
    """The base of every error the DB-API raises."""

    def __init__(
        self,
        message: str,
        code: str = "CLIENT_ERROR",
        status: int = 0,
        sqlstate: str | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.message, self.code, self.status = message, code, status
        self.sqlstate = sqlstate  # None for what the driver refuses itself
        self.retryable = retryable


class InterfaceError(Error):
    """The driver was misused (a closed cursor or connection, a fetch before any execute)."""


class DatabaseError(Error):
    """precube refused or failed the statement."""


class DataError(DatabaseError):
    """The data could not be processed (the engine's type error, overflow, division by zero)."""


class OperationalError(DatabaseError):
    """precube could not answer, for a reason outside the statement: the server unreachable, the sign-in
    refused, a time-out, no layout built for the query, a statement over the server's limits, layouts
    unreadable, a store or cache down, a conflicting write."""


class IntegrityError(DatabaseError):
    """PEP 249's (precube writes nothing through SQL: never raised)."""


class InternalError(DatabaseError):
    """precube failed unexpectedly (SQLSTATE XX000; a server's 500 without a SQLSTATE)."""


class ProgrammingError(DatabaseError):
    """The statement is wrong: a syntax error, an unknown table or column, SQL reading outside the project,
    wrong parameters, or no permission on the project."""


class NotSupportedError(DatabaseError):
    """Something precube does not do (transactions, a parameter type, a statement the engine cannot run)."""


# PEP 249's class by the SQLSTATE's class (its first two characters, else its first), as psycopg 3's
# `_base_exc_map` has it
_BY_SQLSTATE_CLASS: dict[str, type[Error]] = {
    "08": OperationalError,  # connection_exception
    "0A": NotSupportedError,  # feature_not_supported
    "10": ProgrammingError,  # XQuery error
    "20": ProgrammingError,  # case_not_found
    "21": ProgrammingError,  # cardinality_violation
    "22": DataError,  # data_exception
    "23": IntegrityError,  # integrity_constraint_violation
    "24": InternalError,  # invalid_cursor_state
    "25": InternalError,  # invalid_transaction_state
    "26": ProgrammingError,  # invalid_sql_statement_name
    "27": OperationalError,  # triggered_data_change_violation
    "28": OperationalError,  # invalid_authorization_specification
    "2B": InternalError,  # dependent_privilege_descriptors_still_exist
    "2D": InternalError,  # invalid_transaction_termination
    "2F": OperationalError,  # sql_routine_exception
    "34": ProgrammingError,  # invalid_cursor_name
    "38": OperationalError,  # external_routine_exception
    "39": OperationalError,  # external_routine_invocation_exception
    "3B": OperationalError,  # savepoint_exception
    "3D": ProgrammingError,  # invalid_catalog_name
    "3F": ProgrammingError,  # invalid_schema_name
    "40": OperationalError,  # transaction_rollback
    "42": ProgrammingError,  # syntax_error_or_access_rule_violation
    "44": ProgrammingError,  # with_check_option_violation
    "53": OperationalError,  # insufficient_resources
    "54": OperationalError,  # program_limit_exceeded
    "55": OperationalError,  # object_not_in_prerequisite_state
    "57": OperationalError,  # operator_intervention
    "58": OperationalError,  # system_error
    "F": OperationalError,  # config_file_error
    "H": OperationalError,  # fdw_error
    "P": ProgrammingError,  # plpgsql_error
    "X": InternalError,  # internal_error
}


def class_of(sqlstate: str) -> type[Error]:
    """PEP 249's class of a SQLSTATE."""
    return _BY_SQLSTATE_CLASS.get(sqlstate[:2]) or _BY_SQLSTATE_CLASS.get(sqlstate[:1]) or DatabaseError


def error_of(message: str, code: str, sqlstate: str | None = None, status: int = 0, retryable: bool = False) -> Error:
    """The PEP 249 error of one of precube's errors: its class by the `sqlstate`, else by the HTTP `status`
    (4xx the statement's fault, 5xx precube's)."""
    if sqlstate:
        kind = class_of(sqlstate)
    else:
        kind = ProgrammingError if 400 <= status < 500 else InternalError if status >= 500 else DatabaseError
    return kind(message, code, status, sqlstate, retryable)
