"""The version router's rules (those of the TS SDK's AgentProtocolRouter), one row each."""

from __future__ import annotations

from typing import Any

import pytest

from acplink.protocol.router import Ignore, Reply, Select, VersionRouter

INFO = {"name": "t", "version": "1"}


def init(version: Any, rid: Any = 1, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {"protocolVersion": version, **params}}


V2 = {"info": INFO}

#: (name, versions served, message, expected: "ignore" | ("select", version) | (error code, reply id))
ROWS: list[tuple[str, tuple[int, ...], Any, Any]] = [
    ("notification before initialize is ignored", (1, 2), {"jsonrpc": "2.0", "method": "session/cancel", "params": {}},
     "ignore"),
    ("response before initialize is ignored", (1, 2), {"jsonrpc": "2.0", "id": 5, "result": {}}, "ignore"),
    ("malformed response is ignored too", (1, 2), {"id": 5, "error": "x"}, "ignore"),
    ("other request before initialize", (1, 2), {"jsonrpc": "2.0", "id": 7, "method": "session/new", "params": {}},
     (-32600, 7)),
    ("a JSON array", (1, 2), [init(2, **V2)], (-32600, None)),
    ("not a message", (1, 2), "hello", (-32600, None)),
    ("request without jsonrpc", (1, 2), {"id": 1, "method": "initialize"}, (-32600, None)),
    ("params not an object", (1, 2), {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": [2]}, (-32602, 3)),
    ("protocolVersion missing", (1, 2), {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}}, (-32602, 3)),
    ("protocolVersion a string", (1, 2), init("2", **V2), (-32602, 1)),
    ("protocolVersion negative", (1, 2), init(-1, **V2), (-32602, 1)),
    ("protocolVersion above 65535", (1, 2), init(65536, **V2), (-32602, 1)),
    ("protocolVersion fractional", (1, 2), init(1.5, **V2), (-32602, 1)),
    ("protocolVersion a bool", (1, 2), init(True, **V2), (-32602, 1)),
    ("2 selects v2", (1, 2), init(2, **V2), ("select", 2)),
    ("newer than 2 selects v2", (1, 2), init(7, **V2), ("select", 2)),
    ("65535 selects v2", (1, 2), init(65535, **V2), ("select", 2)),
    ("1 selects v1", (1, 2), init(1), ("select", 1)),
    ("0 to a dual agent", (1, 2), init(0), (-32022, 1)),
    ("0 to a v2-only agent", (2,), init(0), (-32022, 1)),
    ("1 to a v2-only agent", (2,), init(1), (-32022, 1)),
    ("0 to a v1-only agent: the legacy fallback", (1,), init(0), ("select", 1)),
    ("2 to a v1-only agent is downgraded", (1,), init(2, **V2), ("select", 1)),
    ("exact v2 without info", (1, 2), init(2), (-32602, 1)),
    ("exact v2 with a malformed info", (1, 2), init(2, info={"name": 3}), (-32602, 1)),
    ("newer v2 without info is lenient", (1, 2), init(3), ("select", 2)),
    ("v2 with a null id", (1, 2), init(2, rid=None, **V2), (-32600, None)),
    ("v2 with a fractional id", (1, 2), init(2, rid=1.5, **V2), (-32600, None)),
]


@pytest.mark.parametrize(("versions", "message", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_rule(versions: tuple[int, ...], message: Any, expected: Any) -> None:
    router = VersionRouter(versions)
    decision = router.route(message)
    if expected == "ignore":
        assert isinstance(decision, Ignore)
        assert router.selected is None
    elif expected[0] == "select":
        assert isinstance(decision, Select)
        assert decision.version == expected[1] == router.selected
        assert decision.initialize["params"]["protocolVersion"] == expected[1]
    else:
        assert isinstance(decision, Reply)
        code, rid = expected
        assert decision.message["error"]["code"] == code
        assert decision.message["id"] == rid
        assert router.selected is None  # initialize may be retried


def test_unsupported_version_names_requested_and_supported() -> None:
    reply = VersionRouter((1, 2)).route(init(0))
    assert isinstance(reply, Reply)
    assert reply.message["error"]["data"] == {"requested": 0, "supported": [1, 2]}


def test_initialize_may_be_retried_after_a_failure() -> None:
    router = VersionRouter()
    assert isinstance(router.route(init("x")), Reply)
    assert isinstance(router.route({"jsonrpc": "2.0", "id": 2, "method": "session/new"}), Reply)
    decision = router.route(init(2, rid=3, **V2))
    assert isinstance(decision, Select) and decision.version == 2


def test_newer_request_gets_a_placeholder_info() -> None:
    decision = VersionRouter().route(init(9, info="nonsense", capabilities=7))
    assert isinstance(decision, Select)
    params = decision.initialize["params"]
    assert params["info"] == {"name": "unknown", "version": "unknown"}
    assert "capabilities" not in params  # what does not parse is dropped, not rejected
    assert params["protocolVersion"] == 2


def test_v2_request_downgraded_for_a_v1_only_app() -> None:
    decision = VersionRouter((1,)).route(init(2, info=INFO, capabilities={"elicitation": {"form": {}},
                                                                          "auth": {"terminal": {}}}, _meta={"k": 1}))
    assert isinstance(decision, Select)
    params = decision.initialize["params"]
    assert params["protocolVersion"] == 1
    assert params["clientInfo"] == INFO
    caps = params["clientCapabilities"]
    assert caps["fs"] == {"readTextFile": False, "writeTextFile": False} and caps["terminal"] is False
    assert caps["elicitation"] == {"form": {}} and caps["auth"] == {"terminal": True}
    assert params["_meta"] == {"k": 1}
    # the downgraded params are a valid v1 initialize
    from acplink.schema import InitializeRequest, parse

    assert parse(InitializeRequest, params).client_info is not None


def test_downgrade_omits_a_malformed_info() -> None:
    decision = VersionRouter((1,)).route(init(3, info=5))
    assert isinstance(decision, Select)
    assert "clientInfo" not in decision.initialize["params"]


REPEATS = [
    ("v2 repeat asking 2", 2, 2, False, None),
    ("v2 repeat asking newer", 2, 5, False, None),
    ("v2 repeat asking 1", 2, 1, False, -32600),
    ("v2 repeat after another request", 2, 2, True, -32600),
    ("v2 repeat with a bad version", 2, "2", False, -32602),
    ("v1 repeat asking 2 stays v1", 1, 2, False, None),
]


@pytest.mark.parametrize(("selected", "asked", "after_other", "code"), [r[1:] for r in REPEATS],
                         ids=[r[0] for r in REPEATS])
def test_repeated_initialize(selected: int, asked: Any, after_other: bool, code: int | None) -> None:
    router = VersionRouter()
    first = router.route(init(selected, **V2))
    assert isinstance(first, Select) and router.selected == selected
    if after_other:
        router.request_seen("session/new")
    refused = router.repeat(9, {"protocolVersion": asked, **V2})
    if code is None:
        assert refused is None
    else:
        assert refused is not None and refused["error"]["code"] == code and refused["id"] == 9
    assert router.selected == selected  # never re-routed


def test_batches_opt_in_route_each_element() -> None:
    router = VersionRouter(batches=True)
    decision = router.route([
        {"jsonrpc": "2.0", "method": "note", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}},
        init(2, rid=2, **V2),
        {"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": "/"}},
    ])
    assert isinstance(decision, Select) and decision.version == 2
    assert [r["id"] for r in decision.replies] == [1]
    assert decision.rest == [{"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": "/"}}]


def test_batches_opt_in_answer_as_an_array() -> None:
    decision = VersionRouter(batches=True).route([{"jsonrpc": "2.0", "id": 1, "method": "x"}, init("bad", rid=2)])
    assert isinstance(decision, Reply)
    assert [(r["id"], r["error"]["code"]) for r in decision.message] == [(1, -32600), (2, -32602)]
    empty = VersionRouter(batches=True).route([])
    assert isinstance(empty, Reply) and empty.message["error"]["code"] == -32600


def test_a_router_needs_a_version() -> None:
    with pytest.raises(ValueError):
        VersionRouter((3,))
