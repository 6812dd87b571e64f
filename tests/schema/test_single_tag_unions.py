"""Unions with one tagged variant and an untagged one: the tag decides, never a default."""

from __future__ import annotations

from acplink.schema import (
    AuthMethod,
    AuthMethodAgent,
    AuthMethodTerminal,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionRequestBoolean,
    SetSessionConfigOptionRequestValueId,
    dump,
    parse,
)


def test_auth_method_without_type_is_the_agent_variant() -> None:
    method = parse(AuthMethod, {"id": "demo", "name": "Demo login"})
    assert type(method) is AuthMethodAgent
    assert dump(method) == {"id": "demo", "name": "Demo login"}  # no invented "type": "terminal"


def test_auth_method_with_terminal_type_is_the_terminal_variant() -> None:
    method = parse(AuthMethod, {"id": "t", "name": "Login in a terminal", "type": "terminal", "args": ["login"]})
    assert type(method) is AuthMethodTerminal and method.args == ["login"]


def test_config_option_value_id_vs_boolean() -> None:
    value_id = parse(SetSessionConfigOptionRequest, {"sessionId": "s", "configId": "c", "value": "fast"})
    assert type(value_id) is SetSessionConfigOptionRequestValueId
    boolean = parse(SetSessionConfigOptionRequest, {"sessionId": "s", "configId": "c", "type": "boolean", "value": True})
    assert type(boolean) is SetSessionConfigOptionRequestBoolean and boolean.value is True
