"""The ACP method registry, built from the generated method table.

Routing, typed connection stubs, capability checks, docs and the conformance checker are all
driven from :data:`METHODS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from . import _generated
from ._methods import METHOD_TABLE

Side = Literal["agent", "client", "protocol", "proxy", "both"]
Kind = Literal["request", "notification"]

__all__ = ["METHODS", "MethodInfo", "agent_methods", "client_methods", "method_info"]


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

    @property
    def stable(self) -> bool:
        return self.stability == "stable"

    @cached_property
    def params_type(self) -> Any:
        """The params model (or alias) of this method."""
        return getattr(_generated, self.params_name)

    @cached_property
    def result_type(self) -> Any:
        """The result model (or alias) of this request, None for notifications."""
        return getattr(_generated, self.result_name) if self.result_name else None


METHODS: tuple[MethodInfo, ...] = tuple(MethodInfo(*row) for row in METHOD_TABLE)

_BY_KEY: dict[tuple[str, str], MethodInfo] = {(m.method, m.kind): m for m in METHODS}


def method_info(method: str, kind: str = "request") -> MethodInfo | None:
    """Look up a method by wire name and kind ("request" or "notification")."""
    return _BY_KEY.get((method, kind))


def agent_methods() -> tuple[MethodInfo, ...]:
    """Methods an agent handles (the client calls them)."""
    return tuple(m for m in METHODS if m.side in ("agent", "protocol", "both"))


def client_methods() -> tuple[MethodInfo, ...]:
    """Methods a client handles (the agent calls them)."""
    return tuple(m for m in METHODS if m.side in ("client", "protocol", "both"))
