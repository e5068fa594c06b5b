"""The before-state of users and groups, decided from positive answers only, and the inverse each one gets.

A rollback must never destroy what was there before the test. The inverse of a ``user`` or
``group`` call is chosen from one probe of the host, and "the account did not exist" is decided
only from ``getent``'s own answer that there is no such entry (exit 2). Any other answer — a
failed command, a missing ``getent``, an entry that ``id`` cannot resolve, an account that
exists only through NSS (LDAP, SSSD, extrausers) and not in ``/etc/passwd`` — makes the change
*not revertible*: the journal reports it by name and the rollback touches nothing.

What else the probe reads protects what was there beside the account:

* a home directory or mail spool that existed before a user the test created is kept (``userdel``
  without ``--remove``); only what the module made is removed;
* a group with the user's name that existed before is kept (``userdel`` without ``--force``, which
  would take it even when it is another user's primary group) and put back if ``userdel`` took it;
* the shadow fields of an existing user (last change, ages, expiry) are put back with ``chage``
  after the module restored the account, since ``usermod -p`` stamps a new last-change day;
* an account that the test deletes comes back from a snapshot of the account files (its entries
  in place, not appended), with its home and mail spool.

Example (what :class:`~.inverses.JournalRecorder` does for ``ansible.builtin.user``)::

    state = probe_user(host, "alice", home=None)
    undo, why = user_inverse(host, "alice", state, args)   # one of them is None
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, final

from ...errors import RollbackError
from ..secrets import secrets

if TYPE_CHECKING:
    from ...host import MultihostHost

__all__ = [
    "CommandUndo",
    "GroupState",
    "UserState",
    "group_inverse",
    "group_probe",
    "group_state",
    "probe_group",
    "probe_user",
    "raw_output",
    "user_inverse",
    "user_probe",
    "user_state",
]

# The account commands live in sbin, which a non-root login's PATH may lack.
SBIN_PATH = "PATH=$PATH:/usr/sbin:/sbin; "
# getent's exit status when the database answered that there is no such entry.
_NOT_FOUND = 2
# ``mh_exists KEY PATH``: a probe line whose status is 0 (it exists), 1 (it does not: the parent is
# missing or searchable, so this is the file system's own answer) or 3 (cannot tell).
_EXISTS = (
    'mh_exists() { if [ -e "$2" ] || [ -L "$2" ]; then s=0; else '
    # the parent, as dirname gives it, without a process for an absolute path
    'case $2 in /*) d=${2%"${2##*[!/]}"}; d=${d%/*}; d=${d:-/};; *) d=$(dirname "$2");; esac; '
    'if [ ! -e "$d" ] || [ -x "$d" ]; then s=1; else s=3; fi; fi; printf "%s\\t%s\\t%s\\n" "$1" $s "$2"; }; '
)
# The local account database: snapshotted (and so restored in place) when a test deletes an account.
ACCOUNT_FILES = ("/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", "/etc/subuid", "/etc/subgid")


@dataclass(frozen=True)
class GroupState:
    """What the host said of one group: ``found`` with its ``/etc/group`` fields, or absent, or ``unreadable``."""

    name: str
    found: bool = False
    gid: int | None = None
    members: tuple[str, ...] = ()
    local: bool = False
    unreadable: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GroupState:
        """Back from :func:`dataclasses.asdict`, or from the probe's own output (as a host's journal keeps it)."""
        if "probe" in data:
            return group_state(str(data["name"]), raw_output(data["probe"]))
        return cls(**{**data, "members": tuple(data.get("members") or ())})


@dataclass(frozen=True)
class UserState:
    """What the host said of one user before the change.

    ``found`` with the passwd entry (``fields``: name, password, uid, gid, comment, home, shell), its
    primary group's name, its supplementary groups and its shadow entry (None: it has none); or not
    found, with whether the paths a new account would get existed already; or ``unreadable`` and why.
    """

    name: str
    found: bool = False
    fields: tuple[str, ...] = ()
    primary: str = ""
    groups: tuple[str, ...] = ()
    shadow: tuple[str, ...] | None = None
    local: bool = False
    home: str = ""
    home_existed: bool = False
    mail: str = ""
    mail_existed: bool = False
    group: GroupState | None = None
    missing: tuple[str, ...] = ()
    unreadable: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UserState:
        """Back from :func:`dataclasses.asdict`, or from the probe's own output (as a host's journal keeps it).

        The journal entry written in the same command as the probe holds the probe's output
        (``{"name", "probe", "home_arg"}``): the same parser makes the same state of it.
        """
        if "probe" in data:
            home = data.get("home_arg")
            return user_state(str(data["name"]), raw_output(data["probe"]), home=str(home) if home else None)
        shadow = data.get("shadow")
        group = data.get("group")
        return cls(
            **{
                **data,
                "fields": tuple(data.get("fields") or ()),
                "groups": tuple(data.get("groups") or ()),
                "shadow": None if shadow is None else tuple(shadow),
                "missing": tuple(data.get("missing") or ()),
                "group": None if group is None else GroupState.from_dict(group),
            }
        )


def raw_output(encoded: object) -> str:
    """A probe's output as the host's journal keeps it (base64, so any byte of an entry stays valid JSON)."""
    try:
        return base64.b64decode(str(encoded), validate=True).decode("utf-8", errors="replace")
    except ValueError:
        return ""  # nothing readable: every answer is missing, so the state is "unreadable"


def _answers(output: str) -> dict[str, tuple[int, str]]:
    """The lines of a probe's output, ``KEY<tab>STATUS<tab>VALUE``: ``{key: (status, value)}``."""
    found: dict[str, tuple[int, str]] = {}
    for line in output.splitlines():
        key, _, rest = line.partition("\t")
        status, _, value = rest.partition("\t")
        if status.lstrip("-").isdigit():
            found[key] = (int(status), value)
    return found


def _first_field(quoted: str) -> str:
    """A grep pattern (quoted for the shell) of a line whose first field is the account's name, as given."""
    name = shlex.split(quoted)[0]
    return shlex.quote("^" + "".join("\\" + c if c in ".[]*^$\\" else c for c in name) + ":")


def _group_probe(quoted: str, key: str = "group") -> str:
    """The probe lines of one group: its ``getent`` answer and whether ``/etc/group`` has it."""
    return (
        f'e=$(getent group {quoted}); printf "{key}\\t%s\\t%s\\n" $? "$e"; '
        f'grep -q {_first_field(quoted)} /etc/group; printf "{key}_local\\t%s\\n" $?; '
    )


def _group_state(name: str, answers: Mapping[str, tuple[int, str]], key: str = "group") -> GroupState:
    status, entry = answers.get(key, (-1, ""))
    if status == _NOT_FOUND and not entry:
        return GroupState(name)
    parts = entry.split(":")
    if status != 0 or len(parts) != 4 or parts[0] != name or not parts[2].isdigit():
        return GroupState(name, unreadable=f"group {name!r} could not be read (getent group exited {status})")
    members = tuple(m for m in parts[3].split(",") if m)
    local = answers.get(f"{key}_local", (1, ""))[0] == 0
    return GroupState(name, found=True, gid=int(parts[2]), members=members, local=local)


def group_probe(name: str) -> str:
    """The shell command that reads group ``name`` (its output is for :func:`group_state`)."""
    return _group_probe(shlex.quote(name))


def group_state(name: str, output: str) -> GroupState:
    """What the output of :func:`group_probe` says of group ``name``."""
    return _group_state(name, _answers(output))


def probe_group(host: MultihostHost, name: str) -> GroupState:
    """Read group ``name`` before a change (one command)."""
    return group_state(name, host.conn.run(group_probe(name), raise_on_error=False).stdout)


def probe_user(host: MultihostHost, name: str, *, home: str | None) -> UserState:
    """Read user ``name`` before a change (one command): its entries, or the paths a new one would take.

    :param home: The home the call names (``home=``), else the system's default for a new user.
    """
    return user_state(name, host.conn.run(user_probe(name, home=home), raise_on_error=False).stdout, home=home)


def user_probe(name: str, *, home: str | None) -> str:
    """The shell command that reads user ``name`` (its output is for :func:`user_state`)."""
    quoted = shlex.quote(name)
    # What only an existing user needs (its groups, shadow entry, home) is read only when getent did
    # not answer "no such user"; what only a new one needs (a group of its name) only when it did.
    return (
        f"{SBIN_PATH}{_EXISTS}"
        f'pw=$(getent passwd {quoted}); r=$?; printf "passwd\\t%s\\t%s\\n" $r "$pw"; '
        f'if [ $r = {_NOT_FOUND} ] && [ -z "$pw" ]; then {_group_probe(quoted)}else '
        f'g=$(id -gn {quoted} 2>/dev/null); printf "primary\\t%s\\t%s\\n" $? "$g"; '
        f'g=$(id -Gn {quoted} 2>/dev/null); printf "groups\\t%s\\t%s\\n" $? "$g"; '
        f's=$(getent shadow {quoted}); printf "shadow\\t%s\\t%s\\n" $? "$s"; '
        f'grep -q {_first_field(quoted)} /etc/passwd; printf "local\\t%s\\n" $?; '
        'h=$(printf %s "$pw" | cut -d: -f6); [ -z "$h" ] || mh_exists home "$h"; fi; '
        + (
            f"h={shlex.quote(home)}; "
            if home
            else f"h=$(useradd -D 2>/dev/null | sed -n 's/^HOME=//p'); h=${{h:-/home}}/{quoted}; "
        )
        + 'mh_exists new_home "$h"; '
        "m=$(sed -n 's/^MAIL_DIR[[:space:]]*//p' /etc/login.defs 2>/dev/null); "
        f'mh_exists mail "${{m:-/var/mail}}/"{quoted}\n'
    )


def user_state(name: str, output: str, *, home: str | None) -> UserState:
    """What the output of :func:`user_probe` says of user ``name`` (``home``: as given to the probe)."""
    answers = _answers(output)
    status, entry = answers.get("passwd", (-1, ""))
    new_home_status, new_home = answers.get("new_home", (-1, ""))
    mail_status, mail_path = answers.get("mail", (-1, ""))
    if new_home_status not in (0, 1) or mail_status not in (0, 1):
        return UserState(name, unreadable=f"whether the home or mail spool of user {name!r} exists could not be read")
    if status == _NOT_FOUND and not entry:
        group = _group_state(name, answers)
        if group.unreadable:
            return UserState(name, unreadable=group.unreadable)
        return UserState(
            name,
            home=new_home,
            home_existed=new_home_status == 0,
            mail=mail_path,
            mail_existed=mail_status == 0,
            group=group,
        )
    fields = tuple(entry.split(":"))
    if status != 0 or len(fields) != 7 or fields[0] != name:
        return UserState(name, unreadable=f"user {name!r} could not be read (getent passwd exited {status})")
    primary_status, primary = answers.get("primary", (-1, ""))
    groups_status, groups = answers.get("groups", (-1, ""))
    if primary_status != 0 or groups_status != 0:
        return UserState(name, unreadable=f"the groups of user {name!r} could not be read by name (id exited 1)")
    shadow_status, shadow_entry = answers.get("shadow", (-1, ""))
    shadow = tuple(shadow_entry.split(":"))
    if shadow_status == _NOT_FOUND and not shadow_entry:
        shadow_fields: tuple[str, ...] | None = None
    elif shadow_status == 0 and len(shadow) == 9 and shadow[0] == name:
        shadow_fields = shadow
    else:
        return UserState(name, unreadable=f"the shadow entry of user {name!r} could not be read (exit {shadow_status})")
    home_status, _ = answers.get("home", (0 if not fields[5] else -1, ""))
    if home_status not in (0, 1):
        return UserState(name, unreadable=f"whether the home of user {name!r} exists could not be read")
    # Homes that were not there and that the module may make (create_home is its default): removed on undo.
    candidates = [(fields[5], home_status == 1)] + ([(new_home, new_home_status == 1)] if home else [])
    missing = tuple(dict.fromkeys(path for path, gone in candidates if gone))
    return UserState(
        name,
        found=True,
        fields=fields,
        primary=primary.strip(),
        groups=tuple(groups.split()),
        shadow=shadow_fields,
        local=answers.get("local", (1, ""))[0] == 0,
        home=fields[5],
        home_existed=home_status == 0,
        mail=mail_path,
        mail_existed=mail_status == 0,
        missing=missing,
    )


Undo = Callable[[], None]
_CARRIED = "mh-carried"  # printed by what an undo command carried, once it ran


@final
class CommandUndo:
    """The undo of an account the test created: one command, which can carry more at no round trip of its own.

    Calling it undoes. :meth:`carrying` undoes and runs a shell command after a successful undo, in
    the same command: the rollback journal has the undo's done mark written so (see
    :meth:`~.host_journal.HostJournal.carry`). Example::

        undo = CommandUndo(delete)
        undo()                                    # userdel alice
        undo.carrying("printf ... >> journal")    # userdel alice; then the mark, if userdel succeeded
    """

    def __init__(self, run: Callable[[str], bool]) -> None:
        self._run = run

    def __call__(self) -> None:
        self._run("")

    def carrying(self, then: str) -> bool:
        """Undo, with ``then`` run in the same command once the undo succeeded; whether ``then`` succeeded."""
        return self._run(then)


def _after(then: str) -> str:
    """``then`` after an account command that succeeded (0) or found the account gone (6); the command's status kept."""
    if not then:
        return ""
    return f"; r=$?; if [ $r = 0 ] || [ $r = 6 ]; then {then} && echo {_CARRIED}; fi; exit $r"


def user_inverse(
    host: MultihostHost,
    state: UserState,
    args: Mapping[str, Any],
    *,
    snapshot: Callable[[list[str]], Undo] | None = None,
) -> tuple[Undo | None, str | None]:
    """The undo of a ``user`` call on the account ``state`` describes, or why there is none.

    :param snapshot: Takes a snapshot of paths now and gives the undo that restores it (for the
        home and mail spool of an existing user that the call deletes).
    :returns: ``(undo, None)``, or ``(None, why)`` when the change is not revertible.
    """
    name = state.name
    if state.unreadable is not None:
        return None, f"{state.unreadable}: not revertible, nothing is deleted"
    if not state.found:
        return _delete_created_user(host, state), None
    if not state.local:
        return None, (
            f"user {name!r} exists through NSS only (not in /etc/passwd): the rollback neither creates nor "
            "deletes a local account for it"
        )
    if str(args.get("state", "present")) == "absent" and snapshot is not None:
        # userdel, then useradd, would put the entries back at the end of each file: a snapshot of the
        # account files (and of the home and mail spool that ``remove`` takes) restores them in place.
        return snapshot([*ACCOUNT_FILES, *(p for p in (state.home, state.mail) if p and p != "/")]), None
    _, _, uid, gid, comment, home, shell = state.fields
    restore: dict[str, Any] = {
        "name": name,
        "state": "present",
        "uid": int(uid),
        "group": state.primary,
        "groups": [g for g in state.groups if g != state.primary],
        "append": False,
        "home": home,
        "create_home": False,  # a missing home stays missing
        "shell": shell,
        "comment": comment,
    }
    shadow = state.shadow

    def recreate() -> None:
        if state.primary != gid:
            # userdel also removes the user's own group (USERGROUPS_ENAB): back with its gid first.
            host.ansible.run("ansible.builtin.group", name=state.primary, gid=int(gid), state="present")
        host.ansible.run("ansible.builtin.user", restore)
        for path in state.missing:
            if path and path != "/":
                host.conn.run(f"rm -rf -- {shlex.quote(path)}")
        if shadow is not None:
            _restore_shadow(host, name, shadow)
        elif host.conn.run(f"getent shadow {shlex.quote(name)}", raise_on_error=False).rc == 0:
            raise RollbackError(
                host.name,
                f"ansible.builtin.user name={name}",
                "the user had no shadow entry before the test and has one now (left as it is)",
            )

    return recreate, None


def _restore_shadow(host: MultihostHost, name: str, shadow: tuple[str, ...]) -> None:
    """Put a shadow entry's password field and ageing fields back as they were.

    The user module does not take every password field as it is (a locked ``!hash`` is "not hashed"
    to it), and ``usermod -p`` stamps a new last-change day: so ``usermod -p`` with the old field,
    then ``chage`` with the old days, each only when it differs.
    """
    quoted = shlex.quote(name)
    now = tuple(host.conn.run(f"getent shadow {quoted}", raise_on_error=False).stdout.strip().split(":"))
    if now == shadow:
        return
    if len(now) < 2 or now[1] != shadow[1]:
        secrets.add(shadow[1])
        host.conn.run(f"{SBIN_PATH}usermod -p {shlex.quote(shadow[1])} {quoted}")
    _, _, last, minimum, maximum, warn, inactive, expire, _ = shadow

    def day(value: str) -> str:
        return value if value else "-1"

    host.conn.run(
        f"{SBIN_PATH}chage -d {day(last)} -m {day(minimum)} -M {day(maximum)} -W {day(warn)} "
        f"-I {day(inactive)} -E {day(expire)} {quoted}"
    )


def _delete_created_user(host: MultihostHost, state: UserState) -> Undo:
    """Delete a user the test created, keeping a home, mail spool or same-named group that were there before."""
    name = state.name
    quoted = shlex.quote(name)
    group = state.group
    keep_paths = state.home_existed or state.mail_existed
    flags = ([] if keep_paths else ["--remove"]) + ([] if group is not None and group.found else ["--force"])
    cleanup = [
        f"rm -rf -- {shlex.quote(path)}"
        for path, existed in ((state.home, state.home_existed), (state.mail, state.mail_existed))
        if keep_paths and not existed and path and path != "/"
    ]

    def delete(then: str) -> bool:
        alone = not cleanup and not (group is not None and group.found)  # nothing to do after userdel
        done = host.conn.run(
            f"{SBIN_PATH}userdel {' '.join(flags)} {quoted}{_after(then if alone else '')}", raise_on_error=False
        )
        if done.rc not in (0, 6):  # 6: gone already (the test deleted it)
            remove = "--remove" in flags
            host.ansible.run("ansible.builtin.user", name=name, state="absent", remove=remove, force="--force" in flags)
        for command in cleanup:
            host.conn.run(command)
        if group is not None and group.found:
            _group_back(host, group)
        return _CARRIED in done.stdout

    return CommandUndo(delete)


def _group_back(host: MultihostHost, group: GroupState) -> None:
    """Put a group back that ``userdel`` removed along with a same-named user (USERGROUPS_ENAB)."""
    quoted = shlex.quote(group.name)
    if host.conn.run(f"getent group {quoted}", raise_on_error=False).rc == 0:
        return
    host.conn.run(f"{SBIN_PATH}groupadd -g {group.gid} {quoted}")
    if group.members:
        host.conn.run(f"{SBIN_PATH}gpasswd -M {shlex.quote(','.join(group.members))} {quoted} >/dev/null")


def group_inverse(
    host: MultihostHost,
    state: GroupState,
    args: Mapping[str, Any],
    *,
    snapshot: Callable[[list[str]], Undo] | None = None,
) -> tuple[Undo | None, str | None]:
    """The undo of a ``group`` call on the group ``state`` describes, or why not (as :func:`user_inverse`)."""
    name = state.name
    if state.unreadable is not None:
        return None, f"{state.unreadable}: not revertible, nothing is deleted"
    if not state.found:
        quoted = shlex.quote(name)

        def delete(then: str) -> bool:
            done = host.conn.run(f"{SBIN_PATH}groupdel {quoted}{_after(then)}", raise_on_error=False)
            if done.rc not in (0, 6):  # 6: gone already; 8: a user's primary group (the module says so)
                host.ansible.run("ansible.builtin.group", name=name, state="absent")
            return _CARRIED in done.stdout

        return CommandUndo(delete), None
    if not state.local:
        return None, (
            f"group {name!r} exists through NSS only (not in /etc/group): the rollback neither creates nor "
            "deletes a local group for it"
        )
    if str(args.get("state", "present")) == "absent" and snapshot is not None:
        return snapshot(list(ACCOUNT_FILES)), None  # back in place, with its members and gshadow entry
    gid = state.gid

    def recreate() -> None:
        host.ansible.run("ansible.builtin.group", name=name, gid=gid, state="present")
        if state.members:
            _members_back(host, state)

    return recreate, None


def _members_back(host: MultihostHost, state: GroupState) -> None:
    """The member list of a recreated or changed group, as it was (the group module does not keep it)."""
    now = host.conn.run(f"getent group {shlex.quote(state.name)}", raise_on_error=False).stdout.strip()
    if tuple(m for m in now.split(":")[-1].split(",") if m) != state.members:
        host.conn.run(f"{SBIN_PATH}gpasswd -M {shlex.quote(','.join(state.members))} {shlex.quote(state.name)}")
