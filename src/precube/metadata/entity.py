"""Base of every metadata entity: a pydantic model persisted as one JSON document.

Field names follow Kylin 5's JSON (snake_case). `mvcc` is not part of the document: it is the store
row's version, carried on the object between a read and the write that follows it.
"""

from __future__ import annotations

import json
import time
import uuid as uuidlib
from typing import ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from precube.metadata import paths
from precube.metadata.errors import MetadataError

METADATA_VERSION = "1.0"


def now_ms() -> int:
    return int(time.time() * 1000)


def new_uuid() -> str:
    return str(uuidlib.uuid4())


class Entity(BaseModel):
    """A root metadata document. Subclasses set `kind` (the key's folder) and `resource_name()`."""

    # Unknown fields are kept, so a read-modify-write by an older precube loses nothing.
    model_config = ConfigDict(extra="allow", validate_assignment=True)

    kind: ClassVar[str]
    suffix: ClassVar[str] = paths.JSON

    uuid: str = Field(default_factory=new_uuid)
    last_modified: int = 0
    create_time: int = Field(default_factory=now_ms)
    version: str = METADATA_VERSION

    _mvcc: int = PrivateAttr(default=-1)

    @property
    def mvcc(self) -> int:
        """The store version this object was read at; -1 for an object never stored."""
        return self._mvcc

    def resource_name(self) -> str:
        """The last segment of the key, without suffix. Defaults to the uuid."""
        return self.uuid

    def key(self, project: str) -> str:
        return paths.entity_key(project, self.kind, self.resource_name(), suffix=self.suffix)

    def to_json(self) -> bytes:
        """The document bytes: stable field order, two-space indent, UTF-8."""
        return (json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n").encode()

    @classmethod
    def from_json(cls, content: bytes, mvcc: int = -1, key: str = "") -> Self:
        try:
            entity = cls.model_validate(json.loads(content))
        except (ValueError, ValidationError) as err:
            where = f" at {key}" if key else ""
            raise MetadataError(f"malformed {cls.kind} document{where}: {_first_line(err)}") from err
        entity._mvcc = mvcc
        return entity

    def _stored(self, mvcc: int) -> None:
        self._mvcc = mvcc


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__
