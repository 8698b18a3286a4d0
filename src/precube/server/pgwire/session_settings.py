"""A connection's settings (PostgreSQL's "run-time parameters"; not a statement's `$n`, see `placeholders`):
what the server reports at start-up (ParameterStatus), what `SHOW` answers and `SET` changes. precube speaks
UTF-8 with standard-conforming strings only (its statement reading depends on both): setting either to anything
else is refused; other settings are remembered and shown."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from precube.server.pgwire.sqlstate import PgError

SERVER_VERSION = "16.0"  # the protocol and catalog behaviour precube imitates (clients branch on it)
SERVER_VERSION_NUM = "160000"

# reported to the client at start-up, as PostgreSQL does
REPORTED: tuple[str, ...] = ("server_version", "server_encoding", "client_encoding", "application_name", "DateStyle")
REPORTED += ("IntervalStyle", "TimeZone", "integer_datetimes", "standard_conforming_strings", "is_superuser")
REPORTED += ("session_authorization", "default_transaction_read_only", "in_hot_standby")

_FIXED = {  # settings a client may set only to the value precube speaks
    "client_encoding": ("UTF8", {"utf8", "utf-8", "unicode"}),
    "standard_conforming_strings": ("on", {"on", "true", "1", "yes"}),
}


def _defaults(user: str, application: str) -> dict[str, str]:
    return {
        "server_version": f"{SERVER_VERSION} (precube)",
        "server_version_num": SERVER_VERSION_NUM,
        "server_encoding": "UTF8",
        "client_encoding": "UTF8",
        "application_name": application,
        "DateStyle": "ISO, MDY",
        "IntervalStyle": "postgres",
        "TimeZone": "UTC",
        "integer_datetimes": "on",
        "standard_conforming_strings": "on",
        "is_superuser": "off",
        "session_authorization": user,
        "default_transaction_read_only": "on",
        "transaction_read_only": "on",
        "in_hot_standby": "off",
        "transaction_isolation": "read committed",
        "default_transaction_isolation": "read committed",
        "search_path": '"$user", public',
        "extra_float_digits": "1",
        "max_identifier_length": "63",
        "statement_timeout": "0",
        "lc_collate": "C",
        "lc_ctype": "C",
        "bytea_output": "hex",
        "default_table_access_method": "heap",
        "default_tablespace": "",
    }


@dataclass
class SessionSettings:
    """One connection's settings (names are case-insensitive, shown as PostgreSQL spells them)."""

    user: str
    application: str = ""
    values: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._defaults = _defaults(self.user, self.application)
        self._spelling = {name.lower(): name for name in self._defaults}
        self.values = dict(self._defaults)

    def _name(self, name: str) -> str:
        return self._spelling.get(name.lower(), name.lower())

    def set(self, name: str, value: str) -> str:
        """Set a parameter; returns its name as reported (a ParameterStatus follows for reported ones)."""
        key = self._name(name)
        if value.upper() == "DEFAULT":
            return self.reset(key)
        if key.lower() in _FIXED:
            shown, accepted = _FIXED[key.lower()]
            if value.lower() not in accepted:
                raise PgError("0A000", f"precube supports only {key} = {shown}, not {value!r}")
            value = shown
        self.values[key] = _search_path(value) if key == "search_path" else value
        return key

    def reset(self, name: str) -> str:
        if name.lower() == "all":
            self.values = dict(self._defaults)
            return "all"
        key = self._name(name)
        if key in self._defaults:
            self.values[key] = self._defaults[key]
        else:
            self.values.pop(key, None)
        return key

    def show(self, name: str) -> str:
        key = {"time_zone": "TimeZone", "transaction_isolation_level": "transaction_isolation"}.get(name, name)
        found = self.values.get(self._name(key))
        if found is None:
            raise PgError("42704", f'unrecognized configuration parameter "{name}"')
        return found

    def reported(self) -> list[tuple[str, str]]:
        return [(name, self.values[name]) for name in REPORTED]


_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_$]*")


def _search_path(value: str) -> str:
    """A schema list as PostgreSQL shows it: each name unquoted (lower case if it was not quoted), then quoted
    only where it must be (`"$user", public`)."""
    names = []
    for part in value.split(","):
        name = part.strip()
        quoted = len(name) >= 2 and name[0] == name[-1] == '"'
        name = name[1:-1].replace('""', '"') if quoted else name.lower()
        names.append(name if _PLAIN_NAME.fullmatch(name) else '"' + name.replace('"', '""') + '"')
    return ", ".join(names)


def command_line_options(options: str) -> list[tuple[str, str]]:
    """The settings of a startup message's `options` (`-c search_path=ssb --DateStyle=ISO`), read as PostgreSQL
    reads them: words split at white space, a backslash taking the next character as it is."""
    words, word, escaped = [], "", False
    for char in options + " ":
        if escaped:
            word, escaped = word + char, False
        elif char == "\\":
            escaped = True
        elif char.isspace():
            if word:
                words.append(word)
            word = ""
        else:
            word += char
    found, given = [], iter(words)
    for word in given:
        setting = next(given, "") if word == "-c" else word[2:] if word.startswith(("-c", "--")) else ""
        name, equals, value = setting.partition("=")
        if equals and name:
            found.append((name.replace("-", "_"), value))
    return found
