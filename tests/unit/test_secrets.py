"""Unit tests of ``pytest_mh_ansible._private.secrets``: which names hold secrets, and how values are masked."""

from __future__ import annotations

import pytest

from pytest_mh_ansible._private.secrets import MASK, SecretStore, mask_args, secrets


@pytest.fixture
def store() -> SecretStore:
    return SecretStore()


@pytest.mark.parametrize(
    "name",
    [
        "ansible_password",
        "db_passwd",
        "api_key",
        "API_KEY",
        "aws_credentials",
        "vault_token",
        "client_secret",
        "db_pass",
    ],
)
def test_is_secret_name__default_patterns(store: SecretStore, name: str) -> None:
    assert store.is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["ansible_user", "extra_pw", "ansible_ssh_private_key_file", "ssh_public_key", "host_key_checking"]
)
def test_is_secret_name__other_names_and_paths_of_secrets_are_not(store: SecretStore, name: str) -> None:
    assert not store.is_secret_name(name)


def test_set_name_patterns__adds_to_the_defaults(store: SecretStore) -> None:
    assert not store.is_secret_name("extra_pw")  # answered (and kept) before the patterns change
    store.set_name_patterns(["*_pw", "  ", "pin"])
    assert store.is_secret_name("extra_pw")
    assert store.is_secret_name("PIN")
    assert not store.is_secret_name("pinned")
    assert store.is_secret_name("api_key")  # the defaults stay


def test_add_from_vars__nested_and_secret_named_containers(store: SecretStore) -> None:
    store.add_from_vars(
        {
            "plain": "visible-value",
            "app": {"db_password": "nested-secret-1"},
            "users": [{"api_key": "nested-secret-2"}],
            "credentials": {"user": "leaf-secret-3", "port": 123456},
        }
    )
    text = "visible-value nested-secret-1 nested-secret-2 leaf-secret-3 123456"
    assert store.mask(text) == f"visible-value {MASK} {MASK} {MASK} {MASK}"


def test_mask__short_value_is_not_masked_inside_text(store: SecretStore) -> None:
    store.add_from_vars({"db_password": "root"})
    assert store.mask("uid=0(root) gid=0(root)") == "uid=0(root) gid=0(root)"
    assert store.mask("root") == "root"  # output that happens to be the value is output, not the value


def test_mask_data__short_value_is_masked_where_it_stands_whole(store: SecretStore) -> None:
    store.add("root")
    given = {"name": "root", "groups": ["root", "wheel"], "comment": "uid=0(root)"}
    assert store.mask_data(given, values=True) == {"name": MASK, "groups": [MASK, "wheel"], "comment": "uid=0(root)"}
    # A result is output: the same data comes back unmasked.
    assert store.mask_data(given) == given


def test_mask_args__short_secret_argument_masked_whole() -> None:
    secrets.add("r0t")
    try:
        assert mask_args({"user": "alice", "pin": "r0t", "cmd": "echo r0t"}) == {
            "user": "alice",
            "pin": MASK,
            "cmd": "echo r0t",
        }
    finally:
        secrets.clear()


def test_mask__long_value_masked_anywhere(store: SecretStore) -> None:
    store.add("s3cr3t-value")
    assert store.mask("x=s3cr3t-value;") == f"x={MASK};"


def test_describe__numbers_secrets_so_two_differing_values_read_different(store: SecretStore) -> None:
    store.add("first-secret")
    store.add("root")
    assert store.describe("first-secret") == "<secret #1>"
    assert store.describe("root") == "<secret #2>"
    assert store.describe("first-secret") == "<secret #1>"  # stable
    assert store.describe("plain") is None
    assert store.describe("uid=0(root)") is None  # a short secret inside text is not one
    assert store.describe("pre first-secret post") == "'pre ' + <secret #1> + ' post'"
    assert store.describe({"a": ["root", 1]}) == "{'a': [<secret #2>, 1]}"


def test_clear__forgets_values(store: SecretStore) -> None:
    store.add("s3cr3t-value")
    store.clear()
    assert store.mask("s3cr3t-value") == "s3cr3t-value"
    assert store.describe("s3cr3t-value") is None


@pytest.mark.parametrize("key", ["/etc/passwd", "/etc/ssh/ssh_host_ed25519_key", "/etc/security/opasswd", "a.key"])
def test_is_secret_name__paths_and_dotted_keys_are_data_not_names(store: SecretStore, key: str) -> None:
    assert not store.is_secret_name(key)


def test_mask_data__fingerprint_of_account_files_stays_comparable(store: SecretStore) -> None:
    state = {"paths": {"/etc/passwd": {"type": "file", "sha256": "ab12"}, "/etc/ssh/host_key": {"sha256": "cd34"}}}
    assert store.mask_data(state) == state


def test_logged_args__long_values_named_not_shown() -> None:
    from pytest_mh_ansible._private.secrets import LOGGED_VALUE_MAX, logged_args

    states = {f"unit{i}.service": "enabled" for i in range(200)}
    content = "x" * (LOGGED_VALUE_MAX + 1)
    shown = logged_args({"dest": "/etc/app.conf", "content": content, "unit_files": states, "paths": ["/etc"]})
    assert shown == {
        "dest": "/etc/app.conf",
        "content": f"<str of {LOGGED_VALUE_MAX + 3} characters>",  # its repr, quotes included
        "unit_files": "<dict of 200 items>",
        "paths": ["/etc"],
    }
    assert logged_args({"content": content}, no_log=True) == {"content": "********"}
