"""Random and wrong-typed JSON into every schema type (strict and lenient): only AcpError
subclasses (in practice SchemaValidationError) may come out."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import acplink.schema as S
from acplink.errors import AcpError, SchemaValidationError
from acplink.schema import _generated

TYPE_NAMES: list[str] = list(_generated.__all__)
BIG = 10**30

scalars = (st.none() | st.booleans() | st.integers(-BIG, BIG) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=20) | st.sampled_from(["text", "image", "agent_message_chunk", "tool_call", "stdio",
                                                    "http", "selected", "_custom", "", "sessionId"]))
KEYS = st.sampled_from(["type", "sessionId", "sessionUpdate", "content", "text", "_meta", "prompt", "update",
                        "toolCallId", "status", "outcome", "optionId", "name", "cwd", "mcpServers", "id",
                        "protocolVersion", "path", "uri", "kind", "entries"]) | st.text(max_size=8)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(KEYS, inner, max_size=5), max_leaves=25)


def _parse_all(value: Any) -> int:
    failures = 0
    for name in TYPE_NAMES:
        tp = getattr(S, name)
        for strict in (False, True):
            try:
                S.parse(tp, value, strict=strict)
            except SchemaValidationError as exc:
                assert exc.type_name and exc.errors
                orjson.dumps(exc.data)  # the error data travels on the wire: it must be JSON
                failures += 1
            except AcpError:
                failures += 1
    return failures


def test_every_type_name_resolves() -> None:
    assert len(TYPE_NAMES) > 300
    for name in TYPE_NAMES:
        assert getattr(S, name) is not None


@given(value=json_values)
@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_random_json_into_every_type_raises_only_acp_errors(value: Any) -> None:
    _parse_all(value)


@pytest.mark.parametrize("value", [
    10**30, -(10**30), 1e308, "x" * 100_000, [None] * 1000, {"_meta": {"a": [1] * 500}},
    {"sessionId": 10**30, "update": {"sessionUpdate": 10**30}}, {"type": ["text"], "text": {"a": 1}},
])
def test_huge_and_wrong_typed_values_into_every_type(value: Any) -> None:
    _parse_all(value)


@pytest.mark.parametrize("opener", ["list", "dict", "meta"])
def test_deep_nesting_into_every_type(opener: str) -> None:
    value: Any = 1
    for _ in range(3000):
        value = [value] if opener == "list" else {"a": value} if opener == "dict" else {"_meta": value}
    _parse_all(value)
