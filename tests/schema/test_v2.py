"""ACP v2 (draft): ``acplink.schema.v2`` is generated from the vendored v2 schemas, with its own
method table; open unions keep unknown variants as raw data, malformed known variants are
errors, patch fields keep omitted / ``null`` / a value apart, request ids are never null, and
``import acplink`` does not load it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis.errors import Unsatisfiable
from schema_support import defs_of, is_object_def, strategy_for, validator_for

import acplink.schema as S
from acplink.errors import SchemaValidationError
from acplink.schema import dump, parse, v2
from acplink.schema._base import FallbackVariant

V2 = "v2/schema.unstable.json"
V2_STABLE = "v2/schema.json"


def test_every_v2_definition_is_exported_with_its_stability() -> None:
    stable = defs_of(V2_STABLE)
    for name in defs_of(V2):
        assert hasattr(v2, name), name
        assert name in v2.__all__, name
        assert v2.STABILITY[name] == ("stable" if name in stable else "unstable"), name
    assert v2.VERSION == 2 and S.v1.VERSION == 1


def test_v2_method_table_is_the_v2_schema() -> None:
    expected: dict[tuple[str, str], tuple[str, str]] = {}
    for name, d in defs_of(V2).items():
        if "x-method" in d and not name.endswith("Response"):
            kind = "request" if name.endswith("Request") else "notification"
            expected[(d["x-method"], kind)] = (name, d["x-side"])
    got = {(m.method, m.kind): (m.params_name, m.side) for m in v2.METHODS}
    assert got == expected
    # v2 renames and removes methods: the v1 table is a different one
    assert v2.method_info("auth/login") is not None and S.method_info("auth/login") is None
    assert v2.method_info("session/load") is None and S.method_info("session/load") is not None
    assert v2.method_info("session/prompt").params_type is v2.PromptRequest  # type: ignore[union-attr]
    assert v2.PromptRequest is not S.PromptRequest


def _capability_exists(path: str) -> bool:
    side, dotted = path.split(":")
    defs = defs_of(V2)
    node = defs["AgentCapabilities" if side == "agent" else "ClientCapabilities"]
    for part in dotted.split("."):
        prop = node.get("properties", {}).get(part)
        if prop is None:
            return False
        refs = [prop.get("$ref")] + [x.get("$ref") for x in prop.get("anyOf", []) + prop.get("allOf", [])]
        target = next((r.rsplit("/", 1)[-1] for r in refs if r), None)
        node = defs[target] if target else prop
    return True


def test_v2_capability_paths_exist() -> None:
    gated = [m for m in v2.METHODS if m.capability]
    assert len(gated) >= 10
    for m in gated:
        assert _capability_exists(m.capability), m.capability  # type: ignore[arg-type]
    assert not _capability_exists("agent:session.nope")


def test_open_union_keeps_an_unknown_variant_as_raw_data() -> None:
    raw = {"type": "hologram", "frames": [1, 2], "_meta": {"k": "v"}}
    block = parse(v2.ContentBlock, raw)
    assert isinstance(block, FallbackVariant)
    assert block.tag == "hologram"
    assert block.raw == raw
    assert dump(block) == raw
    update = parse(v2.UpdateSessionNotification, {"sessionId": "s", "update": {"sessionUpdate": "_custom", "x": 1}})
    assert dump(update)["update"] == {"sessionUpdate": "_custom", "x": 1}


def test_a_malformed_known_variant_is_an_error() -> None:
    with pytest.raises(SchemaValidationError) as info:
        parse(v2.ContentBlock, {"type": "text"})  # "text" is known: its text is missing
    assert "text" in str(info.value)


def test_patch_fields_keep_omitted_null_and_value_apart() -> None:
    assert {"title", "kind", "status"} <= set(v2.ToolCallUpdate.__acp_patch_fields__)
    omitted = parse(v2.ToolCallUpdate, {"toolCallId": "t"})
    cleared = parse(v2.ToolCallUpdate, {"toolCallId": "t", "title": None})
    replaced = parse(v2.ToolCallUpdate, {"toolCallId": "t", "title": "Read"})
    assert "title" not in omitted.model_fields_set
    assert "title" in cleared.model_fields_set and cleared.title is None
    assert replaced.title == "Read"
    assert dump(omitted) == {"toolCallId": "t"}
    assert dump(cleared) == {"toolCallId": "t", "title": None}
    assert dump(replaced) == {"toolCallId": "t", "title": "Read"}
    # built in Python: the same three states
    assert v2.ToolCallUpdate(tool_call_id="t", title=None).to_wire() == {"toolCallId": "t", "title": None}
    assert v2.ToolCallUpdate(tool_call_id="t").to_wire() == {"toolCallId": "t"}


def test_request_ids_are_never_null_in_v2() -> None:
    assert parse(S.RequestId, None) is None  # v1 allows a null id
    with pytest.raises(SchemaValidationError):
        parse(v2.RequestId, None)
    with pytest.raises(SchemaValidationError):
        parse(v2.CancelRequestNotification, {"requestId": None})
    assert parse(v2.CancelRequestNotification, {"requestId": 7}).request_id == 7


def test_import_acplink_does_not_load_v2() -> None:
    code = ("import sys, acplink, acplink.schema; "
            "acplink.schema.PromptRequest; "
            "print(any(m.startswith('acplink.schema.v2') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


SETTINGS = settings(max_examples=3, deadline=None, phases=[Phase.explicit, Phase.generate], database=None,
                    derandomize=True, suppress_health_check=list(HealthCheck))

V2_OBJECT_DEFS = sorted(n for n, d in defs_of(V2).items() if is_object_def(d))


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("name", V2_OBJECT_DEFS)
def test_v2_roundtrip(name: str) -> None:
    """Valid instances of every v2 object definition parse, and dump back to the input."""
    tp = getattr(v2, name)
    validator = validator_for(V2, name)

    @SETTINGS
    @given(strategy_for(defs_of(V2), {"$ref": f"#/$defs/{name}"}))
    def check(inst: Any) -> None:
        assume(validator.is_valid(inst))
        x = parse(tp, inst)
        d = dump(x)
        tags = {type(x).model_fields[a].alias or a: getattr(x, a) for a in getattr(type(x), "__acp_tag_fields__", ())}
        assert _canon(d) in (_canon(inst), _canon({**tags, **inst} if isinstance(inst, dict) else inst))
        assert parse(tp, d) == x

    try:
        check()
    except Unsatisfiable:
        pytest.skip(f"{name}: no valid instance generated")


def _update(update: dict[str, Any]) -> Any:
    return parse(v2.UpdateSessionNotification, {"sessionId": "s", "update": update}).update


@pytest.mark.parametrize(("update", "path"), [
    ({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}, "$.update.messageId"),
    ({"sessionUpdate": "state_update", "state": "idle", "stopReason": 5}, "$.update.stopReason"),
])
def test_a_malformed_known_session_update_is_an_error_naming_the_path(update: dict[str, Any], path: str) -> None:
    # (the idle state update without a stop reason has no required field: it must not take these)
    with pytest.raises(SchemaValidationError) as info:
        _update(update)
    paths = [e["path"].replace(f"[sessionUpdate={update['sessionUpdate']}]", "") for e in info.value.errors]
    assert any(p.startswith(path) or p.endswith(path.removeprefix("$.update")) for p in paths), info.value.errors


def test_session_updates_are_chosen_by_their_tag() -> None:
    unknown = _update({"sessionUpdate": "hologram", "frames": 1})
    assert isinstance(unknown, FallbackVariant)
    assert unknown.tag == "hologram" and unknown.raw == {"sessionUpdate": "hologram", "frames": 1}
    assert type(_update({"sessionUpdate": "state_update", "state": "idle"})).__name__ == "IdleStateUpdateNone"
    assert _update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "_x"}).stop_reason == "_x"
    # a state update needs its state tag too, and a bare state union its "state"
    with pytest.raises(SchemaValidationError):
        _update({"sessionUpdate": "state_update"})
    with pytest.raises(SchemaValidationError):
        parse(v2.StateUpdate, {})
    # (v1's unstable schema has the same state union: the same rule holds there)
    with pytest.raises(SchemaValidationError):
        parse(S.v1.StateUpdate, {"sessionUpdate": "state_update"})
