"""Schema-driven property tests: every object definition of v1/schema.unstable.json.

Valid instances come from the schema itself (see ``conftest.strategy_for``; each one is checked
with ``jsonschema`` first). For each: parse -> dump -> parse is stable, the dump equals the
input (nothing lost, nothing invented), and strict mode accepts it. Instances made invalid (a
required field removed, a wrong type put in a required field) are rejected in strict mode with a
``SchemaValidationError`` whose error paths are ``$``-rooted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

import acplink.schema as S
from acplink.errors import SchemaValidationError
from acplink.schema import dump, dump_json, parse, parse_json

SETTINGS = settings(
    max_examples=10,
    deadline=None,
    phases=[Phase.explicit, Phase.generate, Phase.target, Phase.shrink],
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)

#: wrong-typed replacement values, tried in this order
WRONG_VALUES: list[Any] = [{"zzWrong": 1}, ["zz"], 12345, "12345", "true", True, 1.5]


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def with_tags(x: Any, inst: Any) -> Any:
    """``inst`` plus the tag a variant class carries (a definition used as a tagged-union variant
    gets its discriminator even when parsed on its own, e.g. ``AudioContent`` -> ``"type": "audio"``)."""
    tags = getattr(type(x), "__acp_tag_fields__", ())
    if not tags or not isinstance(inst, dict):
        return inst
    out = dict(inst)
    for attr in tags:
        info = type(x).model_fields[attr]
        out.setdefault(info.alias or attr, getattr(x, attr))
    return out


def check_error(exc: SchemaValidationError, name: str) -> None:
    assert exc.type_name == name
    assert exc.errors, "a SchemaValidationError lists its errors"
    for e in exc.errors:
        assert e["path"].startswith("$"), e
        assert e["message"], e


def test_object_defs_found(object_defs: list[str]) -> None:
    assert len(object_defs) > 150
    for must in ("SessionNotification", "SessionUpdate", "ContentBlock", "ToolCall", "McpServer"):
        assert must in object_defs


def test_roundtrip(object_def: str, instances: Any, validator: Any, roundtrip_coverage: dict[str, str]) -> None:
    name = object_def
    tp = getattr(S, name)
    v = validator(name)

    @SETTINGS
    @given(instances(name))
    def check(inst: Any) -> None:
        assume(v.is_valid(inst))
        x = parse(tp, inst)
        d = dump(x)
        # the dump is the input: nothing lost, nothing added (except, at most, the tag of a
        # variant class parsed on its own)
        assert canon(d) in (canon(inst), canon(with_tags(x, inst))), "the dump must equal the input"
        y = parse(tp, d)
        assert y == x
        assert canon(dump(y)) == canon(d)
        assert dump_json(y) == dump_json(x)
        assert parse_json(tp, dump_json(x)) == x
        assert parse(tp, inst, strict=True) == x

    try:
        check()
    except Unsatisfiable:
        roundtrip_coverage[name] = "no valid instance generated"
        pytest.skip(f"{name}: the generator produced no valid instance")
    roundtrip_coverage[name] = "covered"


def _required_keys(merged: dict[str, Any]) -> list[str]:
    return [r for r in merged.get("required", []) if r in merged.get("properties", {})]


#: known generator bugs, reported; strict xfail so the fix is noticed
KNOWN_BUGS: dict[str, str] = {}


def test_invalid_rejected_in_strict(
    object_def: str, instances: Any, validator: Any, merged_def: Any, request: pytest.FixtureRequest
) -> None:
    name = object_def
    if name in KNOWN_BUGS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_BUGS[name], strict=True))
    merged = merged_def(name)
    required = _required_keys(merged)
    if not required:
        pytest.skip(f"{name} has no required top-level property")
    tp = getattr(S, name)
    v = validator(name)

    @settings(SETTINGS, max_examples=6)
    @given(instances(name), st.data())
    def check(inst: Any, data: st.DataObject) -> None:
        assume(isinstance(inst, dict) and v.is_valid(inst))
        keys = [k for k in required if k in inst]
        assume(keys)
        key = data.draw(st.sampled_from(keys), label="field")
        if data.draw(st.booleans(), label="remove"):
            bad = {k: val for k, val in inst.items() if k != key}
        else:
            wrong = [w for w in WRONG_VALUES if not v.is_valid({**inst, key: w})]
            assume(wrong)
            bad = {**inst, key: data.draw(st.sampled_from(wrong), label="wrong value")}
        assume(not v.is_valid(bad))
        with pytest.raises(SchemaValidationError) as info:
            parse(tp, bad, strict=True)
        check_error(info.value, name)

    try:
        check()
    except Unsatisfiable:
        pytest.skip(f"{name}: the generator produced no usable instance")


def test_roundtrip_coverage(object_defs: list[str], roundtrip_coverage: dict[str, str]) -> None:
    """At least 80% of the object definitions were exercised (runs after the tests above)."""
    if len(roundtrip_coverage) < len(object_defs):
        pytest.skip("only meaningful when every round-trip test ran")
    covered = [n for n, r in roundtrip_coverage.items() if r == "covered"]
    skipped = sorted(n for n, r in roundtrip_coverage.items() if r != "covered")
    assert len(covered) / len(object_defs) >= 0.8, f"skipped: {skipped}"
