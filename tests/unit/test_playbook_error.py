"""PlaybookError: what a failed or unparsable playbook says."""

from __future__ import annotations

from pytest_mh_ansible import PlaybookError, PlaybookHostStats, PlaybookResult, TaskResult
from pytest_mh_ansible._private.ansible.playbooks import failure_message


def _result(
    rc: int, stdout: str = "", failed: tuple[TaskResult, ...] = (), **stats: PlaybookHostStats
) -> PlaybookResult:
    return PlaybookResult("app.yml", rc, stats, (), failed, stdout)


def test_playbook_error__failed_tasks__named_with_host_action_and_ansibles_message() -> None:
    task = TaskResult("server1", "Install the app", "ansible.builtin.apt", False, True, "No package matching 'nope'")
    result = _result(2, failed=(task,), server1=PlaybookHostStats(failed=1))
    error = PlaybookError("app.yml", ["server1"], failure_message(result), result)
    assert str(error) == (
        "playbook app.yml on server1 failed (rc 2): "
        "server1: task 'Install the app' (ansible.builtin.apt): No package matching 'nope'"
    )
    assert error.failed_tasks == (task,)
    assert error.result is result


def test_playbook_error__parse_error__ansibles_own_error_lines() -> None:
    stdout = "noise\n[ERROR]: YAML parsing failed: This may be an issue with missing quotes.\nOrigin: bad.yml:3:10\n"
    message = failure_message(_result(4, stdout))
    assert message == "[ERROR]: YAML parsing failed: This may be an issue with missing quotes.\nOrigin: bad.yml:3:10"


def test_playbook_error__unreachable_host__named() -> None:
    assert failure_message(_result(4, server2=PlaybookHostStats(unreachable=1))) == "unreachable: server2"


def test_playbook_error__no_output__says_so() -> None:
    assert failure_message(_result(1)) == "ansible-playbook gave no output"
