"""pytest-mh and pytest-mh-ansible in one virtualenv: a pytest-mh suite runs on pytest-mh, or on the layer when asked.

The virtualenv has pytest-mh 1.0.30 from PyPI and this checkout (editable, so it follows the
checkout); it is made once and kept in ``bench/.venv-pytest-mh-both`` (2-3 minutes the first
time), as ``bench/compat_suite.py`` keeps pytest-mh's own. The suite (``pytest_mh_suite.py``) has
``filterwarnings = error`` and runs with pytest-mh's command line, ``--mh-config=mhc.yaml`` and all.
The two cases without a real pytest-mh are in ``tests/functional/test_compat_switch.py`` and, from
the wheel, in ``test_install.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_mh_suite import COMMAND_LINE, pytest_mh_origin, summary, write_suite

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import compat_suite

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
VENV = ROOT / "bench" / ".venv-pytest-mh-both"
PYTEST_MH = "pytest-mh==1.0.30"


def ensure_both_venv() -> Path:
    """The python of a virtualenv with pytest-mh 1.0.30 and this checkout installed, made if needed.

    The tests of this module may run on two xdist workers, each asking for it at the start: the
    first makes it under the bench directory's lock (``compat_suite.bench_lock``), the other waits
    and finds it made (without the lock the second cleared the virtualenv while the first installed
    into it).
    """
    with compat_suite.bench_lock():
        return _ensure_both_venv()


def _ensure_both_venv() -> Path:
    python = VENV / "bin" / "python"
    probe = (
        "import importlib.metadata as m, pathlib, pytest_mh, pytest_mh_ansible, sysconfig; "
        "assert m.version('pytest-mh') == '1.0.30'; "
        "assert (pathlib.Path(sysconfig.get_paths()['purelib']) / 'pytest_mh_ansible_alias.pth').exists(); "
        f"assert pytest_mh_ansible.__file__.startswith({str(ROOT)!r}), pytest_mh_ansible.__file__"
    )
    if python.exists() and subprocess.run([str(python), "-c", probe], check=False, capture_output=True).returncode == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True, timeout=300)
    env = {**os.environ, "PIP_NO_COMPILE": "0"}  # pip's reversed boolean: no byte-compiling of ansible-core
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-e", str(ROOT), PYTEST_MH],
        check=True,
        timeout=1200,
        env=env,
        capture_output=True,
    )
    subprocess.run([str(python), "-c", probe], check=True, capture_output=True)
    return python


@pytest.fixture(scope="module")
def python() -> Path:
    return ensure_both_venv()


def _pytest(python: Path, suite: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "PYTHONPATH"))}
    return subprocess.run(
        [str(python), "-m", "pytest", *COMMAND_LINE, *args],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


def test_both_installed__suite_runs_on_pytest_mh_as_without_this_project(python: Path, tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    out = _ok(_pytest(python, suite))
    assert pytest_mh_origin(out).startswith(f"pytest_mh {VENV}/lib/"), pytest_mh_origin(out)
    assert "mh-ansible" not in out.replace("mh-ansible-0.1", "")  # nothing of ours in the header or the run
    # the same run with this project's plugin blocked: the same outcome, line for line
    alone = _ok(_pytest(python, suite, "-p", "no:mh_ansible"))
    assert summary(out) == summary(alone) == "1 passed, 1 deselected"


def test_both_installed__p_pytest_mh_on_the_command_line_runs_on_pytest_mh(python: Path, tmp_path: Path) -> None:
    # registered before this project's plugin: its options are pytest-mh's from the start
    suite = write_suite(tmp_path / "suite", without_pytest_plugins=True)
    out = _ok(_pytest(python, suite, "-p", "pytest_mh"))
    assert pytest_mh_origin(out).startswith("pytest_mh "), pytest_mh_origin(out)
    assert summary(out) == "1 passed, 1 deselected"


def test_both_installed__p_compat_plugin_picks_the_layer(python: Path, tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    out = _ok(_pytest(python, suite, "-p", "pytest_mh_ansible.compat.plugin"))
    assert pytest_mh_origin(out).startswith("pytest_mh_ansible.compat "), pytest_mh_origin(out)
    assert out.count("mh-ansible compat: pytest-mh is installed too") == 1  # once, in the header
    assert "mh-ansible inventory: mhc.yaml (1 host)" in out
    assert summary(out) == "1 passed, 1 skipped"  # the topology the host file cannot fill is skipped here


def test_both_installed__help_lists_pytest_mhs_options_once(python: Path, tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    for extra in ((), ("-p", "pytest_mh_ansible.compat.plugin")):
        text = _ok(_pytest(python, suite, "--help", *extra))
        assert text.count("  --mh-config=") + text.count("  --mh-config MHC") == 1, extra
        assert "--mh-inventory" in text  # this project's own options stay


def test_both_installed__a_suite_of_this_project_keeps_its_options(python: Path, tmp_path: Path) -> None:
    # pytest-mh is installed but not registered: the options both declare are this plugin's, after the conftests
    suite = tmp_path / "plain"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\nfilterwarnings =\n    error\n")
    (suite / "hosts.ini").write_text(
        "[client]\nclient1 ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n"
    )
    (suite / "test_plain.py").write_text(
        "import sys\n"
        "import pytest\n"
        "from pytest_mh_ansible import Topology, TopologyDomain, TopologyMark\n\n"
        'ONE = TopologyMark("one", Topology(TopologyDomain("default", client=1)),\n'
        '                   fixtures=dict(client="default.client[0]"))\n\n'
        "@pytest.mark.topology(ONE)\n"
        "def test_one(client):\n"
        '    assert client.host.conn.run("echo ok").stdout.strip() == "ok"\n'
        '    print("PYTEST_MH_LOADED", "pytest_mh" in sys.modules)\n'
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "PYTHONPATH"))}
    result = subprocess.run(
        [str(python), "-m", "pytest", "-i", "hosts.ini", "--mh-topology", "one", "--mh-collect-artifacts=never", "-s"],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = _ok(result)
    assert "PYTEST_MH_LOADED False" in out
    assert summary(out) == "1 passed"
