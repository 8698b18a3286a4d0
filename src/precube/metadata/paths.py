"""The key scheme of the metadata store (seed 002): one path per document.

/_global/project/{name}.json
/_global/acl/{project}.json            the project's access control list
/_global/user/{name}.json, /_global/user_group/{name}.json
/_global/signin/{user|address}/{name}.json   failed sign-ins and locks of a user name or client address
/{project}/{kind}/{name}.json          table, table_exd, model_desc, index_plan, dataflow, job_stats,
                                       job_lease
/{project}/dataflow_details/{dataflow}/{segment}.json
/{project}/execute/{job_id}            (no suffix, as in Kylin)
/UUID                                  the metadata's id (Kylin's: a backup carries it to a restore)
/_global/store/identity.json           this store's own identity (never backed up nor restored)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from precube.metadata.errors import InvalidKeyError

GLOBAL = "_global"
UUID_KEY = "/UUID"
# A store's own identity: created with the store, never in a backup and never replaced by a restore, so two
# stores (a restored copy included) are always told apart, e.g. by a result cache they share.
IDENTITY_KEY = "/_global/store/identity.json"
JSON = ".json"

# Kinds a project may hold, in the order a backup lists them; `None` means a plain document.
PROJECT_KINDS = (
    "table",
    "table_exd",
    "model_desc",
    "index_plan",
    "dataflow",
    "dataflow_details",
    "execute",
    "job_stats",
    "job_lease",
)
GLOBAL_KINDS = ("project", "acl", "user", "user_group", "sys_acl", "resource_group", "store", "signin")
# Global kinds whose documents belong to one project (named by the document), e.g. its ACL: they are
# written and deleted in that project's transactions, so deleting a project takes them along.
PROJECT_OWNED_GLOBAL_KINDS = ("project", "acl")

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,99}$")


def check_project_name(name: str) -> str:
    """Return `name` if it is a valid project name (letters, digits, underscores; not `_global`)."""
    if not _PROJECT.match(name):
        raise InvalidKeyError(
            f"invalid project name {name!r}: use letters, digits and underscores, starting with a letter or digit"
        )
    return name


def check_name(name: str, what: str = "name") -> str:
    """Return `name` if it can be one segment of a key."""
    if not _NAME.match(name):
        raise InvalidKeyError(f"invalid {what} {name!r}: only letters, digits, '_', '.', '-' are allowed")
    return name


def project_key(project: str) -> str:
    return f"/{GLOBAL}/project/{check_project_name(project)}{JSON}"


def entity_key(project: str, kind: str, *names: str, suffix: str = JSON) -> str:
    parts = [check_name(n) for n in names]
    return f"/{check_project_name(project)}/{kind}/{'/'.join(parts)}{suffix}"


@dataclass(frozen=True)
class ParsedKey:
    project: str  # `_global` for global documents, "" for /UUID
    kind: str
    name: str  # the rest of the path, suffix included


def parse_key(key: str) -> ParsedKey:
    """Split a key into project, kind and name; raise `InvalidKeyError` if it fits no known shape."""
    if key == UUID_KEY:
        return ParsedKey("", "UUID", "")
    parts = key.split("/")
    if len(parts) < 4 or parts[0] != "" or any(p == "" for p in parts[1:]):
        raise InvalidKeyError(f"invalid metadata key {key!r}: expected /PROJECT/KIND/NAME")
    project, kind, rest = parts[1], parts[2], "/".join(parts[3:])
    if project == GLOBAL:
        if kind not in GLOBAL_KINDS:
            raise InvalidKeyError(f"unknown global kind {kind!r} in key {key!r}")
    else:
        check_project_name(project)
        if kind not in PROJECT_KINDS:
            raise InvalidKeyError(f"unknown kind {kind!r} in key {key!r} (known: {', '.join(PROJECT_KINDS)})")
    for part in parts[3:]:
        check_name(part, "key segment")
    return ParsedKey(project, kind, rest)


def project_of(key: str) -> str:
    """The project a key belongs to for transaction scoping (a project's own global doc counts)."""
    parsed = parse_key(key)
    if parsed.project == GLOBAL and parsed.kind in PROJECT_OWNED_GLOBAL_KINDS:
        return parsed.name.removesuffix(JSON)
    return parsed.project
