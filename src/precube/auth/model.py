"""The documents of `_global`: users (with their groups) and one access control list per project."""

from __future__ import annotations

from enum import IntEnum

from pydantic import BaseModel, ConfigDict, Field

from precube.errors import InvalidInputError
from precube.metadata.entity import now_ms

ROLE_ADMIN = "ROLE_ADMIN"  # system administrators: every action in every project
ROLE_MODELER = "ROLE_MODELER"
ROLE_ANALYST = "ROLE_ANALYST"
ALL_USERS = "ALL_USERS"  # every user belongs to it
GROUPS = (ROLE_ADMIN, ROLE_MODELER, ROLE_ANALYST, ALL_USERS)


class Permission(IntEnum):
    """Kylin's project permissions, each including the ones below it."""

    QUERY = 1  # run queries, read the project's metadata
    OPERATION = 2  # build, refresh, merge; operate jobs
    MANAGEMENT = 3  # edit tables, models and index plans
    ADMIN = 4  # the project's ACL

    @classmethod
    def parse(cls, text: object) -> Permission:
        """A permission by its name, in any letter case; Kylin's older names READ (QUERY) and
        ADMINISTRATION (ADMIN) are accepted too."""
        name = text.strip().upper() if isinstance(text, str) else ""
        name = _ALIASES.get(name, name)
        if name not in cls.__members__:
            shown = text if isinstance(text, str) and len(text) <= 40 else type(text).__name__
            raise InvalidInputError(f"unknown permission {shown!r}: use QUERY, OPERATION, MANAGEMENT or ADMIN")
        return cls[name]


_ALIASES = {"READ": "QUERY", "ADMINISTRATION": "ADMIN"}


class User(BaseModel):
    """A user at `/_global/user/{username}.json`; the password is only stored as a bcrypt hash."""

    model_config = ConfigDict(extra="allow")

    username: str
    password_hash: str
    groups: list[str] = Field(default_factory=lambda: [ALL_USERS])
    disabled: bool = False
    create_time: int = Field(default_factory=now_ms)
    last_modified: int = Field(default_factory=now_ms)

    @property
    def is_admin(self) -> bool:
        return ROLE_ADMIN in self.groups and not self.disabled

    def public(self) -> dict[str, object]:
        """What the API shows of a user (never the hash), Kylin's field names."""
        return {
            "username": self.username,
            "authorities": [{"authority": g} for g in self.groups],
            "disabled": self.disabled,
            "default_password": False,
            "locked": False,
            "create_time": self.create_time,
            "last_modified": self.last_modified,
        }


class AclEntry(BaseModel):
    """One grant: a user (`principal`) or a group (`principal=False`) and its permission."""

    model_config = ConfigDict(extra="forbid")

    sid: str
    principal: bool = True
    permission: Permission


class ProjectAcl(BaseModel):
    """A project's grants at `/_global/acl/{project}.json`."""

    model_config = ConfigDict(extra="allow")

    project: str
    entries: list[AclEntry] = Field(default_factory=list)
