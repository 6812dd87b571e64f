"""Public names for the session-update variants: a tool call update is a ``ToolCallProgress``
(not the generated ``SessionUpdateToolCallUpdate``, kept as an alias of it) and a
``ToolCallUpdate`` (the schema's definition, its base); no other session-update variant has a
generated ``<Union><Tag>`` name. In v1 and v2 alike."""

from __future__ import annotations

import typing

import pytest

import acplink
from acplink.schema import v1, v2
from acplink.schema._parse import parse

VERSIONS = {"v1": v1, "v2": v2}


@pytest.mark.parametrize("version", list(VERSIONS))
def test_a_tool_call_update_has_its_public_name(version: str) -> None:
    ns = VERSIONS[version]
    update = parse(ns.SessionUpdate, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    assert type(update).__name__ == "ToolCallProgress" and type(update) is ns.ToolCallProgress
    assert isinstance(update, ns.ToolCallUpdate)  # the schema's definition: its base
    assert ns.SessionUpdateToolCallUpdate is ns.ToolCallProgress  # the generated name: an alias
    assert "SessionUpdateToolCallUpdate" in ns.__all__ and "ToolCallProgress" in ns.__all__
    assert update.to_wire() == {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}


@pytest.mark.parametrize("version", list(VERSIONS))
def test_the_definition_tool_call_update_carries_no_tag(version: str) -> None:
    """(it is also a permission request's toolCall: no sessionUpdate there)"""
    ns = VERSIONS[version]
    assert ns.ToolCallUpdate(tool_call_id="t1").to_wire() == {"toolCallId": "t1"}


def _variant_names(union: object) -> set[str]:
    names: set[str] = set()
    for arg in typing.get_args(union):
        if isinstance(arg, type):
            names.add(arg.__name__)
        else:
            names |= _variant_names(arg)
    return names


@pytest.mark.parametrize("version", list(VERSIONS))
def test_no_session_update_variant_has_a_generated_name(version: str) -> None:
    ns = VERSIONS[version]
    names = _variant_names(ns.SessionUpdate)
    assert "ToolCallProgress" in names and "AgentMessageChunk" in names
    # (v2's SessionUpdateOther is the fallback for tags it does not know, like v1's UnknownSessionUpdate)
    assert {n for n in names if n.startswith("SessionUpdate")} <= {"SessionUpdateOther"}, names


def test_the_update_types_are_exported_by_acplink() -> None:
    for name in ("AgentMessageChunk", "AgentThoughtChunk", "UserMessageChunk", "ToolCall", "ToolCallProgress",
                 "ToolCallUpdate", "Plan"):
        assert name in acplink.__all__ and getattr(acplink, name) is getattr(v1, name)
