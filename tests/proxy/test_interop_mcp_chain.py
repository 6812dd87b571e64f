"""The official SDKs' clients (TypeScript 2.4.0 v1 and v2, Python 0.12.1) through ``acplink
conduct`` [context proxy, nested conductor [a proxy with its own MCP server, mcp-http]] to the
TypeScript agents (v1, v2, and the McpOverAcpCaller agent), the acplink demo and interop agents,
and an agent whose MCP client speaks only HTTP: a streamed prompt, a permission request back
through the proxies, ``session/cancel`` and ``$/cancel_request`` hop by hop, an extension method
with its ``_meta``, and the proxy's MCP tool called over ACP and through the HTTP polyfill.

Every agent here answers the *first* text block of a prompt, which the context proxy puts
before the client's: the context line is the command, so each reply also shows that the
context proxy's line reached the agent."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "interop"))

from peerenv import ACPLINK_AGENT, JS_DIR, NODE, PEERS, client_cmd, peer_params
from proxy_raw import HERE, PY, conduct, processes_with

per_peer = pytest.mark.parametrize("peer", peer_params())
needs_ts = pytest.mark.skipif(PEERS["ts-sdk"][2] is not None, reason=PEERS["ts-sdk"][2] or "")

MCP_PROXY = f"{PY} {HERE / 'components' / 'mcp_proxy.py'}"
#: a nested conductor: [the proxy serving "proxy-tools" over ACP, the mcp-http polyfill]
NESTED = f"{PY} -m acplink conduct --as-proxy --proxy '{MCP_PROXY}' --proxy acplink:mcp-http"
HTTP_AGENT = [PY, str(HERE / "components" / "http_mcp_agent.py")]
PROBE = [PY, str(HERE / "components" / "probe_agent.py")]
CALL_TOOL = 'call proxy-tools echo {"text": "ctx"}'


def ts_caller(protocol: int) -> list[str]:
    return [str(NODE), str(JS_DIR / "mcp_caller_agent.mjs"), "--protocol", str(protocol)]


def chain(context: str, agent: list[str]) -> list[str]:
    return conduct(f"acplink:context={context}", NESTED, agent=agent)


def _events(cmd: list[str], env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    import os

    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert not [e for e in events if e["event"] == "fatal"], events
    return events


def ts_client(protocol: int, cwd: Path, script: list[dict[str, Any]], command: list[str],
              env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return _events([str(NODE), str(JS_DIR / "chain_client.mjs"), "--protocol", str(protocol), "--cwd", str(cwd),
                    "--timeout", "30", "--script", json.dumps(script), "--", *command], env)


def turns(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [("".join(e["chunks"]), e["stopReason"]) for e in events if e["event"] == "turn"]


# -- the TypeScript client, v1 and v2 -----------------------------------------------------------


@needs_ts
@pytest.mark.parametrize("protocol", [1, 2])
def test_ts_client_proxys_tool_through_the_polyfill_to_an_http_only_agent(protocol: int, tmp_path: Path) -> None:
    marker = f"ACPLINK_TEST_CHAIN_{protocol}_{id(tmp_path)}"
    events = ts_client(protocol, tmp_path, [{"prompt": "x"}, {"prompt": "y"}], chain(CALL_TOOL, HTTP_AGENT),
                       env={marker: "1"})
    assert events[0]["result"]["protocolVersion"] == protocol
    # the agent's Python mcp client reached the proxy's MCP server over HTTP, twice
    assert turns(events) == [("tools: echo; progress: ; result: proxy echoes ctx", "end_turn")] * 2
    for _ in range(100):  # conductors, proxies, the agent: all gone once the client closed the chain
        if not processes_with(marker):
            break
        time.sleep(0.05)
    assert processes_with(marker) == []


@needs_ts
@pytest.mark.parametrize("protocol", [1, 2])
def test_ts_client_proxys_tool_called_by_the_ts_mcp_caller_agent(protocol: int, tmp_path: Path) -> None:
    # the TS agent has native acp: mcp-http passes through, McpOverAcpCaller calls the proxy's server
    events = ts_client(protocol, tmp_path, [{"prompt": "x"}], chain(CALL_TOOL, ts_caller(protocol)))
    assert turns(events) == [("progress: ; result: proxy echoes ctx", "end_turn")]
    servers = ts_client(protocol, tmp_path, [{"prompt": "x"}], chain("servers", ts_caller(protocol)))
    [(listed, _)] = turns(servers)
    assert listed.startswith("proxy-tools=mcp-proxy-proxy-tools-")


@needs_ts
def test_ts_v2_client_to_the_ts_v2_agent_streamed_and_cancelled(tmp_path: Path) -> None:
    agent = [str(NODE), str(JS_DIR / "v2_agent.mjs")]
    assert turns(ts_client(2, tmp_path, [{"prompt": "x"}], chain("hello", agent))) == [("Hello, world", "end_turn")]
    cancelled = ts_client(2, tmp_path, [{"prompt": "x", "cancel": True}], chain("wait", agent))
    assert turns(cancelled) == [("waiting", "cancelled")]


@needs_ts
def test_ts_v2_client_to_the_demo_agent_permission_and_cancel(tmp_path: Path) -> None:
    demo = [PY, "-m", "acplink", "demo-agent", "--delay", "0.005", "--store", str(tmp_path / "store")]
    events = ts_client(2, tmp_path, [{"prompt": "x"}], chain("write v2.txt hi", demo))
    # the permission request came back through both conductors and three proxies
    assert [e["title"] for e in events if e["event"] == "permission"] == ["Write v2.txt"]
    [(text, stop)] = turns(events)
    # (allowed; the TS client offers no workspace server, so the v2 demo says it cannot write)
    assert stop == "end_turn" and text.startswith("I could not write v2.txt")
    slow = ts_client(2, tmp_path, [{"prompt": "x", "cancel": True}], chain("slow 50", demo))
    [(_, stop)] = turns(slow)
    assert stop == "cancelled"


@needs_ts
def test_ts_v1_client_extension_meta_and_cancel_request_hop_by_hop(tmp_path: Path) -> None:
    params = {"x": [1, 2], "_meta": {"trace": "abc", "io.example/keep": {"n": 1}}}
    events = ts_client(1, tmp_path, [{"ext": "_probe/echo", "params": params},
                                     {"ext": "_probe/hang", "params": {}, "abortAfter": 0.3},
                                     {"ext": "_probe/echo", "params": {"after": True}}], chain("ctx", PROBE))
    ext = [e for e in events if e["event"] == "ext"]
    # the extension request and its _meta reached the agent unchanged, through every hop
    assert ext[0]["result"] == {"method": "_probe/echo", "params": params}
    # the SDK's cancellationSignal sent $/cancel_request; each hop cancelled the request it caused,
    # and the agent's own -32800 answer came back (not a conductor's: its message is the agent's)
    assert ext[1]["error"] == {"code": -32800, "message": "cancelled"}
    assert ext[2]["result"] == {"method": "_probe/echo", "params": {"after": True}}


@needs_ts
def test_ts_v1_client_to_the_ts_v1_agent_streamed_and_cancelled(tmp_path: Path) -> None:
    agent = [str(NODE), str(JS_DIR / "agent.mjs")]
    assert turns(ts_client(1, tmp_path, [{"prompt": "x"}], chain("hello", agent))) == [("Hello, world", "end_turn")]
    cancelled = ts_client(1, tmp_path, [{"prompt": "x", "cancel": True}], chain("wait", agent))
    [(_, stop)] = turns(cancelled)
    assert stop == "cancelled"


# -- the official clients with file system and terminals (TS v1 client.mjs, Python 0.12.1) -------


def _drive(peer: str, cwd: Path, command: list[str], *prompts: str, cancel_after: float | None = None
           ) -> list[dict[str, Any]]:
    cmd = [*client_cmd(peer), "--cwd", str(cwd), "--timeout", "30"]
    for p in prompts:
        cmd += ["--prompt", p]
    if cancel_after is not None:
        cmd += ["--cancel-after", str(cancel_after)]
    return _events([*cmd, "--", *command])


def _chunks(events: list[dict[str, Any]]) -> list[str]:
    return [e["update"]["content"]["text"] for e in events
            if e["event"] == "update" and e["update"]["sessionUpdate"] == "agent_message_chunk"]


@per_peer
def test_official_client_streamed_prompt_and_permission(peer: str, tmp_path: Path) -> None:
    events = _drive(peer, tmp_path, chain("full", ACPLINK_AGENT), "x")
    perm = [e for e in events if e["event"] == "permission"]
    assert len(perm) == 1 and perm[0]["answer"] == "allow"
    assert (tmp_path / "interop.txt").read_text() == "written by peer\n"
    assert _chunks(events) == ["start", "read:written by peer\n", "term:term-ok:0"]
    assert events[-1] == {"event": "stop", "stopReason": "end_turn"}


@per_peer
def test_official_client_session_cancel(peer: str, tmp_path: Path) -> None:
    events = _drive(peer, tmp_path, chain("wait", ACPLINK_AGENT), "x", cancel_after=0.5)
    assert _chunks(events) == ["waiting"]
    assert events[-1] == {"event": "stop", "stopReason": "cancelled"}


@per_peer
def test_official_client_proxys_tool_over_http_and_over_acp(peer: str, tmp_path: Path) -> None:
    http = _drive(peer, tmp_path, chain(CALL_TOOL, HTTP_AGENT), "x")
    assert _chunks(http) == ["tools: echo; progress: ; result: proxy echoes ctx"]
    if PEERS["ts-sdk"][2] is None:  # (the caller agent is the TS SDK's)
        acp = _drive(peer, tmp_path, chain(CALL_TOOL, ts_caller(1)), "x")
        assert _chunks(acp) == ["progress: ; result: proxy echoes ctx"]
