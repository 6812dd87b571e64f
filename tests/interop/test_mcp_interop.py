"""MCP-over-ACP interop with the official TypeScript SDKs (``@agentclientprotocol/sdk`` 2.4.0,
``@modelcontextprotocol/server`` and ``/client`` 2.4.0), over real pipes, on ACP v1
(``/unstable``) and v2 (``/experimental/v2/unstable``):

1. the TS client's provider (``McpOverAcpProvider``, a hand-written handler and an MCP-SDK
   server through ``fromMcpServer``) → an acplink agent calling them with ``ctx.mcp``;
2. acplink's provider (``client.mcp.register`` with an :class:`acplink.mcp.McpServer`) → a TS
   agent calling it with ``McpOverAcpCaller``, directly and through ``McpOverAcpHttpBridge``
   with the TS MCP client;
3. an acplink agent's :class:`acplink.agent.McpHttpBridge` ← the TS MCP client (Streamable
   HTTP), serving a TS provider's server and an acplink provider's.

The node peers are in ``tests/interop/js/mcp_*.mjs``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from peerenv import JS_DIR, NODE, ROOT

MCP_AGENT = [sys.executable, str(ROOT / "tests" / "mcp" / "mcp_agent.py")]


def _missing() -> str | None:
    if NODE is None:
        return "node not found on PATH (needed for the official TypeScript SDK peers)"
    for package in ("@agentclientprotocol/sdk", "@modelcontextprotocol/server", "@modelcontextprotocol/client"):
        if not (JS_DIR / "node_modules" / package).is_dir():
            return f"{package} not installed: (cd tests/interop/js && npm ci)"
    return None


missing = _missing()
pytestmark = [pytest.mark.skipif(missing is not None, reason=missing or ""),
              pytest.mark.parametrize("version", [1, 2])]


def run(cmd: list[str], timeout: float = 120) -> list[dict[str, Any]]:
    """Run a peer; its events (one JSON object per line), checked for a clean exit."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert not [e for e in events if e["event"] == "fatal"], events
    return events


def node(script: str, *args: str) -> list[str]:
    return [str(NODE), str(JS_DIR / script), *args]


def replies(events: list[dict[str, Any]]) -> dict[str, str]:
    return {e["prompt"]: e["text"] for e in events if e["event"] == "reply"}


# -- 1. the TS client provides, an acplink agent calls -------------------------------------------

PROMPTS_1 = ["tools raw", 'call raw echo {"text": "hi"}', "call raw fail", "cancel raw", "timeout raw",
             'request raw tools/list {"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-06-18"}}',
             "request nosuch tools/list",
             "tools sdk", 'call sdk echo {"text": "hi"}', "call sdk nope", "cancel sdk"]


def test_ts_provider_to_acplink_agent(version: int, tmp_path: Path) -> None:
    events = run(node("mcp_provider_client.mjs", "--protocol", str(version), "--cwd", str(tmp_path),
                      *[a for p in PROMPTS_1 for a in ("--prompt", p)], "--", *MCP_AGENT))
    init = events[0]
    assert init["protocolVersion"] == version
    caps = init["agentCapabilities"]
    assert (caps["mcpCapabilities"]["acp"] is True) if version == 1 else (caps["session"]["mcp"]["acp"] == {})
    got = replies(events)
    # the hand-written handler: list, a call with progress, an inner error, cancellation, timeout
    assert got["tools raw"] == "echo,fail,hang"
    assert got['call raw echo {"text": "hi"}'] == "progress: 1,2; result: echo: hi"
    assert got["call raw fail"] == "mcp-error: -32602 bad arguments"
    assert got["cancel raw"] == "cancelled"
    assert got["timeout raw"] == "timed out"
    assert [e["server"] for e in events if e["event"] == "cancelled"].count("raw") == 2  # ($/cancel_request)
    # the TS provider checks the inner version: an inner error, which acplink's caller returns as a value
    assert got[PROMPTS_1[5]] == ('mcp-error: -32022 Unsupported protocol version '
                                 '{"requested": "2025-06-18", "supported": ["2026-07-28"]}')
    # an outer binding error keeps its code
    assert got["request nosuch tools/list"].startswith("outer: -33001 ")
    # acplink's caller sent the metadata the TS provider requires, with a string requestId
    calls = [e for e in events if e["event"] == "call"]
    assert calls and all(c["protocolVersion"] == "2026-07-28" and c["clientCapabilities"] == {}
                         and c["clientInfo"] == {"name": "mcp-agent", "version": "1.0"}
                         and c["requestIdType"] == "string" for c in calls)
    # the MCP TypeScript SDK's server through fromMcpServer
    assert got["tools sdk"] == "echo,hang"
    assert got['call sdk echo {"text": "hi"}'] == "progress: 1,2; result: echo: hi"
    assert got["call sdk nope"] == "mcp-error: -32602 Tool nope not found"
    assert got["cancel sdk"] == "cancelled"
    assert [e["server"] for e in events if e["event"] == "cancelled"].count("sdk") == 1
    # each tools/call showed as an ACP tool call: started, then completed or failed
    tools = [(e["status"], e["title"]) for e in events if e["event"] == "tool"]
    assert ("in_progress", "echo") in tools and ("completed", None) in tools and ("failed", None) in tools
