"""`acplink inspect` shows MCP-over-ACP traffic as tool traffic (declared server, inner method and
tool, latency, outcome, notifications) and names each mix-up of the binding's two kinds of error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from acplink.tools.analysis import FINDING_CODES, analyze

ACPLINK = [sys.executable, "-m", "acplink.cli.main"]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


class _Trace:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = [{"type": "header", "format": "acplink-trace", "version": 1,
                                               "mono": 100.0, "wall": 1.7e9, "validated": True}]
        self.t = 100.0

    def msg(self, d: str, m: dict[str, Any], after: float = 0.01) -> None:
        self.t += after
        self.records.append({"type": "message", "seq": len(self.records), "dir": d, "mono": self.t,
                             "wall": 1.7e9 + self.t, "msg": {"jsonrpc": "2.0", **m}})

    def mcp(self, rid: int, server: str, inner_id: int, method: str, params: dict[str, Any] | None = None) -> None:
        self.msg("a2c", {"id": rid, "method": "mcp/message", "params": {
            "serverId": server, "requestId": inner_id, "method": method, "params": {**(params or {}), "_meta": META}}})


def _opened(servers: list[dict[str, Any]]) -> _Trace:
    tr = _Trace()
    tr.msg("c2a", {"id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    tr.msg("a2c", {"id": 1, "result": {"protocolVersion": 1, "agentCapabilities": {"mcpCapabilities": {"acp": True}}}})
    tr.msg("c2a", {"id": 2, "method": "session/new", "params": {"cwd": "/w", "mcpServers": servers}})
    tr.msg("a2c", {"id": 2, "result": {"sessionId": "s1"}})
    return tr


FILES = {"type": "acp", "name": "files", "serverId": "srv-files"}


def _good() -> _Trace:
    tr = _opened([FILES])
    tr.msg("c2a", {"id": 3, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}})
    tr.mcp(10, "srv-files", 1, "tools/list")
    tr.msg("c2a", {"id": 10, "result": {"result": {"tools": [{"name": "echo", "inputSchema": {}}]}}}, after=0.005)
    tr.mcp(11, "srv-files", 2, "tools/call", {"name": "echo", "arguments": {"text": "ping"}})
    for i in (1, 2):
        tr.msg("c2a", {"method": "mcp/message", "params": {"serverId": "srv-files", "requestId": 2,
                                                           "method": "notifications/progress",
                                                           "params": {"progressToken": "p", "progress": i}}})
    tr.msg("c2a", {"id": 11, "result": {"result": {"content": [{"type": "text", "text": "echo: ping"}]}}},
           after=0.03)
    tr.mcp(12, "srv-files", 3, "tools/call", {"name": "echo", "arguments": {}})
    tr.msg("c2a", {"id": 12, "result": {"error": {"code": -32602, "message": "text is required"}}})
    tr.msg("a2c", {"id": 3, "result": {"stopReason": "end_turn"}})
    return tr


def test_each_exchange_with_its_server_method_tool_latency_and_outcome() -> None:
    t = analyze(_good().records)
    assert [(e.server, e.session_id, e.method, e.tool, e.outcome, e.code, e.notifications) for e in t.mcp] == [
        ("files", "s1", "tools/list", None, "result", None, 0),
        ("files", "s1", "tools/call", "echo", "result", None, 2),
        ("files", "s1", "tools/call", "echo", "inner-error", -32602, 0)]
    assert [round(e.latency or 0, 3) for e in t.mcp] == [0.005, 0.05, 0.01]
    assert [f.code for f in t.findings if f.code.startswith("mcp")] == []  # an inner error is no finding
    data = t.to_json()
    assert data["mcp"][1]["tool"] == "echo" and round(data["mcp"][1]["latency"], 3) == 0.05


def _findings(tr: _Trace) -> list[str]:
    return [f.code for f in analyze(tr.records).findings if f.code.startswith("mcp")]


def test_an_mcp_error_sent_as_the_outer_error() -> None:
    tr = _opened([FILES])
    tr.mcp(10, "srv-files", 1, "resources/read", {"uri": "file:///x"})
    tr.msg("c2a", {"id": 10, "error": {"code": -32002, "message": "Resource not found"}})
    tr.mcp(11, "srv-files", 2, "tools/list")
    tr.msg("c2a", {"id": 11, "error": {"code": -33002, "message": "the handler failed"}})  # a binding error: fine
    assert _findings(tr) == ["mcp-inner-as-outer"]


def test_a_binding_error_sent_inside_the_carrier() -> None:
    tr = _opened([FILES])
    tr.mcp(10, "srv-files", 1, "tools/list")
    tr.msg("c2a", {"id": 10, "result": {"error": {"code": -33001, "message": "unknown server"}}})
    assert _findings(tr) == ["mcp-outer-as-inner"]


def test_answers_that_are_not_carriers() -> None:
    tr = _opened([FILES])
    tr.mcp(10, "srv-files", 1, "tools/list")
    tr.msg("c2a", {"id": 10, "result": {"tools": []}})  # the inner result, not wrapped
    tr.mcp(11, "srv-files", 2, "tools/list")
    tr.msg("c2a", {"id": 11, "result": {"error": {"message": "no code"}}})
    assert _findings(tr) == ["mcp-carrier", "mcp-carrier"]


def test_an_undeclared_server_and_a_late_notification() -> None:
    tr = _opened([FILES])
    tr.mcp(10, "srv-nobody-declared", 1, "tools/list")
    tr.msg("c2a", {"id": 10, "error": {"code": -33001, "message": "unknown server"}})
    tr.mcp(11, "srv-files", 2, "tools/list")
    tr.msg("c2a", {"id": 11, "result": {"result": {"tools": []}}})
    tr.msg("c2a", {"method": "mcp/message", "params": {"serverId": "srv-files", "requestId": 2,
                                                       "method": "notifications/progress", "params": {}}})
    assert _findings(tr) == ["mcp-unknown-server", "mcp-late-notification"]
    assert all(code in FINDING_CODES for code in _findings(tr))


def test_servers_declared_on_load_are_known() -> None:
    tr = _Trace()
    tr.msg("c2a", {"id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    tr.msg("a2c", {"id": 1, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}})
    tr.msg("c2a", {"id": 2, "method": "session/load", "params": {"sessionId": "old", "cwd": "/w",
                                                                "mcpServers": [FILES]}})
    tr.msg("a2c", {"id": 2, "result": {}})
    tr.mcp(10, "srv-files", 1, "tools/list")
    tr.msg("c2a", {"id": 10, "result": {"result": {"tools": []}}})
    t = analyze(tr.records)
    assert [(e.server, e.session_id) for e in t.mcp] == [("files", "old")]
    assert _findings(tr) == []


def test_inspect_shows_it(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in _good().records))
    out = subprocess.run([*ACPLINK, "inspect", str(trace)], capture_output=True, text=True, timeout=60,
                         env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"}).stdout
    section = out[out.index("MCP over ACP"):]
    assert section.startswith("MCP over ACP (3 mcp/message requests)")
    assert ("server files (srv-files, session s1; provided by the client): tools/list \u00d71, tools/call \u00d72; "
            "median 10 ms, slowest 50 ms") in section
    assert "#6 tools/list" in section and "→ result" in section
    assert "tools/call echo" in section and "(2 notifications)" in section
    assert "→ inner error -32602 text is required" in section


def test_devtools_lists_it_beside_the_findings(tmp_path: Path) -> None:
    from acplink.devtools.importer import import_trace
    from acplink.devtools.store import Store
    from acplink.devtools.views import findings_page

    tr = _good()
    tr.mcp(13, "srv-files", 4, "resources/read", {"uri": "file:///x"})
    tr.msg("c2a", {"id": 13, "error": {"code": -32002, "message": "Resource not found"}})
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in tr.records))
    store = Store(tmp_path / "d.sqlite")
    try:
        conn = import_trace(store, trace).conn
        assert conn is not None
        c = store.connection(conn)
        assert c is not None
        html = findings_page(store, c)
    finally:
        store.close()
    assert "mcp-inner-as-outer" in html  # the finding
    table = html[html.index('<table class="list" id="mcp">'):]
    assert table.count("<tr><td>") == 4
    assert "<td>tools/call</td><td>echo</td><td>50.0 ms</td><td>result</td><td>2</td>" in table
    assert "<td>inner-error -32602 text is required</td>" in table
    assert "<td>outer-error -32002 Resource not found</td>" in table


def test_ids_that_are_not_hashable_are_no_crash() -> None:
    # (a hostile trace: an id that is a JSON object, on an opener and on mcp/message)
    tr = _Trace()
    tr.msg("c2a", {"id": {"x": 1}, "method": "session/new", "params": {"cwd": "/w", "mcpServers": [FILES]}})
    tr.msg("a2c", {"id": {"x": 1}, "result": {"sessionId": "s1"}})
    tr.msg("a2c", {"id": [1], "method": "mcp/message", "params": {"serverId": "srv-files", "requestId": [2],
                                                               "method": "tools/list"}})
    tr.msg("c2a", {"id": [1], "result": {"result": {"tools": []}}})
    t = analyze(tr.records)
    assert [(e.server, e.session_id, e.outcome) for e in t.mcp] == [("files", "s1", "result")]
