"""The protocol object: everything that changes from one ACP version to the next, in one value.

A :class:`Protocol` holds a version's number, its method table and models, its typed call
stubs, its session rules (which requests may come before ``initialize``, which client calls a
prompt turn makes and what gates them) and the mapping of acplink's high-level names
(``prompt``, ``new_session``, ``session_update``, ...) to the version's wire methods. The
connections and the high-level APIs ask it for every wire name; none of them spells one.

Versions are registered by number (:func:`register_protocol`) and looked up with
:func:`get_protocol`; ``initialize`` picks the one both sides agree on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..schema._table import MethodInfo, MethodTable
from . import rules
from .turns import V1_TURNS, TurnRules

if TYPE_CHECKING:  # (a v1 agent never needs it: imported by the versions that have one)
    from .codec import ClientCodec

__all__ = ["Protocol", "get_protocol", "known_versions", "negotiate", "register_protocol", "unregister_protocol"]


@dataclass(frozen=True)
class Protocol:
    """One ACP version. ``names`` maps acplink's name of a method (the hook of ``AgentApp``,
    the handler of ``Client``) to its ``(wire method, kind)`` in this version."""

    version: int
    table: MethodTable
    #: the version's model namespace (``acplink.schema.v1``)
    models: ModuleType
    #: typed calls of the methods the agent handles (the client side's mixin)
    agent_stubs: type
    #: typed calls of the methods the client handles (the agent side's mixin)
    client_stubs: type
    names: Mapping[str, tuple[str, str]]
    #: the requests allowed before the ``initialize`` response (besides ``_`` extensions)
    before_initialize: frozenset[str]
    #: client calls a prompt turn typically makes: (name, client capability path or None)
    client_calls: tuple[tuple[str, str | None], ...] = ()
    #: the capabilities of the table that are booleans (the others are objects, ``{}`` advertises)
    capability_flags: frozenset[str] = frozenset()
    #: the names whose result opens a session on the client's connection
    session_openers: frozenset[str] = frozenset()
    #: where the agent's capabilities are in the ``initialize`` result, the client's in its params
    capabilities_field: tuple[str, str] = ("agentCapabilities", "clientCapabilities")
    #: requests that may wait a long time on something outside the connection (the user, a
    #: process, the model): the peer runs them outside its ``max_running_requests`` slots
    long_running: frozenset[str] = frozenset()
    #: the stubs' method names that this version sends under another name (``{stub name: wire}``)
    outbound: Mapping[str, str] = field(default_factory=dict)
    #: how a prompt turn runs in this version (answer, busy policy, state updates): the one
    #: place every side reads the lifecycle from (:mod:`acplink.protocol.turns`)
    turns: TurnRules = V1_TURNS
    #: the update kinds that announce a tool call (its first sight) and the kinds that update one;
    #: an update kind that does not announce needs an announced id (:mod:`acplink.protocol.state`)
    tool_call_kinds: tuple[frozenset[str], frozenset[str]] = (frozenset({"tool_call"}),
                                                              frozenset({"tool_call_update"}))
    #: the name of the conformance requirement set that judges an agent of this version
    #: (``acplink check``: :mod:`acplink.conformance.suites`)
    requirement_set: str = "acp-v1"
    #: how the agent side serves an app written against acplink's vocabulary (the v1 models,
    #: ``acplink.schema``) in this version: None when the version's models are that vocabulary
    #: (nothing to translate), else an :class:`~acplink.protocol.agent_codec.AgentCodec`
    agent_codec: Any = None
    #: what this version offers beyond its methods, by name (``"agent_terminals"``: the agent
    #: shows terminals it runs itself as session updates)
    features: frozenset[str] = frozenset()
    #: where each side's implementation info is: the agent's in the ``initialize`` result, the
    #: client's in its params
    info_field: tuple[str, str] = ("agentInfo", "clientInfo")
    #: how the client side of this version maps onto acplink's (v1) vocabulary: a
    #: :class:`~acplink.protocol.codec.ClientCodec`, or None for a version that speaks it
    client_codec: ClientCodec | None = None
    #: the transports of a session's ``mcpServers`` entries (``type``; a v1 stdio entry has none:
    #: ``"stdio"``) and the agent capability path that advertises each (None: every agent
    #: supports it); ``"acp"``'s is where an agent advertises MCP-over-ACP (``mcp/message``)
    mcp_transports: Mapping[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", MappingProxyType(dict(self.names)))
        object.__setattr__(self, "_by_wire", {v: k for k, v in self.names.items()})
        # the lookups of every message, one dict each (wire() and info() run per update sent)
        object.__setattr__(self, "_wire_of", {k: v[0] for k, v in self.names.items()})
        object.__setattr__(self, "_info_of", {(m.method, m.kind): m for m in self.table.methods})
        object.__setattr__(self, "_opener_wires", self.wires(*self.session_openers))

    @property
    def opener_wires(self) -> frozenset[str]:
        """The wire methods whose result opens a session (``session_openers``), computed once."""
        return self._opener_wires  # type: ignore[attr-defined,no-any-return]

    # -- names ---------------------------------------------------------------------------------

    def wire(self, name: str) -> str:
        """The wire method of ``name`` in this version (UsageError when it has none)."""
        try:
            return self._wire_of[name]  # type: ignore[attr-defined,no-any-return]
        except KeyError:
            raise UsageError(f"ACP v{self.version} has no {name!r} method") from None

    def has(self, name: str) -> bool:
        """Whether this version has the method acplink calls ``name``."""
        return name in self.names

    def kind(self, name: str) -> str:
        """"request" or "notification"."""
        return self.names[name][1] if name in self.names else "request"

    def name_of(self, method: str, kind: str) -> str | None:
        """acplink's name of a wire method (None: a method without a high-level name)."""
        by_wire: dict[tuple[str, str], str] = self._by_wire  # type: ignore[attr-defined]
        return by_wire.get((method, kind))

    def is_(self, method: str, name: str) -> bool:
        """Whether wire ``method`` is the method acplink calls ``name`` in this version."""
        entry = self.names.get(name)
        return entry is not None and entry[0] == method

    def wires(self, *names: str) -> frozenset[str]:
        """The wire methods of those of ``names`` that this version has."""
        return frozenset(self.names[n][0] for n in names if n in self.names)

    def info(self, method: str, kind: str = "request") -> MethodInfo | None:
        """The method table's entry."""
        return self._info_of.get((method, kind))  # type: ignore[attr-defined,no-any-return]

    def handled_by(self, side: str) -> Iterator[MethodInfo]:
        """The methods ``side`` ("agent" or "client") handles."""
        return iter(self.table.agent_methods() if side == "agent" else self.table.client_methods())

    def advertise(self, caps: dict[str, Any], capability: str) -> None:
        """Advertise ``capability`` (``"agent:<path>"`` / ``"client:<path>"``, as in the table) in
        the wire dict ``caps`` of that side's capabilities."""
        rules.advertise_path(caps, capability.split(":", 1)[1], capability in self.capability_flags)

    def may_precede_initialize(self, method: str) -> bool:
        """Whether ``method`` may be requested before the ``initialize`` response."""
        return rules.before_initialize(method, self.before_initialize)

    def derive(self, version: int, renames: Mapping[str, str]) -> Protocol:
        """This version with some wire methods renamed (``{old: new}``) and another number: how a
        version that only renames methods is described (the stubs keep their names and send
        the new wire names)."""
        names = {k: (renames.get(m, m), kind) for k, (m, kind) in self.names.items()}
        return replace(self, version=version, table=self.table.renamed(dict(renames)), names=names,
                       before_initialize=frozenset(renames.get(m, m) for m in self.before_initialize),
                       long_running=frozenset(renames.get(m, m) for m in self.long_running),
                       outbound={**self.outbound, **renames})

    def send_name(self, method: str) -> str:
        """The wire name under which a stub's ``method`` goes out in this version."""
        return self.outbound.get(method, method) if self.outbound else method


_REGISTRY: dict[int, Protocol] = {}

#: versions acplink knows but builds on first use: version → (module, function that builds and
#: registers it). Their models are big and opt-in: nothing imports them before they are asked for.
_LAZY: dict[int, tuple[str, str]] = {2: ("acplink.protocol.v2", "protocol")}


def register_protocol(protocol: Protocol) -> None:
    """Make ``protocol`` available to :func:`get_protocol` (and so to ``initialize``)."""
    _REGISTRY[protocol.version] = protocol


def unregister_protocol(version: int) -> None:
    _REGISTRY.pop(version, None)


def get_protocol(version: int) -> Protocol:
    """The protocol object of ``version`` (UsageError when acplink does not know it)."""
    proto = _REGISTRY.get(version)
    if proto is None and version in _LAZY:
        import importlib

        module, build = _LAZY[version]
        proto = getattr(importlib.import_module(module), build)()
    if proto is None:
        raise UsageError(f"unknown ACP protocol version {version!r}; known: {known_versions()}")
    return proto


def known_versions() -> tuple[int, ...]:
    """The versions :func:`get_protocol` serves (those built on first use included)."""
    return tuple(sorted({*_REGISTRY, *_LAZY}))


def negotiate(requested: Any, supported: tuple[int, ...]) -> int:
    """The version an agent answers ``initialize`` with: the requested one when it supports
    it, otherwise the latest it supports (the spec's rule)."""
    if isinstance(requested, int) and not isinstance(requested, bool) and requested in supported:
        return requested
    return max(supported)


