"""The warm executor's controller-side decisions, without a target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import CodeType
from typing import Any

import pytest

from pytest_mh_ansible._private.ansible.executor_choice import executor_for_host
from pytest_mh_ansible._private.ansible.warm import _BOOT, _Command, _runs_module_file


@pytest.mark.parametrize(
    ("cmd", "interpreter", "env_add"),
    [
        ("/usr/bin/python3", "/usr/bin/python3", {}),
        ("LANG=C FOO='a b' /usr/bin/python3.11", "/usr/bin/python3.11", {"LANG": "C", "FOO": "a b"}),
        ("python3", "python3", {}),
    ],
)
def test_command_parse__interpreter_and_task_environment(cmd: str, interpreter: str, env_add: dict[str, str]) -> None:
    parsed = _Command.parse(cmd)
    assert isinstance(parsed, _Command)
    assert (parsed.interpreter, parsed.env_add) == (interpreter, env_add)


@pytest.mark.parametrize(
    ("cmd", "reason"),
    [
        ("/usr/bin/env python3", "the interpreter is a command with arguments"),
        ("/usr/bin/python3 -E", "the interpreter is a command with arguments"),
        ("'unclosed", "cannot be parsed"),
        ("", "an empty module command"),
        ("bin/python3", "an unusual interpreter"),
    ],
)
def test_command_parse__what_cannot_be_served_warm(cmd: str, reason: str) -> None:
    parsed = _Command.parse(cmd)
    assert isinstance(parsed, str)
    assert reason in parsed


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        ("/usr/bin/python3 /root/.ansible/tmp/ansible-tmp-1/AnsiballZ_ping.py", True),
        ("LANG=C /usr/bin/python3 /tmp/x/AnsiballZ_copy.py", True),
        ("chmod u+x /root/.ansible/tmp/ansible-tmp-1/AnsiballZ_ping.py", False),
        ("rm -f -r /root/.ansible/tmp/ansible-tmp-1/ > /dev/null 2>&1", False),
        ("/usr/bin/python3", False),
    ],
)
def test_runs_module_file__only_the_interpreter_running_a_payload_file(cmd: str, expected: bool) -> None:
    assert _runs_module_file(cmd) is expected


def test_executor_for_host__variable_wins_over_the_session_default() -> None:
    assert executor_for_host({}, "warm", host="h1") == "warm"
    assert executor_for_host({}, "standard", host="h1") == "standard"
    assert executor_for_host({"mh_executor": "Standard "}, "warm", host="h1") == "standard"
    assert executor_for_host({"mh_executor": "warm"}, "standard", host="h1") == "warm"


def test_executor_for_host__bad_value_names_host_and_value() -> None:
    with pytest.raises(ValueError, match=r"host h1: mh_executor='fast' is not 'warm' or 'standard'"):
        executor_for_host({"mh_executor": "fast"}, "warm", host="h1")


def test_boot_reader__skips_lines_before_the_header_and_runs_exactly_the_source(tmp_path: Path) -> None:
    """The reader that starts every agent: a sudo password line or a become marker may come first."""
    source = b"import os\nos.write(1, b'ran:' + os.read(0, 5))\n"
    stdin = b"password-line\nBECOME-SUCCESS-x\nMHWARM %d\n" % len(source) + source + b"after"
    done = subprocess.run([sys.executable, "-c", _BOOT], input=stdin, capture_output=True, timeout=30, check=False)
    assert (done.returncode, done.stdout) == (0, b"ran:after")


def test_boot_reader__end_of_input_before_the_header_exits_3() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _BOOT], input=b"no header\n", capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 3


class _LocalAgent:
    """The real agent in a local interpreter, spoken to in its frame protocol."""

    def __init__(self, source: bytes, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.stdin.write(b"MHWARM %d\n" % len(source) + source)
        self.stdin.flush()
        seen = b""
        while not seen.endswith(b"MHWARM-READY\n"):
            seen += self.stdout.read(1)
        self.frame()  # hello

    def frame(self) -> bytes:
        size = int.from_bytes(self.stdout.read(4), "big")
        return self.stdout.read(size)

    def ask(self, header: bytes, payload: bytes = b"") -> list[bytes]:
        for data in (header, payload):
            self.stdin.write(len(data).to_bytes(4, "big") + data)
        self.stdin.flush()
        return [self.frame() for _ in range(4)]  # accepted, answer, stdout, stderr

    def close(self) -> None:
        self.stdin.close()  # the end of its input: the agent exits
        self.proc.wait(timeout=30)
        self.stdout.close()


def test_agent_stale__names_the_loaded_files_that_changed_since_it_started(tmp_path: Path) -> None:
    """After a package change the controller asks the agent what it loaded that changed: nothing
    (it is kept), or the files (it is replaced): a module it imported, a ``sys.path`` directory."""
    import json
    import os

    from pytest_mh_ansible._private.ansible.warm import _agent_source

    site = tmp_path / "site"
    site.mkdir()
    probe = site / "mh_stale_probe.py"
    probe.write_text("VALUE = 1\n")
    # The agent imports the probe from its sys.path (PYTHONPATH), then takes its fingerprint as it does
    # after preloading the first payload's module_utils (no payload here).
    source = _agent_source().replace(
        b'\nif __name__ == "mh_warm_agent":', b'\n_take_fingerprint()\nif __name__ == "mh_warm_agent":'
    )
    assert source != _agent_source()
    agent = _LocalAgent(b"import mh_stale_probe\n" + source, {**os.environ, "PYTHONPATH": str(site)}, tmp_path)

    def stale() -> object:
        accepted, answer, out, err = agent.ask(b'{"op": "stale"}')
        assert (accepted, out, err) == (b"accepted", b"", b"")
        found = json.loads(answer)
        assert found["checked"] > 20  # the stdlib it imported, its shared libraries, the probe
        return found["stale"]

    try:
        assert stale() == []
        probe.write_text("VALUE = 22\n")  # an update rewrote a module the agent imported
        os.utime(probe, ns=(0, 10**9))
        assert stale() == [str(probe)]
        os.utime(site, ns=(0, 10**9))  # a new module appeared beside it (a new package)
        assert stale() == [str(site), str(probe)]
    finally:
        agent.close()


def test_agent_stale__before_any_preload_it_cannot_tell_and_counts_as_stale(tmp_path: Path) -> None:
    """A commands-only agent takes no fingerprint; asked anyway, it says it cannot tell (and is replaced)."""
    import json
    import os

    from pytest_mh_ansible._private.ansible.warm import _agent_source

    agent = _LocalAgent(_agent_source(), dict(os.environ), tmp_path)
    try:
        accepted, answer, _, _ = agent.ask(b'{"op": "stale"}')
        assert accepted == b"accepted"
        assert json.loads(answer) == {"stale": ["(no fingerprint: nothing preloaded)"], "checked": 0}
    finally:
        agent.close()


def _agent_module() -> Any:
    """The agent's source as a module of its own (imported under another name, it does not start)."""
    import importlib.util

    from pytest_mh_ansible._private.ansible.warm import _AGENT_SOURCE

    spec = importlib.util.spec_from_file_location("mh_warm_agent_under_test", _AGENT_SOURCE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PAYLOAD = b"""from __future__ import annotations

def _ansiballz_main(zip_data, params):
    return len(zip_data), params


if __name__ == "__main__":
    _ansiballz_main(
zip_data='UEsDBBQAAAAIAA==',
params='{"ANSIBLE_MODULE_ARGS": {}}',
)
"""


def _same_code(a: Any, b: Any) -> None:
    """Code objects alike but for column positions (the zip literal is shorter in the compiled source)."""
    assert (a.co_code, a.co_names, a.co_varnames, a.co_filename, a.co_firstlineno) == (
        b.co_code,
        b.co_names,
        b.co_varnames,
        b.co_filename,
        b.co_firstlineno,
    )
    assert [type(c) for c in a.co_consts] == [type(c) for c in b.co_consts]
    for x, y in zip(a.co_consts, b.co_consts, strict=True):
        if isinstance(x, CodeType):
            _same_code(x, y)
        else:
            assert x == y


@pytest.mark.parametrize("by_reference", [False, True], ids=["carried", "named"])
def test_agent_payload_code__is_the_payloads_own_code(by_reference: bool) -> None:
    """The agent compiles a payload without its zip literal and puts the literal back as the constant:
    the code is what compiling the whole payload gives, whether the payload carried the zip or named it."""
    agent = _agent_module()
    match = agent.ZIP_RE.search(_PAYLOAD)
    assert match is not None
    agent._zip_literals["k1"] = match.group(1).decode("ascii")
    payload = _PAYLOAD[: match.start(1)] + _PAYLOAD[match.end(1) :] if by_reference else _PAYLOAD
    match = agent.ZIP_RE.search(payload)
    code = agent._payload_code(payload, match, "k1")
    _same_code(code, compile(_PAYLOAD, "<stdin>", "exec", dont_inherit=True))
    assert "UEsDBBQAAAAIAA==" in code.co_consts


def test_agent_run__a_zip_it_does_not_hold_goes_the_standard_way(tmp_path: Path) -> None:
    """A payload that names a zip the agent never received (or carries one and names it) is not run:
    the agent answers a fallback, and the controller runs the payload it has the standard way."""
    import json
    import os

    from pytest_mh_ansible._private.ansible.warm import _agent_source

    agent = _LocalAgent(_agent_source(), dict(os.environ), tmp_path)
    try:
        named = _PAYLOAD.replace(b"zip_data='UEsDBBQAAAAIAA=='", b"zip_data=''")
        for payload in (named, _PAYLOAD):
            accepted, answer, out, err = agent.ask(b'{"op": "run", "zip_ref": "0123abcd"}', payload)
            assert (accepted, out, err) == (b"accepted", b"", b"")
            assert json.loads(answer) == {"fallback": "the agent does not hold the payload zip 0123abcd"}
    finally:
        agent.close()


def test_agent_script__the_stdlib_modules_a_child_imported_are_loaded_for_the_next_children(tmp_path: Path) -> None:
    """A child that imports a module of the standard library the agent lacks reports it; after its answer
    the agent imports it too, so that the next child finds it loaded (one import per agent, not per call)."""
    import json
    import os

    from pytest_mh_ansible._private.ansible.warm import _agent_source

    probe = b"import sys\nprint('colorsys' in sys.modules)\nimport colorsys\n"
    agent = _LocalAgent(_agent_source(), dict(os.environ), tmp_path)
    try:
        seen = []
        for _ in range(2):
            accepted, answer, out, err = agent.ask(b'{"op": "script", "request": null}', probe)
            assert (accepted, json.loads(answer)["rc"], err) == (b"accepted", 0, b"")
            seen.append(out)
        assert seen == [b"False\n", b"True\n"]
    finally:
        agent.close()


def test_agent_stdlib_module__only_the_interpreters_own_library_and_nothing_known_or_acting(tmp_path: Path) -> None:
    """What a child reports for the agent to import: a module file of the standard library that the agent
    has not; not one of site-packages (below the stdlib directory in a venv), nor one that acts on import."""
    import types

    agent = _agent_module()
    stdlib = agent.STDLIB_DIRS[0]

    def module(path: str) -> types.ModuleType:
        made = types.ModuleType("m")
        made.__file__ = path
        return made

    assert agent._stdlib_module("colorsys", module(stdlib + "colorsys.py"), frozenset())
    assert agent._stdlib_module("json.tool", module(stdlib + "json/tool.py"), frozenset())
    assert not agent._stdlib_module("colorsys", module(stdlib + "colorsys.py"), frozenset({"colorsys"}))
    assert not agent._stdlib_module("yaml", module(stdlib + "site-packages/yaml/__init__.py"), frozenset())
    assert not agent._stdlib_module("antigravity", module(stdlib + "antigravity.py"), frozenset())
    assert not agent._stdlib_module("idlelib.run", module(stdlib + "idlelib/run.py"), frozenset())
    assert not agent._stdlib_module("mine", module(str(tmp_path / "mine.py")), frozenset())
    assert not agent._stdlib_module("sys", types.ModuleType("sys"), frozenset())  # built in: no file


def test_agent_import_stdlib__a_module_that_warns_on_import_is_taken_out_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deprecated module warns when imported: kept in the agent, a child's import of it would no longer
    warn. It leaves with what its import brought in, and is not tried again; a quiet one stays."""
    import sys

    agent = _agent_module()
    (tmp_path / "mh_loud.py").write_text(
        "import warnings\nimport mh_loud_dep\nwarnings.warn('old', DeprecationWarning)\n"
    )
    (tmp_path / "mh_loud_dep.py").write_text("")
    (tmp_path / "mh_quiet.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        agent._import_stdlib(["mh_loud", "mh_quiet"])
        assert "mh_quiet" in sys.modules
        assert "mh_loud" not in sys.modules
        assert "mh_loud_dep" not in sys.modules
        assert agent._not_preloadable == {"mh_loud"}
        agent._import_stdlib_later(["std:mh_loud", "std:mh_quiet", "ansible.module_utils.basic"])
        assert agent._later == []  # one is loaded, the other is not tried again
    finally:
        for name in ("mh_loud", "mh_loud_dep", "mh_quiet"):
            sys.modules.pop(name, None)


def test_agent_put__writes_a_new_file_with_the_mode_less_the_umask_and_keeps_an_existing_ones(tmp_path: Path) -> None:
    """As an sftp upload: a new file gets the given mode less the agent's umask; an existing one is
    truncated and keeps its mode; a file that cannot be written is an error the controller falls back on."""
    import json
    import os

    from pytest_mh_ansible._private.ansible.warm import _agent_source

    old = os.umask(0o027)
    try:
        agent = _LocalAgent(_agent_source(), dict(os.environ), tmp_path)
    finally:
        os.umask(old)
    try:
        new = tmp_path / "new"
        accepted, answer, out, err = agent.ask(
            json.dumps({"op": "put", "path": str(new), "mode": 0o666}).encode(), b"x" * 70000
        )
        assert (accepted, out, err) == (b"accepted", b"", b"")
        assert json.loads(answer)["rc"] == 0
        assert new.read_bytes() == b"x" * 70000
        assert new.stat().st_mode & 0o777 == 0o640
        existing = tmp_path / "existing"
        existing.write_bytes(b"a much longer old content\n")
        existing.chmod(0o600)
        _, answer, _, _ = agent.ask(json.dumps({"op": "put", "path": str(existing), "mode": 0o644}).encode(), b"new\n")
        assert json.loads(answer)["rc"] == 0
        assert (existing.read_bytes(), existing.stat().st_mode & 0o777) == (b"new\n", 0o600)
        _, answer, _, _ = agent.ask(json.dumps({"op": "put", "path": str(tmp_path / "no" / "dir")}).encode(), b"x")
        assert json.loads(answer) == {"rc": 1, "error": f"{tmp_path}/no/dir: No such file or directory"}
    finally:
        agent.close()


def test_agent_fetch__bytes_and_mode_a_fallback_above_the_limit_an_error_for_no_file(tmp_path: Path) -> None:
    import json
    import os

    from pytest_mh_ansible._private.ansible.warm import _agent_source

    agent = _LocalAgent(_agent_source(), dict(os.environ), tmp_path)
    try:
        source = tmp_path / "source"
        source.write_bytes(bytes(range(256)) * 1000)
        source.chmod(0o640)
        request = {"op": "fetch", "path": str(source), "limit": 256000}
        accepted, answer, out, err = agent.ask(json.dumps(request).encode())
        assert accepted == b"accepted"
        assert (json.loads(answer)["rc"], json.loads(answer)["mode"]) == (0, 0o640)
        assert (out, err) == (bytes(range(256)) * 1000, b"")
        _, answer, out, _ = agent.ask(json.dumps({**request, "limit": 255999}).encode())
        assert json.loads(answer) == {"fallback": f"{source} has 256000 bytes, more than 255999"}
        assert out == b""
        for path, error in ((tmp_path / "absent", "No such file or directory"), (tmp_path, "not a regular file")):
            _, answer, _, _ = agent.ask(json.dumps({"op": "fetch", "path": str(path)}).encode())
            assert json.loads(answer) == {"rc": 1, "error": f"{path}: {error}"}
    finally:
        agent.close()


@pytest.mark.parametrize(
    ("task_vars", "expected"),
    [
        ({"ansible_python_interpreter": "/usr/bin/python3"}, "/usr/bin/python3"),
        ({"ansible_facts": {"discovered_interpreter_python": "/usr/bin/python3.11"}}, "/usr/bin/python3.11"),
        ({"ansible_python_interpreter": "auto_silent"}, ""),
        ({"ansible_python_interpreter": "{{ ansible_playbook_python }}"}, ""),
        ({"ansible_python_interpreter": "/usr/bin/env python3"}, ""),
        ({}, ""),
    ],
)
def test_known_interpreter__only_a_plain_path_from_the_variables(task_vars: dict[str, Any], expected: str) -> None:
    from pytest_mh_ansible._private.ansible.warm import _known_interpreter

    assert _known_interpreter(task_vars) == expected


def test_route_file_transfers__the_ssh_plugins_put_and_fetch_go_to_the_route(tmp_path: Path) -> None:
    """Installed once on the ssh plugin's class; a later call replaces the route; the original is passed on."""
    from ansible.playbook.play_context import PlayContext
    from ansible.plugins.loader import connection_loader

    from pytest_mh_ansible._private.ansible import compat, warm

    compat.preload_ssh_agent()  # before the ssh plugin is imported: its deprecation warning is an error here
    from ansible.plugins.connection import ssh

    seen: list[tuple[Any, ...]] = []

    def route(conn: Any, original: Any, name: str, in_path: str, out_path: str) -> Any:
        seen.append((conn, original, name, in_path, out_path))
        return "routed"

    conn = connection_loader.get("ssh", PlayContext(), new_stdin=None)
    compat.route_file_transfers(route)
    try:
        assert conn.put_file("/a", "/b") == "routed"
        assert conn.fetch_file("/c", "/d") == "routed"
        compat.route_file_transfers(route)  # installed once: the wrapper does not wrap itself
        assert conn.put_file("/e", "/f") == "routed"
    finally:
        compat.route_file_transfers(warm._dispatch_transfer)  # what the warm executor installs
    assert [(name, a, b) for _, _, name, a, b in seen] == [
        ("put_file", "/a", "/b"),
        ("fetch_file", "/c", "/d"),
        ("put_file", "/e", "/f"),
    ]
    assert seen[0][0] is conn
    assert seen[0][1] is ssh.Connection.put_file.__wrapped__
    assert seen[1][1] is ssh.Connection.fetch_file.__wrapped__
    assert ssh.Connection.put_file.__wrapped__.__qualname__ == "Connection.put_file"


def _module_payload(tmp_path: Path) -> bytes:
    """A payload the agent serves: a real zip (one plain file), and a module that says whether the mark is there."""
    import base64
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mh_unit_payload.py", "VALUE = 1\n")
    zip_data = base64.b64encode(buffer.getvalue()).decode("ascii")
    mark, ran = tmp_path / "mark", tmp_path / "ran"
    return (
        "def _ansiballz_main(zip_data, params):\n"
        "    import os, sys\n"
        f"    open({str(ran)!r}, 'w').close()\n"
        f"    sys.stdout.write('mark: %s' % os.path.exists({str(mark)!r}))\n"
        "\n"
        'if __name__ == "__main__":\n'
        "    _ansiballz_main(\n"
        f"zip_data='{zip_data}',\n"
        "params='{}',\n"
        ")\n"
    ).encode()


def test_agent_run__a_command_before_the_module_runs_first_and_a_failure_holds_the_module_back(
    tmp_path: Path,
) -> None:
    """#33: the journal's probe travels with the module call: the agent runs it right before the module and
    answers its output; when it exits non-zero the module is not run (``held``), for the caller to decide."""
    import base64
    import json
    import os

    from pytest_mh_ansible._private.ansible.warm import _agent_source

    payload = _module_payload(tmp_path)
    agent = _LocalAgent(_agent_source(), dict(os.environ), tmp_path)
    try:
        command = f"echo probed; touch {tmp_path / 'mark'}; exit 0"
        header = json.dumps({"op": "run", "before": {"argv": ["/bin/sh", "-c", command]}}).encode()
        accepted, answer, out, _ = agent.ask(header, payload)
        found = json.loads(answer)
        assert accepted == b"accepted"
        assert found["rc"] == 0
        assert found["before"]["rc"] == 0
        assert base64.b64decode(found["before"]["stdout"]) == b"probed\n"
        assert "held" not in found
        assert out == b"mark: True"  # the command ran before the module
        (tmp_path / "ran").unlink()

        header = json.dumps({"op": "run", "before": {"argv": ["/bin/sh", "-c", "echo partial; exit 3"]}}).encode()
        accepted, answer, out, _ = agent.ask(header, payload)
        found = json.loads(answer)
        assert found["held"] is True
        assert "rc" not in found
        assert (found["before"]["rc"], base64.b64decode(found["before"]["stdout"])) == (3, b"partial\n")
        assert out == b""
        assert not (tmp_path / "ran").exists()  # the module did not run
    finally:
        agent.close()


@pytest.mark.parametrize(
    ("script", "rc"),
    [
        (b"print('done')\n", 0),
        (b"raise SystemExit(3)\n", 3),
        (b"raise SystemExit(256 + 5)\n", 5),  # what the system keeps of an exit status: its low byte
        (b"import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", 128 + 9),  # no status handed over
    ],
    ids=["zero", "three", "low-byte", "killed"],
)
def test_agent_child_status__handed_over_before_its_exit_or_taken_from_the_system(
    tmp_path: Path, script: bytes, rc: int
) -> None:
    """A child hands its exit status over and closes its pipes before it exits, so the agent answers
    without waiting for the exit; a child killed before it could (SIGKILL) is reaped and its status is
    the system's. Either way the status is what a shell would report."""
    import json
    import os

    from pytest_mh_ansible._private.ansible.warm import _agent_source

    agent = _LocalAgent(_agent_source(), dict(os.environ), tmp_path)
    try:
        accepted, answer, _, _ = agent.ask(b'{"op": "script", "request": null}', script)
        assert (accepted, json.loads(answer)["rc"]) == (b"accepted", rc)
    finally:
        agent.close()


def test_agent_child_status__each_child_is_reaped_once_the_answer_is_out(tmp_path: Path) -> None:
    """The agent reaps a child after writing its answer: by the next answer the child is gone (no zombie
    left behind), call after call."""
    import json
    import os

    from pytest_mh_ansible._private.ansible.warm import _agent_source

    agent = _LocalAgent(_agent_source(), dict(os.environ), tmp_path)
    try:
        children: list[int] = []
        for _ in range(4):
            accepted, answer, out, _ = agent.ask(
                b'{"op": "script", "request": null}', b"import os\nprint(os.getpid())\n"
            )
            assert (accepted, json.loads(answer)["rc"]) == (b"accepted", 0)
            if children:
                assert not Path(f"/proc/{children[-1]}").exists(), "the previous child is still there (a zombie)"
            children.append(int(out))
    finally:
        agent.close()
