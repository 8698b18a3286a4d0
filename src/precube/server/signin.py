"""The one sign-in of both doors (the REST API's `Authenticate` and the Postgres wire's start-up), on the event
loop: the throttle first (a locked or slowed-down name or address is refused without its password being looked
at), then a password this process verified before (no hashing), else a bcrypt check on a pool of its own.

The pool bounds the password checks running at once (`[auth] password_checks`; by default half the cores, so
an unauthenticated flood cannot take the CPU from signed-in users, whose remembered passwords cost no hashing)
and the checks waiting (`password_queue`; more are refused at once, 429). It is apart from the thread pool
that serves requests, so a flood never holds those threads either."""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from precube import metrics
from precube.auth import AuthenticationError, Directory, User
from precube.auth.errors import SignInThrottledError
from precube.auth.throttle import Throttle


class SignIn:
    """Signs users in for one server process (`ServerState.signin`)."""

    def __init__(self, directory: Directory, throttle: Throttle, checks: int = 0, queue: int = 256) -> None:
        self.directory, self.throttle = directory, throttle
        self.checks = checks or max(1, (os.cpu_count() or 2) // 2)
        self._limit = self.checks + queue
        self._pool = ThreadPoolExecutor(self.checks, thread_name_prefix="precube-password")
        self._pending = 0  # checks submitted and not done
        self._lock = threading.Lock()

    async def __call__(self, username: str, password: str, address: str | None) -> User:
        """The user these credentials belong to; `AuthenticationError` (or its locked and throttled kinds)
        otherwise. `address`: the client's IP address (None when unknown)."""
        try:
            self.throttle.check(username, address)
            user = self.directory.remembered(username, password)
            if user is None:
                return await self._verify(username, password, address)
        except AuthenticationError:
            metrics.SIGN_IN_FAILURES.inc()
            raise
        if self.throttle.has_failures(user.username):  # rare: a store write, off the event loop
            await asyncio.to_thread(self.throttle.succeeded, user.username)
        return user

    async def _verify(self, username: str, password: str, address: str | None) -> User:
        with self._lock:
            if self._pending >= self._limit:
                raise SignInThrottledError("too many sign-ins are being checked at once: retry in 1 s", 1)
            self._pending += 1
        future: Future[User] = self._pool.submit(self._check, username, password, address)
        future.add_done_callback(self._done)  # also when the waiting request goes away and cancels it
        return await asyncio.wrap_future(future)

    def _done(self, _future: Future[User]) -> None:
        with self._lock:
            self._pending -= 1

    def _check(self, username: str, password: str, address: str | None) -> User:
        """In a pool thread: bcrypt, and the failure or success recorded."""
        self.throttle.check(username, address)  # failures recorded while this one waited count
        try:
            user = self.directory.authenticate(username, password)
        except AuthenticationError:
            known = self.directory.user(username)
            self.throttle.failed(known.username if known is not None else None, address)
            raise
        self.throttle.succeeded(user.username)
        return user

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
