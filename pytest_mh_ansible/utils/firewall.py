"""Firewall (nftables or iptables): block and unblock traffic; all rules removed after the test."""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import MultihostError
from ..utility import MultihostUtility

if TYPE_CHECKING:
    from ..conn import ProcessResult
    from ..host import MultihostHost
    from ..role import MultihostRole

__all__ = ["Firewall"]

TABLE = "mh_firewall"  # nft: table inet mh_firewall; iptables: chains MH_INPUT / MH_OUTPUT


def resolve_addresses(host: MultihostHost, target: MultihostHost | MultihostRole[Any] | str) -> list[str]:
    """The addresses of ``target`` as ``host`` sees them: a literal address, else ``getent ahosts`` on ``host``.

    A host or role object is looked up by its ``hostname`` (the name other hosts know it by), so the
    answer is the address that traffic from ``host`` really goes to.
    """
    other = getattr(target, "host", target)
    name = str(getattr(other, "hostname", other))
    try:
        return [str(ipaddress.ip_address(name))]
    except ValueError:
        pass
    result = host.conn.run(f"getent ahosts {shlex.quote(name)}", raise_on_error=False)
    found: list[str] = []
    for line in result.stdout.splitlines():
        fields = line.split()
        if fields and fields[0] not in found:
            found.append(fields[0])
    if not found:
        raise MultihostError(f"host {host.name!r}: cannot resolve {name!r} (getent ahosts exited with {result.rc})")
    return found


@dataclass(frozen=True)
class _Rule:
    chain: Literal["input", "output"]
    match: str  # backend-neutral description, e.g. "saddr 10.0.0.2" or "tcp dport 80"
    action: Literal["reject", "drop"]
    family: Literal["ip", "ip6", "any"]
    address: str | None = None


class _Direction:
    """``firewall.inbound`` / ``firewall.outbound``: reject or drop by host or port."""

    def __init__(self, firewall: Firewall, chain: Literal["input", "output"]) -> None:
        self._fw = firewall
        self._chain: Literal["input", "output"] = chain

    def reject_host(self, target: MultihostHost | MultihostRole[Any] | str) -> None:
        """Reject (answer with an ICMP/TCP error) traffic from (inbound) or to (outbound) ``target``."""
        self._fw._add_host(self._chain, target, "reject")

    def drop_host(self, target: MultihostHost | MultihostRole[Any] | str) -> None:
        """Silently drop traffic from (inbound) or to (outbound) ``target`` (peers see timeouts)."""
        self._fw._add_host(self._chain, target, "drop")

    def reject_port(self, port: int, proto: Literal["tcp", "udp"] = "tcp") -> None:
        """Reject traffic to destination ``port``/``proto`` (inbound: our services; outbound: remote ones)."""
        self._fw._add_port(self._chain, port, proto, "reject")

    def drop_port(self, port: int, proto: Literal["tcp", "udp"] = "tcp") -> None:
        """Silently drop traffic to destination ``port``/``proto``."""
        self._fw._add_port(self._chain, port, proto, "drop")


class Firewall(MultihostUtility["MultihostHost"]):
    """Block traffic to and from hosts or ports; every rule is removed at the end of the scope (the test).

    Rules live in a table of our own (nftables: ``table inet mh_firewall``; iptables: chains
    ``MH_INPUT``/``MH_OUTPUT`` jumped to from ``INPUT``/``OUTPUT``), so the host's own rules are never
    touched. The backend is detected once per host: ``nft`` if installed, else ``iptables``.

    Changes are made with ``nft``/``iptables`` commands, not ``ansible.builtin.iptables``: that module
    knows no nftables and no private chain life cycle, and one code path for both backends keeps the
    undo exact. Each change records its inverse in the rollback journal *before* it returns: the rule's
    deletion (by nft handle, or ``iptables -D`` with the same spec), and the table/chains' removal if
    this scope created them.

    Example::

        @pytest.mark.topology(KnownTopology.ClientServer)
        def test_failover(client, server1, server2):
            client.firewall.outbound.reject_host(server1)   # a role, a host or an address
            assert client.host.conn.run(f"curl -sf http://{server2.host.hostname}/").succeeded
            print(client.firewall.rules())
            # after the test: the table is gone, server1 reachable again
    """

    def __init__(self, host: MultihostHost) -> None:
        super().__init__(host)
        self.inbound = _Direction(self, "input")
        self.outbound = _Direction(self, "output")
        self._backend: str | None = None
        self._rules: dict[_Rule, str] = {}  # rule -> nft handle ("" for iptables)

    @property
    def backend(self) -> str:
        """``"nft"`` or ``"iptables"``, detected on first use."""
        if self._backend is None:
            result = self._run(
                "command -v nft >/dev/null && echo nft || { command -v iptables >/dev/null && echo iptables; }",
                raise_on_error=False,
            )
            found = result.stdout.strip()
            if found not in ("nft", "iptables"):
                raise MultihostError(
                    f"host {self.host.name!r}: the firewall needs nft or iptables, neither is installed"
                )
            self._backend = found
        return self._backend

    # -- public API ------------------------------------------------------------------------------
    def unblock(self, target: MultihostHost | MultihostRole[Any] | str | int) -> None:
        """Remove our rules for ``target`` (a host, role, address or port number) now."""
        if isinstance(target, int):
            keys = [r for r in self._rules if f"dport {target}" in r.match]
        else:
            addresses = set(resolve_addresses(self.host, target))
            keys = [r for r in self._rules if r.address in addresses]
        for rule in keys:
            self._delete(rule)

    def flush(self) -> None:
        """Remove every rule this utility added (the table or chains stay until the scope ends)."""
        for rule in list(self._rules):
            self._delete(rule)

    def rules(self) -> str:
        """Our rules as the backend lists them (``nft list table`` or ``iptables -S``)."""
        if self.backend == "nft":
            cmd = f"nft list table inet {TABLE} 2>/dev/null"
        else:
            cmd = "for c in MH_INPUT MH_OUTPUT; do iptables -S $c; ip6tables -S $c; done 2>/dev/null"
        return self._run(cmd, raise_on_error=False).stdout

    # -- internals -------------------------------------------------------------------------------
    def _run(self, command: str, *, input: str | None = None, raise_on_error: bool = True) -> ProcessResult:
        # nft and iptables live in /usr/sbin, which is not on every remote user's PATH.
        return self.host.conn.run(f"PATH=$PATH:/usr/sbin:/sbin; {command}", input=input, raise_on_error=raise_on_error)

    def _add_host(self, chain: Literal["input", "output"], target: Any, action: Literal["reject", "drop"]) -> None:
        side = "saddr" if chain == "input" else "daddr"
        for address in resolve_addresses(self.host, target):
            family: Literal["ip", "ip6"] = "ip6" if ":" in address else "ip"
            self._add(_Rule(chain, f"{side} {address}", action, family, address))

    def _add_port(
        self, chain: Literal["input", "output"], port: int, proto: str, action: Literal["reject", "drop"]
    ) -> None:
        if proto not in ("tcp", "udp") or not 0 < int(port) < 65536:
            raise MultihostError(f"host {self.host.name!r}: bad port {port!r}/{proto!r}")
        self._add(_Rule(chain, f"{proto} dport {int(port)}", action, "any"))

    def _add(self, rule: _Rule) -> None:
        if rule in self._rules:
            return
        self._ensure_base()
        journal = self.host.journal
        if self.backend == "nft":
            out = self._run(f"nft --echo --handle add rule inet {TABLE} {nft_rule(rule)}").stdout
            handle = out.rsplit("# handle", 1)[-1].split()[0] if "# handle" in out else ""
            if not handle.isdigit():
                raise MultihostError(f"host {self.host.name!r}: nft gave no rule handle: {out!r}")
            self._rules[rule] = handle
        else:
            for cmd in iptables_commands(rule, "-A"):
                self._run(cmd)
            self._rules[rule] = ""
        journal.record(self.host, f"firewall rule {rule.chain} {rule.match} {rule.action}", lambda: self._delete(rule))

    def _delete(self, rule: _Rule) -> None:
        handle = self._rules.pop(rule, None)
        if handle is None:
            return  # already removed (unblock/flush) or table gone
        if self.backend == "nft":
            self._run(f"nft delete rule inet {TABLE} {rule.chain} handle {handle}")
        else:
            for cmd in iptables_commands(rule, "-D"):
                self._run(cmd)

    def _ensure_base(self) -> None:
        key = f"firewall-base:{self.host.name}"
        if self.host.journal.recall(key):
            return  # created or seen in this scope already
        self.host.journal.remember(key, True)
        if self.backend == "nft":
            if self._run(f"nft list table inet {TABLE}", raise_on_error=False).succeeded:
                return
            self._run("nft -f -", input=nft_base_script())
            undo = f"nft delete table inet {TABLE}"
        else:
            if self._run("iptables -S MH_INPUT", raise_on_error=False).succeeded:
                return
            self._run(iptables_base_script())
            undo = iptables_base_undo()
        self.host.journal.record(self.host, f"firewall base {self.backend} {TABLE}", lambda: self._drop_base(undo))

    def _drop_base(self, undo: str) -> None:
        self._rules.clear()
        self._run(undo)


def nft_rule(rule: _Rule) -> str:
    """The ``nft add rule`` arguments (after the table) for ``rule``."""
    verdict: str = rule.action
    if rule.family == "any":
        proto = rule.match.split()[0]
        if rule.action == "reject" and proto == "tcp":
            verdict = "reject with tcp reset"
        return f"{rule.chain} {rule.match} {verdict}"
    return f"{rule.chain} {rule.family} {rule.match} {verdict}"


def nft_base_script() -> str:
    """The ``nft -f -`` script that creates our table and its two chains (priority before filter)."""
    return "\n".join(
        [
            f"table inet {TABLE} {{",
            "  chain input { type filter hook input priority -10; policy accept; }",
            "  chain output { type filter hook output priority -10; policy accept; }",
            "}",
            "",
        ]
    )


def iptables_commands(rule: _Rule, op: str) -> list[str]:
    """``iptables``/``ip6tables`` commands that add (``-A``) or delete (``-D``) ``rule``."""
    chain = "MH_INPUT" if rule.chain == "input" else "MH_OUTPUT"
    words = rule.match.split()
    if words[0] in ("saddr", "daddr"):
        spec = f"{'-s' if words[0] == 'saddr' else '-d'} {words[1]}"
        tools = ["ip6tables" if rule.family == "ip6" else "iptables"]
    else:
        spec = f"-p {words[0]} --dport {words[2]}"
        tools = ["iptables", "ip6tables"]
    target = "DROP" if rule.action == "drop" else "REJECT" + (" --reject-with tcp-reset" if words[0] == "tcp" else "")
    # ip6tables may be unusable where iptables works: the IPv6 copy of a port rule is best effort.
    return [
        f"{tool} {op} {chain} {spec} -j {target}"
        + (" 2>/dev/null || true" if tool == "ip6tables" and len(tools) > 1 else "")
        for tool in tools
    ]


def iptables_base_script() -> str:
    """Create chains MH_INPUT/MH_OUTPUT, jumped to first from INPUT/OUTPUT (ip6tables where it works)."""
    v4 = " && ".join(f"iptables -N MH_{c} && iptables -I {c} 1 -j MH_{c}" for c in ("INPUT", "OUTPUT"))
    v6 = "; ".join(f"ip6tables -N MH_{c} && ip6tables -I {c} 1 -j MH_{c}" for c in ("INPUT", "OUTPUT"))
    return f"{v4} && {{ {v6}; }} 2>/dev/null; iptables -S MH_OUTPUT >/dev/null"


def iptables_base_undo() -> str:
    """Remove our chains again (ip6tables best effort: it may be unavailable)."""
    v4 = " && ".join(
        f"iptables -D {c} -j MH_{c} && iptables -F MH_{c} && iptables -X MH_{c}" for c in ("INPUT", "OUTPUT")
    )
    v6 = "; ".join(f"ip6tables -D {c} -j MH_{c}; ip6tables -F MH_{c}; ip6tables -X MH_{c}" for c in ("INPUT", "OUTPUT"))
    return f"{{ {v6}; }} 2>/dev/null; {v4}"
