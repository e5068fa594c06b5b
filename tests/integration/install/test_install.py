"""The README's install lines, run as written in a new virtualenv, on a copy of the checkout.

The Install section offers two ways: ``pip install '.[collections]'`` in a clone, or a wheel built
there and installed. Both run here, one after the other, in one virtualenv (the second after the
first is uninstalled, so the dependencies are installed once: 1 to 5 minutes). Each must
give a working plugin whose package, collection and command come from the virtualenv, not from the
checkout, and on which a pytest-mh suite whose only change is its requirements runs with its own
command line (``--mh-config=mhc.yaml --mh-lazy-ssh ...``, no ``-p``, ``filterwarnings = error``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_mh_suite import COMMAND_LINE, pytest_mh_origin, summary, write_suite

ROOT = Path(__file__).resolve().parents[3]
# What a fresh clone does not have: virtualenvs, builds, caches, outputs.
NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git", ".venv*", "dist", "build", "artifacts", "_build", "__pycache__", "*.egg-info", ".*_cache"
)


def install_alternatives() -> list[list[str]]:
    """The README's install commands, split at its ``# or ...`` comment into the alternatives."""
    section = re.search(r"^## Install\n(.*?)^## ", (ROOT / "README.md").read_text(), re.MULTILINE | re.DOTALL)
    assert section, "README.md has no '## Install' section"
    block = re.search(r"```sh\n(.*?)```", section.group(1), re.DOTALL)
    assert block, "README.md's Install section has no sh block"
    alternatives: list[list[str]] = [[]]
    for line in block.group(1).splitlines():
        if re.match(r"\s*# or\b", line):
            alternatives.append([])
            continue
        command = re.sub(r"\s+#.*$", "", line).strip()
        if command and not command.startswith("#"):
            alternatives[-1].append(command)
    return alternatives


def _run(command: str, *, cwd: Path, venv: Path, what: str = "README install line") -> subprocess.CompletedProcess[str]:
    # The venv "activated" by PATH, as a user would have it; nothing else of this machine's Python.
    env = {
        "PATH": f"{venv / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
    }
    env.update({key: value for key, value in os.environ.items() if key.startswith("PIP_")})  # the index to use
    # No byte-compiling of what pip installs (~40 s of CPU for the collections package's ~16,000
    # modules; CI shares two cores). pip reads its boolean "--no-" options from the environment
    # reversed: PIP_NO_COMPILE=0 is --no-compile. What gets installed is the same.
    env.setdefault("PIP_NO_COMPILE", "0")
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, f"{what}: {command!r} failed ({result.returncode}):\n{result.stderr[-3000:]}"
    return result


CHECK = textwrap.dedent("""\
    import importlib.resources, json, shutil
    import pytest_mh_ansible
    data = importlib.resources.files("pytest_mh_ansible") / "_data"
    collection = data / "collections/ansible_collections/mh_ansible/rollback"
    print(json.dumps({
        "package": pytest_mh_ansible.__file__,
        "galaxy": (collection / "galaxy.yml").is_file(),
        "snapshot": (collection / "plugins/modules/snapshot.py").is_file(),
        "cli": shutil.which("pytest-mh-ansible"),
    }))
""")


def _check_installed(venv: Path, elsewhere: Path, label: str) -> None:
    result = _run(f"python -c {shlex.quote(CHECK)}", cwd=elsewhere, venv=venv, what="checking the install")
    found = json.loads(result.stdout)
    assert Path(found["package"]).is_relative_to(venv), f"{label}: pytest_mh_ansible comes from {found['package']}"
    assert found["galaxy"], f"{label}: the installed package has no mh_ansible.rollback collection"
    assert found["snapshot"], f"{label}: the installed collection has no snapshot module"
    assert found["cli"], f"{label}: no pytest-mh-ansible command on PATH"
    assert Path(found["cli"]).is_relative_to(venv), f"{label}: pytest-mh-ansible is {found['cli']}, not the venv's"
    help_text = _run("pytest --help", cwd=elsewhere, venv=venv, what="checking the install").stdout
    assert "--mh-inventory" in help_text, f"{label}: pytest does not load the plugin"


def _check_pytest_mh_suite(venv: Path, directory: Path, label: str) -> None:
    """A pytest-mh suite whose only change is its requirements runs with its command line, no -p, on the layer."""
    suite = write_suite(directory)
    args = " ".join(shlex.quote(arg) for arg in COMMAND_LINE)
    result = _run(f"pytest {args}", cwd=suite, venv=venv, what=f"{label}: a pytest-mh suite")
    origin = pytest_mh_origin(result.stdout)
    assert origin.startswith(f"pytest_mh_ansible.compat {venv}/"), f"{label}: pytest_mh is {origin}"
    assert summary(result.stdout) == "1 passed, 1 skipped", result.stdout[-3000:]
    # a suite that passes -p pytest_mh instead: pytest imports it before any plugin (the wheel's .pth serves it)
    suite = write_suite(directory.with_name(directory.name + "-p"), without_pytest_plugins=True)
    result = _run(f"pytest -p pytest_mh {args}", cwd=suite, venv=venv, what=f"{label}: a pytest-mh suite, -p pytest_mh")
    assert pytest_mh_origin(result.stdout).startswith(f"pytest_mh_ansible.compat {venv}/"), result.stdout[-3000:]
    assert summary(result.stdout) == "1 passed, 1 skipped", result.stdout[-3000:]


def test_install__readme_lines_give_a_working_plugin(tmp_path: Path) -> None:
    alternatives = install_alternatives()
    assert len(alternatives) == 2, alternatives
    assert all(alternatives), alternatives
    clone = tmp_path / "clone"
    shutil.copytree(ROOT, clone, symlinks=True, ignore=NOT_IN_A_CLONE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    for number, commands in enumerate(alternatives, 1):
        label = f"README install, way {number} ({' && '.join(commands)})"
        for command in commands:
            _run(command, cwd=clone, venv=venv)
        _check_installed(venv, elsewhere, label)
        _check_pytest_mh_suite(venv, tmp_path / f"pytest-mh-suite-{number}", label)
        _run("pip uninstall -y -q pytest-mh-ansible", cwd=elsewhere, venv=venv, what="between the two ways")
