"""The directory of users and project ACLs: the password policy and hashing, permission resolution through
groups, the last admin, remembered passwords, and the ACL's life with its project."""

from __future__ import annotations

import time

import pytest

from precube.auth import (
    ALL_USERS,
    ROLE_ADMIN,
    AccessDeniedError,
    AuthenticationError,
    AuthError,
    Directory,
    Permission,
    UnknownUserError,
    UserExistsError,
    check_admin_password,
)
from precube.auth.passwords import check_policy, hash_password, random_password, verify_password
from precube.errors import InvalidInputError
from precube.metadata import MetadataStore, Project
from precube.metadata.errors import InvalidKeyError

PASSWORD = "Passw0rd!"


@pytest.fixture
def directory(store: MetadataStore) -> Directory:
    store.create_project(Project(name="p1"))
    store.create_project(Project(name="p2"))
    d = Directory(store, refresh_s=0)
    d.add_user("ADMIN", "Adm1n-pass!", [ROLE_ADMIN])
    return d


@pytest.mark.parametrize("weak", ["", "short1!", "onlyletters!!", "12345678!", "NoSpecial123", "Nul\x00pass1!"])
def test_the_policy_refuses_weak_passwords(weak: str) -> None:
    with pytest.raises(AuthError):
        check_policy(weak)
    with pytest.raises(AuthError, match="admin_password"):
        check_admin_password(weak)


def test_random_passwords_meet_the_policy_and_differ() -> None:
    made = {random_password() for _ in range(20)}
    assert len(made) == 20
    for password in made:
        check_policy(password)


def test_every_character_of_a_long_password_counts() -> None:
    """bcrypt alone reads 72 bytes: two passwords equal in their first 72 bytes must not both verify."""
    base = "Aa1!" + "x" * 80
    hashed = hash_password(base + "1")
    assert verify_password(base + "1", hashed)
    assert not verify_password(base + "2", hashed)
    multibyte = "Zz9#" + "é" * 60  # 124 bytes in UTF-8
    assert verify_password(multibyte, hash_password(multibyte))
    assert not verify_password("wrong", "not-a-bcrypt-hash")


def test_the_hash_never_shows(directory: Directory) -> None:
    user = directory.add_user("bob", PASSWORD)
    assert "password_hash" not in user.public() and user.password_hash not in str(user.public())
    assert user.password_hash.startswith("$2") and PASSWORD not in user.password_hash


def test_names_are_unique_in_any_letter_case_and_checked(directory: Directory) -> None:
    directory.add_user("bob", PASSWORD)
    with pytest.raises(UserExistsError):
        directory.add_user("BOB", PASSWORD)
    for bad in ("../x", "a b", "o'neil", "nul\x00", "", "x" * 101):
        with pytest.raises(AuthError):
            directory.add_user(bad, PASSWORD)
    with pytest.raises(UnknownUserError):
        directory.delete_user("nobody")


def test_permission_through_groups_takes_the_highest(directory: Directory) -> None:
    bob = directory.add_user("bob", PASSWORD, ["ROLE_ANALYST"])
    assert bob.groups == [ALL_USERS, "ROLE_ANALYST"]
    assert directory.permission(bob, "p1") is None
    directory.grant("p1", "ALL_USERS", Permission.QUERY, principal=False)
    assert directory.permission(bob, "p1") is Permission.QUERY
    directory.grant("p1", "ROLE_ANALYST", Permission.MANAGEMENT, principal=False)
    directory.grant("p1", "bob", Permission.OPERATION)
    assert directory.permission(bob, "p1") is Permission.MANAGEMENT
    assert directory.permission(bob, "p2") is None
    directory.require(bob, "p1", Permission.MANAGEMENT)
    with pytest.raises(AccessDeniedError):
        directory.require(bob, "p1", Permission.ADMIN)
    with pytest.raises(AccessDeniedError):
        directory.require(bob, None, Permission.QUERY)  # system-wide: admins only
    directory.revoke("p1", "ROLE_ANALYST", principal=False)
    assert directory.permission(bob, "p1") is Permission.OPERATION
    with pytest.raises(UnknownUserError):
        directory.revoke("p1", "ROLE_ANALYST", principal=False)
    admin = directory.require_user("ADMIN")
    assert directory.permission(admin, "p2") is Permission.ADMIN


def test_grants_need_a_known_user_group_and_project(directory: Directory) -> None:
    directory.add_user("bob", PASSWORD)
    with pytest.raises(UnknownUserError):
        directory.grant("p1", "nobody", Permission.QUERY)
    with pytest.raises(UnknownUserError):
        directory.grant("p1", "NO_GROUP", Permission.QUERY, principal=False)
    with pytest.raises(Exception, match="p9"):
        directory.grant("p9", "bob", Permission.QUERY)
    with pytest.raises(InvalidKeyError):
        directory.grant("../p1", "bob", Permission.QUERY)


def test_permission_names_parse_with_kylins_aliases() -> None:
    assert Permission.parse("read") is Permission.QUERY
    assert Permission.parse("ADMINISTRATION") is Permission.ADMIN
    assert Permission.parse(" management ") is Permission.MANAGEMENT
    for bad in ("SUPER", "", 3, None, "x" * 1000):
        with pytest.raises(InvalidInputError):
            Permission.parse(bad)


def test_the_last_admin_cannot_go(directory: Directory) -> None:
    with pytest.raises(AuthError, match="last system admin"):
        directory.delete_user("ADMIN")
    with pytest.raises(AuthError, match="last system admin"):
        directory.update_user("ADMIN", groups=[])
    with pytest.raises(AuthError, match="last system admin"):
        directory.update_user("ADMIN", disabled=True)
    directory.add_user("root2", PASSWORD, [ROLE_ADMIN])
    directory.update_user("ADMIN", disabled=True)
    with pytest.raises(AuthError, match="last system admin"):
        directory.delete_user("root2")  # ADMIN is disabled: root2 is the last enabled admin


def test_deleting_a_user_drops_their_grants(directory: Directory) -> None:
    directory.add_user("bob", PASSWORD)
    directory.grant("p1", "bob", Permission.QUERY)
    directory.grant("p2", "bob", Permission.ADMIN)
    directory.delete_user("bob")
    assert directory.acl("p1").entries == [] and directory.acl("p2").entries == []


def test_a_changed_password_stops_working_at_once(directory: Directory) -> None:
    directory.add_user("bob", PASSWORD)
    assert directory.authenticate("bob", PASSWORD).username == "bob"
    assert directory.remembered("bob", PASSWORD) is not None  # memoized
    bob = directory.require_user("bob")
    with pytest.raises(AuthError, match="old password"):
        directory.change_password(bob, "bob", "N3w-pass!", "wrong")
    directory.change_password(bob, "bob", "N3w-pass!", PASSWORD)
    assert directory.remembered("bob", PASSWORD) is None
    with pytest.raises(AuthenticationError):
        directory.authenticate("bob", PASSWORD)
    assert directory.authenticate("bob", "N3w-pass!").username == "bob"


def test_only_an_admin_changes_anothers_password(directory: Directory) -> None:
    bob = directory.add_user("bob", PASSWORD)
    directory.add_user("eve", PASSWORD)
    with pytest.raises(AccessDeniedError):
        directory.change_password(bob, "eve", "N3w-pass!", PASSWORD)
    directory.change_password(directory.require_user("ADMIN"), "eve", "N3w-pass!")
    assert directory.authenticate("eve", "N3w-pass!").username == "eve"


def test_disabled_users_and_unknown_users_cannot_sign_in(directory: Directory) -> None:
    directory.add_user("bob", PASSWORD)
    directory.authenticate("bob", PASSWORD)
    directory.update_user("bob", disabled=True)
    assert directory.remembered("bob", PASSWORD) is None
    with pytest.raises(AuthenticationError, match="wrong user name or password"):
        directory.authenticate("bob", PASSWORD)
    started = time.perf_counter()
    with pytest.raises(AuthenticationError, match="wrong user name or password"):
        directory.authenticate("nobody", PASSWORD)
    assert time.perf_counter() - started > 0.005  # a hash was checked: unknown names are not told apart by time


def test_bootstrap_makes_admin_once(store: MetadataStore) -> None:
    directory = Directory(store, refresh_s=0)
    with pytest.raises(AuthError, match="too weak"):
        directory.bootstrap("weak")
    assert directory.users() == []
    printed = directory.bootstrap(None)
    assert printed is not None and directory.authenticate("ADMIN", printed).is_admin
    assert directory.bootstrap(None) is None and len(directory.users()) == 1
    other = Directory(store, refresh_s=0)
    assert other.bootstrap("Given-pass1!") is None  # users exist: the setting is not applied again


def test_bootstrap_with_a_configured_password_prints_nothing(store: MetadataStore) -> None:
    directory = Directory(store, refresh_s=0)
    assert directory.bootstrap("Given-pass1!") is None
    assert directory.authenticate("ADMIN", "Given-pass1!").is_admin


def test_deleting_a_project_removes_its_acl(directory: Directory, store: MetadataStore) -> None:
    directory.add_user("bob", PASSWORD)
    directory.grant("p1", "bob", Permission.QUERY)
    store.delete_project("p1")
    assert store.scan("/_global/acl/p1.json") == []
    store.create_project(Project(name="p1"))
    assert directory.permission(directory.require_user("bob"), "p1") is None  # no grant comes back


def test_another_directory_sees_changes_after_refresh(store: MetadataStore) -> None:
    store.create_project(Project(name="p1"))
    writer = Directory(store, refresh_s=0)
    writer.add_user("ADMIN", "Adm1n-pass!", [ROLE_ADMIN])
    reader = Directory(store, refresh_s=0.2)
    bob = writer.add_user("bob", PASSWORD)
    assert reader.user("bob") is not None
    writer.grant("p1", "bob", Permission.QUERY)
    time.sleep(0.25)
    assert reader.permission(bob, "p1") is Permission.QUERY


def test_user_names_are_case_insensitive_as_in_kylin(directory: Directory) -> None:
    directory.add_user("bob", PASSWORD)
    assert directory.authenticate("BOB", PASSWORD).username == "bob"
    directory.grant("p1", "Bob", Permission.QUERY)
    assert [e.sid for e in directory.acl("p1").entries] == ["bob"]
    assert directory.permission(directory.authenticate("bOb", PASSWORD), "p1") is Permission.QUERY
    directory.update_user("BOB", disabled=True)
    assert directory.require_user("bob").disabled
    directory.revoke("p1", "BOB")
    directory.delete_user("BOB")
    assert directory.user("bob") is None


def test_the_policy_refusal_lists_the_special_characters(directory: Directory) -> None:
    with pytest.raises(AuthError) as refused:
        directory.add_user("bob", "letters12", [])
    assert refused.value.message.endswith("a special character (one of ~!@#$%^&*(){}|:\"<>?[];',./`)")
