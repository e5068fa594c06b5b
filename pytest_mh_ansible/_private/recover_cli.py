"""``pytest-mh-ansible recover -i INVENTORY``: undo by hand what dead sessions left on the hosts.

A pytest run does this by itself before it first uses a host (:mod:`.rollback.recovery`), for the
sessions it knows are gone: its own machine's whose process is gone, and those whose expired lease
it took over. ``recover`` is for the rest: a host that no run will use soon, a journal that a run
left alone because its session was of another controller, a recovery that failed and was fixed by
hand. It takes each host's lease (so no running session is disturbed), replays every journal but
those of live sessions of this machine, and prints what it restored.

Example::

    $ pytest-mh-ansible recover -i inventory.yml
    [server1] restored: ansible.builtin.user name=alice (left by session ci-2/4242/0a1b2c)
    recover: 1 change undone on 1 host, nothing left
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..errors import MultihostError
from .ansible.inventory import Inventory
from .rollback.host_journal import RUN_ID
from .rollback.recovery import recover_host, session_gone
from .session.leases import LeaseOwner
from .session.session import MultihostSession, SessionOptions, _controller_id

__all__ = ["add_parser", "recover"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``recover`` subcommand's options."""
    recover = commands.add_parser(
        "recover", help="undo what dead sessions left on the hosts, from the journals they kept there"
    )
    recover.add_argument("-i", "--inventory", action="append", required=True, help="an Ansible inventory source")
    recover.add_argument("--host", action="append", default=[], help="only these inventory hosts (repeatable)")
    recover.add_argument("--vault-password-file", action="append", default=[], help="as for ansible-playbook")
    recover.add_argument("--lease-timeout", type=float, default=600, help="seconds to wait for a host's lease")


def recover(args: argparse.Namespace) -> int:
    """Run ``recover``; 0 when nothing is left on any host, 1 otherwise (with the list on stderr)."""
    controller = _controller_id()
    inventory = Inventory.load(list(args.inventory), vault_password_files=tuple(args.vault_password_file))
    every = [host.name for host in inventory.hosts]
    names = [name for name in every if not args.host or name in args.host]
    unknown = sorted(set(args.host) - set(every))
    if unknown:
        print(f"recover: no such host in {', '.join(args.inventory)}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    owner = LeaseOwner(controller, os.getpid(), f"recover-{RUN_ID}")
    options = SessionOptions(
        sources=tuple(args.inventory),
        vault_password_files=tuple(args.vault_password_file),
        lease_owner=owner,
        lease_timeout=args.lease_timeout,
    )
    session = MultihostSession(options, inventory, lambda registry: None)

    def may_replay(owner_token: str) -> bool:
        # By hand: every session but a live one of this machine (its process answers as a pytest).
        return owner_token.split("/", maxsplit=1)[0] != controller or session_gone(owner_token, controller)

    undone, left = 0, []
    try:
        for name in names:
            try:
                if session.leases is not None:
                    session.leases.acquire([name])
                host = session.host(name)
                with session.journal.replay():
                    report = recover_host(host, may_replay, me=session.persist.owner)
            except MultihostError as err:
                left.append(f"[{name}] {err}")
                continue
            for line in report.lines:
                print(line)
            undone += sum(" restored: " in line for line in report.lines)
            left.extend(report.failures)
    finally:
        session.shutdown()
    for line in left:
        print(line, file=sys.stderr)
    hosts = len(names)
    print(f"recover: {undone} change(s) undone on {hosts} host(s), {len(left) or 'nothing'} left")
    return 1 if left else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_mh_ansible._private.recover_cli``: the subcommand alone (tests, debugging)."""
    parser = argparse.ArgumentParser(prog="pytest-mh-ansible")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return recover(parser.parse_args(argv))
