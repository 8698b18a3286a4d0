"""Which statements are never cached: those whose answer depends on when, by whom or by chance they run
(`now()`, `current_date`, `random()`, `uuid()`, `shuffle(…)`, `current_user`…). A cached answer would keep
its first value for the whole TTL.

Decided on the planned tree (sqlglot's expression classes, plus the names of functions sqlglot leaves
anonymous), never on the SQL text: a string literal 'now()' is not a call.
"""

from __future__ import annotations

from sqlglot import exp

# Clock-, session- and chance-relative functions sqlglot parses into their own classes.
_CLASSES: tuple[type[exp.Expr], ...] = (
    exp.CurrentDate,
    exp.CurrentDatetime,
    exp.CurrentTime,
    exp.CurrentTimestamp,  # unix_timestamp() without arguments becomes StrToUnix(CurrentTimestamp)
    exp.CurrentTimestampLTZ,
    exp.CurrentTimezone,
    exp.Localtime,
    exp.Localtimestamp,
    exp.Systimestamp,
    exp.Rand,
    exp.Randn,
    exp.Randstr,
    exp.Shuffle,
    exp.Uuid,
    exp.CurrentUser,
    exp.CurrentUserId,
    exp.CurrentRole,
    exp.CurrentSession,
    exp.CurrentStatement,
    exp.CurrentTransaction,
    exp.CurrentSchema,
    exp.CurrentDatabase,
    exp.CurrentCatalog,
)
# The same, spelled as names some dialect knows but sqlglot does not map (compared in lower case).
_NAMES = frozenset(
    {
        "now", "getdate", "sysdate", "systimestamp", "localtime", "localtimestamp", "current_date",
        "current_time", "current_timestamp", "current_timezone", "curdate", "curtime", "today",
        "transaction_timestamp", "statement_timestamp", "clock_timestamp", "get_current_time", "unix_timestamp",
        "unix_seconds", "unix_millis", "unix_micros", "epoch_ms", "random", "rand", "randn", "random_uuid",
        "uuid", "gen_random_uuid", "uuidv4", "uuidv7", "shuffle", "setseed", "nextval", "currval",
        "monotonically_increasing_id", "spark_partition_id", "input_file_name", "current_user", "user",
        "session_user", "current_setting", "current_query", "txid_current",
    }
)  # fmt: skip
_BARE = frozenset({"localtime", "localtimestamp", "current_time", "sysdate"})  # keywords some parse as columns


def volatile_call(tree: exp.Expr) -> str | None:
    """The first call in `tree` whose value changes from one run to the next; None when there is none."""
    for node in tree.walk():
        if isinstance(node, _CLASSES):
            return node.sql(dialect="spark")
        if isinstance(node, exp.Anonymous) and str(node.name).lower() in _NAMES:
            return f"{node.name}()"
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in _BARE:
            return node.name
    return None
