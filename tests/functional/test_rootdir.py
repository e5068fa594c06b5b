"""``pytest -i PATH`` keeps the rootdir and ini file pytest picks without the inventory argument.

Layout of each test (under pytester's directory)::

    project/pytest.ini          (in the "ini" cases) addopts = --strict-markers, a marker, mh_default_domain = app
    project/tests/test_a.py     a client test and a client+server test, marked with the ini's marker
    elsewhere/client.ini        client1 (no mh_domain: the ini's mh_default_domain applies)
    elsewhere/server.ini        server1

The oracle is pytest itself: the same command without the inventory arguments, whose
``rootdir:``/``configfile:`` header lines must be those of the run with them.
"""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest

LOCAL = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"

INI = textwrap.dedent("""\
    [pytest]
    addopts = -p no:cacheprovider --strict-markers -rs
    markers = from_the_ini: declared only in the project's pytest.ini
    mh_default_domain = app
""")

TESTS = textwrap.dedent("""\
    import pytest
    from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark

    DOMAIN = "{domain}"
    CLIENT = TopologyMark(
        "client", Topology(TopologyDomain(DOMAIN, client=1)), fixtures=dict(client=DOMAIN + ".client[0]")
    )
    PAIR = TopologyMark(
        "pair",
        Topology(TopologyDomain(DOMAIN, client=1, server=1)),
        fixtures=dict(client=DOMAIN + ".client[0]", server=DOMAIN + ".server[0]"),
    )

    {marker}
    @pytest.mark.topology(CLIENT)
    def test_client(client):
        assert client.host.conn.run("echo hi").stdout == "hi\\n"

    {marker}
    @pytest.mark.topology(PAIR)
    def test_pair(client, server):
        pass
""")


def _layout(pytester: pytest.Pytester, *, ini: bool) -> tuple[Path, Path]:
    project = pytester.path / "project"
    elsewhere = pytester.path / "elsewhere"
    (project / "tests").mkdir(parents=True)
    elsewhere.mkdir()
    if ini:
        (project / "pytest.ini").write_text(INI)
    test_file = TESTS.format(domain="app" if ini else "default", marker="@pytest.mark.from_the_ini" if ini else "")
    (project / "tests" / "test_a.py").write_text(test_file)
    (elsewhere / "client.ini").write_text(f"[client]\nclient1 {LOCAL}\n")
    (elsewhere / "server.ini").write_text(f"[server]\nserver1 {LOCAL}\n")
    return project, elsewhere


def _setup_lines(result: pytest.RunResult) -> list[str]:
    """The header lines that say which rootdir and ini file pytest picked."""
    return [line for line in result.outlines if re.match(r"^(rootdir|configfile|inifile): ", line)]


_WITHOUT: dict[tuple[bool, str], list[str]] = {}


def _setup_lines_without_inventory(pytester: pytest.Pytester, *, ini: bool, where: str) -> list[str]:
    """The oracle: what pytest picks for the same layout and directory without inventory arguments.

    Cached per layout (with pytester's directory left out), since a pytest run costs seconds.
    """
    if (ini, where) not in _WITHOUT:
        result = pytester.runpytest_subprocess("--co")
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        _WITHOUT[ini, where] = [line.replace(str(pytester.path), "<tmp>") for line in _setup_lines(result)]
    return [line.replace("<tmp>", str(pytester.path)) for line in _WITHOUT[ini, where]]


def _inventory_args(form: str, client: str, server: str) -> list[str]:
    return {
        "-i PATH": ["-i", client],
        "-iPATH": [f"-i{client}"],
        "--mh-inventory PATH": ["--mh-inventory", client],
        "--mh-inventory=PATH": [f"--mh-inventory={client}"],
        "several": ["-i", client, "--mh-inventory", server],
    }[form]


@pytest.mark.parametrize("form", ["-i PATH", "-iPATH", "--mh-inventory PATH", "--mh-inventory=PATH", "several"])
@pytest.mark.parametrize("ini", [True, False], ids=["with-ini", "without-ini"])
@pytest.mark.parametrize("where", ["project", "subfolder"])
def test_rootdir__inventory_elsewhere_keeps_rootdir_and_ini(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, form: str, ini: bool, where: str
) -> None:
    project, elsewhere = _layout(pytester, ini=ini)
    if where == "project":
        # absolute inventory paths, no test paths (pytest collects from where it starts)
        monkeypatch.chdir(project)
        client, server = str(elsewhere / "client.ini"), str(elsewhere / "server.ini")
    else:
        # relative inventory paths: relative to the directory pytest starts in, not to the rootdir
        monkeypatch.chdir(project / "tests")
        client, server = os.path.join("..", "..", "elsewhere", "client.ini"), "../../elsewhere/server.ini"

    result = pytester.runpytest_subprocess(*_inventory_args(form, client, server), "-rs")

    assert _setup_lines(result) == _setup_lines_without_inventory(pytester, ini=ini, where=where)
    if ini:
        assert any(line == "configfile: pytest.ini" for line in _setup_lines(result))
    # the ini's addopts (--strict-markers), markers and mh_default_domain hold, and the inventory was found
    result.assert_outcomes(passed=2) if form == "several" else result.assert_outcomes(passed=1, skipped=1)
    if form != "several":
        result.stdout.fnmatch_lines(["*topology 'pair' needs*server*"])


def test_rootdir__relative_inventory_inside_the_project_from_a_subfolder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From ``tests/``, ``-i inv/hosts.ini`` is ``tests/inv/hosts.ini``, as for ansible-playbook."""
    project, _ = _layout(pytester, ini=True)
    (project / "tests" / "inv").mkdir()
    (project / "tests" / "inv" / "hosts.ini").write_text(f"[client]\nclient1 {LOCAL}\n[server]\nserver1 {LOCAL}\n")
    monkeypatch.chdir(project / "tests")
    result = pytester.runpytest_subprocess("-i", "inv/hosts.ini")
    result.assert_outcomes(passed=2)


def test_rootdir__ini_inventory_is_relative_to_the_ini_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, _ = _layout(pytester, ini=True)
    (project / "pytest.ini").write_text(INI + "mh_inventory = ../elsewhere/client.ini ../elsewhere/server.ini\n")
    monkeypatch.chdir(project / "tests")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2)


def test_rootdir__inventory_inside_another_project_with_test_paths(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An inventory in a directory that has a pytest.ini of its own: neither that file nor its addopts apply."""
    project, elsewhere = _layout(pytester, ini=True)
    (elsewhere / "pytest.ini").write_text("[pytest]\naddopts = -k matches_nothing\nmh_default_domain = other\n")
    monkeypatch.chdir(project)
    result = pytester.runpytest_subprocess("-i", str(elsewhere / "client.ini"), "tests", "-v")
    assert f"rootdir: {project}" in _setup_lines(result)
    assert "configfile: pytest.ini" in _setup_lines(result)
    result.assert_outcomes(passed=1, skipped=1)


def test_rootdir__inventory_in_pytest_addopts_env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project, elsewhere = _layout(pytester, ini=True)
    monkeypatch.chdir(project)
    monkeypatch.setenv("PYTEST_ADDOPTS", f"-i {elsewhere / 'client.ini'}")
    result = pytester.runpytest_subprocess()
    assert "configfile: pytest.ini" in _setup_lines(result)
    result.assert_outcomes(passed=1, skipped=1)


def test_rootdir__xdist_workers_keep_the_ini_too(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project, elsewhere = _layout(pytester, ini=True)
    monkeypatch.chdir(project)
    result = pytester.runpytest_subprocess(
        "-i", str(elsewhere / "client.ini"), "-i", str(elsewhere / "server.ini"), "-p", "xdist", "-n", "2"
    )
    result.assert_outcomes(passed=2)


def test_rootdir__rootdir_option_still_wins(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project, elsewhere = _layout(pytester, ini=True)
    monkeypatch.chdir(project)
    result = pytester.runpytest_subprocess(
        "-i", str(elsewhere / "client.ini"), f"--rootdir={elsewhere}", "-c", "pytest.ini", "tests"
    )
    assert f"rootdir: {elsewhere}" in _setup_lines(result)
    result.assert_outcomes(passed=1, skipped=1)
