"""The soak's plan (no lab needed): reproducible from its seed, every fault and change kind where promised."""

from __future__ import annotations

import collections

from .plan import CHANGES, FAULTS, NO_PACKAGES, PACKAGE_CHANGES, PROFILES, make_plan
from .states import STATE_CHANGES


def test_same_seed_same_plan__another_seed_another() -> None:
    full = PROFILES["full"]
    assert make_plan(full) == make_plan(full)
    assert make_plan(full, seed=14)["tests"] != make_plan(full)["tests"]


def test_full_profile__1000_tests_3_to_5_changes_each_the_profiles_faults_on_3_hosts() -> None:
    plan = make_plan(PROFILES["full"])
    tests = plan["tests"]
    assert len(tests) == 1000
    assert all(3 <= len(test["changes"]) <= 5 for test in tests)
    faults = collections.Counter(test["fault"] for test in tests)
    assert {kind: faults[kind] for kind in FAULTS} == PROFILES["full"].faults
    assert {test["host"] for test in tests} == {"sysv1", "sysv2", "sysd1"}
    assert {change["kind"] for test in tests for change in test["changes"]} == set(CHANGES)


def test_short_profile__each_fault_once_every_change_kind_but_the_package_changes() -> None:
    tests = make_plan(PROFILES["short"])["tests"]
    assert sorted(test["fault"] for test in tests) == sorted(FAULTS)
    kinds = [change["kind"] for test in tests for change in test["changes"]]
    assert sorted(kinds) == sorted(kind for kind in CHANGES if kind not in PACKAGE_CHANGES)
    assert set(STATE_CHANGES) - set(PACKAGE_CHANGES) <= set(kinds)  # every unusual state but the held package


def test_no_package_install_where_it_cannot_be_rolled_back_or_has_no_time() -> None:
    for seed in range(5):
        for test in make_plan(PROFILES["full"], seed=seed)["tests"]:
            if test["fault"] in NO_PACKAGES:
                assert not {change["kind"] for change in test["changes"]} & set(PACKAGE_CHANGES)


def test_names_of_created_users_groups_and_files_never_collide() -> None:
    tests = make_plan(PROFILES["full"])["tests"]
    for test in tests:
        made = [
            change["args"].get("name") or change["args"].get("dest")
            for change in test["changes"]
            if change["kind"] in ("users.add", "module.user", "users.group_member", "module.group", "module.copy")
        ]
        assert len(made) == len(set(made)), test
    gids = [c["args"]["gid"] for t in tests for c in t["changes"] if "gid" in c["args"]]
    assert len(gids) == len(set(gids))


def test_full_profile__changes_every_object_in_an_unusual_state_with_modules_and_utilities() -> None:
    changes = [c for t in make_plan(PROFILES["full"])["tests"] for c in t["changes"] if c["kind"] in STATE_CHANGES]
    assert {c["kind"] for c in changes} == set(STATE_CHANGES)
    assert {c["args"]["via"] for c in changes} == {"module", "utility"}
    hosts_of_service = {
        t["host"] for t in make_plan(PROFILES["full"])["tests"] for c in t["changes"] if c["kind"] == "state.service"
    }
    assert hosts_of_service == {"sysv1", "sysd1", "sysv2"}  # the sysv state and the systemd ones


def test_a_file_removed_earlier_in_a_test_is_never_chmodded() -> None:
    """The full profile's first run met this: chmod of /etc/motd after an rm of it in the same test."""
    for test in make_plan(PROFILES["full"])["tests"]:
        removed: set[str] = set()
        for change in test["changes"]:
            args = change["args"]
            if change["kind"] == "fs.chmod_chown":
                assert args["path"] not in removed, test
            elif change["kind"] == "fs.rm":
                removed.add(args["path"])
            elif change["kind"] == "module.file":
                removed.add(args["remove"])
            elif change["kind"] in ("fs.append", "module.lineinfile", "config.line"):
                removed.discard(args["path"])
