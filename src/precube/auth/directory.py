"""The directory: users and project ACLs read from and written to the metadata store's `_global`, and
the two questions every request asks — who is this (`authenticate`) and may they do this here
(`require`). Answers come from an in-memory snapshot reloaded when the store changed (checked at most
every `refresh_s`), so a permission check costs no database round trip and a change made through another
server is seen within `refresh_s`."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass, field

from precube.auth.errors import AccessDeniedError, AuthenticationError, AuthError, UnknownUserError, UserExistsError
from precube.auth.model import ALL_USERS, GROUPS, ROLE_ADMIN, AclEntry, Permission, ProjectAcl, User
from precube.auth.passwords import check_policy, hash_password, random_password, verify_password
from precube.metadata import MetadataStore
from precube.metadata.entity import now_ms
from precube.metadata.paths import GLOBAL, JSON, check_project_name

ADMIN = "ADMIN"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,99}$")
_VERIFIED_MAX = 10_000  # remembered (user, password) pairs before the memo starts afresh
# verified against when the user is unknown, so an unknown name costs the same time as a wrong password
_DUMMY_HASH = "$2b$10$hyZiXFAuhuxgJ2OMJsuzfudO6oiX5wejXEBzXXpjW4XSYU5LcQXOC"


def check_user_name(name: str, what: str = "user name") -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise AuthError(f"invalid {what} {name!r}: use up to 100 letters, digits, '_', '.' or '-'")
    return name


def check_admin_password(password: str) -> None:
    """The configured first-start password of ADMIN meets the policy (else a start-up error naming it)."""
    try:
        check_policy(password)
    except AuthError as err:
        raise AuthError(f"[server] admin_password (PRECUBE__SERVER__ADMIN_PASSWORD) is too weak: {err}") from err


def _user_key(name: str) -> str:
    return f"/{GLOBAL}/user/{check_user_name(name)}{JSON}"


def _acl_key(project: str) -> str:
    return f"/{GLOBAL}/acl/{check_project_name(project)}{JSON}"


@dataclass
class _Snapshot:
    users: dict[str, tuple[User, int]] = field(default_factory=dict)  # name -> (user, mvcc)
    folded: dict[str, str] = field(default_factory=dict)  # name.lower() -> name (names are case-insensitive)
    acls: dict[str, tuple[ProjectAcl, int]] = field(default_factory=dict)  # project -> (acl, mvcc)
    changed: int = -1  # the store's last_change when read
    checked_at: float = float("-inf")  # monotonic time of the last look at the store


class Directory:
    """Users and ACLs of one metadata store (thread-safe)."""

    def __init__(self, store: MetadataStore, refresh_s: float = 1.0, writer: str = "precube") -> None:
        # `writer`: who the audit log names for a change, unless a call names its caller
        self.store, self.refresh_s, self.writer = store, refresh_s, writer
        self._lock = threading.Lock()
        self._snap = _Snapshot()
        self._pepper = secrets.token_bytes(32)  # keys the memo of verified passwords; never leaves the process
        self._verified: dict[tuple[str, bytes], str] = {}

    # -- the snapshot ----------------------------------------------------------------------------

    def _fresh(self) -> _Snapshot:
        snap = self._snap
        if time.monotonic() - snap.checked_at < self.refresh_s:
            return snap
        with self._lock:
            changed = self.store.last_change()
            if changed != self._snap.changed:
                self._snap = self._load(changed)
            self._snap.checked_at = time.monotonic()
            return self._snap

    def _load(self, changed: int) -> _Snapshot:
        snap = _Snapshot(changed=changed)
        for doc in self.store.scan(f"/{GLOBAL}/user/"):
            user = User.model_validate_json(doc.content)
            snap.users[user.username] = (user, doc.mvcc)
            snap.folded[user.username.lower()] = user.username
        for doc in self.store.scan(f"/{GLOBAL}/acl/"):
            acl = ProjectAcl.model_validate_json(doc.content)
            snap.acls[acl.project] = (acl, doc.mvcc)
        return snap

    def forget_cached(self) -> None:
        """Re-read users and ACLs at the next check: for a change made around the directory (a project deleted
        with its ACL), which this process should see at once."""
        self._invalidate()

    def _invalidate(self) -> None:
        with self._lock:
            self._snap = _Snapshot()

    # -- users -----------------------------------------------------------------------------------

    def users(self) -> list[User]:
        return [u for u, _ in sorted(self._fresh().users.values(), key=lambda p: p[0].username)]

    def user(self, name: str) -> User | None:
        """The user of that name in any letter case (as Kylin signs users in), or None."""
        snap = self._fresh()
        found = snap.users.get(name) or snap.users.get(snap.folded.get(name.lower(), ""))
        return None if found is None else found[0]

    def _stored_name(self, name: str) -> str:
        """The name as stored, for a name given in any letter case (unchanged when no such user)."""
        found = self.user(check_user_name(name))
        return name if found is None else found.username

    def require_user(self, name: str) -> User:
        found = self.user(check_user_name(name))
        if found is None:
            raise UnknownUserError(f"user {name!r} does not exist")
        return found

    def add_user(
        self,
        name: str,
        password: str,
        groups: list[str] | None = None,
        disabled: bool = False,
        writer: str | None = None,
    ) -> User:
        """Create a user; names are unique regardless of letter case, as in Kylin."""
        check_user_name(name)
        user = User(
            username=name, password_hash=hash_password(password), groups=self._groups(groups or []), disabled=disabled
        )
        with self.store.backend.begin(writer or self.writer, readonly=False) as raw:
            for doc in raw.scan(f"/{GLOBAL}/user/"):
                if doc.key.lower() == _user_key(name).lower():
                    raise UserExistsError(f"user {name!r} already exists")
            raw.put(_user_key(name), user.model_dump_json(indent=2).encode(), -1)
        self._invalidate()
        return user

    def update_user(
        self,
        name: str,
        *,
        password: str | None = None,
        groups: list[str] | None = None,
        disabled: bool | None = None,
        writer: str | None = None,
    ) -> User:
        """Change a user's password, groups or disabled flag; the last enabled admin cannot lose admin."""
        name = self._stored_name(name)
        with self.store.backend.begin(writer or self.writer, readonly=False) as raw:
            doc = raw.get(_user_key(name))
            if doc is None:
                raise UnknownUserError(f"user {name!r} does not exist")
            user = User.model_validate_json(doc.content)
            changes: dict[str, object] = {"last_modified": now_ms()}
            if password is not None:
                changes["password_hash"] = hash_password(password)
            if groups is not None:
                changes["groups"] = self._groups(groups)
            if disabled is not None:
                changes["disabled"] = disabled
            updated = user.model_copy(update=changes)
            if user.is_admin and not updated.is_admin:
                self._keep_an_admin(raw, name)
            raw.put(doc.key, updated.model_dump_json(indent=2).encode(), doc.mvcc)
        self._invalidate()
        return updated

    def change_password(
        self, actor: User, name: str, new_password: str, old_password: str | None = None, writer: str | None = None
    ) -> User:
        """`actor` sets `name`'s password: their own only with the old one (verified here), anyone's when
        `actor` is a system admin. The old password stops working at once (the memo keys on the hash)."""
        if actor.username == self._stored_name(name):
            if old_password is None or not verify_password(old_password, actor.password_hash):
                raise AuthError("the old password is wrong")
        elif not actor.is_admin:
            raise AccessDeniedError(f"user {actor.username} may only change their own password")
        self.require_user(name)
        return self.update_user(name, password=new_password, writer=writer)

    def delete_user(self, name: str, writer: str | None = None) -> None:
        """Delete a user and their grants (not the last enabled admin)."""
        name = self._stored_name(name)
        with self.store.backend.begin(writer or self.writer, readonly=False) as raw:
            doc = raw.get(_user_key(name))
            if doc is None:
                raise UnknownUserError(f"user {name!r} does not exist")
            if User.model_validate_json(doc.content).is_admin:
                self._keep_an_admin(raw, name)
            raw.delete(doc.key, doc.mvcc)
            for acl_doc in raw.scan(f"/{GLOBAL}/acl/"):
                acl = ProjectAcl.model_validate_json(acl_doc.content)
                kept = [e for e in acl.entries if not (e.principal and e.sid == name)]
                if len(kept) != len(acl.entries):
                    raw.put(
                        acl_doc.key, acl.model_copy(update={"entries": kept}).model_dump_json().encode(), acl_doc.mvcc
                    )
        self._invalidate()

    @staticmethod
    def _keep_an_admin(raw: object, leaving: str) -> None:
        others = [
            u
            for d in raw.scan(f"/{GLOBAL}/user/")  # type: ignore[attr-defined]
            if (u := User.model_validate_json(d.content)).is_admin and u.username != leaving
        ]
        if not others:
            raise AuthError(f"user {leaving!r} is the last system admin: make another user admin first")

    @staticmethod
    def _groups(groups: list[str]) -> list[str]:
        for g in groups:
            check_user_name(g, "group name")
        return [ALL_USERS, *sorted({g for g in groups if g != ALL_USERS})]

    def bootstrap(self, admin_password: str | None) -> str | None:
        """Create `ADMIN` (system admin) when the store has no user yet, with `admin_password` or a random
        password; returns the random password (to print once), else None."""
        if admin_password is not None:
            check_admin_password(admin_password)
        if self.users():
            return None
        password = admin_password or random_password()
        try:
            self.add_user(ADMIN, password, [ROLE_ADMIN])
        except UserExistsError:  # another server created it first
            return None
        return None if admin_password else password

    def ignores(self, admin_password: str | None) -> bool:
        """Whether a configured ADMIN password is not ADMIN's stored one: it applies only when the first start
        creates ADMIN, so a later change of the setting does nothing."""
        user = self.user(ADMIN) if admin_password is not None else None
        return user is not None and not verify_password(admin_password or "", user.password_hash)

    # -- authentication --------------------------------------------------------------------------

    def remembered(self, username: str, password: str) -> User | None:
        """The user, when this password was verified for them before and is still theirs (no hashing: cheap
        enough for an event loop); None means `authenticate` must decide."""
        user = self.user(username) if _NAME.match(username or "") else None
        if user is None or user.disabled:
            return None
        return user if self._verified.get(self._memo(username, password)) == user.password_hash else None

    def _memo(self, username: str, password: str) -> tuple[str, bytes]:
        return username, hmac.digest(self._pepper, password.encode("utf-8", "surrogatepass"), hashlib.sha256)

    def authenticate(self, username: str, password: str) -> User:
        """The enabled user whose password this is; `AuthenticationError` otherwise (the same message for
        an unknown user and a wrong password). Verifying a new password takes bcrypt's time (~50 ms)."""
        user = self.user(username) if _NAME.match(username or "") else None
        if user is None or user.disabled:
            verify_password(password, _DUMMY_HASH)
            raise AuthenticationError("wrong user name or password")
        memo = self._memo(username, password)
        if self._verified.get(memo) == user.password_hash:
            return user
        if not verify_password(password, user.password_hash):
            raise AuthenticationError("wrong user name or password")
        if len(self._verified) >= _VERIFIED_MAX:
            self._verified.clear()
        self._verified[memo] = user.password_hash
        return user

    # -- project ACLs ----------------------------------------------------------------------------

    def acl(self, project: str) -> ProjectAcl:
        found = self._fresh().acls.get(project)
        return found[0] if found is not None else ProjectAcl(project=project)

    def permission(self, user: User, project: str) -> Permission | None:
        """The highest permission `user` holds on `project`, directly or through a group."""
        if user.is_admin:
            return Permission.ADMIN
        if user.disabled:
            return None
        found = [
            e.permission
            for e in self.acl(project).entries
            if (e.principal and e.sid == user.username) or (not e.principal and e.sid in user.groups)
        ]
        return max(found, default=None)

    def require(self, user: User, project: str | None, level: Permission | None) -> None:
        """Raise `AccessDeniedError` unless `user` holds `level` on `project` (a system admin when
        `project` is None and a level is asked)."""
        if level is None:
            return
        if project is None:
            if not user.is_admin:
                raise AccessDeniedError(f"user {user.username} is not a system admin")
            return
        held = self.permission(user, project)
        if held is None or held < level:
            raise AccessDeniedError(f"user {user.username} needs {level.name} permission on project {project}")

    def grant(
        self, project: str, sid: str, permission: Permission, principal: bool = True, writer: str | None = None
    ) -> ProjectAcl:
        """Give a user (or a group) `permission` on `project`, replacing what it held there."""
        check_user_name(sid, "user name" if principal else "group name")
        if principal:
            sid = self.require_user(sid).username
        else:
            self.require_group(sid)
        return self._edit_acl(project, sid, principal, permission, writer)

    def revoke(self, project: str, sid: str, principal: bool = True, writer: str | None = None) -> ProjectAcl:
        return self._edit_acl(project, self._stored_name(sid) if principal else sid, principal, None, writer)

    def require_group(self, name: str) -> str:
        check_user_name(name, "group name")
        if name not in self.known_groups():
            raise UnknownUserError(f"group {name!r} does not exist (known: {', '.join(self.known_groups())})")
        return name

    def known_groups(self) -> list[str]:
        return sorted({*GROUPS, *(g for u in self.users() for g in u.groups)})

    def _edit_acl(
        self, project: str, sid: str, principal: bool, permission: Permission | None, writer: str | None
    ) -> ProjectAcl:
        with self.store.transaction(project, writer or self.writer) as tx:
            tx.project()  # raises NotFoundError for an unknown project
            doc = tx.get_document(_acl_key(project))
            acl = ProjectAcl.model_validate_json(doc.content) if doc is not None else ProjectAcl(project=project)
            entries = [e for e in acl.entries if not (e.sid == sid and e.principal == principal)]
            if permission is None and len(entries) == len(acl.entries):
                who = "user" if principal else "group"
                raise UnknownUserError(f"{who} {sid!r} holds no grant on project {project}")
            if permission is not None:
                entries.append(AclEntry(sid=sid, principal=principal, permission=permission))
            acl = acl.model_copy(update={"entries": entries})
            tx.put_document(_acl_key(project), acl.model_dump_json(indent=2).encode(), -1 if doc is None else doc.mvcc)
        self._invalidate()
        return acl
