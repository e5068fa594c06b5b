"""Names of a lab's kernel objects (bridge, veths, netns, cgroups) derived from the lab's name."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final, final

__all__ = ["IFNAMSIZ", "LabNames", "lab_tag"]

# Linux interface names hold at most 15 characters (IFNAMSIZ 16 with the NUL).
IFNAMSIZ: Final = 15
_TAG_LEN: Final = 8
_PLAIN_TAG_RE: Final = re.compile(r"^[a-z0-9]{1,8}$")


def lab_tag(lab_name: str) -> str:
    """A short tag for interface names, distinct for distinct lab names.

    Short plain names are used as they are; any other name becomes a prefix, a dot and a hash.
    Lab names never contain a dot, so the two forms can never collide with each other.
    """
    if _PLAIN_TAG_RE.match(lab_name):
        return lab_name
    digest = hashlib.sha256(lab_name.encode()).hexdigest()[:4]
    prefix = re.sub(r"[^a-z0-9]", "", lab_name)[:3]
    return f"{prefix}.{digest}"


@final
@dataclass(frozen=True)
class LabNames:
    """All names one lab uses in machine-wide namespaces, so that labs with different names coexist."""

    lab: str

    @property
    def tag(self) -> str:
        return lab_tag(self.lab)

    @property
    def bridge(self) -> str:
        """The lab's bridge, e.g. ``mhwebappbr``."""
        return f"mh{self.tag}br"

    def veth(self, index: int) -> str:
        """The root-namespace end of host number ``index``'s veth, e.g. ``mhwebappv0``."""
        return f"mh{self.tag}v{index}"

    def netns(self, host: str) -> str:
        """The host's network namespace (a file name in /run/netns, not length-limited)."""
        return f"pytest-mh-ansible.{self.lab}.{host}"

    @property
    def cgroup(self) -> str:
        """The lab's cgroup2 directory name; systemd hosts get one subdirectory each."""
        return f"pytest-mh-ansible.{self.lab}"

    @property
    def group(self) -> str:
        """The inventory group holding every host of the lab."""
        return "lab_" + self.lab.replace("-", "_")
