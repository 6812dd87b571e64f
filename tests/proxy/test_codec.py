"""The proxy envelope codec (protocol/proxy.py): wrapping, unwrapping, its checks, the dialects."""

from __future__ import annotations

import pytest

from acplink.errors import InvalidParams
from acplink.protocol.proxy import DIALECTS, LEGACY, MODERN, Wrapped, dialect_of, unwrap, wrap


def test_wrap_and_unwrap_round_trip_keeping_inner_and_envelope_meta_apart() -> None:
    inner = {"sessionId": "s1", "prompt": [], "_meta": {"inner": 1}}
    env = wrap("session/prompt", inner, {"hop": True})
    assert env == {"method": "session/prompt", "params": inner, "_meta": {"hop": True}}
    assert unwrap(env) == Wrapped("session/prompt", inner, {"hop": True})


def test_wrap_omits_absent_params_and_meta() -> None:
    assert wrap("session/cancel") == {"method": "session/cancel"}
    assert unwrap({"method": "x", "params": None}) == Wrapped("x", None, None)
    assert unwrap({"method": "x", "params": [1, 2]}).params == [1, 2]


@pytest.mark.parametrize("params, words", [
    ({}, "no method"),
    ({"method": 3}, "no method"),
    ({"method": ""}, "no method"),
    ({"method": "x", "params": "text"}, "object or an array"),
    ({"method": "x", "params": 5}, "object or an array"),
    ({"method": "x", "_meta": []}, "_meta"),
    ([], "must be an object"),
    (None, "must be an object"),
])
def test_bad_envelopes_are_invalid_params(params: object, words: str) -> None:
    with pytest.raises(InvalidParams) as info:
        unwrap(params)
    assert info.value.code == -32602
    assert words in info.value.message


def test_dialects() -> None:
    assert MODERN.initialize == "proxy/initialize" and MODERN.successor == "proxy/successor"
    assert LEGACY.initialize == "_proxy/initialize" and LEGACY.successor == "_proxy/successor"
    assert DIALECTS == (MODERN, LEGACY)
    assert dialect_of("proxy/successor") is MODERN
    assert dialect_of("_proxy/initialize") is LEGACY
    assert dialect_of("session/prompt") is None
