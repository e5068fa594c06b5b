"""The one way the bundled utilities call a module with optional arguments: unset (None) ones are left out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..host import MultihostHost

__all__ = ["run_module"]


def run_module(host: MultihostHost, module: str, **kwargs: Any) -> bool:
    """Run ``module`` on ``host`` with the arguments that are set; whether it changed the host.

    A utility's keyword arguments default to None for "not given"; passing them on as None would
    make Ansible use None instead of the module's own default.
    """
    return host.ansible.run(module, **{k: v for k, v in kwargs.items() if v is not None}).changed
