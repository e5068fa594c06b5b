"""The bundled utilities: reversible host APIs built on Ansible modules and the rollback journal.

Every host (``host.fs``) and role (``server.fs``) has them; each is created on first use.
"""

from __future__ import annotations

from .config import ConfigFiles
from .crashes import Crashes
from .firewall import Firewall
from .fs import FileSystem
from .logs import Logs
from .packages import Packages
from .services import Services
from .sysctl import Sysctl
from .tc import TrafficControl
from .users import Users

__all__ = [
    "ConfigFiles",
    "Crashes",
    "FileSystem",
    "Firewall",
    "Logs",
    "Packages",
    "Services",
    "Sysctl",
    "TrafficControl",
    "Users",
]
