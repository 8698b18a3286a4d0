"""Sign-in throttling on a metadata store, with a clock the tests move: a growing delay from half the threshold
on, then a lock that grows each time it is earned again, logged; a success resets a user but not an address;
every process on the store sees the same counts; admins list and lift locks; failures are forgotten."""

from __future__ import annotations

import logging

import pytest

from precube.auth.errors import SignInLockedError, SignInThrottledError, UnknownUserError
from precube.auth.throttle import ADDRESS, PREFIX, USER, Throttle
from precube.metadata import MetadataStore
from precube.settings import AuthSettings

ADDR = "10.0.0.7"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _throttle(store: MetadataStore, clock: Clock, **given: float) -> Throttle:
    settings = AuthSettings(**{"max_failures": 4, "address_max_failures": 10, "delay_s": 1, "lock_s": 60, **given})
    return Throttle(store, settings, refresh_s=0, clock=clock)


def _refusal(throttle: Throttle, user: str = "bob", address: str | None = ADDR) -> Exception | None:
    try:
        throttle.check(user, address)
    except (SignInLockedError, SignInThrottledError) as err:
        return err
    return None


def test_failures_slow_down_then_lock_and_the_lock_grows(
    store: MetadataStore, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    throttle = _throttle(store, clock)
    throttle.failed("bob", ADDR)
    assert _refusal(throttle) is None  # below half the threshold: no delay
    throttle.failed("bob", ADDR)
    slowed = _refusal(throttle)
    assert isinstance(slowed, SignInThrottledError) and slowed.retry_after_s == 1
    assert str(slowed) == "too many failed sign-ins of user bob: retry in 1 s"
    clock.now += 1
    assert _refusal(throttle) is None
    throttle.failed("bob", ADDR)
    slowed = _refusal(throttle)
    assert isinstance(slowed, SignInThrottledError) and slowed.retry_after_s == 2  # doubled
    clock.now += 2
    with caplog.at_level(logging.WARNING, logger="precube.auth"):
        throttle.failed("bob", ADDR)
    locked = _refusal(throttle)
    assert isinstance(locked, SignInLockedError)
    assert str(locked).startswith("user bob is locked until 2027-01-15 08:01:03 UTC after 4 failed sign-ins")
    assert "precube user unlock bob" in str(locked) and "\n" not in str(locked)
    assert "user bob locked until 2027-01-15 08:01:03 UTC after 4 failed sign-ins" in caplog.text
    clock.now += 59
    assert isinstance(_refusal(throttle), SignInLockedError)
    clock.now += 1
    assert _refusal(throttle) is None  # one more try once the lock ran out ...
    throttle.failed("bob", ADDR)
    clock.now += 119
    assert isinstance(_refusal(throttle), SignInLockedError)  # ... whose failure locks twice as long
    clock.now += 1
    assert _refusal(throttle) is None


def test_a_success_resets_the_user_but_not_the_address(store: MetadataStore, clock: Clock) -> None:
    throttle = _throttle(store, clock, address_max_failures=4)
    for _ in range(2):
        throttle.failed("bob", ADDR)
    assert _refusal(throttle, "bob", None) is not None and _refusal(throttle, "alice", ADDR) is not None
    assert throttle.has_failures("BOB")  # names in any letter case, as users sign in
    throttle.succeeded("bob")
    assert not throttle.has_failures("bob") and _refusal(throttle, "bob", None) is None
    slowed = _refusal(throttle, "alice", ADDR)
    assert isinstance(slowed, SignInThrottledError) and f"from {ADDR}" in str(slowed)


def test_unknown_names_count_for_the_address_only(store: MetadataStore, clock: Clock) -> None:
    throttle = _throttle(store, clock)
    for _ in range(10):
        clock.now += 60
        throttle.failed(None, ADDR)
    assert [d.key for d in store.scan(PREFIX)] == [f"{PREFIX}address/{ADDR}.json"]
    locked = _refusal(throttle, "anyone", ADDR)
    assert isinstance(locked, SignInLockedError) and str(locked).startswith(f"sign-ins from {ADDR} are locked")
    assert _refusal(throttle, "anyone", "10.0.0.8") is None


def test_every_process_on_the_store_sees_the_same_counts(store: MetadataStore, clock: Clock) -> None:
    first, second = _throttle(store, clock), _throttle(store, clock)
    for throttle in (first, second, first, second):
        clock.now += 60
        throttle.failed("bob", "::1")
    assert isinstance(_refusal(first, "bob", None), SignInLockedError)
    assert isinstance(_refusal(second, "bob", None), SignInLockedError)
    assert [(r.kind, r.name, r.wrong_time) for r in second.locks()] == [(USER, "bob", 4)]


def test_admins_list_and_lift_locks(store: MetadataStore, clock: Clock) -> None:
    throttle = _throttle(store, clock, address_max_failures=4)
    for _ in range(4):
        clock.now += 60
        throttle.failed("bob", "::1")
    assert [(r.kind, r.name) for r in throttle.locks()] == [(ADDRESS, "::1"), (USER, "bob")]
    now = int(clock.now * 1000)
    assert throttle.locks()[1].public() == {
        "type": "user",
        "name": "bob",
        "wrong_time": 4,
        "last_failure": now,
        "locked_time": now,
        "locked_until": now + 60_000,
    }
    other = _throttle(store, clock)
    assert other.unlock(USER, "BOB").name == "bob"
    assert other.unlock(ADDRESS, "::1").wrong_time == 4
    assert throttle.locks() == [] and _refusal(throttle, "bob", "::1") is None
    with pytest.raises(UnknownUserError, match="user bob is not locked"):
        other.unlock(USER, "bob")


def test_failures_are_forgotten_and_thresholds_of_zero_never_throttle(store: MetadataStore, clock: Clock) -> None:
    throttle = _throttle(store, clock, failure_window_s=600)
    for _ in range(3):
        throttle.failed("bob", ADDR)
        clock.now += 10
    clock.now += 600
    assert _refusal(throttle) is None
    throttle.failed("carol", ADDR)  # a write also deletes the forgotten records
    assert sorted(d.key for d in store.scan(PREFIX)) == [f"{PREFIX}address/{ADDR}.json", f"{PREFIX}user/carol.json"]
    assert throttle.locks() == []
    never = _throttle(store, clock, max_failures=0, address_max_failures=0)
    for _ in range(20):
        never.failed("dave", "10.9.9.9")
    assert _refusal(never, "dave", "10.9.9.9") is None and not never.has_failures("dave")
