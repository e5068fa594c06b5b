"""The fingerprint's bookkeeping (no lab needed): the tool's traces by path, the machine's changes set apart."""

from __future__ import annotations

from .fingerprint import difference, entry_path, shown_through, traces

SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_traces__snapshots_inside_journal_and_leases_count__an_empty_snapshots_directory_does_not() -> None:
    entries = [
        "paths: /var/lib/mh-ansible d 700 root root",
        "paths: /var/lib/mh-ansible/snapshots d 700 root root",
        "paths: /var/lib/mh-ansible/snapshots/mh-1a2b d 700 root root",
        "paths: /var/lib/mh-ansible/journal d 700 root root",
        "paths: /var/lib/mh-ansible/journal/s1.jsonl f 600 root root 1 ",
        "paths: /tmp/pytest-mh-ansible-leases d 1777 root root",
        f"paths: {SHA}  /var/lib/mh-ansible/journal/s1.jsonl",
        "etc: /etc/var/lib/mh-ansible/journal f 644 root root ",
    ]
    assert traces(entries) == entries[2:6]
    assert traces(entries[:2]) == []


def test_entry_path__of_a_listing_line_and_of_a_hash_line() -> None:
    assert entry_path("paths: /var/lib/dpkg/status f 644 root root 1 ") == "/var/lib/dpkg/status"
    assert entry_path(f"paths: {SHA}  /var/lib/dpkg/status") == "/var/lib/dpkg/status"


def test_shown_through__a_path_the_machine_changed_too_is_set_apart__the_hosts_own_changes_stay() -> None:
    before = ["paths: /var/lib/x f 644 root root 1 ", "paths: /var/lib/y f 644 root root 1 ", "accounts: passwd a"]
    after = ["paths: /var/lib/x f 600 root root 1 ", "paths: /var/lib/y f 600 root root 1 ", "accounts: passwd b"]
    machine_before = ["paths: /var/lib/x f 644 root root 1 ", "paths: /var/lib/y f 644 root root 1 "]
    machine_after = ["paths: /var/lib/x f 600 root root 1 ", "paths: /var/lib/y f 644 root root 1 "]
    own, machine = shown_through(difference(before, after), machine_before, machine_after)
    assert machine == ["- paths: /var/lib/x f 644 root root 1 ", "+ paths: /var/lib/x f 600 root root 1 "]
    assert own == [
        "- paths: /var/lib/y f 644 root root 1 ",
        "- accounts: passwd a",
        "+ paths: /var/lib/y f 600 root root 1 ",
        "+ accounts: passwd b",
    ]
