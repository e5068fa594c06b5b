"""Secrets on the target: a module call whose arguments hold a masked value leaves no trace in the host's journal.

A module logs ``Invoked with <its arguments>`` to the target's journal (or syslog). A call whose
arguments hold a value this tool masks (a secret-named inventory variable, a name of
``mh_secret_vars``, a known secret inside a longer string, a secret-named argument) runs with
Ansible's ``_ansible_no_log`` on the target; any other call still logs its arguments there.
"""

from __future__ import annotations

import textwrap

import pytest
import yaml

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

DB_PASSWORD = "lab-journal-pw-5521"
APP_PW = "lab-journal-app-7730"
PLAIN = "lab-journal-plain-3306"

TESTS = textwrap.dedent(f"""
    import pytest

    @pytest.mark.topology(server=1)
    def test_secret_and_plain_calls(server):
        # lineinfile logs its "line" (copy would log content=NOT_LOGGING_PARAMETER of its own accord)
        def line(text, **extra):
            server.host.ansible.run("ansible.builtin.lineinfile", path="/etc/mh-journal.conf", create=True,
                                    line=text, **extra)

        line(server.host.vars["db_password"])               # a secret-named inventory variable's value
        line("token=" + server.host.vars["app_pw"])          # inside a string, named by mh_secret_vars
        line("{{{{ app_pw }}}}-templated", template=True)    # a template: its value is known only on the way
        line("{PLAIN}")                                       # no secret: logged as before
        assert server.host.conn.run("grep -c token= /etc/mh-journal.conf").stdout == "1\\n"
""")


def test_secrets_journal__masked_arguments_stay_out_of_the_targets_journal(
    pytester: pytest.Pytester, trace_lab: Lab
) -> None:
    hosts = yaml.safe_load(trace_lab.inventory_path.read_text())["all"]["hosts"]
    server = {**hosts["server1"], "db_password": DB_PASSWORD, "app_pw": APP_PW}
    (pytester.path / "hosts.yml").write_text(yaml.safe_dump({"server": {"hosts": {"server1": server}}}))
    pytester.makeini("[pytest]\nmh_secret_vars = *_pw\n")
    pytester.makepyfile(test_journal=TESTS)
    since = trace_lab.run_inside("server1", "date +%s").stdout.strip()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-i", "hosts.yml", "-rA")
    result.assert_outcomes(passed=1)
    journal = ""
    for _ in range(20):  # journald takes the messages asynchronously
        journal = trace_lab.run_inside("server1", f"journalctl -o cat --no-pager --since @{since}").stdout
        if PLAIN in journal:
            break
    assert f"line={PLAIN}" in journal  # a call without secrets logs its arguments as before
    assert "Invoked with" in journal
    for value in (DB_PASSWORD, APP_PW):
        assert value not in journal
