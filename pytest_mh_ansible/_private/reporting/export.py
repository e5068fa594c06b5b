"""``--mh-export-playbooks``: a test's changes written as playbooks, to replay by hand with ``ansible-playbook``.

Every change a test makes goes through a module call, a command or a playbook that the journal
keeps (:class:`~pytest_mh_ansible.rollback.CallRecord`, with ``record_calls``). After the test, this
plugin writes them into the test's artifacts directory:

- ``setup.yml``: the calls of the session and topology scopes that the test started from;
- ``changes.yml``: the calls of the test, its fixtures and its setup, one play per run of
  calls on one host, in the order they happened;
- ``revert.yml``: the calls the journal's undo steps made, in order;
- ``inventory.yml``: the test's hosts with their variables; secrets are replaced by variables
  (``mh_secret_N``) that the user provides (``secrets.example.yml`` names them);
- ``files/`` and ``playbooks/``: local files the calls used, ``ansible.cfg`` and a ``README.md``
  saying how to replay;
- ``collections/ansible_collections/mh_ansible/rollback``: a copy of the collection whose modules
  the playbooks call (snapshots, restores), where Ansible looks beside a playbook: the export
  replays from any directory, on a machine without pytest-mh-ansible.

Example::

    pytest -i hosts.yml --mh-export-playbooks            # failed tests (or =all)
    cd artifacts/tests/test_app/test_login[client-server]
    ansible-playbook -i inventory.yml setup.yml changes.yml
"""

from __future__ import annotations

import functools
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

import pytest

from ..ansible.collection import collections_dir
from ..options import choice_option
from ..secrets import is_secret_name, secrets
from ..stash import SESSION_KEY
from .artifacts import artifacts_root, test_directory

if TYPE_CHECKING:
    from ...host import MultihostHost
    from ...rollback import CallRecord

__all__ = ["WHEN", "ExportedCalls", "PlaybookExport", "register", "replay", "write_export"]

WHEN = ("never", "failed", "all")
PLUGIN_NAME = "mh-ansible-playbook-export"
_CALLS_KEY = pytest.StashKey["ExportedCalls"]()
_FAILED_KEY = pytest.StashKey[bool]()

# Variables that Ansible sets itself: they are not written into the exported inventory.
_MAGIC_VARS = {
    "inventory_hostname",
    "inventory_hostname_short",
    "inventory_dir",
    "inventory_file",
    "group_names",
    "groups",
    "hostvars",
    "omit",
    "playbook_dir",
    "ansible_playbook_python",
    "ansible_config_file",
    "ansible_facts",
    "ansible_version",
    "ansible_check_mode",
    "ansible_diff_mode",
    "ansible_forks",
    "ansible_inventory_sources",
    "ansible_verbosity",
    "ansible_run_tags",
    "ansible_skip_tags",
    "ansible_limit",
    "ansible_play_batch",
    "ansible_play_hosts",
    "ansible_play_hosts_all",
    "ansible_play_role_names",
    "ansible_role_names",
    "ansible_dependent_role_names",
    "ansible_collection_name",
    "role_names",
}
_JINJA = re.compile(r"{{|{%|{#")
_LOCAL_SRC_MODULES = {"copy", "template"}


def register(config: pytest.Config) -> None:
    """Register the export when asked for (called from ``plugin.pytest_configure``)."""
    when = export_mode(config)
    if when != "never" and not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(PlaybookExport(config, when, artifacts_root(config)), PLUGIN_NAME)


def export_mode(config: pytest.Config) -> str:
    """``never``, ``failed`` or ``all``, from ``--mh-export-playbooks`` or the ``mh_export_playbooks`` ini option."""
    return choice_option(config, "mh_export_playbooks", "never", WHEN)


@final
@dataclass
class ExportedCalls:
    """What one test changed, taken from the journal when the test's scope was rolled back."""

    hosts: list[MultihostHost]
    setup: list[CallRecord]
    changes: list[CallRecord]
    revert: list[CallRecord]


@final
@dataclass(eq=False)
class PlaybookExport:
    """Takes each test's calls from the journal after its rollback, writes them after its teardown report.

    :param config: The session's config (its stash holds the session).
    :param when: ``failed`` or ``all`` (:func:`export_mode`).
    :param root: Where the tests' directories go (:func:`~.artifacts.artifacts_root`).
    """

    config: pytest.Config
    when: str
    root: Path
    written: list[tuple[str, str]] = field(default_factory=list)  # (node id, directory or why not)

    @pytest.hookimpl(tryfirst=True)  # before a hook that may raise (the drift check)
    def pytest_mh_test_teardown(self, item: pytest.Item, hosts: list[MultihostHost]) -> None:
        session = self.config.stash.get(SESSION_KEY, None)
        if session is None:
            return
        journal = session.journal
        setup = [*journal.scope_calls("session"), *journal.scope_calls("topology")]
        closed = journal.closed_calls
        item.stash[_CALLS_KEY] = ExportedCalls(
            hosts=list(hosts),
            setup=setup,
            changes=[call for call in closed if not call.reverting],
            revert=[call for call in closed if call.reverting],
        )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if report.failed:
            item.stash[_FAILED_KEY] = True
        if report.when != "teardown":
            return
        calls = item.stash.get(_CALLS_KEY, None)
        if calls is None or (self.when == "failed" and not item.stash.get(_FAILED_KEY, False)):
            return
        destination = self.root / test_directory(item.nodeid)
        try:
            write_export(destination, item.nodeid, calls)
        except Exception as err:  # an export that fails must not end the run: say so in the summary
            message = secrets.mask(f"{type(err).__name__}: {err}")
            self.written.append((item.nodeid, f"could not write the playbooks to {destination}: {message}"))
            return
        self.written.append((item.nodeid, str(destination)))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """One line per exported test: where its playbooks are (or why they could not be written)."""
        if not self.written:
            return
        terminalreporter.section("mh playbooks")
        for nodeid, where in self.written:
            terminalreporter.write_line(f"{nodeid}: {where}")
        terminalreporter.write_line("replay: cd DIR && ansible-playbook -i inventory.yml setup.yml changes.yml")


# -- writing ------------------------------------------------------------------------------------------
class _Unsafe(str):
    """A string Ansible must not template (``!unsafe``): module arguments were data, not Jinja."""


@functools.cache
def _dumper() -> type[Any]:
    """A YAML dumper that writes :class:`_Unsafe` strings as ``!unsafe`` (yaml is imported on first export)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def represent_unsafe(dumper: yaml.SafeDumper, data: _Unsafe) -> yaml.Node:
        return dumper.represent_scalar("!unsafe", str(data))

    def represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
        # Multi-line text (file contents, scripts) as a literal block: the playbook reads like the file.
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)

    Dumper.add_representer(_Unsafe, represent_unsafe)
    Dumper.add_representer(str, represent_str)
    return Dumper


def _dump(data: Any) -> str:
    import yaml

    return yaml.dump(_plain(data), Dumper=_dumper(), sort_keys=False, default_flow_style=False, width=10**6)


@dataclass
class _Writer:
    """Turns call records into plays, replacing secrets by variables and copying local files."""

    destination: Path
    secret_names: dict[str, str] = field(default_factory=dict)  # secret value -> variable name
    secret_origin: dict[str, str] = field(default_factory=dict)  # variable name -> where it was found
    copied: int = 0

    # values ------------------------------------------------------------------------------------------
    def _secret_var(self, value: str, origin: str) -> str:
        name = self.secret_names.get(value)
        if name is None:
            name = f"mh_secret_{len(self.secret_names) + 1}"
            self.secret_names[value] = name
            self.secret_origin[name] = origin
        return name

    def value(self, data: Any, origin: str, name: str = "") -> Any:
        """``data`` fit for a playbook: secrets become ``{{ mh_secret_N }}``, Jinja in data stays literal."""
        if isinstance(data, Mapping):
            return {str(k): self.value(v, f"{origin}.{k}", str(k)) for k, v in data.items()}
        if isinstance(data, list | tuple | set):
            return [self.value(v, origin, name) for v in data]
        if data is None or isinstance(data, bool | int | float):
            if name and is_secret_name(name) and data is not None and not isinstance(data, bool):
                return "{{ " + self._secret_var(str(data), origin) + " }}"
            return data
        text = str(data)
        if (name and is_secret_name(name) and text) or secrets.is_secret(text):
            return "{{ " + self._secret_var(text, origin) + " }}"
        masked = secrets.substitute(text, lambda secret: "\0" + self._secret_var(secret, origin) + "\0")
        if masked == text:
            return _Unsafe(text) if _JINJA.search(text) else text
        # A secret inside a longer text (a command line): the rest is data, the secret a variable.
        parts = masked.split("\0")
        return "".join(
            "{{ " + part + " }}" if index % 2 else "{% raw %}" + part + "{% endraw %}" if _JINJA.search(part) else part
            for index, part in enumerate(parts)
        )

    def local_file(self, src: str) -> str | None:
        """Copy a controller file a call used into ``files/``; the path the playbook refers to it by."""
        path = Path(src)
        if not path.exists():
            return None
        self.copied += 1
        target = self.destination / "files" / f"{self.copied}-{path.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.copytree(path, target)
        else:
            shutil.copy2(path, target)
        return "{{ playbook_dir }}/files/" + target.name

    # plays ---------------------------------------------------------------------------------------------
    def task(self, call: CallRecord) -> tuple[dict[str, Any], str | None]:
        """One task for a module or command call, and a comment to write above it (or None)."""
        origin = f"{call.host}: {call.name if call.kind == 'module' else 'command'}"
        comment = None
        if call.kind == "command":
            args: dict[str, Any] = {"cmd": self.value(call.name, origin)}
            stdin = call.args.get("stdin")
            if isinstance(stdin, str):
                args["stdin"] = self.value(stdin, f"{origin} stdin")
            task: dict[str, Any] = {"name": f"[{call.scope}] shell", "ansible.builtin.shell": args}
            comment = "a shell command (host.conn.run, by the test or a utility): not idempotent"
            rc = call.args.get("rc")
            if isinstance(rc, int) and rc != 0:
                task["ignore_errors"] = True
                comment += f"; it exited with {rc} in the test"
        else:
            args = self.value(dict(call.args), origin)
            src = call.args.get("src")
            if (
                call.name.rsplit(".", 1)[-1] in _LOCAL_SRC_MODULES
                and isinstance(src, str)
                and not call.args.get("remote_src")
            ):
                local = self.local_file(src)
                if local is not None:
                    args["src"] = local
            task = {"name": f"[{call.scope}] {call.name}", call.name: args}
        return self._become(task, call), comment

    @staticmethod
    def _become(task: dict[str, Any], call: CallRecord) -> dict[str, Any]:
        if call.become is not None:
            task["become"] = call.become
        if call.become_user is not None:
            task["become_user"] = call.become_user
        return task

    def playbook_entry(self, call: CallRecord) -> tuple[dict[str, Any], str]:
        source = Path(call.name)
        self.copied += 1
        target = self.destination / "playbooks" / f"{self.copied}-{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        entry: dict[str, Any] = {"import_playbook": f"playbooks/{target.name}"}
        extra = call.args.get("extra_vars")
        if isinstance(extra, Mapping) and extra:
            entry["vars"] = self.value(extra, f"playbook {source.name} extra_vars")
        comment = f"[{call.scope}] playbook {source} on {call.host}"
        if call.args.get("tags") or call.args.get("skip_tags"):
            comment += f" (run with tags {call.args.get('tags')} / skip_tags {call.args.get('skip_tags')})"
        return entry, comment

    def document(self, calls: Sequence[CallRecord], title: str) -> str:
        """A playbook (YAML text with comments): one play per run of calls on one host, in order."""
        chunks: list[str] = [f"# {title}\n"]
        play: dict[str, Any] | None = None
        tasks: list[str] = []

        def flush() -> None:
            nonlocal play, tasks
            if play is not None:
                head = _dump([play]).rstrip("\n")
                chunks.append(head + "\n  tasks:\n" + "".join(tasks))
            play, tasks = None, []

        for call in calls:
            if call.kind == "playbook":
                flush()
                entry, note = self.playbook_entry(call)
                chunks.append(f"# {note}\n" + _dump([entry]))
                continue
            if play is None or play["hosts"] != call.host:
                flush()
                play = {"name": f"{call.host}", "hosts": call.host, "gather_facts": False}
            task, comment = self.task(call)
            text = _dump([task])
            indented = "".join(f"    {line}\n" for line in text.splitlines())
            tasks.append((f"    # {comment}\n" if comment else "") + indented)
        flush()
        if len(chunks) == 1:
            chunks.append("- name: nothing to do\n  hosts: localhost\n  gather_facts: false\n  tasks: []\n")
        return "".join(chunks)

    def inventory(self, hosts: Iterable[MultihostHost]) -> dict[str, Any]:
        """The test's hosts with their variables, in groups as in the session's inventory."""
        all_hosts: dict[str, Any] = {}
        groups: dict[str, dict[str, Any]] = {}
        for host in hosts:
            variables = {
                str(k): self.value(_plain(v), f"{host.name}: variable {k}", str(k))
                for k, v in host.vars.items()
                if k not in _MAGIC_VARS
            }
            all_hosts[host.name] = variables
            for group in host.vars.get("group_names") or []:
                groups.setdefault(str(group), {"hosts": {}})["hosts"][host.name] = None
        return {"all": {"hosts": all_hosts, "children": groups}} if groups else {"all": {"hosts": all_hosts}}


def _plain(value: Any) -> Any:
    """Ansible's own string and container types (vault values, tagged values) as plain Python data."""
    if isinstance(value, _Unsafe):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


_README = """# Replaying {nodeid}

These playbooks are the changes this test made, taken from the rollback journal of
pytest-mh-ansible. From this directory:

    ansible-playbook -i inventory.yml setup.yml changes.yml   # the hosts as they were when the test failed
    ansible-playbook -i inventory.yml revert.yml              # back to where the test started

or `pytest-mh-ansible replay .` (`--revert` for the second). The playbooks may be run from
any directory, and copied to another machine with Ansible: the mh_ansible.rollback collection
that their snapshots use is in `collections/`, where Ansible looks beside a playbook.

- `setup.yml`: changes of the session and topology setup that the test started from.
- `changes.yml`: the test's changes, one play per run of calls on one host. Commands the test
  ran with `host.conn.run` are `ansible.builtin.shell` tasks: they are not idempotent.
- `revert.yml`: what the rollback ran after the test.
{secrets}"""

_SECRETS = """
Secrets are not written here. Give their values in a file (better: encrypted with
`ansible-vault create secrets.yml`) and add `-e @secrets.yml` to each command; the names are in
`secrets.example.yml`.
"""


def write_export(destination: Path, nodeid: str, calls: ExportedCalls) -> None:
    """Write the playbooks of one test into ``destination`` (created; files of an earlier export replaced)."""
    destination.mkdir(parents=True, exist_ok=True)
    for stale in ("files", "playbooks", "collections"):
        shutil.rmtree(destination / stale, ignore_errors=True)
    _copy_collection(destination / "collections")
    writer = _Writer(destination)
    (destination / "setup.yml").write_text(
        writer.document(calls.setup, f"{nodeid}: changes of the session and topology setup"), encoding="utf-8"
    )
    (destination / "changes.yml").write_text(writer.document(calls.changes, f"{nodeid}: changes"), encoding="utf-8")
    (destination / "revert.yml").write_text(
        writer.document(calls.revert, f"{nodeid}: what the rollback ran"), encoding="utf-8"
    )
    inventory = writer.inventory(calls.hosts)
    (destination / "inventory.yml").write_text(_dump(inventory), encoding="utf-8")
    secrets_note = ""
    example = destination / "secrets.example.yml"
    if writer.secret_origin:
        lines = [f"{name}: ''  # {origin}" for name, origin in writer.secret_origin.items()]
        example.write_text(
            "# The secrets of these playbooks: fill in and pass with -e @secrets.yml\n" + "\n".join(lines) + "\n"
        )
        secrets_note = _SECRETS
    elif example.exists():
        example.unlink()
    (destination / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = False\n", encoding="utf-8")
    (destination / "README.md").write_text(_README.format(nodeid=nodeid, secrets=secrets_note), encoding="utf-8")


_COLLECTION_PARTS = ("galaxy.yml", "README.md", "meta", "plugins", "roles")
"""What of the collection an export carries: what Ansible loads, not its tests."""


def _copy_collection(destination: Path) -> None:
    """Copy the ``mh_ansible.rollback`` collection under ``destination`` (a playbook-adjacent ``collections/``)."""
    source = collections_dir() / "ansible_collections" / "mh_ansible" / "rollback"
    target = destination / "ansible_collections" / "mh_ansible" / "rollback"
    target.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in _COLLECTION_PARTS:
        if (source / part).is_dir():
            shutil.copytree(source / part, target / part, ignore=ignore)
        elif (source / part).is_file():
            shutil.copy2(source / part, target / part)
    # Ansible finds a collection's module by its exact name first, then by a glob of "<name>.*" that
    # does not escape the directory: under a test's artifacts directory ("test_a[pair]"), the glob
    # matches nothing and the module "cannot be resolved". A link of each module's bare name is found
    # by the first lookup, whatever the path holds.
    for module in sorted((target / "plugins" / "modules").glob("*.py")):
        if module.stem != "__init__":
            module.with_suffix("").symlink_to(module.name)


def replay(directory: Path, *, revert: bool = False, secrets_file: Path | None = None) -> int:
    """``pytest-mh-ansible replay DIR``: run an export's playbooks with ansible-runner; the exit code.

    :param directory: A test's artifacts directory with the files :func:`write_export` wrote.
    :param revert: Run ``revert.yml`` instead of ``setup.yml`` and ``changes.yml``.
    :param secrets_file: A YAML file with the values of the ``mh_secret_N`` variables.
    :raises MultihostError: The directory holds no export, or the secrets file is not a YAML mapping.
    """
    import yaml

    from ...errors import MultihostError
    from ..ansible.playbooks import PlaybookRunner

    inventory = directory / "inventory.yml"
    if not inventory.is_file():
        raise MultihostError(f"{directory}: no inventory.yml here (not a directory written by --mh-export-playbooks)")
    extra: dict[str, Any] = {}
    if secrets_file is not None:
        loaded = yaml.safe_load(secrets_file.read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, Mapping):
            raise MultihostError(f"{secrets_file}: not a YAML mapping of mh_secret_N values")
        extra = {str(k): v for k, v in loaded.items()}
        secrets.add_all(extra.values())
    data = yaml.safe_load(inventory.read_text(encoding="utf-8")) or {}
    hosts = sorted((data.get("all") or {}).get("hosts") or {})
    runner = PlaybookRunner((str(inventory),), search_dirs=(str(directory),))
    for name in ("revert.yml",) if revert else ("setup.yml", "changes.yml"):
        result = runner.run(name, hosts, extra_vars=extra)
        totals = {
            "ok": sum(s.ok for s in result.stats.values()),
            "changed": sum(s.changed for s in result.stats.values()),
            "failed": sum(s.failed for s in result.stats.values()),
            "unreachable": sum(s.unreachable for s in result.stats.values()),
        }
        print(f"{name}: " + " ".join(f"{k}={v}" for k, v in totals.items()))
        if not result.ok:
            for task in result.failed_tasks:
                print(f"  {task.host}: {task.task}: {task.msg}")
            if not result.failed_tasks:
                print(result.stdout[-2000:])
            return 1
    return 0
