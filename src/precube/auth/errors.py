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


class SignInLockedError(AuthenticationError):
    """A user name or client address locked after too many failed sign-ins (HTTP 401): refused whatever the
    password, until the lock runs out or an admin lifts it."""

    code = "USER_LOCKED"


class SignInThrottledError(AuthenticationError):
    """A sign-in refused unchecked because the name or address failed just before (or too many are being
    checked at once): retry after `retry_after_s` (HTTP 429 with Retry-After)."""

    code = "SIGN_IN_THROTTLED"
    retryable = True

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
