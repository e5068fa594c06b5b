"""Utilities: reusable helpers attached to roles (files, services, ...) that undo their own changes."""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .host import MultihostHost

__all__ = ["MultihostUtility"]

HostT = TypeVar("HostT", bound="MultihostHost")


class MultihostUtility(Generic[HostT]):
    """Base of a utility: an object with ``setup``/``teardown`` that acts on one host.

    Assign utilities as attributes of a role in its ``__init__``; the plugin sets every
    utility up before the test (in attribute order) and tears it down after the test (in
    reverse order), even when the test failed. A utility's ``teardown`` must undo what
    the utility changed during the test.

    Example::

        class Motd(MultihostUtility[MultihostHost]):
            def setup(self) -> None:
                self._old = self.host.conn.run("cat /etc/motd", raise_on_error=False).stdout

            def set(self, text: str) -> None:
                self.host.conn.run("cat > /etc/motd", input=text)

            def teardown(self) -> None:
                self.host.conn.run("cat > /etc/motd", input=self._old)
    """

    def __init__(self, host: HostT) -> None:
        self.host = host

    def setup(self) -> None:
        """Called before the test (override; call super)."""

    def teardown(self) -> None:
        """Called after the test, even when it failed: undo every change (override; call super)."""

    def __mh_describe__(self) -> str:
        return f"utility {type(self).__name__} on host {self.host.name!r}"


def _bundled(where: str, doc: str) -> cached_property[Any]:
    """A bundled utility of a host (``utils.<where>``, "module.Class"), made on first use and kept.

    ``host.py`` names its utilities by module and class, so that it does not import ``utils/``
    (whose modules use hosts). A subclass may assign its own in ``__init__``: the assigned value
    wins, as with any ``cached_property``. Usage (in ``host.py``)::

        fs: cached_property[FileSystem] = _bundled("fs.FileSystem", "Files and directories.")
    """
    module, _, name = where.rpartition(".")

    def make(host: Any) -> Any:
        return getattr(importlib.import_module(f"{__package__}.utils.{module}"), name)(host)

    make.__doc__ = f"{doc} See :class:`~pytest_mh_ansible.utils.{name}`."
    make.__annotations__ = {"return": name}
    return cached_property(make)


def _hosts_utility(name: str, class_name: str) -> cached_property[Any]:
    """A role's view of its host's utility ``name`` (a ``class_name``): ``server.fs`` is ``server.host.fs``."""

    def get(role: Any) -> Any:
        return getattr(role.host, name)

    get.__doc__ = f"The host's ``{name}`` utility (``self.host.{name}``)."
    get.__annotations__ = {"return": class_name}
    return cached_property(get)
