"""Password hashing (bcrypt) and Kylin's password rule."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import string

import bcrypt

from precube.auth.errors import AuthError

ROUNDS = 10  # ~50 ms a hash: a verified password is remembered by the directory, not re-hashed per request
_SPECIAL = "~!@#$%^&*(){}|:\"<>?[];',./`"


def _prehash(password: str) -> bytes:
    """bcrypt reads at most 72 bytes: hash longer passwords down first, so every character counts."""
    return base64.b64encode(hashlib.sha256(password.encode("utf-8", "surrogatepass")).digest())


def hash_password(password: str) -> str:
    check_policy(password)
    return bcrypt.hashpw(_prehash(password), bcrypt.gensalt(ROUNDS)).decode()


def verify_password(password: str, hashed: str) -> bool:
    try:
        return bcrypt.checkpw(_prehash(password), hashed.encode())
    except ValueError:  # a malformed stored hash verifies nothing
        return False


def check_policy(password: str) -> None:
    """Kylin's rule: at least 8 characters, with a letter, a digit and a special character."""
    if (
        len(password) < 8
        or not re.search(r"[A-Za-z]", password)
        or not re.search(r"\d", password)
        or not any(c in _SPECIAL for c in password)
    ):
        raise AuthError(
            "a password needs at least 8 characters, with a letter, a digit and a special character (one of "
            f"{_SPECIAL})"
        )
    if "\x00" in password or len(password) > 1024:
        raise AuthError("a password may not hold NUL characters or exceed 1024 characters")


def random_password() -> str:
    """A fresh password meeting the policy (printed once when the server creates ADMIN)."""
    body = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(16))
    return body + secrets.choice(string.digits) + secrets.choice("@#%^*")
