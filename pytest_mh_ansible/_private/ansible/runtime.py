"""Ansible's process-wide set-up, as one place does it: the plugin loader, its programs, its output, its become rule.

ansible-core keeps global state (the plugin loader, Display); the transport, the executor and the
inventory all need it set up the same way, so they call these functions instead of each its own copy.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ..secrets import secrets
from . import compat, routing_cache

__all__ = ["ansible_output_logged", "becomes_another_user", "init_ansible", "loading_plugins"]

_init_lock = threading.Lock()
_plugin_lock = threading.RLock()


def init_ansible() -> None:
    """Configure Ansible's plugin loader once per process (a second configuration only warns) and find its programs.

    The ssh-agent module that the ssh connection plugin imports is imported here too, quietly
    (see :func:`compat.preload_ssh_agent`), so that connecting never raises cryptography's
    deprecation inside a test that turns warnings into errors. Collection routing tables are read
    through :mod:`routing_cache` (parsed once per content, not once per process).
    """
    from ansible.plugins.loader import init_plugin_loader
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    with _init_lock:
        if not AnsibleCollectionConfig.collection_finder:
            routing_cache.install()
            init_plugin_loader()
        compat.preload_ssh_agent()
        _find_ansible_programs()


@contextlib.contextmanager
def loading_plugins() -> Iterator[None]:
    """Hold this while Ansible's loader hands out plugins that may not have been loaded in this process yet.

    The loader puts a plugin's module into ``sys.modules`` before the module has run, so a second
    thread that asks for the same plugin at that moment gets it half-initialised ("module ... has
    no attribute 'Connection'"). Loading takes milliseconds; what takes long (an ssh handshake)
    is done after the block, so hosts still connect side by side.
    """
    with _plugin_lock:
        yield


def _find_ansible_programs() -> None:
    """Let programs that Ansible starts by name find this interpreter's ``ansible`` (ssh's askpass helper).

    The ssh plugin logs in with a password through ``SSH_ASKPASS=ansible``, looked up on PATH
    unless ``ansible`` sits beside ``sys.argv[0]`` (true for ``ansible-playbook``, not for
    ``python -m pytest`` or a virtualenv that is not activated). This interpreter's bin directory
    is appended to PATH, so it is only used for what PATH does not have.
    """
    bindir = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if os.path.isfile(os.path.join(bindir, "ansible")) and bindir not in path.split(os.pathsep):
        os.environ["PATH"] = f"{path}{os.pathsep}{bindir}" if path else bindir


@contextlib.contextmanager
def ansible_output_logged(host: str, log: logging.Logger, *, prefix: str = "", display: bool = False) -> Iterator[None]:
    """Send what Ansible would print while the block runs to ``log``, masked, instead of the terminal.

    Warnings and deprecations are collected by a deferred-warning context and logged at the end.
    With ``display``, Display's own lines go to the log too (DEBUG, INFO for stderr): Display is
    process-wide, so only a caller that holds its own lock for the whole block may ask for it.

    :param host: Named at the start of each line.
    :param prefix: Put before each message (``"ansible: "`` where the logger is not Ansible's own).
    """

    def to_log(msg: str, *args: Any, stderr: bool = False, **kwargs: Any) -> None:
        text = secrets.mask(str(msg)).strip()
        if text:
            log.log(logging.INFO if stderr else logging.DEBUG, "%s: %s%s", host, prefix, text)

    with contextlib.ExitStack() as stack:
        if display:
            stack.enter_context(compat.display_methods_replaced(display=to_log))
        stack.enter_context(
            compat.deferred_warnings(
                lambda text: log.warning("%s: %s%s", host, prefix, secrets.mask(text)),
                lambda text: log.debug("%s: %s%s", host, prefix, secrets.mask(text)),
            )
        )
        yield


def becomes_another_user(remote_user: str | None, become_user: str | None) -> bool:
    """ActionBase's rule: become only to another user (no sudo from root to root), unless allow_same_user."""
    from ansible import constants as C

    return bool(C.BECOME_ALLOW_SAME_USER or remote_user != become_user or not (remote_user or become_user))
