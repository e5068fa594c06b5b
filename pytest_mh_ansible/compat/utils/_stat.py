"""``StatEntry`` of ``pytest_mh.utils.fs``: what GNU ``stat`` prints about one path, as attributes."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

__all__ = ["StatEntry"]

# The fields of a StatEntry, in pytest-mh's order; the dict form (FromDict) names file_type "type".
_FIELDS = (
    "file", "link_to", "size", "blocks", "io_blocks", "file_type", "device", "inode", "links", "access", "flags",
    "uid", "user", "gid", "group",
    "access_time", "access_time_epoch", "access_time_epoch_utc",
    "modify_time", "modify_time_epoch", "modify_time_epoch_utc",
    "change_time", "change_time_epoch", "change_time_epoch_utc",
    "birth_time", "birth_time_epoch", "birth_time_epoch_utc",
    "unix_device", "rdev", "block_size", "unix_flags",
)  # fmt: skip

_FILE = re.compile(r"^\s*File:\s(?P<file>.*)$")
_SIZE = re.compile(
    r"^\s*Size:\s*(?P<size>\d+)\s+Blocks:\s*(?P<blocks>\d+)\s+IO Block:\s*(?P<io>\d+)\s+(?P<type>.+?)\s*$"
)
_DEVICE = re.compile(r"^\s*Device:\s*(?P<device>\S+)\s+Inode:\s*(?P<inode>\d+)\s+Links:\s*(?P<links>\d+)")
_ACCESS = re.compile(
    r"^\s*Access:\s*\((?P<access>\d+)/(?P<flags>\S+)\)\s+Uid:\s*\(\s*(?P<uid>\d+)/\s*(?P<user>[^)]*?)\)"
    r"\s+Gid:\s*\(\s*(?P<gid>\d+)/\s*(?P<group>[^)]*?)\)"
)
_TIME = re.compile(r"^\s*(?P<what>Access|Modify|Change|Birth):\s*(?P<time>[^(\s].*?)\s*$")
_QUOTES = "'\"\u2018\u2019"


class StatEntry:
    """pytest-mh's ``StatEntry``: one path as ``stat`` describes it (``fs.stat(path)`` gives one).

    Every attribute is None when ``stat`` did not print it: ``link_to`` for anything but a
    symbolic link, the birth time where the file system does not keep it. ``access`` is the mode
    in octal (``"0644"``), ``flags`` the ``ls``-style permissions (``"-rw-r--r--"``), ``file_type``
    stat's words (``"regular file"``, ``"directory"``, ``"symbolic link"``). Each time is kept as
    printed (``"2024-05-01 12:00:00.123456789 +0000"``) and as a Unix time: ``*_epoch`` reads the
    printed wall-clock time in the controller's time zone, ``*_epoch_utc`` is set only for times
    printed in UTC, as pytest-mh's parser (jc) does.

    Example::

        entry = client.fs.stat("/etc/passwd")
        assert (entry.access, entry.user, entry.file_type) == ("0644", "root", "regular file")
    """

    def __init__(  # noqa: PLR0917 - pytest-mh's constructor
        self,
        file: str | None = None,
        link_to: str | None = None,
        size: int | None = None,
        blocks: int | None = None,
        io_blocks: int | None = None,
        file_type: str | None = None,
        device: str | None = None,
        inode: int | None = None,
        links: int | None = None,
        access: str | None = None,
        flags: str | None = None,
        uid: int | None = None,
        user: str | None = None,
        gid: int | None = None,
        group: str | None = None,
        access_time: str | None = None,
        access_time_epoch: int | None = None,
        access_time_epoch_utc: int | None = None,
        modify_time: str | None = None,
        modify_time_epoch: int | None = None,
        modify_time_epoch_utc: int | None = None,
        change_time: str | None = None,
        change_time_epoch: int | None = None,
        change_time_epoch_utc: int | None = None,
        birth_time: str | None = None,
        birth_time_epoch: int | None = None,
        birth_time_epoch_utc: int | None = None,
        unix_device: int | None = None,
        rdev: int | None = None,
        block_size: int | None = None,
        unix_flags: str | None = None,
    ) -> None:
        self.file: str | None = file
        self.link_to: str | None = link_to
        self.size: int | None = size
        self.blocks: int | None = blocks
        self.io_blocks: int | None = io_blocks
        self.file_type: str | None = file_type
        self.device: str | None = device
        self.inode: int | None = inode
        self.links: int | None = links
        self.access: str | None = access
        self.flags: str | None = flags
        self.uid: int | None = uid
        self.user: str | None = user
        self.gid: int | None = gid
        self.group: str | None = group
        self.access_time: str | None = access_time
        self.access_time_epoch: int | None = access_time_epoch
        self.access_time_epoch_utc: int | None = access_time_epoch_utc
        self.modify_time: str | None = modify_time
        self.modify_time_epoch: int | None = modify_time_epoch
        self.modify_time_epoch_utc: int | None = modify_time_epoch_utc
        self.change_time: str | None = change_time
        self.change_time_epoch: int | None = change_time_epoch
        self.change_time_epoch_utc: int | None = change_time_epoch_utc
        self.birth_time: str | None = birth_time
        self.birth_time_epoch: int | None = birth_time_epoch
        self.birth_time_epoch_utc: int | None = birth_time_epoch_utc
        self.unix_device: int | None = unix_device
        self.rdev: int | None = rdev
        self.block_size: int | None = block_size
        self.unix_flags: str | None = unix_flags

    def __str__(self) -> str:
        parts = (self.file, self.file_type, self.access, self.links, self.user, self.group, self.size, self.modify_time)
        return "(" + ":".join(str(part) for part in parts) + ")"

    def __repr__(self) -> str:
        return str(self)

    @classmethod
    def FromDict(cls, d: dict[str, Any]) -> StatEntry:
        """An entry from a dict of the fields (``type`` for :attr:`file_type`, as jc names it); missing keys: None."""
        return cls(**{name: d.get("type" if name == "file_type" else name) for name in _FIELDS})

    @classmethod
    def FromOutput(cls, stdout: str) -> StatEntry:
        """The entry of GNU ``stat PATH``'s output (in the C locale).

        :raises ValueError: The output describes no path, or more than one.
        """
        entries = _parse(stdout)
        if not entries:
            raise ValueError(f"no stat entry in {stdout!r}")
        if len(entries) != 1:
            raise ValueError("More than one entry was returned")
        return cls.FromDict(entries[0])


def _unquote(name: str) -> str:
    return name[1:-1] if len(name) > 1 and name[0] in _QUOTES and name[-1] in _QUOTES else name


def _epochs(printed: str) -> tuple[int | None, int | None]:
    """(wall-clock time in the controller's zone, UTC time if printed in UTC) of ``2024-05-01 12:00:00.1 +0000``."""
    try:
        naive = datetime.strptime(printed[:19], "%Y-%m-%d %H:%M:%S")  # read as printed, as jc does
    except ValueError:
        return None, None
    utc = int(naive.replace(tzinfo=UTC).timestamp()) if printed.rstrip().endswith(("+0000", "UTC")) else None
    return int(naive.timestamp()), utc


def _parse(stdout: str) -> list[dict[str, Any]]:
    """One dict per path in ``stat``'s output, with StatEntry's field names (``type`` for the file type)."""
    entries: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        if match := _FILE.match(line):
            name, arrow, target = match["file"].partition(" -> ")
            entry: dict[str, Any] = {"file": _unquote(name.strip())}
            if arrow:
                entry["link_to"] = _unquote(target.strip())
            entries.append(entry)
        elif not entries:
            continue
        elif match := _SIZE.match(line):
            entries[-1].update(size=int(match["size"]), blocks=int(match["blocks"]), io_blocks=int(match["io"]))
            entries[-1]["type"] = match["type"]
        elif match := _DEVICE.match(line):
            entries[-1].update(device=match["device"], inode=int(match["inode"]), links=int(match["links"]))
        elif match := _ACCESS.match(line):
            entries[-1].update(access=match["access"], flags=match["flags"], uid=int(match["uid"]))
            entries[-1].update(user=match["user"].strip(), gid=int(match["gid"]), group=match["group"].strip())
        elif match := _TIME.match(line):
            key = f"{match['what'].lower()}_time"
            printed = None if match["time"] == "-" else match["time"]
            naive, utc = _epochs(printed) if printed else (None, None)
            entries[-1].update({key: printed, f"{key}_epoch": naive, f"{key}_epoch_utc": utc})
    return entries
