"""Per-test skips of a topology test: the controller's ``skip()`` and ``@pytest.mark.require`` conditions.

Both run when the ``mh`` fixture sets a test up, after its topology is set up and before its
hosts, controller and roles are: a skipped test changes nothing on the hosts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import MultihostError

if TYPE_CHECKING:
    from ..multihost import MultihostFixture

__all__ = ["DEFAULT_REASON", "check_skips"]

DEFAULT_REASON = "Required condition was not met"
"""The skip reason of a ``require`` marker that gives none (pytest-mh's words)."""

_MISSING = object()


def check_skips(request: pytest.FixtureRequest, fixture: MultihostFixture) -> None:
    """Skip the test when its topology controller's ``skip()`` gives a reason, or a ``require`` condition fails.

    ``skip()`` gets the topology's hosts it names. A ``require`` condition gets, by the names of
    its parameters (everything for ``**kwargs``): ``mh``, the topology's role fixtures, the test's
    parametrized values and every other fixture the test requests that does not itself need
    ``mh`` (as in pytest-mh, where those are set up before ``mh``).

    Example::

        @pytest.mark.parametrize("user", ["root", "sssd"])
        @pytest.mark.require(lambda client, user: user == "root" or client.features["non-root"], "needs non-root")
        @pytest.mark.topology(KnownTopology.Client)
        def test_user(client, user): ...

    :raises MultihostError: A ``require`` marker is malformed, or its condition names something the test lacks.
    """
    controller = fixture.topology_mark.controller
    reason = controller._invoke_with_args(controller.skip)
    if reason is not None:
        pytest.skip(str(reason))
    markers = list(request.node.iter_markers("require"))
    if not markers:
        return
    arguments = _Arguments(request, fixture)
    for marker in markers:
        condition, reason = _condition_and_reason(request.node.nodeid, marker)
        outcome = _call(condition, arguments, f"{request.node.nodeid}: @pytest.mark.require condition")
        if isinstance(outcome, tuple):
            if len(outcome) != 2:
                raise MultihostError(
                    f"{request.node.nodeid}: a @pytest.mark.require condition returns a bool or (bool, reason), "
                    f"got {outcome!r}"
                )
            outcome, reason = outcome[0], outcome[1] or reason
        if not outcome:
            pytest.skip(str(reason))


def _condition_and_reason(nodeid: str, marker: pytest.Mark) -> tuple[Callable[..., Any], Any]:
    args = list(marker.args)
    if len(args) > 2:
        raise MultihostError(f"{nodeid}: @pytest.mark.require takes (condition, reason), got {tuple(args)!r}")
    condition = args[0] if args else marker.kwargs.get("condition")
    reason = args[1] if len(args) == 2 else marker.kwargs.get("reason", DEFAULT_REASON)
    if not callable(condition):
        raise MultihostError(f"{nodeid}: @pytest.mark.require needs a callable condition, got {condition!r}")
    return condition, reason


class _Arguments:
    """What a ``require`` condition may ask for, each value looked up (or set up) when first asked."""

    def __init__(self, request: pytest.FixtureRequest, fixture: MultihostFixture) -> None:
        self._request = request
        self._known: dict[str, Any] = {**getattr(request.node, "funcargs", {}), **fixture.fixtures, "mh": fixture}
        self._unavailable: set[str] = set()

    def get(self, name: str) -> Any:
        """The value of ``name``, or ``_MISSING`` when the test has none (or only one that needs ``mh``)."""
        if name in self._known:
            return self._known[name]
        if name in self._unavailable or name not in self._request.node.fixturenames:
            return _MISSING
        try:
            value = self._request.getfixturevalue(name)
        except pytest.FixtureLookupError:  # it needs mh, which is being set up: pytest-mh gives it no value either
            self._unavailable.add(name)
            return _MISSING
        self._known[name] = value
        return value

    def everything(self) -> dict[str, Any]:
        for name in self._request.node.fixturenames:
            self.get(name)
        return dict(self._known)

    def names(self) -> list[str]:
        return sorted(self._known)


def _call(condition: Callable[..., Any], arguments: _Arguments, where: str) -> Any:
    try:
        params = list(inspect.signature(condition).parameters.values())
    except (TypeError, ValueError):  # no signature to read: give everything by name
        return condition(**arguments.everything())
    kind = inspect.Parameter
    if any(param.kind is kind.VAR_KEYWORD for param in params):
        return condition(**arguments.everything())
    kwargs: dict[str, Any] = {}
    missing: list[str] = []
    for param in params:
        if param.kind in (kind.VAR_POSITIONAL, kind.POSITIONAL_ONLY):
            continue
        value = arguments.get(param.name)
        if value is not _MISSING:
            kwargs[param.name] = value
        elif param.default is kind.empty:
            missing.append(param.name)
    if missing:
        raise MultihostError(
            f"{where} asks for {', '.join(missing)}, which the test does not have before "
            f"mh is set up (it has: {', '.join(arguments.names())})"
        )
    return condition(**kwargs)
