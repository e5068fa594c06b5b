"""Shell commands through the warm agent: one open channel per (host, become user) instead of an ssh client per command.

A command on the standard path starts a new ``ssh`` client process on the controller, which
multiplexes one more session over the ControlMaster (~20-30 ms, most of it process start-up
on both ends). :class:`CommandAgents` starts the agent of :mod:`.warm_agent` once per become
user over the host's own connection plugin (so every ``ansible_*`` connection and become
variable applies, as for the agent of module calls), and each command is then one request on
that channel: the agent forks and execs ``<shell> -c <command>`` in a new session, with the
environment the login gave it and stdin from the request.

What the command sees is what it sees on the standard path: the same shell and wrapper
(``exec </dev/null``, ``timeout -k``), the same user, the same login environment, no tty.
Connections other than ``ssh`` and ``local``, become methods that prompt on a terminal, and
hosts without Python take the standard path, with the reason logged once.

Example::

    agents = CommandAgents("server1", interpreter="/usr/bin/python3")
    served = agents.run(conn, become_plugin, ["/bin/sh", "-c", "id -un"], None)
    if served is None:  # no agent (yet) for this host and become user: run it the standard way
        ...
    agents.close()
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from . import compat
from .warm import AgentError, _Agent, _AgentLost, _Fallback, _Slot, connection_failure, open_channel

__all__ = ["CommandAgents"]

logger = logging.getLogger("pytest_mh_ansible.conn")

_TRANSPORTS = frozenset({"ssh", "local"})
_START_JOIN = 5.0
# How long a script waits for an agent that an earlier command started: less than a module costs
# on a loaded machine, and the journal's path stays the same from one run to the next.
_SCRIPT_WAIT = 10.0


class CommandLost(Exception):
    """The agent went away while a command ran, and the host still answers: the command may have run."""


@dataclass
class _Starting:
    """An agent whose start runs in a thread, while commands take the standard path."""

    agent: _Agent
    done: threading.Event = field(default_factory=threading.Event)
    error: AgentError | None = None

    def wait(self, password: str | None) -> None:
        try:
            self.agent.start(password)
        except AgentError as err:
            self.error = err
        except Exception as err:  # never let the thread die silently: the slot must learn of it
            self.error = AgentError(f"{type(err).__name__}: {err}")
        finally:
            self.done.set()


class CommandAgents:
    """A transport's command agents, one per become user, started in the background on a command's first use.

    The first command of a become user spawns the agent's channel and returns None (the standard
    path) while a thread waits for the agent to come up (a few hundred ms, the interpreter's
    start); the commands after that go through the agent. A session start therefore waits for no
    agent. Not thread-safe otherwise: the transport calls it under its own lock.

    :param host: The inventory hostname (for messages).
    :param interpreter: The Python on the target that runs the agent.
    """

    def __init__(self, host: str, *, interpreter: str) -> None:
        self.host = host
        self.interpreter = interpreter
        self._slots: dict[str, _Slot] = {}
        self._starting: dict[str, _Starting] = {}

    def run(self, conn: Any, become: Any, argv: list[str], stdin: bytes | None) -> tuple[int, bytes, bytes] | None:
        """Run ``argv`` through the agent of ``become``'s user; None: take the standard path.

        :param conn: The transport's connection plugin (open).
        :param become: The become plugin that the standard path would wrap the command with, or None.
        :raises AnsibleConnectionFailure: The agent was lost during the command because the host went away.
        :raises CommandLost: The agent was lost during the command and the host still answers.
        """
        header: dict[str, Any] = {"argv": argv}
        if compat.plugin_load_name(conn).rsplit(".", 1)[-1] == "local":
            header["env"] = dict(os.environ)  # the local plugin's commands inherit pytest's environment now
        return self._request(conn, become, "exec", header, stdin or b"")

    def script(self, conn: Any, become: Any, source: bytes, request: Any) -> tuple[int, bytes, bytes] | None:
        """Run a stdlib-only Python ``source`` in the agent of ``become``'s user (``REQUEST`` is ``request``).

        An agent that an earlier command started and that is still coming up is waited for (up to
        10 s): its start is most of the way done, while the module the caller would run instead
        costs more than the rest of it, and the journal's path does not depend on the machine's load.

        :returns: Its exit code, stdout and stderr; None when this host and user have no agent (yet):
            the caller takes its standard way (a module).
        :raises AnsibleConnectionFailure: The agent was lost during the script because the host went away.
        :raises CommandLost: The agent was lost during the script and the host still answers.
        """
        return self._request(conn, become, "script", {"request": request}, source, wait=_SCRIPT_WAIT)

    def _request(
        self, conn: Any, become: Any, op: str, header: dict[str, Any], payload: bytes, *, wait: float = 0.0
    ) -> tuple[int, bytes, bytes] | None:
        transport = compat.plugin_load_name(conn).rsplit(".", 1)[-1]
        key = "-" if become is None else f"{become.name}:{become.get_option('become_user')}"
        slot = self._slots.setdefault(key, _Slot())
        if transport not in _TRANSPORTS and not slot.disabled:
            slot.disabled = f"the {transport} connection has no persistent channel for the agent"
            logger.info("%s: commands on the standard path: %s", self.host, slot.disabled)
        if slot.disabled:
            return None
        label = f"{self.host} (commands" + (f", become {key}" if become is not None else "") + ")"
        if slot.agent is not None and not slot.agent.channel.alive():
            self._drop(slot)
            slot.lost(label, "the agent or its connection went away")
        if slot.agent is None and not self._ready(key, slot, label, conn, become, wait=wait):
            return None
        agent = slot.agent
        assert agent is not None
        try:
            answer, out, err = agent.run(header, payload, op=op)
        except _AgentLost as lost:
            self._drop(slot)
            failure = connection_failure(conn)
            if failure is not None:
                raise failure from lost
            slot.lost(label, str(lost))
            raise CommandLost(f"the agent on {label} ended during the command ({lost}); it may have run") from lost
        except AgentError as err:
            self._drop(slot)  # gone before it took the command: nothing ran; a new agent starts meanwhile
            slot.lost(label, str(err))
            return None
        except BaseException:
            self._drop(slot)  # interrupted: the agent kills the command's process group at the channel's end
            raise
        return int(answer["rc"]), out, err

    def close(self) -> None:
        """Stop every agent, started or starting: nothing of ours keeps running on the target."""
        slots, self._slots = self._slots, {}
        starting, self._starting = self._starting, {}
        for pending in starting.values():
            pending.agent.channel.close(wait=0.5)  # ends a start that is still waiting
            pending.done.wait(_START_JOIN)
        for slot in slots.values():
            if slot.agent is not None:
                slot.agent.stop()

    def _ready(self, key: str, slot: _Slot, label: str, conn: Any, become: Any, *, wait: float = 0.0) -> bool:
        """Whether the slot has its agent now; starts one in the background if none is coming.

        :param wait: How long to wait for an agent that is already starting (a new start is never waited for).
        """
        pending = self._starting.get(key)
        if pending is None:
            if slot.disabled:
                return False
            try:
                channel, password = open_channel(conn, become, self.interpreter, executable=None, cwd=None)
            except _Fallback as cannot:
                slot.disabled = str(cannot)
                logger.info("%s: commands on the standard path: %s", self.host, slot.disabled)
                return False
            pending = self._starting[key] = _Starting(_Agent(label=label, channel=channel))
            threading.Thread(target=pending.wait, args=(password,), name=f"mh-agent-{label}", daemon=True).start()
            return False
        if not pending.done.wait(wait):
            return False
        del self._starting[key]
        if pending.error is not None:
            with contextlib.suppress(Exception):
                pending.agent.channel.close(wait=0.5)
            # Often the host is down, or has no such Python: the commands went the standard way, which
            # reports it as Ansible does; the next one tries again, unless this was the second loss.
            slot.lost(label, f"it could not start ({pending.error})")
            return False
        slot.agent = pending.agent
        logger.debug("%s: agent started (pid %d, Python %s)", label, slot.agent.pid, slot.agent.python)
        return True

    @staticmethod
    def _drop(slot: _Slot) -> None:
        agent, slot.agent = slot.agent, None
        if agent is not None:
            with contextlib.suppress(Exception):
                agent.channel.close(wait=0.5)
