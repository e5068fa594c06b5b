"""The warm module executor: Ansible's own module payloads, run by a long-lived agent on the target.

A module call through Ansible starts a new Python on the target and imports
``ansible.module_utils.basic`` (~250 ms of a ~300 ms call). :class:`WarmExecutor` runs the
same tasks through the same ``TaskExecutor`` as :class:`~.executor.StandardExecutor`, but
one step is served differently: when an action plugin is about to pipe an AnsiballZ payload
into ``python3`` on the target, the payload goes to an agent (:mod:`.warm_agent`) started
once per (host, become user, interpreter) over the host's own connection, which forks a
fresh child from a warm, pre-imported interpreter and runs the unmodified payload. Action
plugins, argument handling, result parsing, check and diff mode are Ansible's, untouched.

The action plugin's own steps on an ssh host go to the agents too, so that ``copy``,
``template``, ``fetch`` or ``assemble`` cost about what their module calls cost: its commands
(``mkdir``/``chmod``/``rm`` of the remote tmp dir, ``echo ~``), built with the same shell
wrapping, run by the agent of the user the standard path would run them as (the login user's
for ``sudoable=False``), and its ``put_file``/``fetch_file`` (up to 16 MiB) are written and read
by the login user's agent, as an sftp transfer would (:mod:`.warm_agent`'s ``put``/``fetch``).
Without an agent the first commands of a task start one with the interpreter the host's
variables name.

Everything else (``raw`` without a shell of ours, larger files, non-Python modules, async,
the local plugin's steps, connections without a persistent channel) takes the standard path,
and each such fallback is logged with its reason.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import functools
import hashlib
import json
import logging
import os
import re
import selectors
import shlex
import stat
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

from ..secrets import secrets
from . import compat
from .executor import BeforeCommand, ModuleCallOptions, StandardExecutor, _lock
from .executor_choice import ExecutorName, executor_for_host
from .inventory import Inventory
from .runtime import becomes_another_user
from .shell_steps import step_request

__all__ = ["AgentError", "WarmExecutor"]

logger = logging.getLogger("pytest_mh_ansible.modules")


_AGENT_SOURCE = Path(__file__).with_name("warm_agent.py")
# Modules whose changes can alter what an agent imported at start-up.
_PACKAGE_MODULES = frozenset(
    {"apt", "dnf", "dnf5", "yum", "package", "pip", "apk", "zypper", "pacman", "snap", "selinux", "seboolean"}
)
_START_TIMEOUT = 30.0
_STDERR_WAIT = 5.0  # how long a boot command that ended early is waited for, for its stderr
_STOP_TIMEOUT = 5.0
_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# The stdlib-only reader the agent's interpreter runs (python -c): skip lines (a become
# success marker, a sudo password echo) up to the header, then exec exactly that many bytes.
_BOOT = """#mh-warm-agent
import os
def r(n):
    d = b''
    while len(d) < n:
        c = os.read(0, n - len(d))
        if not c:
            raise SystemExit(3)
        d += c
    return d
while True:
    line = b''
    while not line.endswith(b'\\n'):
        line += r(1)
    if line.startswith(b'MHWARM '):
        break
exec(compile(r(int(line.split()[1])), 'mh_warm_agent', 'exec'), {'__name__': 'mh_warm_agent'})
"""
_READY = b"\nMHWARM-READY\n"

# Which executor serves the TaskExecutor run of this thread right now (None: standard).
_active: contextvars.ContextVar[_Router | None] = contextvars.ContextVar("mh_warm_router", default=None)


_PROTOCOL = 4
# The base64 literal of an AnsiballZ payload's zip, as the agent finds it (warm_agent.ZIP_RE).
_ZIP_LITERAL = re.compile(rb"\nzip_data='([A-Za-z0-9+/=]*)',\n")


@functools.cache
def _agent_source() -> bytes:
    """The agent's source, read once per process (a running session keeps the code it started with)."""
    return _AGENT_SOURCE.read_bytes()


def _decoded(frame: bytes) -> dict[str, Any]:
    try:
        value = json.loads(frame)
    except ValueError as err:
        raise AgentError(f"the agent answered something unreadable ({frame[:40]!r})") from err
    if not isinstance(value, dict):
        raise AgentError(f"the agent answered something unreadable ({frame[:40]!r})")
    return value


class AgentError(Exception):
    """The agent could not be started, or its channel broke."""


class _AgentLost(AgentError):
    """The agent went away after it had taken a payload: the module may have run."""


# --- channels ---------------------------------------------------------------------------------


class _Channel:
    """A byte stream to the agent, held open for the session: a local process, ``ssh host '<boot>'``
    (multiplexed over Ansible's ControlMaster) or ``sh -c``."""

    def __init__(self, argv: list[bytes] | str, *, shell: bool, cwd: str | None, pass_fds: tuple[int, ...] = ()):
        self._proc = subprocess.Popen(
            argv,
            shell=shell,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
            start_new_session=True,  # Ctrl-C in pytest's terminal reaches pytest, not the agent's ssh
        )
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        self._stdin = self._proc.stdin
        self._out = self._proc.stdout.fileno()
        self._err_chunks: list[bytes] = []
        self._err_thread = threading.Thread(target=self._drain_stderr, name="mh-warm-stderr", daemon=True)
        self._err_thread.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _drain_stderr(self) -> None:
        """Keep the first 64 KiB of stderr for error messages; this thread owns (and closes) the pipe."""
        stream = self._proc.stderr
        assert stream is not None
        try:
            fd = stream.fileno()
            while chunk := os.read(fd, 65536):
                if sum(map(len, self._err_chunks)) < 65536:
                    self._err_chunks.append(chunk)
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError, ValueError):
                stream.close()

    def send(self, data: bytes) -> None:
        try:
            self._stdin.write(data)
            self._stdin.flush()
        except (BrokenPipeError, ValueError, OSError) as err:
            raise AgentError(f"the channel is closed ({err})") from err

    def recv(self, size: int, timeout: float | None) -> bytes:
        """Up to ``size`` bytes; b"" at the end of the stream; AgentError after ``timeout``."""
        if timeout is not None:
            with selectors.DefaultSelector() as selector:
                selector.register(self._out, selectors.EVENT_READ)
                if not selector.select(timeout):
                    raise AgentError(f"no answer in {timeout:.0f} s")
        try:
            return os.read(self._out, size)
        except OSError as err:
            raise AgentError(f"the channel broke ({err})") from err

    def alive(self) -> bool:
        return self._proc.poll() is None

    def close(self, *, wait: float) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stdin.close()
        try:
            self._proc.wait(wait)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        with contextlib.suppress(OSError, ValueError):
            if self._proc.stdout is not None:
                self._proc.stdout.close()
        self._err_thread.join(wait)  # ends at stderr's EOF, now that the process is gone

    def stderr(self) -> str:
        return b"".join(self._err_chunks).decode(errors="replace").strip()

    def ended_stderr(self, wait: float) -> str:
        """The stderr of a process that is ending (a write found its stdin closed): waits for it first."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(wait)
        self._err_thread.join(wait)
        return self.stderr()


# --- the agent ----------------------------------------------------------------------------------


@dataclass
class _Agent:
    """One agent process on the target, and the controller's end of its channel."""

    label: str
    channel: _Channel
    pid: int = 0
    python: str = ""
    _pending: bytes = b""
    _zips: set[str] = field(default_factory=set)  # payload zips the agent holds: named, not sent again

    def _read_exact(self, size: int, timeout: float | None) -> bytes:
        if len(self._pending) < size:
            # A bytearray: a fetched file comes in many reads, and joining bytes one read at a time
            # would copy all that came so far each time.
            data = bytearray(self._pending)
            while len(data) < size:
                chunk = self.channel.recv(max(65536, size - len(data)), timeout)
                if not chunk:
                    detail = self.channel.stderr()
                    raise AgentError("the agent ended" + (f": {secrets.mask(detail)}" if detail else ""))
                data += chunk
            self._pending = bytes(data)
        head, self._pending = self._pending[:size], self._pending[size:]
        return head

    def _read_frame(self, timeout: float | None = None) -> bytes:
        size = int.from_bytes(self._read_exact(4, timeout), "big")
        return self._read_exact(size, timeout)

    def _send_frame(self, data: bytes) -> None:
        self.channel.send(len(data).to_bytes(4, "big") + data)

    def start(self, password: str | None) -> None:
        source = _agent_source()
        preamble = f"{password}\n".encode() if password else b""
        try:
            self.channel.send(preamble + b"MHWARM %d\n" % len(source) + source)
        except AgentError as err:
            # The boot command ended before it read the agent (no such interpreter, a refused login):
            # what it said is the reason, not the broken pipe.
            detail = secrets.mask(self.channel.ended_stderr(_STDERR_WAIT))
            raise AgentError("the agent did not start" + (f": {detail}" if detail else f" ({err})")) from err
        deadline = time.monotonic() + _START_TIMEOUT
        seen = b""
        while _READY not in seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AgentError(f"no answer in {_START_TIMEOUT:.0f} s")
            chunk = self.channel.recv(65536, left)
            if not chunk:  # the boot command ended: what it printed (once its stderr is read to the end)
                printed = self.channel.ended_stderr(_STDERR_WAIT)
                detail = secrets.mask((seen.decode(errors="replace") + "\n" + printed).strip())
                raise AgentError("the agent did not start" + (f": {detail}" if detail else ""))
            seen += chunk
            if len(seen) > 1 << 20:
                raise AgentError("the agent did not start: unexpected output")
        self._pending = seen.split(_READY, 1)[1]
        hello = _decoded(self._read_frame(_START_TIMEOUT))
        if hello.get("protocol") != _PROTOCOL:
            raise AgentError(f"the agent speaks protocol {hello.get('protocol')!r}, not {_PROTOCOL}")
        self.pid = int(hello.get("pid") or 0)
        self.python = str(hello.get("python", ""))

    def run(self, header: Mapping[str, Any], payload: bytes, *, op: str = "run") -> tuple[dict[str, Any], bytes, bytes]:
        """Run one payload (``op="exec"``: a command, ``payload`` its stdin); AgentError if the agent is
        gone before it took it (safe to retry), _AgentLost if it went away afterwards (it may have run)."""
        zip_key = ""
        if op == "run" and (match := _ZIP_LITERAL.search(payload)) is not None:
            # A module's zip (most of its payload) is the same in each call: sent once, then named.
            zip_key = hashlib.sha1(match.group(1)).hexdigest()
            if zip_key in self._zips:
                header = {**header, "zip_ref": zip_key}
                payload = payload[: match.start(1)] + payload[match.end(1) :]
        self._send_frame(json.dumps({"op": op, **header}).encode())
        self._send_frame(payload)
        if self._read_frame() != b"accepted":
            raise AgentError("the agent answered out of turn")
        try:
            answer = _decoded(self._read_frame())
            out = self._read_frame()
            err = self._read_frame()
        except AgentError as err:
            raise _AgentLost(str(err)) from err
        if zip_key and answer.get("kept") == zip_key:
            self._zips.add(zip_key)
        return answer, out, err

    def stop(self) -> None:
        with contextlib.suppress(AgentError):
            self._send_frame(b'{"op": "exit"}')
        self.channel.close(wait=_STOP_TIMEOUT)


@dataclass
class _Slot:
    """An agent key's state: the agent, how often it was lost, why it is off (if it is)."""

    agent: _Agent | None = None
    restarts: int = 0
    disabled: str | None = None

    def lost(self, label: str, why: str) -> None:
        """The agent went away: it is restarted once; after a second loss its key takes the standard path."""
        self.restarts += 1
        if self.restarts > 1:
            self.disabled = f"the warm agent on {label} was lost twice (last: {why}); standard path from now on"
            logger.warning("%s", self.disabled)
        else:
            logger.info("%s: warm agent lost (%s); it will be restarted once", label, why)


# --- routing module payloads ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Command:
    """A pipelined module command as the action plugin built it: ``[VAR=value ...] interpreter``."""

    interpreter: str
    env_add: dict[str, str]

    @classmethod
    def parse(cls, cmd: str) -> _Command | str:
        """The command, or the reason it cannot be served warm."""
        try:
            words = shlex.split(cmd)
        except ValueError:
            return "the module command cannot be parsed"
        if not words:
            return "an empty module command"
        *assignments, interpreter = words
        env_add: dict[str, str] = {}
        for word in assignments:
            if not _ENV_WORD.match(word):
                return f"the interpreter is a command with arguments ({' '.join(words[-2:])})"
            name, _, value = word.partition("=")
            env_add[name] = value
        if _ENV_WORD.match(interpreter) or (not interpreter.startswith("/") and "/" in interpreter):
            return f"an unusual interpreter {interpreter!r}"
        return cls(interpreter=interpreter, env_add=env_add)


def _runs_module_file(cmd: str) -> bool:
    """``[VAR=v ...] interpreter <tmp>/AnsiballZ_x.py``: a module run from a file (no pipelining)."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        return False
    if len(words) < 2 or "/AnsiballZ_" not in words[-1] or not words[-1].endswith(".py"):
        return False
    return isinstance(_Command.parse(shlex.join(words[:-1])), _Command)


# Larger files take the standard path: sftp streams them, while a frame holds a file whole in memory.
_TRANSFER_LIMIT = 16 << 20
# The connections whose own steps (commands, transfers) start a client process each, which an agent's
# open channel saves: the local plugin's are local processes and copies already.
_STEP_TRANSPORTS = frozenset({"ssh"})


class _Router:
    """Serves one host's TaskExecutor run through the host's agents.

    Module payloads go to the agent of the become user and interpreter the payload names. The
    action plugin's own steps go to an agent too, on connections that hold a channel (ssh): its
    commands (``mkdir``/``chmod``/``rm`` of the remote tmp dir, ``echo ~``) to the agent of the
    user the standard path would run them as (``sudoable=False``: the login user), built with
    the same shell wrapping, and its file transfers (``put_file``/``fetch_file``) to the login
    user's agent, which writes and reads the file itself. What cannot be served so takes the
    standard path, with the reason logged.
    """

    def __init__(self, pool: _AgentPool, host: str, interpreter: str = "", before: BeforeCommand | None = None) -> None:
        self.pool = pool
        self.host = host
        self.interpreter = interpreter  # the host's Python, if the task's variables name it ("" if not)
        self.before = before  # the caller's command for right before the module: the first payload takes it
        self.before_route = ""  # how it went: "carried" (with the payload) or "apart"
        self._carrying: BeforeCommand | None = None  # the command, once handed to an agent with the payload
        self.served = 0
        self.fell_back = 0
        self.steps: dict[str, int] = dict.fromkeys(("exec", "step", "put", "fetch", "standard"), 0)
        self._actions: dict[int, tuple[Any, Any]] = {}  # id(connection) -> (connection, the action using it)
        self._said: set[str] = set()

    def execute(self, action: Any, original: Any, cmd: str, **kwargs: Any) -> dict[str, Any]:
        conn = compat.action_connection(action)
        self._actions[id(conn)] = (conn, action)  # its file transfers come later, from the connection
        in_data = kwargs.get("in_data")
        if not in_data and _runs_module_file(cmd):
            reason = "the connection does not pipeline (paramiko, or pipelining off): the module runs from a file"
            return self._fallback(action, original, cmd, kwargs, reason)
        if not in_data or b"_ansiballz_main(" not in in_data:
            return self._command(action, original, cmd, kwargs)  # mkdir, chmod, rm, raw, ...
        if kwargs.get("executable") or kwargs.get("chdir"):
            self._before_apart()
            return dict(original(action, cmd, **kwargs))
        parsed = _Command.parse(cmd)
        if isinstance(parsed, str):
            return self._fallback(action, original, cmd, kwargs, parsed)
        carry = self._carry(action)
        sudoable = kwargs.get("sudoable", True)
        try:
            rc, out, err, carried = self.pool.serve(self.host, action, parsed, in_data, sudoable=sudoable, before=carry)
        except _Fallback as reason:
            if carry is not None:  # the agent did not take it: the command did not run either
                self.before, self._carrying = self._carrying, None
            return self._fallback(action, original, cmd, kwargs, str(reason))
        except BaseException as exc:
            if carry is not None:
                self._before_lost(f"{type(exc).__name__}: {exc}")
            raise
        if carry is not None and self._before_carried(carried):
            try:  # held back by the command's failure, which the caller has dealt with: on its own now
                rc, out, err, _ = self.pool.serve(self.host, action, parsed, in_data, sudoable=sudoable)
            except _Fallback as reason:
                return self._fallback(action, original, cmd, kwargs, str(reason))
        self.served += 1
        return _as_result(rc, out, err, kwargs)

    def _carry(self, action: Any) -> list[str] | None:
        """The argv of the caller's command for the agent to run before the module, or None (it ran apart).

        Carried on ssh only, by the agent of the module's user, which is the host's default one
        (the executor gives the router no command for a call with its own become settings). The
        agent runs it as the host's connection would: the host's shell, stdin from /dev/null.
        """
        before = self.before
        if before is None:
            return None
        conn = compat.action_connection(action)
        transport = _transport_name(conn)
        executable = compat.action_executable(action)
        if transport not in _STEP_TRANSPORTS:
            why = f"the {transport} connection"
        elif not (conn.allow_executable and executable):
            why = "no shell executable"
        else:
            self.before, self._carrying = None, before
            self.before_route = "carried"
            return [executable, "-c", f"exec </dev/null\n{before.command}"]
        self._say(f"the command before the module runs apart: {why}")
        self._before_apart()
        return None

    def _before_apart(self) -> None:
        """The caller's command, if still to run, on its own over the host's connection (before the module)."""
        before, self.before = self.before, None
        if before is not None and not before.done:
            self.before_route = "apart"
            before.run_apart()

    def _before_carried(self, carried: Mapping[str, Any] | None) -> bool:
        """Hand the carried command's outcome to the caller; whether the agent held the module back."""
        before = self._carrying
        assert before is not None
        if carried is None or "lost" in carried:
            before.lost(str((carried or {}).get("lost") or "the agent did not say how the command went"))
            return False
        stdout = base64.b64decode(str(carried.get("stdout") or "")).decode("utf-8", errors="replace")
        before.carried(int(carried.get("rc", 1)), stdout)
        return bool(carried.get("held"))

    def _before_lost(self, why: str) -> None:
        if self._carrying is not None:
            self._carrying.lost(why)

    def _fallback(self, action: Any, original: Any, cmd: str, kwargs: dict[str, Any], reason: str) -> dict[str, Any]:
        """A module payload on the standard path; the caller's command, if it still waits, runs apart first."""
        self._before_apart()
        self.fell_back += 1
        logger.info("%s: module payload on the standard path: %s", self.host, reason)
        return dict(original(action, cmd, **kwargs))

    def _command(self, action: Any, original: Any, cmd: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        """A command of the action plugin's own, run as ``_low_level_execute_command`` would run it."""
        conn = compat.action_connection(action)
        transport = _transport_name(conn)
        if transport not in _STEP_TRANSPORTS:
            return self._standard(action, original, cmd, kwargs, f"the {transport} connection runs them itself")
        if kwargs.get("executable"):
            return self._standard(action, original, cmd, kwargs, "the command names its own shell")
        executable = compat.action_executable(action)
        if kwargs.get("executable") is not None or not (conn.allow_executable and executable):
            # raw without ``executable`` (False): the login shell runs the bare command.
            return self._standard(action, original, cmd, kwargs, "no shell executable wraps the command")
        # What ActionBase builds, but for become, which the agent of the become user stands for.
        shell = compat.connection_shell(conn)
        become = _become_for(action, kwargs.get("sudoable", True))
        request = None if kwargs.get("chdir") or kwargs.get("in_data") else _sh_step(shell, cmd)
        if request is not None:
            done = self._step(action, request, become)
            if done is not None:
                return _as_result(*done, kwargs)
        if kwargs.get("chdir"):
            cmd = shell.append_command(f"cd {kwargs['chdir']}", cmd)
        cmd = shell.append_command(cmd, "sleep 0")
        try:
            answer, out, err = self.pool.step(
                self.host,
                action,
                "exec",
                {"argv": [executable, "-c", cmd]},
                kwargs.get("in_data") or b"",
                become=become,
                interpreter=self.interpreter,
            )
            rc = int(answer["rc"])
        except _Fallback as reason:
            return self._standard(action, original, cmd, kwargs, str(reason))
        except _AgentLost as lost:  # it may have run: reported like a killed command
            rc, out, err = _ended_during_command(lost)
        self.steps["exec"] += 1
        return _as_result(rc, out, err, kwargs)

    def _step(self, action: Any, request: dict[str, Any], become: Any) -> tuple[int, bytes, bytes] | None:
        """A shell step done by the agent with system calls: ``(rc, stdout, stderr)``, or None for a shell to run it."""
        try:
            answer, out, err = self.pool.step(
                self.host, action, "step", request, b"", become=become, interpreter=self.interpreter
            )
        except _Fallback:
            return None  # the command path finds the same: it says why
        except _AgentLost as lost:  # it may have been done: reported like a killed command
            return _ended_during_command(lost)
        if "fallback" in answer:
            self._say(f"a shell runs this step: {answer['fallback']}")
            return None
        self.steps["step"] += 1
        return int(answer["rc"]), out, err

    def _standard(self, action: Any, original: Any, cmd: str, kwargs: dict[str, Any], reason: str) -> dict[str, Any]:
        self._say(f"commands on the standard path: {reason}")
        self.steps["standard"] += 1
        return dict(original(action, cmd, **kwargs))

    def _say(self, message: str) -> None:
        """Log a fallback of the action's own steps, once per task (a task has several steps)."""
        if message not in self._said:
            self._said.add(message)
            logger.info("%s: %s", self.host, message)

    def transfer(self, conn: Any, original: compat.FileTransfer, name: str, in_path: str, out_path: str) -> Any:
        """``put_file``/``fetch_file`` of a connection of this run: through the login user's agent, else
        ``original`` (the plugin's own transfer), with the reason logged."""
        entry = self._actions.get(id(conn))
        if entry is None or entry[0] is not conn:
            reason = "no action of this task has used the connection yet"
        else:
            try:
                if name == "put_file":
                    return self._put(entry[1], in_path, out_path)
                return self._fetch(entry[1], in_path, out_path)
            except _Fallback as why:
                reason = str(why)
        self._say(f"{name} on the standard path: {reason}")
        self.steps["standard"] += 1
        return original(conn, in_path, out_path)

    def _put(self, action: Any, in_path: str, out_path: str) -> tuple[int, bytes, bytes]:
        try:
            info = os.stat(in_path)
        except OSError as err:  # the plugin says it in its words (AnsibleFileNotFound)
            raise _Fallback(f"{in_path} cannot be read ({err.strerror})") from err
        if not stat.S_ISREG(info.st_mode):
            raise _Fallback(f"{in_path} is not a regular file")
        if info.st_size > _TRANSFER_LIMIT:
            raise _Fallback(f"{in_path} has {info.st_size} bytes, more than {_TRANSFER_LIMIT >> 20} MiB")
        data = Path(in_path).read_bytes()
        # An sftp or scp upload creates the file with the local file's mode less the umask; dd (piped), 0666.
        mode = info.st_mode & 0o777
        with contextlib.suppress(Exception):
            if compat.action_connection(action).get_option("ssh_transfer_method") == "piped":
                mode = 0o666
        self._transfer_step(action, "put", {"path": out_path, "mode": mode}, data)
        self.steps["put"] += 1
        return 0, b"", b""

    def _fetch(self, action: Any, in_path: str, out_path: str) -> tuple[int, bytes, bytes]:
        answer, data = self._transfer_step(action, "fetch", {"path": in_path, "limit": _TRANSFER_LIMIT}, b"")
        # As sftp's download: a new local file gets the remote file's mode (writable by us) less the umask.
        mode = (int(answer.get("mode", 0o644)) & 0o777) | stat.S_IWUSR
        try:
            fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            with os.fdopen(fd, "wb") as local:
                local.write(data)
        except OSError as err:
            raise _Fallback(f"{out_path} cannot be written here ({err.strerror})") from err
        self.steps["fetch"] += 1
        return 0, b"", b""

    def _transfer_step(
        self, action: Any, op: str, header: dict[str, Any], payload: bytes
    ) -> tuple[dict[str, Any], bytes]:
        """A transfer through the login user's agent (a transfer never becomes): (answer, bytes read)."""
        try:
            answer, out, _ = self.pool.step(
                self.host, action, op, header, payload, become=None, interpreter=self.interpreter
            )
        except _AgentLost as lost:  # a transfer can be done again: the standard path does it
            raise _Fallback(f"the warm agent ended during the transfer ({lost})") from lost
        if int(answer.get("rc", 1)) != 0:
            raise _Fallback(str(answer.get("error") or "the agent could not do it"))
        return answer, out


def _ended_during_command(lost: _AgentLost) -> tuple[int, bytes, bytes]:
    """A command whose agent went away once it took it: rc, stdout, stderr as for a killed command."""
    return 137, b"", f"pytest-mh-ansible: the warm agent ended during this command ({lost})".encode()


def _sh_step(shell: Any, cmd: str) -> dict[str, Any] | None:
    """The agent's request for ``cmd`` if the ``sh`` shell plugin built it as one of its own steps, else None."""
    return step_request(cmd) if getattr(shell, "SHELL_FAMILY", None) == "sh" else None


def _as_result(rc: int, out: bytes, err: bytes, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The result ``_low_level_execute_command`` returns, from a served call's rc, stdout and stderr."""
    process_result = kwargs.get("process_result")  # ansible-core 2.21+: e.g. PowerShell's CLIXML stderr
    if process_result is not None:
        rc, out, err = process_result(rc, out, err)
    errors = kwargs.get("encoding_errors", "surrogate_then_replace")
    from ansible.module_utils.common.text.converters import to_text

    text_out = to_text(out, errors=errors)
    text_err = to_text(err, errors=errors)
    return dict(
        rc=rc,
        stdout=text_out,
        stdout_lines=text_out.splitlines(),
        stderr=text_err,
        stderr_lines=text_err.splitlines(),
    )


class _Fallback(Exception):
    """This payload goes the standard way (the message says why)."""


class _AgentPool:
    """The session's agents, keyed by (host, connection, user, become, interpreter)."""

    def __init__(self) -> None:
        self._slots: dict[tuple[str, ...], _Slot] = {}

    def agents(self) -> list[_Agent]:
        return [slot.agent for slot in self._slots.values() if slot.agent is not None]

    def renew(self, host: str) -> None:
        """After a package change: stop the host's agents that loaded a file the change touched.

        An agent reports which of the files behind what it has loaded (modules, shared
        libraries, the interpreter, the ``sys.path`` directories) changed since; one that cannot
        tell is stopped too. The next call starts fresh ones (not counted as lost).
        """
        for key, slot in self._slots.items():
            if key[0] != host or slot.agent is None:
                continue
            agent = slot.agent
            try:
                answer, _, _ = agent.run({}, b"", op="stale")
                stale = [str(path) for path in answer.get("stale", ["(no answer)"])]
            except AgentError as err:
                stale = [f"(no answer: {err})"]
            if not stale:
                logger.debug("%s: warm agent kept after a package change: nothing it loaded changed", agent.label)
                continue
            slot.agent = None
            agent.stop()
            logger.info("%s: warm agent renewed after a package change (%s changed)", agent.label, ", ".join(stale[:3]))

    def close(self) -> None:
        slots, self._slots = self._slots, {}
        for slot in slots.values():
            if slot.agent is not None:
                slot.agent.stop()
                logger.debug("%s: warm agent stopped (pid %d)", slot.agent.label, slot.agent.pid)

    def serve(
        self,
        host: str,
        action: Any,
        command: _Command,
        payload: bytes,
        *,
        sudoable: bool,
        before: list[str] | None = None,
    ) -> tuple[int, bytes, bytes, dict[str, Any] | None]:
        """Run a module payload in its agent: ``(rc, stdout, stderr, carried)``.

        :param before: The argv of a command the agent runs right before it forks the module; if it
            exits non-zero, the module is held back. ``carried`` is then its outcome: ``rc`` and
            ``stdout`` (base64), ``held`` when the module did not run, or ``lost`` (why no answer came).
        :raises _Fallback: No agent took it (nor ``before``): the standard path runs it.
        """
        become = _become_for(action, sudoable)
        prefix, label = _agent_key(host, action, become)
        header: dict[str, Any] = {"env_add": command.env_add}
        if before is not None:
            header["before"] = {"argv": before}
        if prefix[1] == "local":
            # The local plugin's command inherits pytest's environment and runs in the play's basedir.
            header["env"] = dict(os.environ)
            header["cwd"] = compat.action_basedir(action)
        try:
            answer, out, err = self._call(
                (*prefix, command.interpreter), label, action, become, ("run", header, payload)
            )
        except _AgentLost as err:
            # The payload may or may not have run: report it like a module that was killed.
            message = f"pytest-mh-ansible: the warm agent on {label} ended during this module call ({err}); "
            lost = None if before is None else {"lost": f"the warm agent on {label} ended ({err})"}
            return 137, b"", (message + "the module may have run").encode(), lost
        logger.debug(
            "%s: warm module call rc=%s (agent: prepare %s ms, run %s ms)",
            label,
            answer.get("rc"),
            answer.get("prepare_ms"),
            answer.get("run_ms"),
        )
        carried = answer.get("before") if before is not None else None
        if isinstance(carried, dict):
            logger.debug(
                "%s: the command before the module: rc=%s in %s ms", label, carried.get("rc"), answer.get("before_ms")
            )
        if isinstance(carried, dict) and answer.get("held"):
            return -1, b"", b"", {**carried, "held": True}
        return int(answer["rc"]), out, err, carried if isinstance(carried, dict) else None

    def step(
        self,
        host: str,
        action: Any,
        op: str,
        header: Mapping[str, Any],
        payload: bytes,
        *,
        become: Any,
        interpreter: str,
    ) -> tuple[dict[str, Any], bytes, bytes]:
        """One of an action plugin's own steps (``exec`` a command, ``put``/``fetch`` a file) in an agent.

        Any running agent of the same host, connection, login user and become user serves it,
        whatever its interpreter; without one, an agent is started with ``interpreter``.

        :param interpreter: The host's Python, "" when it is not known yet (then only a running agent serves).
        :raises _Fallback: No agent can take it: the standard path does (the message says why).
        :raises _AgentLost: The agent went away after it took the request (the host still answers).
        """
        prefix, label = _agent_key(host, action, become)
        key = next(
            (
                key
                for key, slot in self._slots.items()
                if key[:4] == prefix and slot.agent is not None and slot.agent.channel.alive()
            ),
            None,
        )
        if key is None:
            if not interpreter:
                raise _Fallback(
                    f"no warm agent runs for {label} yet, and the host's Python is not known before a module"
                )
            key = (*prefix, interpreter)
        return self._call(key, label, action, become, (op, dict(header), payload))

    def _call(
        self, key: tuple[str, ...], label: str, action: Any, become: Any, request: tuple[str, dict[str, Any], bytes]
    ) -> tuple[dict[str, Any], bytes, bytes]:
        """One request (op, header, payload) to the agent of ``key`` (started, or restarted once, as needed).

        :raises _Fallback: No agent can take it (the message says why).
        :raises _AgentLost: The agent went away after it took the request, and the host still answers.
        :raises AnsibleConnectionFailure: The agent went away after it took the request because the host did.
        """
        slot = self._slots.setdefault(key, _Slot())
        if slot.disabled:
            raise _Fallback(slot.disabled)
        for _attempt in (1, 2):
            if slot.agent is not None and not slot.agent.channel.alive():
                with contextlib.suppress(Exception):
                    slot.agent.channel.close(wait=0.5)
                slot.agent = None
                slot.lost(label, "the agent or its connection went away")
                if slot.disabled:
                    raise _Fallback(slot.disabled)
            if slot.agent is None:
                slot.agent = self._start(slot, label, action, become, key[-1])
            agent = slot.agent
            try:
                answer, out, err = agent.run(request[1], request[2], op=request[0])
            except _AgentLost as err:
                slot.agent = None
                with contextlib.suppress(Exception):
                    agent.channel.close(wait=0.5)
                failure = connection_failure(compat.action_connection(action))
                if failure is not None:
                    # The host went away, not just the agent: Ansible reports this as unreachable (as
                    # on the standard path), and the lost agent does not count against the warm path.
                    raise failure from err
                slot.lost(label, str(err))
                raise
            except AgentError as err:
                # Gone before it took the request (killed while idle, connection dropped): nothing ran.
                slot.agent = None
                with contextlib.suppress(Exception):
                    agent.channel.close(wait=0.5)
                slot.lost(label, str(err))
                if slot.disabled:
                    raise _Fallback(slot.disabled) from err
                continue
            except BaseException:
                # Interrupted (Ctrl-C, a test timeout): the agent kills the module when its channel closes.
                slot.agent = None
                with contextlib.suppress(Exception):
                    agent.channel.close(wait=0.5)
                raise
            if "fallback" in answer:
                raise _Fallback(str(answer["fallback"]))
            return answer, out, err
        raise _Fallback(slot.disabled or f"the warm agent on {label} could not take the request")

    def _start(self, slot: _Slot, label: str, action: Any, become: Any, interpreter: str) -> _Agent:
        started = time.monotonic()
        try:
            channel, password = open_channel(
                compat.action_connection(action),
                become,
                interpreter,
                executable=compat.action_executable(action),
                cwd=compat.action_basedir(action),
            )
        except _Fallback as cannot:
            slot.disabled = str(cannot)
            raise
        agent = _Agent(label=label, channel=channel)
        try:
            agent.start(password)
        except AgentError as err:
            with contextlib.suppress(Exception):
                channel.close(wait=0.5)
            # Often the host is down: this call goes the standard way (which reports it as Ansible
            # does); the next one tries again, unless this was the second loss.
            why = f"the warm agent on {label} could not start ({err})"
            slot.lost(label, why)
            raise _Fallback(slot.disabled or why) from err
        logger.info(
            "%s: warm agent started (pid %d, Python %s, %s) in %.0f ms",
            label,
            agent.pid,
            agent.python,
            interpreter,
            (time.monotonic() - started) * 1000,
        )
        return agent


def _agent_key(host: str, action: Any, become: Any) -> tuple[tuple[str, str, str, str], str]:
    """(host, connection, login user, become key) of an action's agents, and their label for messages."""
    transport = _transport_name(compat.action_connection(action))
    become_key = f"{become.name}:{become.get_option('become_user')}" if become is not None else "-"
    user = compat.action_remote_user(action) or ""
    label = f"{host} ({user or 'default user'}" + (f", become {become_key}" if become is not None else "") + ")"
    return (host, transport, user, become_key), label


def connection_failure(conn: Any) -> Exception | None:
    """After an agent was lost mid-call: the connection failure that explains it, or None if the host answers.

    One cheap command over the connection plugin tells a killed agent (the host still
    answers) from a lost host (sshd gone, the network down). The plugin raises Ansible's
    ``AnsibleConnectionFailure`` then, which the task executor turns into an unreachable result.
    """
    from ansible.errors import AnsibleConnectionFailure

    failure: Exception | None = None
    try:
        conn.exec_command("true", sudoable=False)
    except AnsibleConnectionFailure as err:
        compat.reap_abandoned(err)
        failure = err
    except Exception as err:  # a plugin that fails otherwise: treat it as a lost host, with its message
        compat.reap_abandoned(err)
        failure = AnsibleConnectionFailure(f"the connection failed after the warm agent was lost: {err}")
    return failure


def _transport_name(conn: Any) -> str:
    return compat.plugin_load_name(conn).rsplit(".", 1)[-1]


def _become_for(action: Any, sudoable: bool) -> Any:
    """The become plugin that Ansible would wrap this command with, or None (ActionBase's rule)."""
    conn = compat.action_connection(action)
    if not (sudoable and conn.become):
        return None
    if becomes_another_user(compat.action_remote_user(action), action.get_become_option("become_user")):
        return conn.become
    return None


def open_channel(
    conn: Any, become: Any, interpreter: str, *, executable: str | None, cwd: str | None
) -> tuple[_Channel, str | None]:
    """Start the boot command over a connection plugin; (channel, become password to send).

    :param executable: The shell that wraps the command (``ansible_shell_executable``), if any.
    :param cwd: Where a local connection's agent runs.
    :raises _Fallback: This connection or become method cannot hold a channel open.
    """
    boot = f"{shlex.quote(interpreter)} -c {shlex.quote(_BOOT)}"
    password: str | None = None
    if become is not None:
        boot = become.build_become_command(boot, compat.connection_shell(conn))
        if getattr(become, "prompt", None):
            if become.name != "sudo":
                raise _Fallback(f"become method {become.name} asks for a password on a terminal")
            password = str(become.get_option("become_pass"))
    if conn.allow_executable and executable:
        boot = f"{executable} -c {shlex.quote(boot)}"
    name = _transport_name(conn)
    if name == "ssh":
        conn.host = conn.get_option("host") or compat.connection_play_context(conn).remote_addr
        conn_password = conn.get_option("password") or compat.connection_play_context(conn).password
        extra: tuple[str, ...] = ()
        if conn_password and conn.get_option("password_mechanism") != "sshpass":
            # ssh_askpass hands the password to one ssh process only: log in through Ansible's own
            # path, which leaves the ControlMaster running, and multiplex the agent's session over it.
            if not conn.get_option("control_path_dir") and not conn.get_option("ssh_args"):
                raise _Fallback("ssh password login without a ControlMaster cannot hold a channel open")
            rc, _, _ = conn.exec_command("true", sudoable=False)
            if rc != 0:
                raise _Fallback("ssh password login failed")
            extra = ("-o", "BatchMode=yes")
        argv = compat.ssh_command_line(conn, *extra, conn.host, boot)
        pipe = getattr(conn, "sshpass_pipe", None)
        try:
            channel = _Channel(argv, shell=False, cwd=None, pass_fds=tuple(pipe or ()))
        finally:
            if pipe:
                conn.sshpass_pipe = None
                os.close(pipe[0])
                with contextlib.suppress(OSError):
                    if conn_password:
                        os.write(pipe[1], f"{conn_password}\n".encode())
                os.close(pipe[1])
        return channel, password
    if name == "local":
        return _Channel(boot, shell=True, cwd=cwd), password
    raise _Fallback(f"the {name} connection has no persistent channel for the warm agent")


def _dispatch(action: Any, original: compat.LowLevelExecute, cmd: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Where every action plugin's command goes: the active router of this thread, else Ansible's own path."""
    router = _active.get()
    if router is None:
        return dict(original(action, cmd, **kwargs))
    return router.execute(action, original, cmd, **kwargs)


def _dispatch_transfer(conn: Any, original: compat.FileTransfer, name: str, in_path: str, out_path: str) -> Any:
    """Where an ssh connection's ``put_file``/``fetch_file`` goes: the active router of this thread, else the plugin."""
    router = _active.get()
    if router is None:
        return original(conn, in_path, out_path)
    return router.transfer(conn, original, name, in_path, out_path)


def _install_hook() -> None:
    """Route action plugins' commands and transfers through the active router (installed once per process)."""
    compat.route_low_level_execute_command(_dispatch)
    compat.route_file_transfers(_dispatch_transfer)


def _known_interpreter(task_vars: Mapping[str, Any]) -> str:
    """The host's Python as the task's variables give it (set, or discovered earlier), else "".

    The action's first commands (its tmp dir) come before its first module payload, which names
    the interpreter; an agent for them is started with this one. Templated or ``auto`` values give "".
    """
    facts = task_vars.get("ansible_facts") or {}
    for value in (task_vars.get("ansible_python_interpreter"), facts.get("discovered_interpreter_python")):
        if isinstance(value, str) and value.startswith("/") and "{" not in value and not re.search(r"\s", value):
            return str(value)
    return ""


class WarmExecutor(StandardExecutor):
    """:class:`StandardExecutor` whose module payloads run in a warm agent on the target.

    Hosts whose ``mh_executor`` variable says ``standard`` (or every host, with
    ``default="standard"``) take the standard path for every call. Results are Ansible's own:
    the same action plugins and result parsing process what the agent returns.

    Example::

        executor = WarmExecutor(inventory)
        executor.run("server1", "ansible.builtin.stat", {"path": "/etc"}, check=False, diff=False,
                     become=None, become_user=None, no_log=False, template=False)
        executor.close()  # stops the agents: nothing is left running on the targets

    :param inventory: The session's inventory.
    :param default: The executor of hosts that do not set ``mh_executor``.
    """

    def __init__(self, inventory: Inventory, *, default: ExecutorName = "warm") -> None:
        super().__init__(inventory)
        self.default: ExecutorName = default
        self._pool = _AgentPool()
        self.last_route: tuple[int, int] = (0, 0)
        # The last call's own steps of the action plugin: commands and transfers served by an agent
        # ("exec", "put", "fetch") and those that took the standard path ("standard").
        self.last_steps: dict[str, int] = {}
        # How the last call's command before the module went: "carried" with the payload, "apart", or "".
        self.last_before = ""

    def close(self) -> None:
        """Stop every agent (the targets keep no process), then what the standard executor holds."""
        with _lock:  # as every module call: the pool is used under the executor's lock only
            self._pool.close()
        super().close()

    def agents(self) -> list[tuple[str, int]]:
        """(label, pid on the target) of the running agents (for tests and diagnostics)."""
        return [(agent.label, agent.pid) for agent in self._pool.agents()]

    def run(
        self, host: str, module: str, args: Mapping[str, Any], **options: Unpack[ModuleCallOptions]
    ) -> dict[str, Any]:
        """:meth:`StandardExecutor.run`; after a package change the host's agents start afresh.

        An agent imported ``ansible.module_utils`` when it started, and with them what they found
        installed (distro data, SELinux bindings, hash algorithms): a fresh Python would see new
        packages, so the agents of a host whose packages changed are replaced.
        """
        self.last_route = (0, 0)  # a call that never gets to a module (an unknown one) routes nothing
        self.last_steps = {}
        self.last_before = ""
        result = super().run(host, module, args, **options)
        if result.get("changed") and not options.get("check") and module.rsplit(".", 1)[-1] in _PACKAGE_MODULES:
            self.packages_changed(host)
        return result

    def packages_changed(self, host: str) -> None:
        """The host's packages changed (a package module's change, or ``apt-get`` run as a command):
        its agents that loaded a file the change touched are replaced (:meth:`_AgentPool.renew`)."""
        with _lock:
            self._pool.renew(host)

    def _prepare(
        self, host: str, task_vars: dict[str, Any], options: ModuleCallOptions
    ) -> contextlib.AbstractContextManager[Any]:
        """The router of a warm host's call; a command to run before the module goes with the payload.

        That command (``before``) runs as the host's default user: a call with become settings of
        its own runs it apart first, as the standard executor does.
        """
        mode = executor_for_host(task_vars, self.default, host=host)
        if mode != "warm":
            self.last_before = "apart" if options.get("before") is not None else ""
            return super()._prepare(host, task_vars, options)
        if not any(name in task_vars for name in ("ansible_pipelining", "ansible_ssh_pipelining")):
            task_vars["ansible_pipelining"] = True  # the payload has to come on stdin for the agent
        before = options.get("before")
        if before is not None and (options["become"] is not None or options["become_user"] is not None):
            self.last_before = "apart"
            before.run_apart()
        _install_hook()
        carry = before if before is not None and not before.done else None
        return self._routing(host, _known_interpreter(task_vars), carry)

    @contextlib.contextmanager
    def _routing(self, host: str, interpreter: str, before: BeforeCommand | None = None) -> Iterator[None]:
        router = _Router(self._pool, host, interpreter, before)
        token = _active.set(router)
        try:
            yield
        finally:
            _active.reset(token)
            self.last_route = (router.served, router.fell_back)
            self.last_steps = dict(router.steps)
            self.last_before = router.before_route or self.last_before
