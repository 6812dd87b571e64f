"""The requirements the conformance checker verifies: id, level, spec section, description.

The rows are data of the protocol objects (:mod:`acplink.protocol.requirements`: each
version's requirement set); :data:`REQUIREMENTS` are those of the default version (v1), whose
spec references are ``page#anchor`` under https://agentclientprotocol.com/protocol/v1/. The
test suite tags its tests with the same ids.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..protocol.requirements import V1_SPEC_BASE as SPEC_BASE
from ..protocol.requirements import Level, Requirement, make_requirement, requirement_set
from ..protocol.state import default_protocol

__all__ = ["REQUIREMENTS", "SPEC_BASE", "KitRequirement", "Level", "Requirement", "make_requirement", "requirement",
           "tck_data", "tck_requirements"]

#: the requirements of the default protocol version
REQUIREMENTS: tuple[Requirement, ...] = requirement_set(default_protocol().requirement_set).requirements

_BY_ID = {r.id: r for r in REQUIREMENTS}


def requirement(id: str) -> Requirement:
    """The requirement with this id (KeyError if unknown)."""
    return _BY_ID[id]


@dataclass(frozen=True)
class KitRequirement:
    """One requirement of the official conformance kit (acp-tck) and the acplink ones covering it
    (``not_covered``: why none does, when none does)."""

    id: str
    tier: str  # MANDATORY | CAPABILITY | ADVISORY | INFORMATIONAL
    capability: str | None
    summary: str
    covered_by: tuple[str, ...]
    not_covered: str = ""


def tck_data() -> dict[str, Any]:
    """``tck_ids.json``: the kit's v1 ids (top level) and v2 ids (``v2``), with their sources."""
    data: dict[str, Any] = json.loads(resources.files(__package__).joinpath("tck_ids.json").read_text(encoding="utf-8"))
    return data


def tck_requirements(protocol: int = 1) -> list[KitRequirement]:
    """The kit's requirement ids of ``protocol`` (1 or 2; vendored in ``tck_ids.json``), each
    with the acplink requirements that cover it (empty when none does, with the reason)."""
    from .suites import suite_of

    suite = suite_of(protocol)
    data = tck_data()
    if suite.tck_key is not None:
        data = data[suite.tck_key]
    ours: Sequence[Requirement] = suite.requirements
    reasons = data.get("not_covered", {})
    return [KitRequirement(k["id"], k["tier"], k.get("capability"), k.get("summary", ""),
                           tuple(r.id for r in ours if k["id"] in r.tck), reasons.get(k["id"], ""))
            for k in data["requirements"]]
