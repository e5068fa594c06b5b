"""Utilities: reusable helpers attached to roles (files, services, ...) that undo their own changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

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
