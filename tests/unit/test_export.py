"""The playbook export (``--mh-export-playbooks``): the journal's call records, and the files written from them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_mh_ansible import MultihostHost, RollbackJournal
from pytest_mh_ansible._private.ansible.collection import collections_dir
from pytest_mh_ansible._private.reporting.export import ExportedCalls, write_export
from pytest_mh_ansible._private.secrets import secrets
from pytest_mh_ansible.rollback import CallRecord

SECRET = "Sup3r-S3cret!"


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!unsafe", lambda loader, node: ("UNSAFE", loader.construct_scalar(node)))  # type: ignore[arg-type]


def _load(path: Path) -> object:
    return yaml.load(path.read_text(), Loader=_Loader)


@pytest.fixture
def hosts() -> list[MultihostHost]:
    secrets.add(SECRET)
    yield [
        MultihostHost(
            "client1",
            roles=("client",),
            domain="default",
            variables={"ansible_host": "10.0.0.1", "group_names": ["client"], "inventory_hostname": "client1"},
        ),
        MultihostHost(
            "server1",
            roles=("server",),
            domain="default",
            variables={"ansible_host": "10.0.0.2", "group_names": ["server"], "db_password": SECRET, "port": 8080},
        ),
    ]
    secrets.clear()


def test_journal__keeps_calls_per_scope_and_hands_over_the_closed_scope() -> None:
    journal = RollbackJournal(record_calls=True)
    journal.open("session")
    journal.log_call("h1", "module", "ansible.builtin.user", {"name": "alice"})
    journal.open("test")
    journal.log_call("h1", "command", "touch /tmp/x", {"rc": 0}, become=True)
    with journal.internal():
        journal.log_call("h1", "command", "getent passwd alice")  # a probe: not a change
        journal.log_call("h1", "module", "mh_ansible.rollback.snapshot", {"name": "mh-1"})  # modules always count
    journal.record("h1", "touch /tmp/x", lambda: journal.log_call("h1", "command", "rm /tmp/x"))
    assert [c.name for c in journal.scope_calls("test")] == ["touch /tmp/x", "mh_ansible.rollback.snapshot"]
    assert [c.name for c in journal.scope_calls("session")] == ["ansible.builtin.user"]
    journal.close("test")
    assert [(c.name, c.scope, c.reverting) for c in journal.closed_calls] == [
        ("touch /tmp/x", "test", False),
        ("mh_ansible.rollback.snapshot", "test", False),
        ("rm /tmp/x", "test", True),
    ]
    assert journal.scope_calls("test") == []  # dropped with their scope
    assert [c.name for c in journal.calls] == ["ansible.builtin.user"]


def test_journal__records_nothing_unless_asked() -> None:
    journal = RollbackJournal()
    journal.open("test")
    journal.log_call("h1", "module", "ansible.builtin.copy", {"dest": "/x"})
    assert journal.calls == []
    assert journal.scope_calls("test") == []


def test_write_export__playbooks_inventory_files_and_no_secret(tmp_path: Path, hosts: list[MultihostHost]) -> None:
    local = tmp_path / "app.conf"
    local.write_text("port = 1\n")
    playbook = tmp_path / "site.yml"
    playbook.write_text("- hosts: all\n  tasks: []\n")
    out = tmp_path / "export"
    calls = ExportedCalls(
        hosts=hosts,
        setup=[CallRecord("server1", "module", "ansible.builtin.user", {"name": "svc"}, scope="topology")],
        changes=[
            CallRecord("server1", "module", "ansible.builtin.copy", {"dest": "/etc/app.conf", "src": str(local)}),
            CallRecord("server1", "command", f"mysql -p{SECRET} -e 'select 1'", {"rc": 0}, become=True),
            CallRecord("server1", "module", "ansible.builtin.copy", {"dest": "/etc/t", "content": "{{ not_jinja }}"}),
            CallRecord("server1", "module", "ansible.builtin.copy", {"dest": "/etc/u", "content": "a\n  b\n"}),
            CallRecord("client1", "command", "false", {"rc": 1}),
            CallRecord("client1", "module", "ansible.builtin.user", {"name": "bob", "password": SECRET}),
            CallRecord("client1,server1", "playbook", str(playbook), {"extra_vars": {"api_token": SECRET, "n": 1}}),
            CallRecord("server1", "module", "ansible.builtin.service", {"name": "app", "state": "started"}),
        ],
        revert=[CallRecord("server1", "module", "ansible.builtin.user", {"name": "bob", "state": "absent"})],
    )
    write_export(out, "tests/test_a.py::test_a[pair]", calls)

    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(), f"{path.name} holds the secret"

    changes = _load(out / "changes.yml")
    assert isinstance(changes, list)
    assert [entry.get("hosts", entry.get("import_playbook")) for entry in changes] == [
        "server1",
        "client1",
        "playbooks/2-site.yml",
        "server1",
    ]
    server_tasks = changes[0]["tasks"]
    assert server_tasks[0]["ansible.builtin.copy"]["src"] == "{{ playbook_dir }}/files/1-app.conf"
    assert (out / "files" / "1-app.conf").read_text() == "port = 1\n"
    assert server_tasks[1]["ansible.builtin.shell"]["cmd"] == "mysql -p{{ mh_secret_1 }} -e 'select 1'"
    assert server_tasks[1]["become"] is True
    assert server_tasks[2]["ansible.builtin.copy"]["content"] == ("UNSAFE", "{{ not_jinja }}")
    assert server_tasks[3]["ansible.builtin.copy"]["content"] == "a\n  b\n"
    assert "      content: |\n          a\n            b\n" in (out / "changes.yml").read_text()
    client_tasks = changes[1]["tasks"]
    assert client_tasks[0]["ignore_errors"] is True
    assert client_tasks[1]["ansible.builtin.user"]["password"] == "{{ mh_secret_1 }}"
    assert changes[2]["vars"] == {"api_token": "{{ mh_secret_1 }}", "n": 1}
    assert (out / "playbooks" / "2-site.yml").read_text() == playbook.read_text()
    text = (out / "changes.yml").read_text()
    assert "# a shell command (host.conn.run, by the test or a utility): not idempotent\n" in text
    assert "it exited with 1 in the test" in text

    setup = _load(out / "setup.yml")
    assert setup == [
        {
            "name": "server1",
            "hosts": "server1",
            "gather_facts": False,
            "tasks": [{"name": "[topology] ansible.builtin.user", "ansible.builtin.user": {"name": "svc"}}],
        }
    ]
    revert = _load(out / "revert.yml")
    assert revert[0]["tasks"][0]["ansible.builtin.user"] == {"name": "bob", "state": "absent"}

    inventory = _load(out / "inventory.yml")
    assert inventory == {
        "all": {
            "hosts": {
                "client1": {"ansible_host": "10.0.0.1"},
                "server1": {"ansible_host": "10.0.0.2", "db_password": "{{ mh_secret_1 }}", "port": 8080},
            },
            "children": {"client": {"hosts": {"client1": None}}, "server": {"hosts": {"server1": None}}},
        }
    }
    example = (out / "secrets.example.yml").read_text()
    assert "mh_secret_1: ''" in example
    assert "ansible-playbook -i inventory.yml setup.yml changes.yml" in (out / "README.md").read_text()
    # The collection travels with the export (beside its playbooks), not as a path of this machine.
    assert "collections_path" not in (out / "ansible.cfg").read_text()
    collection = out / "collections" / "ansible_collections" / "mh_ansible" / "rollback"
    assert (collection / "galaxy.yml").is_file()
    assert (collection / "plugins" / "modules" / "snapshot.py").is_file()
    assert (collection / "plugins" / "modules" / "restore.py").is_file()
    # a bare name beside each module: Ansible's lookup by "<name>.*" is a glob that brackets in the path break
    assert (collection / "plugins" / "modules" / "restore").resolve() == (
        collection / "plugins" / "modules" / "restore.py"
    ).resolve()
    assert not (collection / "tests").exists()
    assert not list(collection.rglob("__pycache__"))
    assert str(collections_dir()) not in "".join(p.read_text() for p in out.glob("*") if p.is_file())


def test_write_export__nothing_changed_is_still_a_valid_playbook(tmp_path: Path, hosts: list[MultihostHost]) -> None:
    write_export(tmp_path, "t::a", ExportedCalls(hosts=hosts[:1], setup=[], changes=[], revert=[]))
    assert _load(tmp_path / "changes.yml") == [
        {"name": "nothing to do", "hosts": "localhost", "gather_facts": False, "tasks": []}
    ]
    assert not (tmp_path / "secrets.example.yml").exists()
