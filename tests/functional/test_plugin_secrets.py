"""Secrets as a user sees them: extra name patterns, short values, failed assertions, module arguments, vault ids."""

from __future__ import annotations

import textwrap

import pytest

LOCAL = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"

LONG_KEY = "k3y-0f-the-api-77"
EXTRA_PW = "extra-pw-value-31"
SHORT = "root"


@pytest.fixture
def secret_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """One local host with an api key, a short password and a variable that only mh_secret_vars makes secret."""
    pytester.makefile(
        ".ini",
        hosts=f"[client]\nclient1 {LOCAL} api_key={LONG_KEY} db_password={SHORT} extra_pw={EXTRA_PW}\n",
    )
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\nmh_secret_vars =\n    *_pw\n")
    return pytester


def test_secrets__names_short_values_and_assertions(secret_project: pytest.Pytester) -> None:
    secret_project.makepyfile(
        test_s="""
        import pytest

        @pytest.mark.topology(client=1)
        def test_short_value_stays_in_text(client):
            print("uid=0(root) gid=0(root)", client.host.vars["api_key"], client.host.vars["extra_pw"])
            assert False, "show the output"

        @pytest.mark.topology(client=1)
        def test_two_masked_values_differ(client):
            assert client.host.vars["db_password"] == client.host.vars["api_key"]

        @pytest.mark.topology(client=1)
        def test_module_argument_named_like_a_key(client):
            client.host.ansible.run("ansible.builtin.ping", api_key="arg-k3y-value-55")
        """
    )
    result = secret_project.runpytest_subprocess("-i", "hosts.ini", "-rA", "--junitxml=junit.xml")
    result.assert_outcomes(failed=3)
    out = result.stdout.str() + result.stderr.str() + (secret_project.path / "junit.xml").read_text()
    for value in (LONG_KEY, EXTRA_PW, "arg-k3y-value-55"):
        assert value not in out
    assert "uid=0(root) gid=0(root)" in out  # a short secret never masks other text
    assert "uid=0(********)" not in out
    result.stdout.fnmatch_lines(["*assert <secret #*> == <secret #*>*"])
    numbers = [line for line in result.stdout.lines if "assert <secret #" in line]
    left, _, right = numbers[0].partition(" == ")
    assert left.split("#")[1][:1] != right.split("#")[1][:1]  # two different values read as two
    result.stdout.fnmatch_lines(["*ModuleError*ansible.builtin.ping*'api_key': '[*][*][*][*][*][*][*][*]'*"])


PLAYBOOK = """\
- name: Use a vaulted variable and an extra var
  hosts: all
  gather_facts: false
  vars_files:
    - secret.yml
  tasks:
    - name: Check the vaulted word
      ansible.builtin.assert:
        that: vault_word == "the-vaulted-word-19"
    - name: Show the extra var
      ansible.builtin.debug:
        msg: "extra {{ extra_pw }} and {{ api_key }}"
    - name: Show the vaulted word of the playbook's own vars file
      ansible.builtin.debug:
        msg: "vaulted {{ vault_word }}"
"""


def test_secrets__vault_id_reaches_playbooks_and_extra_vars_are_masked(pytester: pytest.Pytester) -> None:
    from ansible.parsing.vault import VaultLib, VaultSecret

    pytester.makefile(".ini", hosts=f"[client]\nclient1 {LOCAL}\n")
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\nmh_secret_vars = *_pw\n")
    (pytester.path / "dev-pass.txt").write_text("dev-vault-pw-88\n")
    vault = VaultLib([("dev", VaultSecret(b"dev-vault-pw-88"))])
    (pytester.path / "secret.yml").write_bytes(vault.encrypt('vault_word: "the-vaulted-word-19"\n', vault_id="dev"))
    (pytester.path / "play.yml").write_text(PLAYBOOK)
    pytester.makepyfile(
        test_p=textwrap.dedent(f"""
        import pytest

        @pytest.mark.topology(client=1)
        def test_playbook(client):
            result = client.playbook("play.yml", extra_vars={{"extra_pw": "{EXTRA_PW}", "api_key": "{LONG_KEY}"}})
            assert result.ok, result.stdout
            assert "{EXTRA_PW}" not in result.stdout and "{LONG_KEY}" not in result.stdout
            print(result.stdout)
            assert False, "show the output"
        """)
    )
    result = pytester.runpytest_subprocess(
        "-i", "hosts.ini", "--mh-vault-id", "dev@dev-pass.txt", "--log-level=INFO", "-rA"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: show the output*"])
    out = result.stdout.str() + result.stderr.str()
    assert EXTRA_PW not in out
    assert LONG_KEY not in out
    assert "no vault secrets" not in out
    assert "the-vaulted-word-19" not in out
    result.stdout.fnmatch_lines(["*vaulted [*][*][*][*][*][*][*][*]*"])
    result.stdout.fnmatch_lines(["*extra [*][*][*][*][*][*][*][*] and [*][*][*][*][*][*][*][*]*"])
