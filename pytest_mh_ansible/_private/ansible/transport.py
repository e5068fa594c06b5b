"""Commands and file copies on one host through its own Ansible connection plugin, kept open for the session."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import select
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from ...errors import HostUnreachableError, ProcessError, ProcessTimeoutError
from ..secrets import secrets
from . import compat, control_dirs, live_process
from .command_agent import CommandAgents, CommandLost
from .runtime import ansible_output_logged, becomes_another_user, init_ansible, loading_plugins

if TYPE_CHECKING:
    from ...conn import ExecOptions

__all__ = ["KILL_AFTER", "AnsibleTransport"]

logger = logging.getLogger("pytest_mh_ansible.conn")

KILL_AFTER = 3
"""Seconds between the TERM and the KILL signal that ``timeout`` sends to a command that overran."""

_SAFETY_MARGIN = 5.0
"""Seconds after timeout + KILL_AFTER at which we stop waiting for the target and drop the connection."""

_BECOME_SUCCESS_RE = re.compile(rb"^((\r)?\n)?BECOME-SUCCESS.*(\r)?\n")


class AnsibleTransport:
    """One host's Ansible connection plugin, opened once and reused for every command.

    It does what ansible-core's ``TaskExecutor`` does for a task: it loads the plugin named
    by ``ansible_connection`` and gives the connection, shell and become plugins the host's
    variables, so every ``ansible_*`` variable of theirs is honoured. Commands run without a
    tty (stdout and stderr stay apart); a timeout is enforced on the target by coreutils
    ``timeout``. One thread at a time: calls are serialised by a lock.

    Example::

        transport = AnsibleTransport("client1", {"ansible_host": "10.213.0.11", "ansible_user": "root"})
        rc, out, err = transport.exec("id -un", become=False)
        transport.close()

    With ``command_agent``, commands over ``ssh`` and ``local`` connections run through a
    long-lived agent on the target (see :mod:`.command_agent`): one open channel per become user
    instead of a new ssh client per command, with the same shell, user and environment.

    :param host: The inventory hostname (used in messages and as the default address).
    :param variables: The host's variables as a play sees them (templated here).
    :param command_agent: Run commands through the agent where the connection allows it.
    """

    def __init__(self, host: str, variables: Mapping[str, Any], *, command_agent: bool = False) -> None:
        self.host = host
        self._command_agent = command_agent
        self._agents: CommandAgents | None = None
        # The magic variables connection settings may refer to ("{{ ansible_playbook_python }}").
        magic = {
            "inventory_hostname": host,
            "inventory_hostname_short": host.partition(".")[0],
            "ansible_playbook_python": sys.executable,
        }
        self._raw_vars: dict[str, Any] = {**magic, **variables}
        secrets.add_from_vars(self._raw_vars)
        self._lock = threading.RLock()
        self._conn: Any = None
        self._become_plugin: Any = None
        self._become_default_user: str | None = None
        self._cp_dir: str | None = None
        self._vars: dict[str, Any] = {}

    # --- life cycle -------------------------------------------------------------------------

    @property
    def connection_name(self) -> str:
        """The connection plugin in use (``ssh``, ``paramiko``, ``local``, ...), once connected."""
        return compat.plugin_load_name(self._conn) if self._conn is not None else ""

    @property
    def control_path_dir(self) -> str | None:
        """The private directory for the ssh plugin's ControlMaster sockets (None when the host sets its own)."""
        return self._cp_dir

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def connect(self) -> None:
        """Open the connection (idempotent).

        :raises HostUnreachableError: The host cannot be reached or refuses our credentials.
        """
        with self._lock:
            if self._conn is None:
                self._open()

    def close(self) -> None:
        """Close the connection; an ssh ControlMaster is told to exit and its socket directory removed."""
        with self._lock:
            conn, self._conn = self._conn, None
            agents, self._agents = self._agents, None
            if agents is not None:
                agents.close()
            if conn is not None:
                with ansible_output_logged(self.host, logger, prefix="ansible: "), contextlib.suppress(Exception):
                    self._close_plugin(conn)
            self._exit_master(conn)

    def __enter__(self) -> AnsibleTransport:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> None:
        init_ansible()
        with ansible_output_logged(self.host, logger, prefix="ansible: "):
            try:
                with loading_plugins():
                    conn = self._load_plugins()
                compat.open_connection(conn)
                self._after_connect(conn)
                if self._command_agent:
                    interpreter = str(self._vars.get("ansible_python_interpreter") or "")
                    if not interpreter or interpreter.startswith("auto"):
                        interpreter = "python3"
                    self._agents = CommandAgents(self.host, interpreter=interpreter)
            except Exception as err:
                self._exit_master(None)
                raise self._translate(err, None) from err
        self._conn = conn

    def _load_plugins(self) -> Any:
        """The connection plugin with its options, and the become plugin: what ``TaskExecutor`` sets up for a task."""
        from ansible import constants as C
        from ansible.errors import AnsibleError
        from ansible.parsing.dataloader import DataLoader
        from ansible.playbook.play_context import PlayContext
        from ansible.playbook.task import Task
        from ansible.plugins.loader import become_loader, connection_loader
        from ansible.template import Templar

        templar = Templar(loader=DataLoader(), variables=self._raw_vars)
        # Connection variables are templated before use, as TaskExecutor does.
        tvars = {k: (templar.template(v) if k.startswith("ansible_") else v) for k, v in self._raw_vars.items()}
        secrets.add_from_vars(tvars)
        self._vars = tvars
        name = str(tvars.get("ansible_connection") or C.DEFAULT_TRANSPORT)
        if name == "smart":
            name = "ssh"
        play_context = PlayContext().set_task_and_variable_override(task=Task(), variables=tvars, templar=templar)
        play_context.connection = name
        conn = connection_loader.get(
            name,
            play_context,
            new_stdin=None,
            task_uuid=str(uuid.uuid4()),
            ansible_playbook_pid=str(os.getpid()),
        )
        if conn is None:
            raise AnsibleError(f"the connection plugin {name!r} was not found{_missing_plugin_hint(name)}")
        self._set_options(conn, tvars, templar)
        # Loaded even without ansible_become: a single call may still ask for become.
        method = str(tvars.get("ansible_become_method") or C.DEFAULT_BECOME_METHOD)
        plugin = become_loader.get(method)
        if plugin is None:
            raise AnsibleError(f"invalid become method {method!r}: no such become plugin")
        self._set_plugin_options(plugin, "become", tvars, templar)
        self._become_plugin = plugin
        with contextlib.suppress(KeyError):
            self._become_default_user = plugin.get_option("become_user")
        if _is_paramiko(conn):
            # Two transports to one address (other port, other password) must not share a client.
            compat.isolate_paramiko_client(conn)
        return conn

    def _set_options(self, conn: Any, tvars: dict[str, Any], templar: Any) -> None:
        """Connection and shell plugin options from the host's variables, then our own adjustments."""
        conn.set_options(task_keys={}, var_options=compat.resolve_connection_vars(conn, tvars, templar))
        self._set_plugin_options(compat.connection_shell(conn), "shell", tvars, templar)
        if conn.has_option("use_tty"):  # ssh: -tt merges stderr into stdout and turns \n into \r\n
            conn.set_option("use_tty", False)
        if conn.has_option("pty"):  # paramiko: the same, for the same reason
            conn.set_option("pty", False)
        if conn.has_option("control_path_dir") and "ansible_control_path_dir" not in tvars:
            # Not ~/.ansible/cp: a private directory, so sessions never share a master and close() can end ours.
            self._cp_dir = control_dirs.make("mh-cp-")
            conn.set_option("control_path_dir", self._cp_dir)

    @staticmethod
    def _set_plugin_options(plugin: Any, plugin_type: str, tvars: dict[str, Any], templar: Any) -> None:
        from ansible import constants as C

        names = C.config.get_plugin_vars(plugin_type, compat.plugin_load_name(plugin))
        plugin.set_options(task_keys={}, var_options={k: templar.template(tvars[k]) for k in names if k in tvars})

    def _after_connect(self, conn: Any) -> None:
        ssh_client = getattr(conn, "ssh", None)
        transport = getattr(ssh_client, "get_transport", lambda: None)()
        sock = getattr(transport, "sock", None)
        if isinstance(sock, socket.socket) and sock.family in (socket.AF_INET, socket.AF_INET6):
            # Nagle plus delayed ACK cost ~45 ms per back-to-back command on paramiko, measured on lab hosts.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @staticmethod
    def _close_plugin(conn: Any) -> None:
        ssh_client = getattr(conn, "ssh", None)
        conn.close()
        if ssh_client is not None and hasattr(ssh_client, "close"):  # paramiko's close() keeps the client open
            ssh_client.close()

    def _master_args(self, conn: Any) -> list[str] | None:
        """ssh arguments that name this connection's ControlMaster the way the plugin's commands do."""
        if conn is None or not conn.has_option("ssh_args"):
            return None
        args = [str(conn.get_option("ssh_executable") or "ssh")]
        for option in ("ssh_args", "ssh_common_args", "ssh_extra_args"):
            args += compat.split_ssh_args(conn.get_option(option) or "")
        template = getattr(conn, "control_path", None)
        if template and self._cp_dir is not None:  # the plugin added a ControlPath of its own
            args += ["-o", f"ControlPath={template % {'directory': self._cp_dir}}"]
        if conn.get_option("port"):
            args += ["-o", f"Port={conn.get_option('port')}"]
        if conn.get_option("remote_user"):
            args += ["-o", f"User={conn.get_option('remote_user')}"]
        return [*args, str(conn.get_option("host") or self.host)]

    def control_socket(self) -> str | None:
        """The ssh ControlMaster socket of this connection (ssh plugin only, after the first command)."""
        with self._lock:
            args = self._master_args(self._conn)
        if args is None:
            return None
        proc = subprocess.run(
            [args[0], "-G", *args[1:]],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        for line in proc.stdout.splitlines():
            key, _, value = line.partition(" ")
            if key == "controlpath" and value != "none":
                return value
        return None

    def _exit_master(self, conn: Any) -> None:
        """``ssh -O exit``: the master would otherwise outlive us by ControlPersist seconds."""
        args = self._master_args(conn)
        if args is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(
                    [*args[:-1], "-O", "exit", args[-1]],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=10,
                    check=False,
                )
        cp_dir, self._cp_dir = self._cp_dir, None
        if cp_dir is not None:
            control_dirs.remove(cp_dir)

    # --- commands ---------------------------------------------------------------------------

    def exec(self, command: str, **options: Unpack[ExecOptions]) -> tuple[int, bytes, bytes]:
        """Run a shell command on the host (the keywords of :meth:`pytest_mh_ansible.conn.Transport.exec`).

        :param command: A command line for the host's shell (``ansible_shell_executable``, /bin/sh).
        :param input: Bytes for the command's stdin; without it stdin is ``/dev/null``.
        :param become: Run with the host's become method; None uses the host's ``ansible_become``.
        :param become_user: Become this user instead of the host's ``ansible_become_user``; implies become.
        :param timeout: Seconds after which the command is killed on the host.
        :returns: The exit code, stdout and stderr.
        :raises HostUnreachableError: The connection failed.
        :raises ProcessTimeoutError: The command overran ``timeout``.
        :raises ProcessError: Ansible could not run the command (e.g. a wrong become password).
        """
        input, timeout = options.get("input"), options.get("timeout")
        become, become_user = options.get("become"), options.get("become_user")
        with self._lock:
            self.connect()
            if timeout is None:
                return self._exec_once(command, input, become, become_user, None)
            return self._exec_watched(command, input, become, become_user, timeout)

    def open_process(
        self, command: str, *, become: bool | None = None, become_user: str | None = None
    ) -> live_process.LiveProcess:
        """Start ``command`` on the host and return it running, stdin and output open (see :mod:`.live_process`).

        Become is honoured as by :meth:`exec`; signals and the final kill run as the same user.

        :raises HostUnreachableError: The connection failed, or its plugin cannot hold a command open.
        :raises ProcessError: The command did not start (e.g. a wrong become password).
        """

        def control(line: str) -> object:
            return self.exec(line, become=become, become_user=become_user, timeout=30)

        with self._lock:
            self.connect()
            conn = self._conn
            with ansible_output_logged(self.host, logger, prefix="ansible: "):
                try:
                    return live_process.start(self.host, conn, self._become_for(become, become_user), command, control)
                except Exception as err:
                    compat.reap_abandoned(err)
                    raise self._translate(err, command) from err

    def script(self, source: bytes, request: Any) -> tuple[int, bytes, bytes] | None:
        """Run a stdlib-only Python ``source`` through the host's agent, as the host's default user
        (``ansible_become``); ``REQUEST`` in its globals is ``request`` (JSON-friendly).

        For the journal's bookkeeping, which needs no module (see :mod:`.command_agent`).

        :returns: Its exit code, stdout and stderr; None when the host has no agent (yet): the
            caller runs the module that does the same work.
        :raises HostUnreachableError: The connection failed.
        """
        with self._lock:
            self.connect()
            conn = self._conn
            if self._agents is None or conn is None:
                return None
            with ansible_output_logged(self.host, logger, prefix="ansible: "):
                try:
                    return self._agents.script(conn, self._become_for(None, None), source, request)
                except Exception as err:
                    raise self._translate(err, "(the journal's snapshot script)") from err

    def _exec_watched(
        self, command: str, input: bytes | None, become: bool | None, become_user: str | None, timeout: float
    ) -> tuple[int, bytes, bytes]:
        """Local safety net: if the target does not end the command, drop the connection and give up."""
        outcome: list[tuple[int, bytes, bytes] | BaseException] = []

        def work() -> None:
            try:
                outcome.append(self._exec_once(command, input, become, become_user, timeout))
            except BaseException as err:
                outcome.append(err)

        started = time.monotonic()
        worker = threading.Thread(target=work, name=f"mh-exec-{self.host}", daemon=True)
        worker.start()
        worker.join(timeout + KILL_AFTER + _SAFETY_MARGIN)
        if worker.is_alive():
            logger.debug(
                "%s: no end %.0f s after the timeout; dropping the connection", self.host, KILL_AFTER + _SAFETY_MARGIN
            )
            self.close()  # ends the ssh session (ControlMaster exit) or the paramiko transport
            worker.join(_SAFETY_MARGIN)
            raise ProcessTimeoutError(self.host, secrets.mask(command), timeout)
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        rc, out, err = result
        if rc in (124, 137) and time.monotonic() - started >= timeout:
            raise ProcessTimeoutError(
                self.host,
                secrets.mask(command),
                timeout,
                secrets.mask(out.decode(errors="replace")),
                secrets.mask(err.decode(errors="replace")),
            )
        return result

    def _exec_once(
        self, command: str, input: bytes | None, become: bool | None, become_user: str | None, timeout: float | None
    ) -> tuple[int, bytes, bytes]:
        conn = self._conn
        if conn is None:  # dropped by the safety net of an earlier call
            self._open()
            conn = self._conn
        staged: str | None = None
        with ansible_output_logged(self.host, logger, prefix="ansible: "):
            try:
                shell = compat.connection_shell(conn)
                executable = str(self._vars.get("ansible_shell_executable") or _default_executable())
                payload = command
                in_data = input
                if input is None:
                    payload = f"exec </dev/null\n{payload}"
                plugin = self._become_for(become, become_user)
                if self._agents is not None:
                    wrapped = _with_timeout(payload, timeout, executable)
                    served = self._agents.run(conn, plugin, [executable, "-c", wrapped], input)
                    if served is not None:
                        return served
                if input is not None and not conn.has_pipelining and not _is_paramiko(conn):
                    # exec_command takes no stdin data
                    staged = self._stage_input(conn, input)
                    # chmod again: whatever the transfer did to the mode, the data is only the user's
                    payload = f"chmod 0600 {shlex.quote(staged)}; exec <{shlex.quote(staged)}\n{payload}"
                    in_data = None
                payload = _with_timeout(payload, timeout, executable)
                conn.set_become_plugin(plugin)
                if plugin is not None:
                    payload = plugin.build_become_command(payload, shell)
                rc_marker = None
                if _is_ssh(conn):
                    # The ssh plugin takes exit code 255 for an ssh failure; the command's own 255 comes
                    # back as 254 plus a one-off marker line on stderr, and is restored below.
                    rc_marker = f"mh-exit-255-{uuid.uuid4().hex}".encode()
                    payload = (
                        f"( {payload}\n)\nrc=$?\n"
                        f'if [ "$rc" -eq 255 ]; then echo {rc_marker.decode()} >&2; exit 254; fi\nexit "$rc"'
                    )
                if conn.allow_executable:
                    payload = f"{executable} -c {shlex.quote(payload)}"
                if _is_paramiko(conn):
                    rc, stdout, stderr = _paramiko_exec(conn, payload, in_data, plugin)
                else:
                    rc, stdout, stderr = conn.exec_command(
                        payload, in_data=in_data or None, sudoable=plugin is not None
                    )
                if plugin is not None:  # as ActionBase does; the ssh plugin has already dropped the line
                    stdout = _BECOME_SUCCESS_RE.sub(b"", stdout, count=1)
                if rc_marker is not None and rc == 254 and stderr.endswith(rc_marker + b"\n"):
                    rc, stderr = 255, stderr[: -len(rc_marker) - 1]
                return int(rc if rc is not None else 0), bytes(stdout), bytes(stderr)
            except Exception as err:
                compat.reap_abandoned(err)
                raise self._translate(err, command) from err
            finally:
                conn.set_become_plugin(None)
                if staged is not None:
                    with contextlib.suppress(Exception):
                        conn.exec_command(f"rm -f {shlex.quote(staged)}", sudoable=False)

    def _become_for(self, become: bool | None, become_user: str | None) -> Any:
        from ansible.module_utils.parsing.convert_bool import boolean

        wanted = become if become is not None else boolean(self._vars.get("ansible_become", False))
        if become_user is not None and become is None:
            wanted = True
        if not wanted:
            return None
        plugin = self._become_plugin
        user = become_user if become_user is not None else self._become_default_user
        if plugin.has_option("become_user"):
            plugin.set_option("become_user", user)
        if not becomes_another_user(self._remote_user(), user):
            return None  # what ActionBase does: no sudo from root to root
        return plugin

    def _remote_user(self) -> str | None:
        conn = self._conn
        for option in ("remote_user", "user"):
            if conn is not None and conn.has_option(option):
                value = conn.get_option(option)
                if value:
                    return str(value)
        if conn is not None and compat.plugin_load_name(conn).endswith("local"):
            import getpass

            return getpass.getuser()
        return None

    def _stage_input(self, conn: Any, data: bytes) -> str:
        """Copy stdin data (it can be a password) to a file on the host that only the login user can read.

        The file is created empty with mode 0600 before the copy, which writes into it and keeps the mode.
        """
        remote = f"/tmp/.mh-stdin-{uuid.uuid4().hex}"
        conn.exec_command(f"umask 077; : > {shlex.quote(remote)}", sudoable=False)
        with tempfile.NamedTemporaryFile(prefix="mh-stdin-") as local:
            local.write(data)
            local.flush()
            conn.put_file(local.name, remote)
        return remote

    # --- files ------------------------------------------------------------------------------

    def put(self, local: str | os.PathLike[str], remote: str) -> None:
        """Copy a controller file to the host (as the connection user)."""
        with self._lock:
            self.connect()
            with ansible_output_logged(self.host, logger, prefix="ansible: "):
                try:
                    self._conn.put_file(os.fspath(local), remote)
                except Exception as err:
                    raise self._translate(err, f"put {os.fspath(local)} -> {remote}") from err

    def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        """Copy a file from the host to the controller."""
        with self._lock:
            self.connect()
            with ansible_output_logged(self.host, logger, prefix="ansible: "):
                try:
                    self._conn.fetch_file(remote, os.fspath(local))
                except Exception as err:
                    raise self._translate(err, f"get {remote} -> {os.fspath(local)}") from err

    # --- errors -----------------------------------------------------------------------------

    def _translate(self, err: BaseException, command: str | None) -> Exception:
        from ansible.errors import AnsibleConnectionFailure, AnsibleError

        if isinstance(err, HostUnreachableError | ProcessError):
            return err
        reason = secrets.mask(str(err) or type(err).__name__)
        if isinstance(err, CommandLost) and command is not None:
            masked = secrets.mask(command)
            return ProcessError(self.host, masked, -1, "", "", message=f"{self.host}: {masked!r}: {reason}")
        if isinstance(err, AnsibleConnectionFailure) or command is None:
            return HostUnreachableError(self.host, reason)
        if isinstance(err, AnsibleError):
            masked = secrets.mask(command)
            return ProcessError(
                self.host, masked, -1, "", "", message=f"{self.host}: {masked!r} could not run: {reason}"
            )
        return err if isinstance(err, Exception) else RuntimeError(reason)


def _default_executable() -> str:
    from ansible import constants as C

    return str(C.DEFAULT_EXECUTABLE or "/bin/sh")


def _with_timeout(payload: str, timeout: float | None, executable: str) -> str:
    """``payload`` under coreutils ``timeout`` on the target (as is without a timeout)."""
    if timeout is None:
        return payload
    return f"timeout -k {KILL_AFTER} {_seconds(timeout)} {executable} -c {shlex.quote(payload)}"


def _seconds(timeout: float) -> str:
    """``timeout``'s duration argument: whole seconds where possible, else a decimal."""
    if timeout <= 0:
        return "0.001"
    return str(int(timeout)) if timeout == math.floor(timeout) else f"{timeout:.3f}"


def _missing_plugin_hint(name: str) -> str:
    """Why a connection plugin that used to exist is missing, and what to use instead."""
    if name.rpartition(".")[2] in ("paramiko", "paramiko_ssh") and not compat.paramiko_plugin_available():
        return " (ansible-core removed the paramiko plugin in 2.21: use ansible_connection=ssh)"
    return ""


def _is_ssh(conn: Any) -> bool:
    return compat.plugin_load_name(conn).rpartition(".")[2] == "ssh"


def _is_paramiko(conn: Any) -> bool:
    return compat.plugin_load_name(conn).rpartition(".")[2] in ("paramiko", "paramiko_ssh")


def _paramiko_exec(conn: Any, command: str, in_data: bytes | None, become: Any) -> tuple[int, bytes, bytes]:
    """Run a command on the paramiko plugin's open client, without a pty.

    The plugin's own ``exec_command`` takes no stdin data and, without a pty, waits for the
    sudo prompt on stdout, where ``sudo -S`` never writes it. This reads both streams and
    answers the become plugin's prompt as the ssh plugin does.
    """
    from ansible.errors import AnsibleConnectionFailure, AnsibleError

    try:
        transport = conn.ssh.get_transport()
        transport.set_keepalive(5)
        chan = transport.open_session()
        chan.exec_command(command)
    except Exception as exc:
        raise AnsibleConnectionFailure(f"Failed to open session: {exc}") from exc
    out_buf = bytearray()
    err_buf = bytearray()
    escalating = become is not None and bool(become.success)
    deadline = time.monotonic() + float(conn.get_option("timeout") or 10) + 2

    def start() -> None:
        if in_data:
            chan.sendall(in_data)
        chan.shutdown_write()

    if not escalating:
        start()
    try:
        while True:
            select.select([chan], [], [], 0.5)
            while chan.recv_ready():
                out_buf += chan.recv(65536)
            while chan.recv_stderr_ready():
                err_buf += chan.recv_stderr(65536)
            if escalating:
                both = bytes(out_buf + err_buf)
                if become.check_success(both):
                    out_buf[:] = become.strip_become_success(bytes(out_buf))
                    err_buf[:] = become.strip_become_prompt(bytes(err_buf))
                    escalating = False
                    start()
                elif become.check_incorrect_password(both):
                    raise AnsibleError(f"Incorrect {become.name} password")
                elif become.check_missing_password(both):
                    raise AnsibleError(f"Missing {become.name} password")
                elif become.expect_prompt() and become.check_password_prompt(both):
                    password = become.get_option("become_pass")
                    chan.sendall(str(password).encode() + b"\n")
                    # The prompt line is consumed; a second one means the password was wrong.
                    err_buf[:] = become.strip_become_prompt(bytes(err_buf))
                    out_buf[:] = become.strip_become_prompt(bytes(out_buf))
                    if become.check_password_prompt(bytes(out_buf + err_buf)):
                        raise AnsibleError(f"Incorrect {become.name} password")
                elif chan.exit_status_ready() or time.monotonic() > deadline:
                    raise AnsibleError(f"{become.name} did not escalate: {both.decode(errors='replace')}")
            elif (
                chan.exit_status_ready()
                and (chan.eof_received or chan.closed)  # closed: the transport was dropped (safety net)
                and not chan.recv_ready()
                and not chan.recv_stderr_ready()
            ):
                break
        return chan.recv_exit_status(), bytes(out_buf), bytes(err_buf)
    finally:
        chan.close()
