"""Flight SQL's sign-in: HTTP Basic credentials (the `Handshake` of `AuthenticateBasicToken`, or on any call)
checked by the server's one sign-in (`server/signin.py`: throttled, its password checks bounded), answered with
a bearer token the client sends on its later calls.

A token is signed, not stored: `user|expiry` and its HMAC-SHA256 under a key the process draws at start, so a
restart signs every client out. It names the user only: what the user may do is the directory's answer at each
call (`QueryService.authorise`), so a user disabled or a grant revoked stops the next call, token or not.

The project a call acts on is the `x-precube-project` header (ADBC: the connection option
`adbc.flight.sql.rpc.call_header.x-precube-project`), the Flight SQL counterpart of the Postgres wire's database."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pyarrow.flight as flight

from precube.auth import AuthenticationError, User
from precube.server.flight.errors import flight_error

PROJECT_HEADER = "x-precube-project"
TOKEN_TTL_S = 24 * 3600.0
SIGN_IN_TIMEOUT_S = 60.0  # a sign-in waiting longer (its queue full of checks) fails the call

SignInFunction = Callable[[str, str, str | None], Coroutine[Any, Any, User]]


@dataclass(frozen=True)
class Tokens:
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    ttl_s: float = TOKEN_TTL_S

    def issue(self, user: str) -> str:
        body = f"{user}|{int(time.time() + self.ttl_s)}".encode()
        return _b64(body) + "." + _b64(self._sign(body))

    def user_of(self, token: str) -> str | None:
        """The user a valid, unexpired token was issued to (None otherwise)."""
        body_text, _, signature_text = token.partition(".")
        try:
            body, signature = _unb64(body_text), _unb64(signature_text)
        except (binascii.Error, ValueError):
            return None
        if not hmac.compare_digest(signature, self._sign(body)):
            return None
        user, _, expiry = body.decode("utf-8", "replace").rpartition("|")
        return user if expiry.isdigit() and int(expiry) > time.time() else None

    def _sign(self, body: bytes) -> bytes:
        return hmac.new(self.key, body, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Caller(flight.ServerMiddleware):  # type: ignore[misc]
    """The signed-in user of one call and the project it names; a Basic sign-in's token goes back in the
    `authorization` header of the answer."""

    def __init__(self, user: User, project: str | None, token: str | None) -> None:
        self.user, self.project, self.token = user, project, token

    def sending_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"} if self.token is not None else {}


class Authenticate(flight.ServerMiddlewareFactory):  # type: ignore[misc]
    """Every call is authenticated: Basic credentials through the sign-in, or a bearer token."""

    def __init__(
        self,
        sign_in: SignInFunction,
        user_named: Callable[[str], User | None],
        tokens: Tokens,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.sign_in, self.user_named, self.tokens, self.loop = sign_in, user_named, tokens, loop

    def start_call(self, info: flight.CallInfo, headers: dict[str, list[str]]) -> Caller:
        project = _first(headers, PROJECT_HEADER) or None
        scheme, _, credentials = (_first(headers, "authorization") or "").partition(" ")
        if scheme.lower() == "basic":
            user = self._basic(credentials)
            return Caller(user, project, self.tokens.issue(user.username))
        if scheme.lower() == "bearer":
            name = self.tokens.user_of(credentials.strip())
            found = self.user_named(name) if name is not None else None
            if found is None:
                raise flight.FlightUnauthenticatedError("the bearer token is invalid or expired: sign in again")
            return Caller(found, project, None)
        raise flight.FlightUnauthenticatedError("sign in with a user name and password (HTTP Basic)")

    def _basic(self, credentials: str) -> User:
        try:
            encoded = credentials.strip()  # Go's Flight client leaves the padding out
            username, sep, password = (
                base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True).decode().partition(":")
            )
        except (binascii.Error, UnicodeDecodeError):
            sep = ""
        if not sep:
            raise flight.FlightUnauthenticatedError("malformed Basic credentials")
        # the client's address is not known to a middleware of pyarrow's server: the throttle counts the name only
        future = asyncio.run_coroutine_threadsafe(self.sign_in(username, password, None), self.loop)
        try:
            return future.result(SIGN_IN_TIMEOUT_S)
        except AuthenticationError as err:  # a throttled sign-in is UNAVAILABLE: retry later
            raise flight_error(err) from None
        except TimeoutError:
            future.cancel()
            raise flight.FlightUnavailableError("the sign-in timed out: retry") from None


class HandshakeAnswer(flight.ServerAuthHandler):  # type: ignore[misc]
    """Lets the `Handshake` call through (pyarrow's server refuses it without a handler): its credentials were
    checked by `Authenticate`, which answers the token in a header, as Flight SQL clients read it."""

    def authenticate(self, outgoing: flight.ServerAuthSender, incoming: flight.ServerAuthReader) -> None:
        return None

    def is_valid(self, token: bytes) -> str:
        return ""  # every call was authenticated by the middleware already


def _first(headers: dict[str, list[str]], name: str) -> str:
    values = headers.get(name) or []
    value = values[0] if values else ""
    return value.decode() if isinstance(value, bytes) else str(value)
