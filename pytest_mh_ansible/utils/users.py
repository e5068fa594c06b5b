"""Users and groups: add, modify, delete; created ones removed, others restored."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from .._private.secrets import secrets
from ..errors import MultihostError
from ..utility import MultihostUtility
from ._calls import run_module

if TYPE_CHECKING:
    from ..host import MultihostHost  # noqa: F401 - in the base class as a string: host.py imports utils

__all__ = ["Users"]

# Hash on the target (openssl, else the target's Python): the plaintext goes over stdin only.
_HASH = (
    "openssl passwd -6 -stdin 2>/dev/null || python3 -W ignore -c "
    "'import crypt,sys; print(crypt.crypt(sys.stdin.readline().rstrip(chr(10)), crypt.mksalt(crypt.METHOD_SHA512)))'"
)


class Users(MultihostUtility["MultihostHost"]):
    """Local users and groups through ``ansible.builtin.user``/``group``; undone after the test.

    Created users and groups are removed (users with their home), modified ones get their old
    uid, groups, home, shell, comment and password hash back, deleted ones are recreated.

    Example::

        def test_login(client):
            client.users.add("alice", uid=10001, groups=["wheel"], password="Secret123")
            assert client.users.get("alice")["uid"] == 10001
            client.users.modify("labuser", shell="/bin/sh")   # back to its shell after the test
    """

    def add(
        self,
        name: str,
        *,
        uid: int | None = None,
        group: str | None = None,
        groups: list[str] | None = None,
        home: str | None = None,
        shell: str | None = None,
        password: str | None = None,
    ) -> bool:
        """Create the user ``name`` (with a home directory); removed after the test.

        :param group: Primary group (must exist); default: a new group of the user's name.
        :param groups: Supplementary groups (must exist).
        :param password: Plain text; hashed on the host and never logged.
        """
        attrs: dict[str, Any] = {"uid": uid, "group": group, "groups": groups, "home": home, "shell": shell}
        changed = self._user(name, state="present", create_home=True, **attrs)
        if password is not None:
            changed = self.set_password(name, password) or changed
        return changed

    def modify(self, name: str, **attrs: Any) -> bool:
        """Change attributes of an existing user (``uid``, ``group``, ``groups``, ``home``, ``shell``, ``comment``...).

        ``groups`` replaces the supplementary groups. The old attributes are back after the test.

        :raises MultihostError: The user does not exist.
        """
        if self.get(name) is None:
            raise MultihostError(f"{self.host.name}: cannot modify user {name!r}: no such user")
        if "groups" in attrs and "append" not in attrs:
            attrs["append"] = False
        return self._user(name, state="present", **attrs)

    def delete(self, name: str) -> bool:
        """Delete the user ``name`` and its home; recreated (uid, groups, home, shell, hash) after the test."""
        return self._user(name, state="absent", remove=True, force=True)

    def set_password(self, name: str, password: str) -> bool:
        """Set ``name``'s password; the old hash is back after the test. The plain text is never logged."""
        secrets.add(password)
        hashed = self.host.conn.run(_HASH, input=password + "\n").stdout.strip()
        if not hashed.startswith("$6$"):
            raise MultihostError(f"{self.host.name}: cannot hash a password for {name!r} (no openssl or python3)")
        secrets.add(hashed)
        return self.host.ansible.run(
            "ansible.builtin.user", name=name, password=hashed, update_password="always", no_log=True
        ).changed

    def add_group(self, name: str, gid: int | None = None) -> bool:
        """Create the group ``name``; removed after the test."""
        return self._group(name, state="present", gid=gid)

    def delete_group(self, name: str) -> bool:
        """Delete the group ``name``; recreated with its gid after the test (not its members)."""
        return self._group(name, state="absent")

    def add_member(self, group: str, user: str) -> bool:
        """Add ``user`` to ``group``; the user's old groups are back after the test."""
        return self._user(user, groups=[group], append=True)

    def remove_member(self, group: str, user: str) -> bool:
        """Remove ``user`` from ``group``; the user's old groups are back after the test."""
        entry = self.get(user)
        if entry is None or group not in entry["groups"]:
            return False
        return self._user(user, groups=[g for g in entry["groups"] if g != group], append=False)

    def get(self, name: str) -> dict[str, Any] | None:
        """The user from ``getent passwd`` and ``id -Gn``, or None.

        :returns: ``{"name", "uid", "gid", "group", "groups", "comment", "home", "shell"}``;
            ``groups`` are the supplementary groups.
        """
        quoted = shlex.quote(name)
        out = self.host.conn.run(f"getent passwd {quoted} && id -gn {quoted} && id -Gn {quoted}", raise_on_error=False)
        lines = out.stdout.splitlines()
        if out.rc != 0 or len(lines) < 3:
            return None
        user, _, uid, gid, comment, home, shell = lines[0].split(":", 6)
        primary = lines[1].strip()
        return {
            "name": user,
            "uid": int(uid),
            "gid": int(gid),
            "group": primary,
            "groups": [g for g in lines[2].split() if g != primary],
            "comment": comment,
            "home": home,
            "shell": shell,
        }

    def get_group(self, name: str) -> dict[str, Any] | None:
        """The group from ``getent group``: ``{"name", "gid", "members"}``, or None."""
        out = self.host.conn.run(f"getent group {shlex.quote(name)}", raise_on_error=False)
        if out.rc != 0 or not out.stdout.strip():
            return None
        group, _, gid, members = out.stdout.strip().split(":", 3)
        return {"name": group, "gid": int(gid), "members": [m for m in members.split(",") if m]}

    def _user(self, name: str, **kwargs: Any) -> bool:
        return run_module(self.host, "ansible.builtin.user", name=name, **kwargs)

    def _group(self, name: str, **kwargs: Any) -> bool:
        return run_module(self.host, "ansible.builtin.group", name=name, **kwargs)
