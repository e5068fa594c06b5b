"""The Ansible engine on lab hosts: module calls, the rollback journal, playbooks and the drift check."""

from __future__ import annotations

import textwrap

import pytest

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

HEADER = """
import pytest
from pytest_mh_ansible import ModuleError, PlaybookError, Topology, TopologyController, TopologyDomain, TopologyMark

SYSV = TopologyMark("sysv", Topology(TopologyDomain("default", server=1)), fixtures=dict(server="default.server[0]"))
"""


def run(pytester: pytest.Pytester, lab: Lab, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--mh-inventory={lab.inventory_path}", "-p", "no:randomly", *args
    )


CHANGES = HEADER + textwrap.dedent("""
    def state(host):
        return host.conn.run(
            "stat -c '%a %U %G' /etc/hosts; md5sum /etc/hosts; ls -la /etc/mh-test-dir 2>&1 | head -1; "
            "test -e /etc/app.conf && cat /etc/app.conf; getent passwd alice bob; getent group staffers; "
            "ls /etc/mh-app.ini /etc/mh-templated.conf 2>&1; "
            "dpkg-query -W -f='${db:Status-Abbrev}' tree 2>/dev/null; "
            f"dpkg-query -W -f='${{db:Status-Abbrev}}' {BEFORE.get('orphan', 'tree')} 2>/dev/null; "
            "service mh-demo status >/dev/null 2>&1; echo svc=$?",
            raise_on_error=False,
        ).stdout

    BEFORE = {}
    TEMPLATE = str(__import__("pathlib").Path(__file__).parent / "app.conf.j2")

    @pytest.mark.topology(SYSV)
    def test_0_record_the_clean_state(server):
        # A sysv service to start and stop, installed outside the journal (kept for the session).
        server.host.conn.run(
            "printf '#!/bin/sh\\\\ncase \\\\\\"$1\\\\\\" in start) touch /run/mh-demo;; stop) rm -f /run/mh-demo;; "
            "status) test -e /run/mh-demo;; esac\\\\n' > /etc/init.d/mh-demo && chmod 755 /etc/init.d/mh-demo"
        )
        # An orphan: an installed package that apt would autoremove. The rollback of the apt install
        # below must leave it alone (it did not bring it).
        found = server.host.conn.run(
            "for p in bc lsof strace; do "
            "dpkg-query -W -f='${db:Status-Abbrev}' $p 2>/dev/null | grep -q ^ii || continue; "
            "apt-mark auto $p >/dev/null; apt-get -s autoremove 2>/dev/null | grep -q ^Remv.$p. && echo $p && break; "
            "apt-mark manual $p >/dev/null; done"
        ).stdout.split()
        assert found, "no installed package of bc, lsof, strace can be made an orphan on the lab host"
        BEFORE["orphan"] = found[0]
        BEFORE["state"] = state(server.host)
        assert "ii" in state(server.host).split("svc=")[0]

    @pytest.mark.topology(SYSV)
    def test_1_change_everything_then_fail(server):
        run = server.host.ansible.run
        r = run("ansible.builtin.copy", dest="/etc/app.conf", content="port = 8080\\n", mode="0640")
        assert r.changed and not r.failed and r.diff
        assert not run("ansible.builtin.copy", dest="/etc/app.conf", content="port = 8080\\n", mode="0640").changed
        run("ansible.builtin.lineinfile", path="/etc/hosts", line="192.0.2.9 extra")
        run("ansible.builtin.lineinfile", path="/etc/hosts", line="192.0.2.10 extra2")  # two changes, one file
        run("ansible.builtin.file", path="/etc/hosts", mode="0600")
        run("ansible.builtin.file", path="/etc/mh-test-dir/sub", state="directory")
        run("ansible.builtin.blockinfile", path="/etc/app.conf", block="debug = true")
        run("community.general.ini_file", path="/etc/mh-app.ini", section="main", option="port", value="8080")
        run("ansible.builtin.template", src=TEMPLATE, dest="/etc/mh-templated.conf")
        assert server.host.conn.run("cat /etc/mh-templated.conf").stdout == "host server1\\n"
        run("ansible.builtin.group", name="staffers")
        run("ansible.builtin.user", name="alice", groups=["staffers"])
        run("ansible.builtin.user", name="bob", shell="/bin/false", state="present")
        run("ansible.builtin.service", name="mh-demo", state="started")
        run("ansible.builtin.apt", name="tree", state="present", update_cache=False)
        assert server.host.conn.run("tree --version").rc == 0
        assert state(server.host) != BEFORE["state"]
        raise AssertionError("the test body fails: its changes are rolled back all the same")

    @pytest.mark.topology(SYSV)
    def test_2_everything_is_back(server):
        assert state(server.host) == BEFORE["state"]

    @pytest.mark.topology(SYSV)
    def test_3_check_mode_changes_nothing(server):
        r = server.host.ansible.run("ansible.builtin.user", name="carol", check=True)
        assert r.changed
        assert server.host.conn.run("getent passwd carol", raise_on_error=False).rc == 2

    @pytest.mark.topology(SYSV)
    def test_4_failing_module_names_host_module_and_message(server):
        with pytest.raises(ModuleError) as info:
            server.host.ansible.run("ansible.builtin.file", path="/nonexistent/dir/file", state="touch")
        text = str(info.value)
        assert "server1" in text and "ansible.builtin.file" in text and "/nonexistent/dir" in text

    @pytest.mark.topology(SYSV)
    def test_5_undo_of_a_deleted_user_recreates_it(server):
        server.host.ansible.run("ansible.builtin.user", name="labuser", state="absent")
        assert server.host.conn.run("getent passwd labuser", raise_on_error=False).rc == 2
        assert server.host.ansible.run("ansible.builtin.package", name="tree", state="present").changed

    @pytest.mark.topology(SYSV)
    def test_6_user_is_back_with_its_uid_and_shell(server):
        entry = server.host.conn.run("getent passwd labuser").stdout.split(":")
        assert entry[0] == "labuser" and entry[6].strip() == "/bin/bash"
        assert server.host.conn.run("test -e /usr/bin/tree", raise_on_error=False).rc == 1
""")


def test_rollback__every_change_is_undone_after_a_failing_test(pytester: pytest.Pytester, engine_lab: Lab) -> None:
    pytester.makepyfile(test_changes=CHANGES)
    pytester.path.joinpath("app.conf.j2").write_text("host {{ inventory_hostname }}\n")
    result = run(pytester, engine_lab, "-v", "-rA")
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(["*test_1_change_everything_then_fail*FAILED*", "*test_2_everything_is_back*PASSED*"])
    # The journal of the failing test is in its report: what changed, what was reverted.
    result.stdout.fnmatch_lines(["*[[]server1[]] changed: ansible.builtin.copy dest=/etc/app.conf*"])
    result.stdout.fnmatch_lines(["*[[]server1[]] reverted: ansible.builtin.apt name=tree state=present*"])


SCOPES = HEADER + textwrap.dedent("""
    class Ctrl(TopologyController):
        def topology_setup(self, server):
            server.ansible.run("ansible.builtin.copy", dest="/etc/topology.conf", content="topology\\n")

    SCOPED = TopologyMark("scoped", Topology(TopologyDomain("default", server=1)), controller=Ctrl(),
                          fixtures=dict(server="default.server[0]"))

    @pytest.fixture
    def broken_setup(server):
        server.host.ansible.run("ansible.builtin.copy", dest="/etc/setup.conf", content="setup\\n")
        raise RuntimeError("the fixture breaks after a change")

    @pytest.mark.topology(SCOPED)
    def test_a_test_change_over_a_topology_change(server):
        assert server.host.conn.run("cat /etc/topology.conf").stdout == "topology\\n"
        server.host.ansible.run("ansible.builtin.copy", dest="/etc/topology.conf", content="test\\n")

    @pytest.mark.topology(SCOPED)
    def test_b_topology_change_is_back_to_its_topology_value(server):
        assert server.host.conn.run("cat /etc/topology.conf").stdout == "topology\\n"

    @pytest.mark.topology(SCOPED)
    def test_c_failing_setup(server, broken_setup):
        pass

    @pytest.mark.topology(SYSV)
    def test_d_topology_scope_is_gone_and_setup_change_too(server):
        assert server.host.conn.run("test -e /etc/topology.conf", raise_on_error=False).rc == 1
        assert server.host.conn.run("test -e /etc/setup.conf", raise_on_error=False).rc == 1
""")


def test_rollback__scopes_nest_and_a_failing_setup_is_rolled_back(pytester: pytest.Pytester, engine_lab: Lab) -> None:
    pytester.makepyfile(test_scopes=SCOPES)
    result = run(pytester, engine_lab, "-v")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*test_c_failing_setup*ERROR*"])


SESSION_CONFTEST = """
import pytest
from pytest_mh_ansible import MultihostHost, MultihostRole

HOSTS = {}

class SessionHost(MultihostHost):
    def pytest_setup(self):
        self.ansible.run("ansible.builtin.copy", dest="/etc/mhsess-host.conf", content="host setup\\n")

def pytest_mh_register(registry):
    registry.role("server", MultihostRole, host=SessionHost)

def pytest_mh_host_setup(host, error):
    HOSTS[host.name] = host

@pytest.fixture(scope="session")
def session_change():
    HOSTS["server1"].ansible.run("ansible.builtin.copy", dest="/etc/mhsess-fixture.conf", content="fixture\\n")
"""

SESSION = HEADER + textwrap.dedent("""
    PAIR = TopologyMark("pair", Topology(TopologyDomain("default", server=2)), fixtures=dict(servers="default.server"))

    def cat(host, path):
        return host.conn.run(f"cat {path}", raise_on_error=False).stdout

    @pytest.mark.topology(SYSV)
    def test_a_first_topology(server):
        assert cat(server.host, "/etc/mhsess-host.conf") == "host setup\\n"

    @pytest.mark.topology(SYSV)
    def test_b_session_fixture_first_used_inside_a_topology(server, session_change):
        assert cat(server.host, "/etc/mhsess-fixture.conf") == "fixture\\n"

    @pytest.mark.topology(PAIR)
    def test_c_second_topology_still_has_the_session_changes(servers):
        for host in (servers[0].host, servers[1].host):
            assert cat(host, "/etc/mhsess-host.conf") == "host setup\\n"
        assert cat(servers[0].host, "/etc/mhsess-fixture.conf") == "fixture\\n"
""")


def test_rollback__session_changes_last_the_session_over_two_topologies(
    pytester: pytest.Pytester, engine_lab: Lab
) -> None:
    """pytest_setup and session-scoped fixtures change hosts once; the end of a topology does not undo it."""
    pytester.makeconftest(SESSION_CONFTEST)
    pytester.makepyfile(test_session=SESSION)
    result = run(pytester, engine_lab, "-v")
    result.assert_outcomes(passed=3)
    for host in ("server1", "server2"):  # undone once, at the end of the session
        left = engine_lab.run_inside(host, "ls /etc/mhsess-host.conf /etc/mhsess-fixture.conf 2>/dev/null; true")
        assert left.stdout == "", result.stdout.str()


SYSTEMD = HEADER + textwrap.dedent("""
    SD = TopologyMark("sd", Topology(TopologyDomain("default", server=2)), fixtures=dict(servers="default.server"))

    @pytest.mark.topology(SD)
    def test_a_stop_and_disable_a_systemd_unit(servers):
        host = servers[1].host
        assert host.conn.run("systemctl is-active ssh").stdout.strip() == "active"
        unit = "[Service]\\nExecStart=/bin/sleep infinity\\n[Install]\\nWantedBy=multi-user.target\\n"
        host.ansible.run("ansible.builtin.copy", dest="/etc/systemd/system/mh-sleep.service", content=unit)
        host.ansible.run("ansible.builtin.systemd", name="mh-sleep", state="started", enabled=True, daemon_reload=True)
        assert host.conn.run("systemctl is-active mh-sleep").stdout.strip() == "active"

    @pytest.mark.topology(SD)
    def test_b_unit_is_gone(servers):
        host = servers[1].host
        assert host.conn.run("systemctl is-active mh-sleep", raise_on_error=False).stdout.strip() != "active"
        assert host.conn.run("test -e /etc/systemd/system/mh-sleep.service", raise_on_error=False).rc == 1
""")


def test_rollback__systemd_units_are_stopped_and_removed(pytester: pytest.Pytester, engine_lab: Lab) -> None:
    pytester.makepyfile(test_sd=SYSTEMD)
    run(pytester, engine_lab, "-v").assert_outcomes(passed=2)


SYSV_LINKS = HEADER + textwrap.dedent("""
    from pytest_mh_ansible.lab import dummy_init_script

    RC = " ".join(f"/etc/rc{level}.d" for level in "0123456")

    def links(host):
        return host.conn.run(f"ls {RC}").stdout.count("mh-links")

    @pytest.mark.topology(SYSV)
    def test_a_enable_a_sysv_service_without_links(server):
        server.host.conn.run(
            "cat > /etc/init.d/mh-links && chmod 0755 /etc/init.d/mh-links", input=dummy_init_script("mh-links")
        )
        assert links(server.host) == 0
        assert server.host.ansible.run("ansible.builtin.service", name="mh-links", enabled=True).changed
        assert links(server.host) > 0

    @pytest.mark.topology(SYSV)
    def test_b_no_link_left(server):
        assert links(server.host) == 0  # not K links: it had no link before
        server.host.conn.run("rm /etc/init.d/mh-links")
""")


def test_rollback__a_sysv_service_without_rc_links_gets_none_back(pytester: pytest.Pytester, engine_lab: Lab) -> None:
    """Found by the soak: a raw ``service enabled=true`` was undone with ``update-rc.d disable``, which left
    K links in every rc?.d where there had been none."""
    pytester.makepyfile(test_links=SYSV_LINKS)
    run(pytester, engine_lab, "-v").assert_outcomes(passed=2)


PLAYBOOKS = HEADER + textwrap.dedent("""
    @pytest.mark.topology(SYSV)
    def test_a_playbook_with_revert_paths_and_teardown(server):
        result = server.playbook("app.yml", extra_vars={"app_port": 8080}, revert_paths=["/etc/app.conf"],
                                 teardown="app_teardown.yml")
        assert result.ok
        assert [t.task for t in result.changed_tasks] == ["Write the config", "Add a marker"]
        assert result.stats["server1"].changed == 2
        assert result.stats["server1"].failed == 0
        assert server.host.conn.run("cat /etc/app.conf").stdout == "port = 8080\\n"

    @pytest.mark.topology(SYSV)
    def test_b_reverted(server):
        assert server.host.conn.run("test -e /etc/app.conf", raise_on_error=False).rc == 1
        assert server.host.conn.run("test -e /etc/app.marker", raise_on_error=False).rc == 1

    @pytest.mark.topology(SYSV)
    def test_c_failing_playbook_raises_and_its_change_is_still_reverted(server):
        with pytest.raises(PlaybookError) as info:
            server.playbook("fail.yml", revert_paths=["/etc/app.conf"])
        error = info.value
        assert error.failed_tasks[0].task == "Fail on purpose"
        assert error.hosts == ("server1",)
        assert "server1: task 'Fail on purpose' (ansible.builtin.fail): failed on purpose" in str(error)
        assert server.host.conn.run("cat /etc/app.conf").stdout == "before the failure\\n"

    @pytest.mark.topology(SYSV)
    def test_d_failing_playbook_reverted(server):
        assert server.host.conn.run("test -e /etc/app.conf", raise_on_error=False).rc == 1

    @pytest.mark.topology(SYSV)
    def test_e_unparsable_playbook_raises_with_ansibles_message(server):
        with pytest.raises(PlaybookError) as info:
            server.playbook("bad.yml")
        assert str(info.value).startswith("playbook bad.yml on server1 failed (rc 4): ")
        assert "ERROR" in info.value.message
        assert info.value.failed_tasks == ()

    @pytest.mark.topology(SYSV)
    def test_f_result_when_asked_or_in_check_mode(server):
        result = server.playbook("fail.yml", raise_on_error=False, revert_paths=["/etc/app.conf"])
        assert not result.ok
        assert "on purpose" in result.failed_tasks[0].msg
        assert not server.playbook("fail.yml", check=True).ok
        with pytest.raises(PlaybookError):
            server.playbook("fail.yml", check=True, raise_on_error=True)
""")


def test_playbooks__run_result_and_rollback(pytester: pytest.Pytester, engine_lab: Lab) -> None:
    pytester.makepyfile(test_pb=PLAYBOOKS)
    pytester.path.joinpath("app.yml").write_text(
        textwrap.dedent("""\
        - name: App
          hosts: all
          gather_facts: false
          tasks:
            - name: Write the config
              ansible.builtin.copy: {dest: /etc/app.conf, content: "port = {{ app_port }}\\n", mode: "0644"}
            - name: Add a marker
              ansible.builtin.copy: {dest: /etc/app.marker, content: "x\\n", mode: "0644"}
    """)
    )
    pytester.path.joinpath("app_teardown.yml").write_text(
        textwrap.dedent("""\
        - name: Undo the app playbook's marker
          hosts: all
          gather_facts: false
          tasks:
            - name: Remove the marker
              ansible.builtin.file: {path: /etc/app.marker, state: absent}
    """)
    )
    pytester.path.joinpath("fail.yml").write_text(
        textwrap.dedent("""\
        - name: Fail
          hosts: all
          gather_facts: false
          tasks:
            - name: Write before the failure
              ansible.builtin.copy: {dest: /etc/app.conf, content: "before the failure\\n", mode: "0644"}
            - name: Fail on purpose
              ansible.builtin.fail: {msg: failed on purpose}
    """)
    )
    pytester.path.joinpath("bad.yml").write_text("- name: Bad\n  hosts: all\n  tasks: [unclosed\n")
    run(pytester, engine_lab, "-v").assert_outcomes(passed=6)


DRIFT = HEADER + textwrap.dedent("""
    @pytest.mark.topology(SYSV)
    def test_tracked(server):
        server.host.ansible.run("ansible.builtin.copy", dest="/etc/tracked.conf", content="x\\n")

    @pytest.mark.topology(SYSV)
    def test_untracked(server):
        server.host.conn.run("echo drift > /etc/untracked.conf; rm -f /etc/untracked.conf.keep")
""")


def test_drift_check__catches_an_untracked_raw_change(pytester: pytest.Pytester, engine_lab: Lab) -> None:
    pytester.makepyfile(test_drift=DRIFT)
    pytester.makeini("[pytest]\nmh_verify_paths =\n    /etc\n")
    result = run(pytester, engine_lab, "--mh-verify-rollback")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*drift not rolled back*", "*server1: /etc/untracked.conf: created*"])
    server = next(host for host in engine_lab.hosts if host.name == "server1")
    # Clean the drift the test made on purpose, so that the lab is as before for the other tests.
    import subprocess

    subprocess.run(["ssh", "-F", str(engine_lab.ssh_config_path), server.name, "rm -f /etc/untracked.conf"], check=True)


DRIFT_UNITS = HEADER + textwrap.dedent("""
    SD = TopologyMark("sd", Topology(TopologyDomain("default", server=2)), fixtures=dict(servers="default.server"))

    @pytest.mark.topology(SD)
    def test_a_nothing(servers):
        pass

    @pytest.mark.topology(SD)
    def test_b_nothing(servers):
        pass

    @pytest.mark.topology(SD)
    def test_c_enable_a_unit_raw(servers):
        servers[1].host.conn.run("systemctl enable e2scrub_reap.service")
""")


def test_drift_check__unit_file_states_reused_until_a_unit_is_enabled(
    pytester: pytest.Pytester, engine_lab: Lab
) -> None:
    """The unit-file states of a systemd host are read once and given back; an enabled unit is still drift.

    The checked paths leave /etc/systemd out, so only the services section can see the enabled unit.
    """
    import subprocess

    server = next(host for host in engine_lab.hosts if host.name == "server2")
    ssh = ["ssh", "-F", str(engine_lab.ssh_config_path), server.name]
    before = subprocess.run(
        [*ssh, "systemctl is-enabled e2scrub_reap.service"], capture_output=True, text=True, check=False
    )
    assert before.stdout.strip() == "disabled"
    pytester.makepyfile(test_drift_units=DRIFT_UNITS)
    pytester.makeini("[pytest]\nmh_verify_paths =\n    /srv\n")
    try:
        result = run(pytester, engine_lab, "--mh-verify-rollback", "-v", "-o", "log_cli=true", "--log-cli-level=DEBUG")
    finally:
        subprocess.run([*ssh, "systemctl disable e2scrub_reap.service"], check=True, capture_output=True)
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*test_c_enable_a_unit_raw*ERROR*", "*server2: service e2scrub_reap.service: enabled 'disabled' -> 'enabled'*"]
    )
    # Six fingerprints of server2, two per test: those after the first give the states back until test_c's.
    assert result.stdout.str().count("server2: fingerprint: unit-file states reused") >= 3


SECRETS = HEADER + textwrap.dedent("""
    import logging

    @pytest.mark.topology(SYSV)
    def test_secret_in_a_failing_module(server, caplog):
        caplog.set_level(logging.DEBUG)
        secret = server.host.vars["mh_lab_user_password"]
        with pytest.raises(ModuleError) as info:
            server.host.ansible.run("ansible.builtin.command", cmd=f"sh -c 'echo {secret}; exit 3'")
        assert secret not in str(info.value)
        assert secret not in caplog.text
        server.host.ansible.run("ansible.builtin.copy", dest="/etc/secret.conf", content=f"pw={secret}\\n")
        raise AssertionError(f"report with {secret}")
""")


def test_secrets__masked_in_module_errors_logs_and_reports(pytester: pytest.Pytester, engine_lab: Lab) -> None:
    pytester.makepyfile(test_secret=SECRETS)
    result = run(pytester, engine_lab, "-rA", "--log-level=DEBUG")
    result.assert_outcomes(failed=1)
    password = engine_lab.passwords_path.read_text().split(":", 1)[1].strip()
    assert len(password) > 8
    output = result.stdout.str() + result.stderr.str()
    assert password not in output
    assert "report with ********" in output
