"""Secrets on real lab hosts: key-named arguments, short values, assertions, playbook extra vars and vault ids."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from core_helpers import connection_line

from pytest_mh_ansible.lab import Lab

pytestmark = pytest.mark.integration

API_KEY = "lab-api-k3y-4471"
EXTRA_PW = "lab-extra-pw-9183"
VAULTED = "lab-vaulted-word-62"
VAULT_PASSWORD = "lab-dev-vault-pw"

PLAYBOOK = """\
- name: Write a vaulted word and an extra var on the host
  hosts: all
  gather_facts: false
  vars_files:
    - secret.yml
  tasks:
    - name: Write them
      ansible.builtin.copy:
        dest: /tmp/mh-secret-lab.txt
        content: "{{ vault_word }} {{ extra_pw }}\\n"
        mode: "0600"
    - name: Show them
      ansible.builtin.debug:
        msg: "wrote {{ vault_word }} {{ extra_pw }}"
"""

TESTS = textwrap.dedent(f"""
    import pytest

    @pytest.mark.topology(server=1)
    def test_short_secret_and_key_argument(server):
        out = server.host.conn.run("id root").stdout
        print(out)
        assert "uid=0(root)" in out
        server.host.ansible.run("ansible.builtin.ping", api_key=server.host.vars["api_key"])

    @pytest.mark.topology(server=1)
    def test_assertion(server):
        assert server.host.vars["db_password"] == server.host.vars["api_key"]

    @pytest.mark.topology(server=1)
    def test_playbook(server):
        extra = {{"extra_pw": "{EXTRA_PW}"}}
        result = server.playbook("play.yml", extra_vars=extra, revert_paths=["/tmp/mh-secret-lab.txt"])
        assert result.ok, result.stdout
        written = server.host.conn.run("cat /tmp/mh-secret-lab.txt").stdout
        assert written == "{VAULTED[:4]}" + "{VAULTED[4:]} " + "{EXTRA_PW[:4]}" + "{EXTRA_PW[4:]}\\n"
        print(result.stdout)
        assert False, "show the output"
""")


def test_secrets_lab__masked_everywhere_and_vault_ids_reach_playbooks(
    pytester: pytest.Pytester, core_lab: Lab, lab_vars: dict[str, dict[str, Any]]
) -> None:
    from ansible.parsing.vault import VaultLib, VaultSecret

    line = connection_line(lab_vars["server1"])
    (pytester.path / "hosts.ini").write_text(f"[server]\nserver1 {line} api_key={API_KEY} db_password=root\n")
    pytester.makeini("[pytest]\nmh_secret_vars = *_pw\n")
    (pytester.path / "dev-pass.txt").write_text(VAULT_PASSWORD + "\n")
    vault = VaultLib([("dev", VaultSecret(VAULT_PASSWORD.encode()))])
    (pytester.path / "secret.yml").write_bytes(vault.encrypt(f"vault_word: {VAULTED}\n", vault_id="dev"))
    (pytester.path / "play.yml").write_text(PLAYBOOK)
    pytester.makepyfile(test_s=TESTS)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-i",
        "hosts.ini",
        "--mh-vault-id",
        "dev@dev-pass.txt",
        "--log-level=INFO",
        "-rA",
        "--junitxml=junit.xml",
        "--mh-log-path=all.log",
    )
    result.assert_outcomes(failed=3)
    out = "\n".join(
        [
            result.stdout.str(),
            result.stderr.str(),
            (pytester.path / "junit.xml").read_text(),
            (pytester.path / "all.log").read_text(),
        ]
    )
    for value in (API_KEY, EXTRA_PW, VAULTED, VAULT_PASSWORD):
        assert value not in out
    assert "uid=0(root)" in out
    assert "(********)" not in out
    result.stdout.fnmatch_lines(["*'api_key': '[*][*][*][*][*][*][*][*]'*"])
    result.stdout.fnmatch_lines(["*assert <secret #*> == <secret #*>*"])
    result.stdout.fnmatch_lines(["*wrote [*][*][*][*][*][*][*][*] [*][*][*][*][*][*][*][*]*"])
    assert "no vault secrets" not in out
