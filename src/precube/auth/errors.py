"""Errors of authentication and authorization."""

from __future__ import annotations

from precube.errors import PrecubeError


class AuthError(PrecubeError):
    """A user, group or ACL request that cannot be done (bad name, weak password, unknown user)."""

    code = "AUTH_ERROR"


class AuthenticationError(AuthError):
    """No credentials, or wrong ones (HTTP 401)."""

    code = "UNAUTHENTICATED"


class AccessDeniedError(AuthError):
    """The user is known but lacks the permission the action needs (HTTP 403)."""

    code = "ACCESS_DENIED"
    deterministic = True


class UnknownUserError(AuthError):
    """A user (or group) that was named does not exist (HTTP 404)."""

    code = "NOT_FOUND"


class UserExistsError(AuthError):
    """A user of that name (in any letter case, as Kylin compares them) already exists (HTTP 409)."""

    code = "ALREADY_EXISTS"
