"""bench/compare.py's suites and state check: the same work on every side, and a drift named by its paths."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import jinja2
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[dict[str, ModuleType]]:
    sys.path.insert(0, str(BENCH))
    try:
        import compare
        import compare_state
        import compare_suites

        yield {"compare": compare, "state": compare_state, "suites": compare_suites}
    finally:
        sys.path.remove(str(BENCH))


def test_template__renders_to_the_text_the_other_variants_write(bench: dict[str, ModuleType]) -> None:
    suites = bench["suites"]
    # Ansible keeps a template's trailing newline; the lab run checks the same bytes land on the host.
    rendered = jinja2.Environment(keep_trailing_newline=True).from_string(suites.TEMPLATE).render()
    assert rendered == suites.RENDERED
    assert rendered != "value = 0\n"  # a change of the file the lab starts with: the row always changes it


def test_variants__every_conftest_implements_every_operation(bench: dict[str, ModuleType], tmp_path: Path) -> None:
    suites = bench["suites"]
    for variant in suites.VARIANTS:
        directory = suites.write_variant(tmp_path / variant, variant)
        source = (directory / "conftest.py").read_text()
        compile(source, f"{variant}/conftest.py", "exec")
        defined = set(re.findall(r"^    def (\w+)\(self, role", source, flags=re.MULTILINE))
        wanted = {"write", "restart", "stop", "useradd", "groupadd", "lineedit", "template", "inifile", "mkdir"}
        assert wanted | {"pkginstall"} <= defined, (variant, sorted(wanted - defined))
        assert "RENDERED_TEXT" not in source
        assert (directory / suites.TEMPLATE_FILE).read_text() == suites.TEMPLATE


def test_modules__each_operation_names_the_module_the_module_variant_calls(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    suites = bench["suites"]
    source = (suites.write_variant(tmp_path / "m", "ours-mod") / "conftest.py").read_text()
    assert set(suites.MODULES) == set(suites.OPERATIONS)
    for module in set(suites.MODULES.values()):
        assert f'"{module}"' in source, module


def test_ops_tests__a_test_per_kind_and_repetition_with_the_new_rows(bench: dict[str, ModuleType]) -> None:
    text = bench["suites"].ops_tests(2, seed=1, ops=["template", "inifile", "mkdir"])
    kinds = re.findall(r"def test_\d+_([a-z]+)\(", text)
    assert sorted(kinds) == sorted(["empty", "template", "inifile", "mkdir"] * 2)
    assert 'ops.mkdir(server1, "/etc/bl-dir-' in text
    assert "{n}" not in text


def load_purge(bench: dict[str, ModuleType], tmp_path: Path) -> Any:
    """``purge_command`` of the pytest-mh side's conftest, as that suite defines it."""
    source = (bench["suites"].write_variant(tmp_path / "p", "pytest-mh") / "conftest.py").read_text()
    start = source.index("# what the package row runs")
    end = source.index("\nclass ", start)
    namespace: dict[str, Any] = {"shlex": __import__("shlex")}
    exec(source[start:end], namespace)  # the bench's own generated code
    return namespace


def test_package_undo__purges_with_dpkg_and_drops_only_those_packages_marks(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    ns = load_purge(bench, tmp_path)
    states = tmp_path / "extended_states"
    states.write_text(
        "Package: libfoo\nArchitecture: amd64\nAuto-Installed: 1\n\n"
        "Package: tree\nArchitecture: amd64\nAuto-Installed: 1\n\n"
        "Package: keep\nArchitecture: amd64\nAuto-Installed: 1\n"
    )
    command = ns["purge_command"](["libfoo", "tree"]).replace(ns["STATES"], str(states))
    assert command.startswith("DEBIAN_FRONTEND=noninteractive dpkg --purge libfoo tree >/dev/null && ")
    marks = command.split(" && ", 1)[1]
    subprocess.run(["sh", "-c", marks], check=True)
    assert states.read_text() == "Package: keep\nArchitecture: amd64\nAuto-Installed: 1\n"
    before = states.stat().st_mtime_ns
    subprocess.run(["sh", "-c", marks], check=True)  # nothing of theirs left: the file is not rewritten
    assert states.stat().st_mtime_ns == before


def test_drifted_lines__name_what_went_and_what_came(bench: dict[str, ModuleType]) -> None:
    drifted = bench["state"].drifted_lines(
        ["/etc/a 1 644 root", "/etc/b 2 644 root", "package tree un"],
        ["/etc/a 1 644 root", "/etc/b 3 644 root", "/etc/bl-dir-4 4096 755 root", "package tree un"],
    )
    assert drifted == ["-/etc/b 2 644 root", "+/etc/b 3 644 root", "+/etc/bl-dir-4 4096 755 root"]
    assert bench["state"].drifted_lines(["x"], ["x"]) == []


class FakeLab:
    """Lab.run_inside answered from a dict of host -> listing text, the fingerprint digest derived from it."""

    def __init__(self, files: dict[str, list[str]], detail: dict[str, list[str]]) -> None:
        self.files = files
        self.detail = detail

    def run_inside(self, host: str, command: str) -> subprocess.CompletedProcess[str]:
        import compat_suite  # the bench directory is on sys.path in these tests

        if command == compat_suite.FINGERPRINT:
            out = f"{hash(tuple(self.files[host])) & 0xFFFF:04x}\n0\n"
        elif command == compat_suite.LISTING:
            out = "\n".join(self.files[host]) + "\n"
        elif command.startswith("{ dpkg-query"):
            out = "\n".join(self.detail[host]) + "\n"
        else:
            out = ""  # the settle step
        return subprocess.CompletedProcess([command], 0, out, "")


class FakeBenchLab:
    def __init__(self, lab: FakeLab) -> None:
        self.lab = lab
        self.addresses = dict.fromkeys(lab.files, "")


def test_host_state__a_drift_names_host_run_and_paths_and_a_clean_run_passes(bench: dict[str, ModuleType]) -> None:
    state_module = bench["state"]
    lab = FakeLab(
        {"server1": ["/etc/bl-app.conf 10 644 root"], "client1": ["/etc/hosts 20 644 root"]},
        {"server1": ["unit blsvc.service active enabled"], "client1": ["package tree un"]},
    )
    state = state_module.HostState.take(FakeBenchLab(lab))  # type: ignore[arg-type]
    state.check("round 1/3, ops run of pytest-mh (lazy)")
    lab.files["server1"] = ["/etc/bl-app.conf 11 644 root"]
    lab.detail["server1"] = ["unit blsvc.service inactive enabled"]
    with pytest.raises(state_module.StateDrift) as caught:
        state.check("round 2/3, ops run of ours (raw commands)")
    assert list(caught.value.drift) == ["server1"]
    message = str(caught.value)
    assert message.startswith("round 2/3, ops run of ours (raw commands): the hosts are not as before")
    assert "server1: -/etc/bl-app.conf 10 644 root" in message
    assert "server1: +/etc/bl-app.conf 11 644 root" in message
    assert "server1: +unit blsvc.service inactive enabled" in message
    assert state.checks == 2


def test_alternate__reverses_the_order_every_other_round(bench: dict[str, ModuleType]) -> None:
    alternate = bench["compare"].alternate
    assert [alternate(["a", "b", "c"], r) for r in range(3)] == [["a", "b", "c"], ["c", "b", "a"], ["a", "b", "c"]]


def test_parse_args__suite_runs_three_times_per_tool_unless_quick(bench: dict[str, ModuleType]) -> None:
    parse = bench["compare"].parse_args
    assert parse([]).suite_rounds == 3
    assert parse(["--quick"]).suite_rounds == 1
    assert parse(["--quick", "--suite-rounds", "3"]).suite_rounds == 3
    assert parse([]).op_list[-4:] == ["template", "inifile", "mkdir", "pkginstall"]


def test_best_pytest_mh__a_figure_of_zero_or_less_is_no_measure_the_other_mode_counts(
    bench: dict[str, ModuleType],
) -> None:
    figures = {
        "pytest-mh-eager": {"write_rollback_ms": -7.7, "useradd_rollback_ms": 60.0, "mkdir_rollback_ms": -1.0},
        "pytest-mh": {"write_rollback_ms": 165.0, "useradd_rollback_ms": 159.0, "mkdir_rollback_ms": None},
    }
    best = bench["compare"].best_pytest_mh(figures)
    assert best["write_rollback_ms"] == 165.0
    assert best["useradd_rollback_ms"] == 60.0
    assert best["mkdir_rollback_ms"] is None
