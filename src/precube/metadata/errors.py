"""Errors of the metadata domain."""

from __future__ import annotations

from precube.errors import PrecubeError


class MetadataError(PrecubeError):
    """Base of metadata errors."""

    code = "METADATA_ERROR"


class NotFoundError(MetadataError):
    """A document or entity that was asked for does not exist."""

    code = "NOT_FOUND"


class AlreadyExistsError(MetadataError):
    """A create hit a key that already exists."""

    code = "ALREADY_EXISTS"


class VersionConflictError(MetadataError):
    """A write carried a stale `mvcc`: someone else changed the document since it was read."""

    code = "VERSION_CONFLICT"
    retryable = True


class InvalidKeyError(MetadataError):
    """A key or name does not fit the key scheme, or a transaction wrote outside its project."""

    code = "INVALID_KEY"


class StoreUnavailableError(MetadataError):
    """The metadata database cannot be reached or opened."""

    code = "STORE_UNAVAILABLE"
    retryable = True


class BackupFormatError(MetadataError):
    """A backup directory is not a well-formed metadata tree."""

    code = "BACKUP_FORMAT"
