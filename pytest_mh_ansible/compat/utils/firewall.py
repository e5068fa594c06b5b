"""``pytest_mh.utils.firewall``: ``Firewalld`` and pytest-mh's other firewall names, on this project's
:class:`~pytest_mh_ansible.Firewall` (nftables or iptables); every rule is removed after the test."""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NoReturn, TypeAlias

from ... import MultihostError, MultihostHost, MultihostRole
from ...utils.firewall import TABLE, resolve_addresses
from ...utils.firewall import Firewall as _BackingFirewall
from ..conn import HostConnection as _CompatConnection
from ..utility import MultihostUtility

__all__ = [
    "Firewall",
    "FirewallInboundRules",
    "FirewallOutboundRules",
    "Firewalld",
    "FirewalldInboundRules",
    "FirewalldOutboundRules",
    "HostSpec",
    "PortSpec",
    "ProtocolSpec",
    "WindowsFirewall",
    "WindowsFirewallInboundRules",
    "WindowsFirewallOutboundRules",
]

HostSpec: TypeAlias = str | MultihostHost | MultihostRole[Any]
"""A host to filter: a name or address, a host, or a role (its host's ``hostname``)."""

ProtocolSpec: TypeAlias = Literal["tcp", "udp"]
"""A transport protocol."""

PortSpec: TypeAlias = int | tuple[int, ProtocolSpec]
"""A port: ``389`` (TCP) or ``(389, "udp")``."""

_Action: TypeAlias = Literal["accept", "reject", "drop"]
_Chain: TypeAlias = Literal["input", "output"]

FIRST_PRIORITY = 30000
"""The priority given to the first rule whose priority is not chosen; each later one gets one less."""


class Firewall(MultihostUtility[Any]):
    """pytest-mh's firewall base: ``inbound`` and ``outbound`` rule sets and the argument parsers.

    Subclasses give :attr:`inbound` and :attr:`outbound`; see :class:`Firewalld`.
    """

    @property
    def inbound(self) -> FirewallInboundRules:
        """Rules for traffic that arrives at the host."""
        raise NotImplementedError(f"{type(self).__name__} has no inbound rules")

    @property
    def outbound(self) -> FirewallOutboundRules:
        """Rules for traffic that the host sends."""
        raise NotImplementedError(f"{type(self).__name__} has no outbound rules")

    def parse_port_spec(self, spec: PortSpec) -> tuple[int, ProtocolSpec]:
        """``spec`` as ``(port, protocol)``: a bare port is TCP.

        :raises TypeError: ``spec`` is neither an int nor an ``(int, str)`` tuple.
        :raises ValueError: The protocol is not ``"tcp"``/``"udp"``, or the port is not 1-65535.
        """
        if isinstance(spec, int) and not isinstance(spec, bool):
            port, protocol = spec, "tcp"
        elif (
            isinstance(spec, tuple)
            and len(spec) == 2
            and isinstance(spec[0], int)
            and not isinstance(spec[0], bool)
            and isinstance(spec[1], str)
        ):
            port, protocol = spec
        else:
            raise TypeError(f"Unexpected port specification {spec!r}: expected 389 or (389, 'tcp')")
        if protocol not in ("tcp", "udp"):
            raise ValueError(f"Unexpected protocol {protocol!r}: expected 'tcp' or 'udp'")
        if not 0 < port < 65536:
            raise ValueError(f"Unexpected port {port}: expected 1-65535")
        return port, "udp" if protocol == "udp" else "tcp"

    def parse_host_spec(self, host: HostSpec) -> str:
        """The name (or address) of ``host``: a string as is, a host's or a role's host's ``hostname``.

        :raises ValueError: ``host`` is none of these.
        """
        if isinstance(host, str):
            return host
        if isinstance(host, MultihostRole):
            return str(host.host.hostname)
        if isinstance(host, MultihostHost):
            return str(host.hostname)
        raise ValueError(
            f"Unexpected type of host: {type(host).__name__}, expected str, MultihostHost or MultihostRole"
        )


class FirewallInboundRules:
    """pytest-mh's base of inbound rules (traffic that arrives at the host); see :class:`FirewalldInboundRules`."""

    def accept_port(self, port: PortSpec | list[PortSpec]) -> None:
        """Let incoming traffic to ``port`` through."""
        raise NotImplementedError(f"{type(self).__name__}.accept_port")

    def drop_port(self, port: PortSpec | list[PortSpec]) -> None:
        """Silently discard incoming traffic to ``port``."""
        raise NotImplementedError(f"{type(self).__name__}.drop_port")


class FirewallOutboundRules:
    """pytest-mh's base of outbound rules (traffic the host sends); see :class:`FirewalldOutboundRules`."""

    def accept_port(self, port: PortSpec | list[PortSpec]) -> None:
        """Let outgoing traffic to remote ``port`` through."""
        raise NotImplementedError(f"{type(self).__name__}.accept_port")

    def drop_port(self, port: PortSpec | list[PortSpec]) -> None:
        """Silently discard outgoing traffic to remote ``port``."""
        raise NotImplementedError(f"{type(self).__name__}.drop_port")

    def accept_host(self, host: HostSpec | list[HostSpec]) -> None:
        """Let outgoing traffic to every address of ``host`` through."""
        raise NotImplementedError(f"{type(self).__name__}.accept_host")

    def drop_host(self, host: HostSpec | list[HostSpec]) -> None:
        """Silently discard outgoing traffic to every address of ``host``."""
        raise NotImplementedError(f"{type(self).__name__}.drop_host")


# -- rules -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Match:
    """What one backend rule matches: an address (with its family), a destination port, or both."""

    family: Literal["ip", "ip6"] | None = None
    side: Literal["saddr", "daddr"] | None = None
    address: str | None = None
    proto: ProtocolSpec | None = None
    port: int | None = None

    def nft(self) -> str:
        if self.address is not None:
            where = f"{self.family} {self.side} {self.address}"
        elif self.family is not None:
            where = f"meta nfproto {'ipv6' if self.family == 'ip6' else 'ipv4'}"
        else:
            where = ""
        port = f"{self.proto} dport {self.port}" if self.proto is not None else ""
        return f"{where} {port}".strip()

    def iptables(self) -> str:
        # the family is not a match here: it chooses the tool (tools())
        where = f"{'-s' if self.side == 'saddr' else '-d'} {self.address}" if self.address is not None else ""
        port = f"-p {self.proto} --dport {self.port}" if self.proto is not None else ""
        return f"{where} {port}".strip()

    def tools(self) -> list[str]:
        if self.family is None:
            return ["iptables", "ip6tables"]
        return ["ip6tables" if self.family == "ip6" else "iptables"]


@dataclass(eq=False)
class _Placed:
    """One backend rule in our chain, in priority order; ``applied`` are the tools it is in (iptables)."""

    chain: _Chain
    priority: int
    match: _Match
    action: _Action
    handle: str = ""
    applied: list[str] = field(default_factory=list)


class _ProjectView:
    """The host as this project's utilities see it: its own connection, not pytest-mh's ``conn``."""

    def __init__(self, host: Any) -> None:
        self._host = host

    def __getattr__(self, name: str) -> Any:
        return getattr(self._host, name)

    @property
    def conn(self) -> Any:
        conn = self._host.conn
        return conn.ansible if isinstance(conn, _CompatConnection) else conn


_ACTIONS: dict[str, _Action] = {"accept": "accept", "reject": "reject", "drop": "drop"}
_NFT_VERDICT = {"accept": "return", "reject": "reject", "drop": "drop"}
_IPT_TARGET = {"accept": "RETURN", "reject": "REJECT", "drop": "DROP"}


class Firewalld(Firewall):
    """pytest-mh's ``Firewalld`` on this project's firewall: nftables or iptables, no firewalld needed.

    ``inbound`` rules filter what arrives at the host, ``outbound`` rules what it sends; ports are
    ``389``, ``(389, "udp")``, a list of them, or (inbound and outbound) a service name; hosts are
    names, addresses, hosts or roles. As in pytest-mh, a newer rule wins over an older one (each
    gets a lower priority), so ``drop_port(80)`` after ``accept_port(80)`` drops. Every rule is
    recorded in the rollback journal and removed when the test ends, and also at ``teardown``.

    The rules live in this project's own table (``table inet mh_firewall``, or chains
    ``MH_INPUT``/``MH_OUTPUT``), which :class:`~pytest_mh_ansible.Firewall` creates and removes.
    Differences from pytest-mh:

    * firewalld is neither needed nor touched: no zones, no ``--reload`` at setup or teardown (a
      reload there also dropped runtime changes the test made with ``firewall-cmd`` itself).
    * ``accept`` means "none of our older rules blocks it": it ends our chain (``return``) and the
      host's own firewall still decides. It cannot open a port that the host's firewall closes.
    * A rule matches every packet, not only new connections: firewalld lets packets of established
      connections through first. So here a new rule also cuts connections already open, and an
      outbound host rule also stops the replies to connections that host opens to this one.
    * ``reject`` answers with ICMP port-unreachable, as firewalld does; ``drop`` is silent.
    * In pytest-mh, inbound rules go to a policy with ingress zone ``HOST`` (traffic the host sends);
      here they filter incoming traffic, as documented.
    * Host names are resolved on the host with ``getent ahosts`` (``/etc/hosts`` and DNS), not
      ``dig``; service names with ``getent services`` (``/etc/services``, TCP and UDP), not
      firewalld's service definitions.
    * :meth:`add_rich_rule` understands the rules pytest-mh itself builds: ``family``,
      ``source``/``destination address``, ``port``, ``service``, then ``accept``/``reject``/``drop``;
      anything else is a :class:`~pytest_mh_ansible.MultihostError`. Rules of the default policy
      filter outgoing traffic, as pytest-mh's ``HOST`` to ``ANY`` policy does.
    * :meth:`add_policy` takes only policies with ingress or egress zone ``HOST`` (outgoing or incoming
      traffic) and no target; a policy's own priority is returned but rules are ordered by theirs.
    * On iptables hosts, do not add rules with this utility and :class:`~pytest_mh_ansible.Firewall`
      on the same host in one test: rules are placed by position in the shared chains.

    A role creates it in its ``__init__``, as in pytest-mh: ``self.firewall = Firewalld(self.host)``.

    Example::

        def test_offline(client, ldap):
            client.firewall.outbound.reject_host(ldap)   # refused at once; drop_host: timeouts
            client.firewall.inbound.drop_port([22, (53, "udp")])
            # after the test: every rule is gone
    """

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self._backing = _BackingFirewall(_ProjectView(host))  # type: ignore[arg-type]  # a host to it
        self.__inbound = FirewalldInboundRules(self)
        self.__outbound = FirewalldOutboundRules(self)
        self._priority: int = FIRST_PRIORITY
        self._policies: list[str] = []
        self._policy_chains: dict[str, _Chain] = {}
        self._order: dict[_Chain, list[_Placed]] = {"input": [], "output": []}
        # (policy, priority, rule) -> its backend rules; policy None is the default policy.
        self._rich: dict[tuple[str | None, int, str], list[_Placed]] = {}

    def teardown(self) -> None:
        """Remove every rule and policy this utility added (the journal would at the test's end)."""
        for placed in [*self._order["input"], *self._order["output"]]:
            self._unplace(placed)
        self._rich.clear()
        self._policies.clear()
        self._policy_chains.clear()
        super().teardown()

    @property
    def inbound(self) -> FirewalldInboundRules:
        """Rules for traffic that arrives at the host."""
        return self.__inbound

    @property
    def outbound(self) -> FirewalldOutboundRules:
        """Rules for traffic that the host sends."""
        return self.__outbound

    @property
    def backend(self) -> str:
        """``"nft"`` or ``"iptables"``: how the rules are made on this host (not in pytest-mh)."""
        return self._backing.backend

    def rules(self) -> str:
        """Our rules as the backend lists them (not in pytest-mh): ``nft list table`` or ``iptables -S``."""
        return self._backing.rules()

    @property
    def _next_priority(self) -> int:
        if self._priority < 0:
            raise ValueError("Too many rules defined")
        self._priority -= 1
        return self._priority + 1

    def add_policy(
        self,
        name: str,
        *,
        ingress: str | None = None,
        egress: str | None = None,
        priority: int | None = None,
        target: Literal["CONTINUE", "ACCEPT", "DROP", "REJECT"] | None = None,
    ) -> int:
        """Add policy ``name`` for rich rules: ingress ``HOST`` is outgoing traffic, egress ``HOST`` incoming.

        :return: The policy's priority (the next free one unless given).
        :raises MultihostError: Other zones, or a target other than ``CONTINUE`` (no zones here).
        """
        if name in self._policy_chains:
            raise MultihostError(f"host {self.host.name!r}: firewall policy {name!r} exists already")
        if target not in (None, "CONTINUE"):
            raise MultihostError(
                f"host {self.host.name!r}: firewall policy {name!r}: target {target!r} is not supported by the "
                "compatibility layer (no firewalld); add rules with accept/reject/drop instead"
            )
        if ingress == "HOST" and egress in (None, "ANY"):
            chain: _Chain = "output"
        elif egress == "HOST" and ingress in (None, "ANY"):
            chain = "input"
        else:
            raise MultihostError(
                f"host {self.host.name!r}: firewall policy {name!r} from {ingress!r} to {egress!r}: only policies "
                "with ingress or egress zone 'HOST' are supported by the compatibility layer (no firewalld zones)"
            )
        self.logger.info(f'Firewalld: adding policy "{name}"')
        self._policies.append(name)
        self._policy_chains[name] = chain
        return self._next_priority if priority is None else priority

    def remove_policy(self, name: str) -> None:
        """Remove policy ``name`` and its rules now.

        :raises MultihostError: No such policy.
        """
        if name not in self._policy_chains:
            raise MultihostError(f"host {self.host.name!r}: no firewall policy {name!r}")
        self.logger.info(f'Firewalld: removing policy "{name}"')
        for key in [key for key in self._rich if key[0] == name]:
            for placed in self._rich.pop(key):
                self._unplace(placed)
        self._policies.remove(name)
        del self._policy_chains[name]

    def add_rich_rule(self, rule: str, policy: str | None = None, priority: int | None = None) -> int:
        """Add a firewalld rich rule (what follows ``rule priority=N``) to ``policy`` (default: outgoing).

        Example: ``add_rich_rule('family=ipv4 destination address=10.0.0.2 reject')``.

        :return: The rule's priority, for :meth:`remove_rich_rule`.
        :raises MultihostError: A rule this layer does not understand, or an unknown policy.
        """
        chain = self._policy_chain(policy)
        matches, action = self._parse_rich_rule(rule)
        if priority is None:
            priority = self._next_priority
        key = (policy, priority, " ".join(shlex.split(rule)))
        self.logger.info(f'Firewalld: adding rich rule "rule priority={priority} {rule}"')
        if key in self._rich:
            return priority  # firewalld too keeps a rule once
        self._rich[key] = [self._place(chain, priority, match, action) for match in matches]
        return priority

    def remove_rich_rule(self, priority: int, rule: str, policy: str | None = None) -> None:
        """Remove the rule :meth:`add_rich_rule` added (same ``priority``, ``rule``, ``policy``); no-op if none."""
        self._policy_chain(policy)
        self.logger.info(f'Firewalld: removing rich rule "rule priority={priority} {rule}"')
        for placed in self._rich.pop((policy, priority, " ".join(shlex.split(rule))), []):
            self._unplace(placed)

    # -- internals ---------------------------------------------------------------------------------------

    def _policy_chain(self, policy: str | None) -> _Chain:
        if policy is None:
            return "output"
        if policy not in self._policy_chains:
            raise MultihostError(f"host {self.host.name!r}: no firewall policy {policy!r} (add_policy() first)")
        return self._policy_chains[policy]

    def _unsupported(self, rule: str, what: str) -> NoReturn:
        raise MultihostError(
            f"host {self.host.name!r}: rich rule {rule!r}: {what} is not supported by the compatibility layer "
            "(it knows family, source/destination address, port, service, accept/reject/drop)"
        )

    def _parse_rich_rule(self, rule: str) -> tuple[list[_Match], _Action]:
        """The backend matches and the action of a rich rule."""
        family: Literal["ip", "ip6"] | None = None
        side: Literal["saddr", "daddr"] | None = None
        address: str | None = None
        ports: list[tuple[int, ProtocolSpec]] = []
        action: _Action | None = None
        words = shlex.split(rule)
        if words[:1] == ["rule"]:
            words = words[1:]
        while words:
            word = words.pop(0)
            key, _, value = word.partition("=")
            if action is not None:
                self._unsupported(rule, f"{word!r} after the action")
            if key == "family" and value in ("ipv4", "ipv6"):
                family = "ip6" if value == "ipv6" else "ip"
            elif key in ("source", "destination") and not value and words[:1] and words[0].startswith("address="):
                side = "saddr" if key == "source" else "daddr"
                address = words.pop(0).partition("=")[2]
            elif key == "port" and not value:
                fields = {name: text for name, _, text in (w.partition("=") for w in words[:2])}
                if set(fields) != {"port", "protocol"} or not fields["port"].isdigit():
                    self._unsupported(rule, "a port without port=N protocol=tcp|udp")
                del words[:2]
                spec: Any = (int(fields["port"]), fields["protocol"])
                ports.append(self.parse_port_spec(spec))
            elif key == "service" and not value and words[:1] and words[0].startswith("name="):
                ports.extend(self._service_ports(words.pop(0).partition("=")[2]))
            elif word in _ACTIONS:
                action = _ACTIONS[word]
            else:
                self._unsupported(rule, repr(word))
        if action is None:
            self._unsupported(rule, "a rule without accept, reject or drop")
        if address is not None:
            try:
                version = ipaddress.ip_network(address, strict=False).version
            except ValueError:
                self._unsupported(rule, f"address {address!r} (not an address or network)")
            if family is not None and family != ("ip6" if version == 6 else "ip"):
                self._unsupported(rule, f"address {address!r} of another family")
            family = "ip6" if version == 6 else "ip"
        if not ports:
            if address is None:
                self._unsupported(rule, "a rule without address, port or service (it would cut the connection)")
            return [_Match(family, side, address)], action
        return [_Match(family, side, address, proto, port) for port, proto in ports], action

    def _service_ports(self, name: str) -> list[tuple[int, ProtocolSpec]]:
        """The ports of service ``name`` in the host's ``/etc/services``."""
        found: list[tuple[int, ProtocolSpec]] = []
        for proto in ("tcp", "udp"):
            result = self._backing._run(f"getent services {shlex.quote(f'{name}/{proto}')}", raise_on_error=False)
            fields = result.stdout.split()
            if result.succeeded and len(fields) >= 2 and fields[1].partition("/")[0].isdigit():
                found.append(self.parse_port_spec((int(fields[1].partition("/")[0]), proto)))
        if not found:
            raise MultihostError(f"host {self.host.name!r}: unknown service {name!r} (not in /etc/services)")
        return found

    def _ports(self, port: Any) -> list[tuple[int, ProtocolSpec]]:
        """``port`` (a PortSpec, a service name or numeric string, or a list of them) as (port, protocol)."""
        items = port if isinstance(port, list) else [port]
        found: list[tuple[int, ProtocolSpec]] = []
        for item in items:
            if isinstance(item, str):
                found.extend([(int(item), "tcp")] if item.isdigit() else self._service_ports(item))
            else:
                found.append(self.parse_port_spec(item))
        return found

    def _add_ports(self, chain: _Chain, port: Any, action: _Action) -> None:
        for number, proto in self._ports(port):
            rule = f"port port={number} protocol={proto} {action}"
            self._add_rule(chain, rule, [_Match(proto=proto, port=number)], action)

    def _add_hosts(self, host: HostSpec | list[HostSpec], action: _Action) -> None:
        for item in host if isinstance(host, list) else [host]:
            name = self.parse_host_spec(item)
            addresses = resolve_addresses(self._backing.host, name)
            self.logger.info(
                f"Firewalld: adding {action} firewall rule for host {name}", extra={"data": {"Addresses": addresses}}
            )
            for address in addresses:
                family: Literal["ip", "ip6"] = "ip6" if ":" in address else "ip"
                rule = f"family={'ipv6' if family == 'ip6' else 'ipv4'} destination address={address} {action}"
                self._add_rule("output", rule, [_Match(family, "daddr", address)], action)

    def _add_rule(self, chain: _Chain, rule: str, matches: list[_Match], action: _Action) -> None:
        priority = self._next_priority
        self.logger.info(f'Firewalld: adding {chain} rule "rule priority={priority} {rule}"')
        for match in matches:
            self._place(chain, priority, match, action)

    def _place(self, chain: _Chain, priority: int, match: _Match, action: _Action) -> _Placed:
        """Add one backend rule before every rule of a higher (or the same) priority; journal its removal."""
        fw = self._backing
        fw._ensure_base()
        order = self._order[chain]
        index = next((i for i, other in enumerate(order) if other.priority >= priority), len(order))
        placed = _Placed(chain, priority, match, action)
        if fw.backend == "nft":
            where = f"insert rule inet {TABLE} {chain} position {order[index].handle}" if index < len(order) else None
            where = where or f"add rule inet {TABLE} {chain}"
            out = fw._run(f"nft --echo --handle {where} {match.nft()} {_NFT_VERDICT[action]}").stdout
            handle = out.rsplit("# handle", 1)[-1].split()[0] if "# handle" in out else ""
            if not handle.isdigit():
                raise MultihostError(f"host {self.host.name!r}: nft gave no rule handle: {out!r}")
            placed.handle = handle
        else:
            tools = match.tools()
            for tool in tools:
                position = 1 + sum(tool in other.applied for other in order[:index])
                command = f"{tool} -I MH_{chain.upper()} {position} {match.iptables()} -j {_IPT_TARGET[action]}"
                # ip6tables may be unusable where iptables works: the IPv6 copy of a port rule is best effort.
                best_effort = tool == "ip6tables" and len(tools) > 1
                if fw._run(command + (" 2>/dev/null" if best_effort else ""), raise_on_error=not best_effort).succeeded:
                    placed.applied.append(tool)
        order.insert(index, placed)
        self.host.journal.record(
            self.host,
            f"firewall rule {chain} {match.nft()} {action} (priority {priority})",
            lambda: self._unplace(placed),
        )
        return placed

    def _unplace(self, placed: _Placed) -> None:
        """Delete one backend rule now, if it is still there."""
        order = self._order[placed.chain]
        if not any(other is placed for other in order):
            return
        index = next(i for i, other in enumerate(order) if other is placed)
        fw = self._backing
        if fw.backend == "nft":
            fw._run(f"nft delete rule inet {TABLE} {placed.chain} handle {placed.handle}")
        else:
            for tool in placed.applied:
                position = 1 + sum(tool in other.applied for other in order[:index])
                fw._run(f"{tool} -D MH_{placed.chain.upper()} {position}")
        del order[index]


class _FirewalldPortRules:
    """The port rules of :class:`Firewalld`, written once for both directions: :attr:`_chain` says which traffic."""

    _chain: ClassVar[_Chain]

    def __init__(self, firewall: Firewalld) -> None:
        self.firewall: Firewalld = firewall

    def accept_port(self, port: PortSpec | list[PortSpec]) -> None:
        """Let traffic to ``port`` through (over our older rules)."""
        self.firewall._add_ports(self._chain, port, "accept")

    def reject_port(self, port: PortSpec | list[PortSpec]) -> None:
        """Refuse traffic to ``port`` at once: a remote peer gets ICMP port-unreachable, a local program an error."""
        self.firewall._add_ports(self._chain, port, "reject")

    def drop_port(self, port: PortSpec | list[PortSpec]) -> None:
        """Silently discard traffic to ``port``: the sender waits for its timeout."""
        self.firewall._add_ports(self._chain, port, "drop")


class FirewalldInboundRules(_FirewalldPortRules, FirewallInboundRules):
    """``firewall.inbound`` of :class:`Firewalld`: rules for traffic that arrives at the host.

    ``port`` is ``389``, ``(389, "udp")``, a service name (``"ldap"``) or a list of them.
    """

    _chain = "input"


class FirewalldOutboundRules(_FirewalldPortRules, FirewallOutboundRules):
    """``firewall.outbound`` of :class:`Firewalld`: rules for traffic that the host sends.

    ``port`` is a remote port as for :class:`FirewalldInboundRules`; ``host`` is a name, an address,
    a host, a role, or a list of them, resolved on the host to all its addresses.
    """

    _chain = "output"

    def accept_host(self, host: HostSpec | list[HostSpec]) -> None:
        """Let outgoing traffic to ``host`` through (over our older rules)."""
        self.firewall._add_hosts(host, "accept")

    def reject_host(self, host: HostSpec | list[HostSpec]) -> None:
        """Refuse outgoing traffic to ``host``: connections fail at once."""
        self.firewall._add_hosts(host, "reject")

    def drop_host(self, host: HostSpec | list[HostSpec]) -> None:
        """Silently discard outgoing traffic to ``host``: connections time out."""
        self.firewall._add_hosts(host, "drop")


# -- Windows ---------------------------------------------------------------------------------------------


def _no_windows(host: Any) -> NoReturn:
    name = getattr(host, "hostname", None) or getattr(host, "name", host)
    raise MultihostError(
        f"host {name!r}: WindowsFirewall is not supported by the pytest-mh compatibility layer: it drives "
        "Windows Firewall with PowerShell (New-NetFirewallRule, netsh advfirewall), which this project "
        "cannot test; use Firewalld (nftables/iptables) on Linux hosts"
    )


class WindowsFirewall(Firewall):
    """pytest-mh's ``WindowsFirewall``: not supported; creating one raises :class:`~pytest_mh_ansible.MultihostError`.

    pytest-mh drives Windows Firewall over PowerShell; this project has no Windows hosts to test
    that on, so it offers no untested code. Filter traffic with :class:`Firewalld` on Linux hosts.
    """

    def __init__(self, host: Any) -> None:
        _no_windows(host)

    def add_rule(
        self, name: str, direction: Literal["inbound", "outbound"], action: Literal["allow", "block"], args: list[Any]
    ) -> str:
        """Not supported (see the class)."""
        _no_windows(self.host)

    def remove_rule(self, name: str) -> None:
        """Not supported (see the class)."""
        _no_windows(self.host)


class WindowsFirewallInboundRules(FirewallInboundRules):
    """pytest-mh's inbound rules of :class:`WindowsFirewall`: not supported (creating one raises)."""

    def __init__(self, firewall: WindowsFirewall) -> None:
        _no_windows(getattr(firewall, "host", firewall))


class WindowsFirewallOutboundRules(FirewallOutboundRules):
    """pytest-mh's outbound rules of :class:`WindowsFirewall`: not supported (creating one raises)."""

    def __init__(self, firewall: WindowsFirewall) -> None:
        _no_windows(getattr(firewall, "host", firewall))
