"""The ``pytest-mh-ansible`` command: ``lab up|down|status|inventory``, ``replay``, ``recover`` and ``convert-mhc``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from pytest_mh_ansible._private.lab import registry
from pytest_mh_ansible._private.lab.lab import Lab, LabHost, labs_root
from pytest_mh_ansible._private.lab.spec import INIT_SYSTEMS, LabSpec, LabUserSpec
from pytest_mh_ansible._private.lab.state import STATE_FILE
from pytest_mh_ansible.errors import LabError, MultihostError

__all__ = ["main"]

_DEFAULT_HOSTS = ("client1:client", "server1:server")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-mh-ansible", description="Tools of pytest-mh-ansible.")
    commands = parser.add_subparsers(dest="command", required=True)
    lab = commands.add_parser("lab", help="a local lab of isolated hosts (root only)")
    actions = lab.add_subparsers(dest="action", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--name", help="lab name (default: the spec's, else 'lab')")
        p.add_argument("--dir", type=Path, help=f"lab directory (default: {labs_root()}/<name>)")

    up = actions.add_parser("up", help="bring a lab up (idempotent)")
    common(up)
    up.add_argument("--spec", type=Path, help="YAML lab spec; the other options override its values")
    up.add_argument(
        "--from-mhc",
        type=Path,
        metavar="MHC",
        help="shape the lab after a pytest-mh host file: its hosts by their names (as fully qualified names) "
        "and roles; writes mhc.yaml and an inventory pointing at them",
    )
    up.add_argument("--subnet", help="a free private /24, e.g. 10.213.7.0/24 (default: first free 10.213.N.0/24)")
    up.add_argument("--init", choices=INIT_SYSTEMS, help="init system of the hosts (default: sysv)")
    up.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="NAME[:ROLE,...]",
        help=f"a host and its roles, repeatable (default: {' '.join(_DEFAULT_HOSTS)})",
    )
    up.add_argument("--package", action="append", default=[], metavar="PKG", help="make a package installable")
    up.add_argument("--user", metavar="NAME", help="create a non-root user with a password and sudo")
    up.add_argument("--password", action="store_true", help="give root a generated password too")
    up.add_argument(
        "--replace", action="store_true", help="replace a lab of this name that is up with another spec (its files go)"
    )
    convert = commands.add_parser("convert-mhc", help="write a pytest-mh mhc.yaml as an Ansible inventory")
    convert.add_argument("mhc", type=Path, help="the pytest-mh configuration (mhc.yaml)")
    convert.add_argument("-o", "--output", type=Path, help="write the inventory here (default: stdout)")
    convert.add_argument("--vault-password-file", help="encrypt passwords as vault values with this password file")
    convert.add_argument(
        "--no-host-key-checking",
        action="store_true",
        help="skip ssh host key checks, as pytest-mh does (adds ansible_ssh_common_args)",
    )
    convert.add_argument(
        "--ssh-plugin",
        choices=("ssh", "paramiko"),
        default="ssh",
        help="connection plugin of ssh hosts: ssh (OpenSSH, default) or paramiko (in-process, as pytest-mh)",
    )
    for name, text in (
        ("down", "tear a lab down"),
        ("status", "show a lab's hosts; without --name or --dir, list every lab that is up"),
        ("inventory", "print the path of a lab's inventory"),
    ):
        common(actions.add_parser(name, help=text))
    from pytest_mh_ansible._private.recover_cli import add_parser as add_recover

    add_recover(commands)
    replay = commands.add_parser(
        "replay", help="replay a test's changes exported by --mh-export-playbooks (setup.yml, then changes.yml)"
    )
    replay.add_argument("directory", type=Path, metavar="ARTIFACT_DIR", help="the test's artifacts directory")
    replay.add_argument("--revert", action="store_true", help="run revert.yml instead (what the rollback ran)")
    replay.add_argument("--secrets", type=Path, metavar="FILE", help="a YAML file with the mh_secret_N values")
    return parser


def _directory(args: argparse.Namespace) -> Path:
    """Where the lab named by --dir or --name (default 'lab') lives: --dir, the registry, or the labs root."""
    if args.dir is not None:
        return Path(args.dir)
    name = args.name or "lab"
    return registry.lookup(name) or labs_root() / name


def _spec(args: argparse.Namespace) -> LabSpec:
    data: LabSpec | None
    if args.from_mhc is not None:
        if args.spec or args.host:
            raise LabError("lab up: --from-mhc gives the hosts; it cannot be combined with --spec or --host")
        data = LabSpec.from_mhc(args.from_mhc)
    else:
        data = LabSpec.from_file(args.spec) if args.spec else None
    base: dict[str, Any] = data.to_dict() if data else {"name": "lab", "hosts": list(_DEFAULT_HOSTS)}
    if args.name:
        base["name"] = args.name
    if args.host:
        base["hosts"] = list(args.host)
    if args.subnet:
        base["subnet"] = args.subnet
    if args.init:
        base["init"] = args.init
    if args.package:
        base["packages"] = [*base.get("packages", []), *args.package]
    if args.user:
        base["user"] = {"name": LabUserSpec(args.user).name}
    if args.password:
        base["password"] = True
    return LabSpec.from_dict(base, source=data.source if data else None)


def _lab_to_bring_up(args: argparse.Namespace) -> Lab:
    """``lab up --name X`` alone re-ups the recorded lab X as it was; any spec option gives a new spec."""
    spec_options = (args.spec, args.from_mhc, args.host, args.subnet, args.init, args.package, args.user, args.password)
    directory = _directory(args)
    if not any(spec_options) and (directory / STATE_FILE).exists():
        return Lab.from_directory(directory)
    spec = _spec(args)
    return Lab(spec, args.dir or labs_root() / spec.name)


def _lab(args: argparse.Namespace) -> Lab:
    """The lab named by --dir or --name (its recorded spec), for down/status/inventory."""
    directory = _directory(args)
    try:
        return Lab.from_directory(directory)
    except LabError:
        if args.dir is None and args.name is None:
            raise LabError(f"{directory}: no lab here; pass --name or --dir of the lab") from None
        raise


def _labs_up() -> list[Lab]:
    """Every lab with a recorded state: those in the registry, and older ones under the labs root."""
    directories = dict.fromkeys(registry.entries().values())
    if labs_root().is_dir():
        directories.update(dict.fromkeys(p.parent for p in sorted(labs_root().glob(f"*/{STATE_FILE}"))))
    labs = []
    for directory in directories:
        try:
            labs.append(Lab.from_directory(directory))
        except LabError:  # brought down meanwhile, or a stale registry entry
            continue
    return sorted(labs, key=lambda lab: lab.spec.name)


def _labs_table(labs: Sequence[Lab]) -> str:
    rows = [("LAB", "HOSTS", "RUNNING", "DIRECTORY")]
    for lab in labs:
        hosts = lab.status()
        rows.append((lab.spec.name, str(len(hosts)), str(sum(h.running for h in hosts)), str(lab.directory)))
    return _columns(rows)


def _table(hosts: Sequence[LabHost]) -> str:
    rows = [("HOST", "ROLES", "ADDRESS", "INIT", "PID", "RUNNING")]
    rows += [
        (
            h.name if h.fqdn is None else f"{h.name} ({h.fqdn})",
            ",".join(h.roles) or "-",
            h.address,
            h.init,
            str(h.pid or "-"),
            "yes" if h.running else "no",
        )
        for h in hosts
    ]
    return _columns(rows)


def _columns(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (1 for a lab error, with its message on stderr)."""
    args = _parser().parse_args(argv)
    if args.command == "convert-mhc":
        return _convert_mhc(args)
    if args.command == "recover":
        from pytest_mh_ansible._private.recover_cli import recover

        try:
            return recover(args)
        except MultihostError as err:
            print(f"pytest-mh-ansible: error: {err}", file=sys.stderr)
            return 1
    try:
        if args.command == "replay":
            from pytest_mh_ansible._private.reporting.export import replay

            return replay(args.directory, revert=args.revert, secrets_file=args.secrets)
        if args.action == "up":
            lab = _lab_to_bring_up(args)
            started = time.monotonic()
            lab.up(replace=args.replace)
            print(_table(lab.status()))
            print(f"lab {lab.spec.name!r} is up in {time.monotonic() - started:.2f} s")
            print(f"inventory:  {lab.inventory_path}")
            print(f"ssh:        ssh -F {lab.ssh_config_path} {lab.spec.hosts[0].name}")
            if lab.mhc_path.exists():
                print(f"mhc.yaml:   {lab.mhc_path}")
            if lab.passwords_path.exists():
                print(f"passwords:  {lab.passwords_path}")
        elif args.action == "down":
            directory = _directory(args)
            if not directory.exists():
                if args.dir is None:  # a registry entry whose directory was removed by hand
                    with registry.locked(args.name or "lab"):
                        registry.unregister(args.name or "lab", directory)
                print(f"no lab at {directory}: nothing to do")
                return 0
            started = time.monotonic()
            lab = _lab(args)
            lab.down()
            print(f"lab {lab.spec.name!r} is down in {time.monotonic() - started:.2f} s")
        elif args.action == "status" and args.name is None and args.dir is None:
            labs = _labs_up()
            print(_labs_table(labs) if labs else "no lab is up")
        elif args.action == "status":
            lab = _lab(args)
            print(_table(lab.status()))
            return 0 if lab.is_up else 3
        elif args.action == "inventory":
            print(_lab(args).inventory_path)
    except MultihostError as err:
        print(f"pytest-mh-ansible: error: {err}", file=sys.stderr)
        return 1
    return 0


def _convert_mhc(args: argparse.Namespace) -> int:
    """``convert-mhc``: the inventory on stdout (or ``-o``), each warning on stderr; 1 on a bad file."""
    from pytest_mh_ansible._private.mhc import convert_mhc, dump_inventory

    source = str(args.mhc)
    try:
        data = yaml.safe_load(args.mhc.read_text())
        encrypt = None
        if args.vault_password_file:
            from pytest_mh_ansible._private.ansible.vault import vault_encrypter

            encrypt = vault_encrypter(args.vault_password_file)
        conversion = convert_mhc(
            data,
            source=source,
            encrypt=encrypt,
            host_key_checking=not args.no_host_key_checking,
            ssh_plugin=args.ssh_plugin,
        )
    except (OSError, yaml.YAMLError, ValueError, MultihostError) as err:
        print(f"pytest-mh-ansible: convert-mhc: {source}: {err}" if source not in str(err) else
              f"pytest-mh-ansible: convert-mhc: {err}", file=sys.stderr)  # fmt: skip
        return 1
    for line in conversion.warnings:
        print(f"pytest-mh-ansible: convert-mhc: warning: {line}", file=sys.stderr)
    text = dump_inventory(conversion, args.mhc.name)
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
