"""A protocol version's method table, built from its generated rows and its models module.

Routing, typed connection stubs, capability checks, docs and the conformance checker are all
driven from a :class:`MethodTable` (one per protocol version: ``acplink.schema.v1.TABLE``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import ModuleType
from typing import Any, Literal

Side = Literal["agent", "client", "protocol", "proxy", "both"]
Kind = Literal["request", "notification"]

__all__ = ["MethodInfo", "MethodTable"]

#: one generated row: (method, side, kind, params type, result type or None, stability, capability)
Row = tuple[str, str, str, str, "str | None", str, "str | None"]


@dataclass(frozen=True)
class MethodInfo:
    """One ACP method: who handles it, its params and result types, and what gates it."""

    method: str
    #: the side that *handles* it: "agent", "client", "protocol" (either), "proxy"
    side: str
    kind: str
    params_name: str
    result_name: str | None
    #: "stable", "unstable", "nes", "legacy" or "extension"
    stability: str
    #: "agent:<path>" / "client:<path>": the capability that must be advertised, if any
    capability: str | None
    #: the models module the type names refer to (the version's ``_generated``)
    models: ModuleType | None = field(default=None, compare=False, repr=False)

    @property
    def stable(self) -> bool:
        return self.stability == "stable"

    @cached_property
    def params_type(self) -> Any:
        """The params model (or alias) of this method."""
        return getattr(self.models, self.params_name)

    @cached_property
    def result_type(self) -> Any:
        """The result model (or alias) of this request, None for notifications."""
        return getattr(self.models, self.result_name) if self.result_name else None


class MethodTable:
    """Every method of one protocol version, looked up by wire name and kind."""

    def __init__(self, rows: tuple[Row, ...], models: ModuleType) -> None:
        self.models = models
        self.methods: tuple[MethodInfo, ...] = tuple(MethodInfo(*row, models=models) for row in rows)
        self._by_key: dict[tuple[str, str], MethodInfo] = {(m.method, m.kind): m for m in self.methods}

    def info(self, method: str, kind: str = "request") -> MethodInfo | None:
        """Look up a method by wire name and kind ("request" or "notification")."""
        return self._by_key.get((method, kind))

    def agent_methods(self) -> tuple[MethodInfo, ...]:
        """Methods an agent handles (the client calls them)."""
        return tuple(m for m in self.methods if m.side in ("agent", "protocol", "both"))

    def client_methods(self) -> tuple[MethodInfo, ...]:
        """Methods a client handles (the agent calls them)."""
        return tuple(m for m in self.methods if m.side in ("client", "protocol", "both"))

    def renamed(self, renames: dict[str, str], models: ModuleType | None = None) -> MethodTable:
        """A copy of this table with some wire names changed (``{old: new}``): how a version
        that only renames methods is described."""
        rows = tuple((renames.get(m.method, m.method), m.side, m.kind, m.params_name, m.result_name,
                      m.stability, m.capability) for m in self.methods)
        return MethodTable(rows, models or self.models)
