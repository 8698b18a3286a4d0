"""Sign-in throttling: failed sign-ins counted per user name and per client address, slowing down and then
locking whoever keeps failing (the `[auth]` settings).

From half of its threshold on, a name's or address's next try is refused unchecked until `delay_s` after its
last failure, doubling per further failure (at most `max_delay_s`); at the threshold it is locked for `lock_s`,
and a failure after a lock ran out locks it again for twice as long (at most `max_lock_s`), as Kylin's growing
locks do (its `wrong_time`, `locked_time`). A success resets a user's count, never an address's: a caller with
one valid account cannot wipe out the failures of its guesses at others. Failures are forgotten
`failure_window_s` after the last one (or the end of the last lock).

The counts are documents of the metadata store (`/_global/signin/{user|address}/{name}.json`), so every
server and worker process on one store shares them. They are written only when a sign-in fails, a user with
failures signs in, or an admin unlocks; a check reads an in-memory copy, re-read when the store changed
(looked at most every `refresh_s`). Failures of names that are no user are counted for the address only:
the store holds no document per invented name."""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Literal

from precube.auth.errors import SignInLockedError, SignInThrottledError, UnknownUserError
from precube.errors import PrecubeError
from precube.metadata import MetadataStore
from precube.metadata.documents import Document
from precube.metadata.errors import AlreadyExistsError, NotFoundError, VersionConflictError
from precube.metadata.paths import GLOBAL, JSON
from precube.settings import AuthSettings

LOG = logging.getLogger("precube.auth")
Kind = Literal["user", "address"]
USER: Kind = "user"
ADDRESS: Kind = "address"
PREFIX = f"/{GLOBAL}/signin/"
_UNSAFE = re.compile(r"[^A-Za-z0-9.\-]")  # an address's ':' (IPv6) and '%' (zone) are no key characters
_PURGE_MAX = 100  # forgotten records deleted beside one failure's write
_WRITE_TRIES = 3  # another process wrote the same record meanwhile: read it again


@dataclass(frozen=True)
class Failures:
    """The failed sign-ins of one user name or client address (Kylin's field names where it has them)."""

    kind: Kind
    name: str
    wrong_time: int = 0  # failures counted
    last_failure: int = 0  # ms since the epoch
    locked_time: int = 0  # when the last lock began (0: never locked)
    locked_until: int = 0  # when it ends

    def locked(self, now_ms: int) -> bool:
        return self.locked_until > now_ms

    def public(self) -> dict[str, object]:
        """What the API and the CLI show."""
        return {"type": self.kind, **{k: v for k, v in asdict(self).items() if k != "kind"}}


def record_key(kind: Kind, name: str) -> str:
    """The document of a user name (in any letter case, as users sign in) or client address."""
    return f"{PREFIX}{kind}/{name.lower() if kind == USER else _UNSAFE.sub('_', name)}{JSON}"


def _parse(doc: Document) -> Failures:
    return Failures(**json.loads(doc.content))


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class Throttle:
    """Failed sign-ins of one metadata store (thread-safe): `check` before a password is looked at, then
    `failed` or `succeeded`; `locks` and `unlock` for admins."""

    def __init__(
        self,
        store: MetadataStore,
        settings: AuthSettings,
        refresh_s: float = 1.0,
        clock: Callable[[], float] = time.time,
        writer: str = "signin",
    ) -> None:
        self.store, self.settings, self.refresh_s, self.writer = store, settings, refresh_s, writer
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, Failures] = {}  # replaced whole, never changed in place: read without the lock
        self._changed = -1  # the store's last_change when read
        self._checked_at = float("-inf")

    # -- the policy ------------------------------------------------------------------------------

    def _now(self) -> int:
        return int(self._clock() * 1000)

    def _threshold(self, kind: Kind) -> int:
        return self.settings.max_failures if kind == USER else self.settings.address_max_failures

    def _forgotten(self, record: Failures, now: int) -> bool:
        return now - max(record.last_failure, record.locked_until) > self.settings.failure_window_s * 1000

    def _refusal(self, record: Failures, now: int) -> PrecubeError | None:
        """Why `record`'s name or address may not try now (None: it may)."""
        threshold = self._threshold(record.kind)
        if threshold == 0 or self._forgotten(record, now):
            return None
        user = record.kind == USER
        if record.locked(now):
            who = f"user {record.name} is" if user else f"sign-ins from {record.name} are"
            how = f"precube user unlock {'' if user else '--address '}{record.name}"
            return SignInLockedError(
                f"{who} locked until {_when(record.locked_until)} after {record.wrong_time} failed sign-ins; "
                f"an admin can unlock it ({how})"
            )
        free = threshold // 2
        if free <= record.wrong_time < threshold:
            delay = min(self.settings.delay_s * 2 ** min(record.wrong_time - free, 60), self.settings.max_delay_s)
            ready = record.last_failure + int(delay * 1000)
            if ready > now:
                wait = math.ceil((ready - now) / 1000)
                whose = f"of user {record.name}" if user else f"from {record.name}"
                return SignInThrottledError(f"too many failed sign-ins {whose}: retry in {wait} s", wait)
        return None

    def _after_failure(self, record: Failures, now: int) -> Failures:
        if self._forgotten(record, now):
            record = Failures(record.kind, record.name)
        wrong = record.wrong_time + 1
        threshold = self._threshold(record.kind)
        if threshold and wrong >= threshold:
            lock = min(self.settings.lock_s * 2 ** min(wrong - threshold, 60), self.settings.max_lock_s)
            until = now + int(lock * 1000)
            return replace(record, wrong_time=wrong, last_failure=now, locked_time=now, locked_until=until)
        return replace(record, wrong_time=wrong, last_failure=now)

    # -- the in-memory copy ----------------------------------------------------------------------

    def _cached(self) -> dict[str, Failures]:
        if time.monotonic() - self._checked_at < self.refresh_s:
            return self._records
        with self._lock:
            changed = self.store.last_change()
            if changed != self._changed:
                self._records = {d.key: _parse(d) for d in self.store.scan(PREFIX)}
                self._changed = changed
            self._checked_at = time.monotonic()
            return self._records

    def _remember(self, written: dict[str, Failures | None]) -> None:
        with self._lock:
            records = dict(self._records)
            for key, record in written.items():
                if record is None:
                    records.pop(key, None)
                else:
                    records[key] = record
            self._records = records

    # -- sign-ins --------------------------------------------------------------------------------

    def check(self, username: str, address: str | None) -> None:
        """Raise `SignInLockedError` or `SignInThrottledError` when this name or address may not try now
        (the password is not looked at); cheap: no store round trip but the periodic look for changes."""
        records, now = self._cached(), self._now()
        for kind, name in self._subjects(username, address):
            found = records.get(record_key(kind, name))
            refusal = None if found is None else self._refusal(found, now)
            if refusal is not None:
                raise refusal

    def has_failures(self, username: str) -> bool:
        """Whether the user has failures a success would reset (cheap)."""
        return record_key(USER, username) in self._cached()

    def failed(self, username: str | None, address: str | None) -> None:
        """Count a failed sign-in of `username` (a user's stored name; None: no such user) from `address`;
        a lock it causes is logged."""
        subjects = self._subjects(username, address)
        if not subjects:
            return
        now = self._now()
        written: dict[str, Failures | None] = {}
        for attempt in range(_WRITE_TRIES):
            try:
                written = self._write_failure(subjects, now)
                break
            except (VersionConflictError, AlreadyExistsError):
                if attempt == _WRITE_TRIES - 1:
                    raise
        self._remember(written)
        for record in written.values():
            if record is not None and record.locked_time == now:
                what = f"user {record.name}" if record.kind == USER else f"client address {record.name}"
                LOG.warning(
                    "sign-in: %s locked until %s after %d failed sign-ins (the last from %s)",
                    what,
                    _when(record.locked_until),
                    record.wrong_time,
                    address or "an unknown address",
                )

    def _write_failure(self, subjects: list[tuple[Kind, str]], now: int) -> dict[str, Failures | None]:
        written: dict[str, Failures | None] = {}
        with self.store.backend.begin(self.writer, readonly=False) as raw:
            for kind, name in subjects:
                key = record_key(kind, name)
                doc = raw.get(key)
                record = self._after_failure(_parse(doc) if doc is not None else Failures(kind, name), now)
                raw.put(key, json.dumps(asdict(record)).encode(), -1 if doc is None else doc.mvcc)
                written[key] = record
            stale = [k for k, r in self._records.items() if k not in written and self._forgotten(r, now)]
            for key in stale[:_PURGE_MAX]:
                doc = raw.get(key)
                if doc is not None and self._forgotten(_parse(doc), now):
                    raw.delete(key, doc.mvcc)
                written[key] = None
        return written

    def succeeded(self, username: str) -> None:
        """The user signed in: their failures are forgotten (a store write only when they had some)."""
        if self.has_failures(username):
            self._delete(record_key(USER, username), None)

    def _subjects(self, username: str | None, address: str | None) -> list[tuple[Kind, str]]:
        subjects: list[tuple[Kind, str]] = []
        if username and self.settings.max_failures:
            subjects.append((USER, username))
        if address and self.settings.address_max_failures:
            subjects.append((ADDRESS, address))
        return subjects

    # -- admins ----------------------------------------------------------------------------------

    def locks(self) -> list[Failures]:
        """The user names and client addresses locked now, as the store has them."""
        now = self._now()
        found = (_parse(d) for d in self.store.scan(PREFIX))
        return sorted((r for r in found if r.locked(now)), key=lambda r: (r.kind, r.name.lower()))

    def unlock(self, kind: Kind, name: str, writer: str | None = None) -> Failures:
        """Lift the lock (and forget the failures) of a user name or client address."""
        record = self._delete(record_key(kind, name), writer)
        if record is None:
            raise UnknownUserError(f"{'user' if kind == USER else 'client address'} {name} is not locked")
        LOG.warning("sign-in: %s %s unlocked by %s", kind, record.name, writer or self.writer)
        return record

    def _delete(self, key: str, writer: str | None) -> Failures | None:
        try:
            with self.store.backend.begin(writer or self.writer, readonly=False) as raw:
                doc = raw.get(key)
                if doc is not None:
                    raw.delete(key, doc.mvcc)
        except (VersionConflictError, NotFoundError):  # another process reset it meanwhile
            doc = None
        self._remember({key: None})
        return None if doc is None else _parse(doc)
