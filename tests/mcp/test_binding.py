"""The sans-I/O binding (acplink.mcp.binding): envelopes, carriers, inner metadata; and the
caller's routing of the provider's notifications (late ones dropped, logged once)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from acplink import InvalidParams, McpError, ProtocolError
from acplink.agent.mcp import McpCalls
from acplink.mcp import (
    MCP_CLIENT_CAPABILITIES,
    MCP_CLIENT_INFO,
    MCP_PROTOCOL_VERSION,
    MCP_PROTOCOL_VERSION_KEY,
)
from acplink.mcp import binding as b

GOOD = {"serverId": "s", "requestId": "r", "method": "tools/list"}


@pytest.mark.parametrize(("params", "path"), [
    (["not", "an", "object"], ""),
    ("text", ""),
    (None, ""),
    ({**GOOD, "serverId": 3}, "serverId"),
    ({k: v for k, v in GOOD.items() if k != "serverId"}, "serverId"),
    ({**GOOD, "requestId": True}, "requestId"),
    ({**GOOD, "requestId": 1.5}, "requestId"),
    ({**GOOD, "requestId": None}, "requestId"),
    ({**GOOD, "requestId": 7}, "requestId"),  # (a string in both schemas; the TS SDK refuses it too)
    ({**GOOD, "method": ["x"]}, "method"),
    ({**GOOD, "params": [1, 2]}, "params"),
    ({**GOOD, "params": "x"}, "params"),
])
def test_bad_envelopes_are_32602_naming_the_field(params: Any, path: str) -> None:
    with pytest.raises(InvalidParams) as err:
        b.check_envelope(params)
    assert err.value.code == -32602 and err.value.data["path"] == path
    assert "mcp/message" in err.value.message


def test_good_envelopes() -> None:
    env = b.check_envelope({**GOOD, "requestId": "7", "params": None, "_meta": "junk"})
    assert (env.server_id, env.request_id, env.method, env.params, env.meta) == ("s", "7", "tools/list", None, None)
    env = b.check_envelope({**GOOD, "params": {"a": 1}, "_meta": {"k": 1}})
    assert env.params == {"a": 1} and env.meta == {"k": 1}


def test_carriers() -> None:
    assert b.result_carrier({"tools": []}) == {"result": {"tools": []}}
    assert b.result_carrier(None) == {"result": {}}
    assert b.error_carrier(McpError(-32602, "bad", {"x": 1})) == {"error": {"code": -32602, "message": "bad",
                                                                             "data": {"x": 1}}}
    assert b.parse_carrier({"result": None}) is None
    # both: result wins
    assert b.parse_carrier({"result": {"a": 1}, "error": {"code": 1, "message": "m"}}) == {"a": 1}
    err = b.parse_carrier({"error": {"code": -32601, "message": "nope", "data": [1]}, "_meta": 5})
    assert isinstance(err, McpError) and (err.code, err.message, err.data) == (-32601, "nope", [1])


@pytest.mark.parametrize("raw", [
    {}, {"_meta": {}}, {"error": None}, {"error": "x"}, {"error": {"code": "1", "message": "m"}},
    {"error": {"code": 1.5, "message": "m"}}, {"error": {"code": True, "message": "m"}},
    {"error": {"message": "m"}}, {"error": {"code": 1}}, None, [], "result",
])
def test_not_a_carrier_raises(raw: Any) -> None:
    with pytest.raises(ProtocolError, match="invalid mcp/message answer"):
        b.parse_carrier(raw)


def test_inner_meta_added_and_checked() -> None:
    params = b.with_inner_meta({"name": "t", "_meta": {"progressToken": 1, MCP_CLIENT_CAPABILITIES: {"x": {}}}},
                               {}, {"name": "a", "version": "1"})
    meta = params["_meta"]
    assert meta[MCP_PROTOCOL_VERSION_KEY] == MCP_PROTOCOL_VERSION
    assert meta[MCP_CLIENT_CAPABILITIES] == {"x": {}}  # (kept)
    assert meta[MCP_CLIENT_INFO] == {"name": "a", "version": "1"} and meta["progressToken"] == 1
    assert b.check_inner_meta(params) is None
    assert b.mcp_meta_of(params) == {k: v for k, v in meta.items() if k != "progressToken"}
    missing = b.check_inner_meta({"name": "t"})
    assert missing is not None and missing.code == -32602 and MCP_PROTOCOL_VERSION_KEY in missing.message
    assert b.check_inner_meta(None) is not None
    other = b.check_inner_meta({"_meta": {MCP_PROTOCOL_VERSION_KEY: "2025-06-18", MCP_CLIENT_CAPABILITIES: {}}})
    assert other is not None and other.code == -32022
    assert other.data == {"supported": [MCP_PROTOCOL_VERSION], "requested": "2025-06-18"}
    no_caps = b.check_inner_meta({"_meta": {MCP_PROTOCOL_VERSION_KEY: MCP_PROTOCOL_VERSION}})
    assert no_caps is not None and no_caps.code == -32602


def test_declarations() -> None:
    decl = b.declaration("tools", "id-1")
    assert decl == {"type": "acp", "name": "tools", "serverId": "id-1"}
    assert b.is_acp_declaration(decl)
    assert not b.is_acp_declaration({"type": "http", "name": "x", "url": "u"})
    assert not b.is_acp_declaration({"name": "x", "command": "c"})


def test_late_notifications_are_dropped_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    calls = McpCalls()
    got: list[dict[str, Any]] = []
    calls.routes[("s", "r1")] = got.append
    note = {"serverId": "s", "requestId": "r1", "method": "notifications/progress", "params": {"progress": 1}}
    calls.deliver(note)
    assert got == [{"method": "notifications/progress", "params": {"progress": 1}}]
    calls.routes[("s", 1)] = got.append  # type: ignore[index]  (no such key can be made: see below)
    calls.deliver({**note, "requestId": 1})  # an integer requestId: not an envelope, dropped
    assert len(got) == 1
    del calls.routes[("s", "r1")]  # the request finished
    with caplog.at_level(logging.INFO, logger="acplink.agent.mcp"):
        calls.deliver(note)
        calls.deliver({**note, "requestId": "r2"})
        calls.deliver(["junk"])
    assert got == [{"method": "notifications/progress", "params": {"progress": 1}}]
    assert len([r for r in caplog.records if "not active" in r.getMessage()]) == 1
