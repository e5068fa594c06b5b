"""Teardown that runs every step and gathers every failure, naming the object of each."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..errors import MultihostError, TeardownExceptionGroup, describe

__all__ = ["TeardownStack", "run_all"]

log = logging.getLogger("pytest_mh_ansible")


class TeardownStack:
    """A stack of undo steps; :meth:`unwind` runs them all, newest first, then raises one group.

    Safe to unwind twice: a step runs once.
    """

    def __init__(self) -> None:
        self._steps: list[tuple[object, Callable[[], object]]] = []

    def push(self, owner: object, step: Callable[[], object]) -> None:
        self._steps.append((owner, step))

    def unwind(self, what: str, *, reraise: bool = True) -> list[Exception]:
        """Run every step; raise (or return) the failures, each wrapped to name its object."""
        steps, self._steps = self._steps, []
        return run_all(what, [(owner, step) for owner, step in reversed(steps)], reraise=reraise)


def run_all(what: str, steps: list[tuple[object, Callable[[], object]]], *, reraise: bool = True) -> list[Exception]:
    """Run each ``(owner, step)``; gather failures into a :class:`TeardownExceptionGroup` named ``what``."""
    errors: list[Exception] = []
    for owner, step in steps:
        try:
            step()
        except Exception as err:
            name = describe(owner)
            log.error("%s: %s failed: %s", what, name, err)
            wrapped = MultihostError(f"{name}: {type(err).__name__}: {err}")
            wrapped.__cause__ = err
            errors.append(wrapped)
    if errors and reraise:
        raise TeardownExceptionGroup(f"{what}: {len(errors)} step(s) failed", errors)
    return errors
