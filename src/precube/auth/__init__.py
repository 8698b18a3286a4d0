"""Users, user groups and project access control lists (seed 002's `_global`): who may do what in
which project. Kylin's groups (ROLE_ADMIN, ROLE_MODELER, ROLE_ANALYST, ALL_USERS) and project
permissions QUERY < OPERATION < MANAGEMENT < ADMIN; a system admin (ROLE_ADMIN) may do everything."""

from precube.auth.directory import Directory, check_admin_password, check_user_name
from precube.auth.errors import AccessDeniedError, AuthenticationError, AuthError, UnknownUserError, UserExistsError
from precube.auth.model import ALL_USERS, GROUPS, ROLE_ADMIN, AclEntry, Permission, ProjectAcl, User

__all__ = [
    "ALL_USERS",
    "GROUPS",
    "ROLE_ADMIN",
    "AccessDeniedError",
    "AclEntry",
    "AuthError",
    "AuthenticationError",
    "Directory",
    "Permission",
    "ProjectAcl",
    "UnknownUserError",
    "User",
    "UserExistsError",
    "check_admin_password",
    "check_user_name",
]
