"""The conformance requirements of a protocol version, as data (no I/O, no checks).

Each version names its requirement set (``Protocol.requirement_set``); the set is a
:class:`RequirementSet`: the requirement rows (id, level, spec section, title, the official
kit's ids each covers), the check table (which probe of ``acplink check`` runs under which
check name and which requirement ids it reports, by *role*), and how the findings of recorded
traffic map onto the set's requirements. :mod:`acplink.conformance` runs the probes the table
names and judges traffic with the mapping; it never asks which version it checks.

A probe is written once against the protocol object (wire names, turn rules) and reports its
outcomes under role names (``"receipt"``, ``"unique_ids"``); the check table maps each role to
the set's id (``{"receipt": "V2-PROMPT-001"}``). A role a set does not map is not judged in
that version. Sets are built on first use (:func:`requirement_set`): their rows cost nothing
to an agent or client that never runs the checker.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["CheckSpec", "Level", "Requirement", "RequirementSet", "ids", "make_requirement", "register_requirement_set",
           "requirement_set"]

Level = Literal["must", "should", "informational"]

#: where the spec pages of the v1 requirements are (the default of a row)
V1_SPEC_BASE = "https://agentclientprotocol.com/protocol/v1/"


@dataclass(frozen=True)
class Requirement:
    id: str
    level: Level
    spec: str
    title: str
    #: the ids of the official conformance kit (acp-tck; of the suite of this requirement's version) it covers
    tck: tuple[str, ...] = ()
    #: where the spec pages ``spec`` names are
    spec_base: str = V1_SPEC_BASE

    @property
    def url(self) -> str:
        return self.spec_base + self.spec


def make_requirement(id: str, level: Level, spec: str, title: str, *tck: str,
                     spec_base: str = V1_SPEC_BASE) -> Requirement:
    """One row of a requirement table: ``tck``, the numbers of the acp-tck requirements it
    covers (``"INIT-001"`` for ``ACP-INIT-001``)."""
    return Requirement(id, level, spec, title, tuple(f"ACP-{t}" for t in tck), spec_base)


@dataclass(frozen=True)
class CheckSpec:
    """One row of a check table: the check's name, the probe it runs (its name in
    :mod:`acplink.conformance`, default: the check's name), the requirements it reports (by
    role: ``{role: id}``; a probe that reports ids directly maps each id to itself) and the
    monitored requirements its traffic vouches for."""

    name: str
    roles: Mapping[str, str]
    vouches: tuple[str, ...] = ()
    probe: str = ""

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.roles.values()))

    @property
    def probe_name(self) -> str:
        return self.probe or self.name


def ids(*requirement_ids: str) -> dict[str, str]:
    """The roles of a probe that reports requirement ids directly (each id its own role)."""
    return {i: i for i in requirement_ids}


@dataclass(frozen=True)
class RequirementSet:
    """The requirement set of one protocol version (see the module's doc)."""

    name: str
    requirements: tuple[Requirement, ...]
    checks: tuple[CheckSpec, ...]
    #: requirement ids judged from every check's traffic
    monitored: tuple[str, ...]
    #: finding code (``acplink inspect``'s) → the requirement an agent's message breaks with it
    findings: Mapping[str, str]
    #: a ``capability`` finding whose message names one of these methods (a substring) breaks
    #: that requirement (else ``findings["capability"]``)
    capability_methods: tuple[tuple[str, str], ...] = ()
    #: an update for a session whose id a later response returns (too early, not a ghost)
    early_update: str | None = None
    #: a line that is not valid UTF-8 (when ``invalid-json`` maps elsewhere)
    bad_utf8: str | None = None
    #: an error with an empty or multi-line message
    error_message: str | None = None
    #: root keys the schema does not declare
    root_keys: str | None = None
    #: a call of a method the client does not handle in this version (or an ``_`` one)
    foreign_call: str | None = None
    #: the initialize params of the checker's handshake (``protocolVersion`` aside)
    initialize: Mapping[str, Any] = field(default_factory=dict)
    #: the key of the kit's ids in ``tck_ids.json`` (None: the top level)
    tck_key: str | None = None
    #: whether a response with id null (an answer to a notification) breaks the ids' requirement
    #: (else it is judged by the check that sends the notification)
    null_id_responses: bool = True
    #: facts of the version the probes read (``"auth_method_id"``: the key of an auth method's
    #: id; ``"removed_methods"``: methods of an earlier version this one answers -32601)
    facts: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "findings", MappingProxyType(dict(self.findings)))
        object.__setattr__(self, "initialize", MappingProxyType(dict(self.initialize)))
        object.__setattr__(self, "facts", MappingProxyType(dict(self.facts)))

    def capability_requirement(self, message: str) -> str | None:
        """The requirement a ``capability`` finding with this message breaks."""
        return next((req for method, req in self.capability_methods if method in message),
                    self.findings.get("capability"))


#: the sets acplink knows, by name: (module, attribute), imported on first use
_LAZY: dict[str, tuple[str, str]] = {
    "acp-v1": ("acplink.protocol.v1_requirements", "REQUIREMENT_SET"),
    "acp-v2-draft": ("acplink.protocol.v2.requirements", "REQUIREMENT_SET"),
}
_SETS: dict[str, RequirementSet | Callable[[], RequirementSet]] = {}


def register_requirement_set(name: str, build: RequirementSet | Callable[[], RequirementSet]) -> None:
    """Make the requirement set ``name`` (a ``Protocol.requirement_set``) available: the set, or
    a function that builds it on first use."""
    _SETS[name] = build


def requirement_set(name: str) -> RequirementSet:
    """The requirement set called ``name`` (KeyError when none is registered)."""
    entry = _SETS.get(name)
    if entry is None:
        module, attr = _LAZY[name]
        entry = getattr(importlib.import_module(module), attr)
    if not isinstance(entry, RequirementSet):
        entry = entry()
    _SETS[name] = entry
    return entry
