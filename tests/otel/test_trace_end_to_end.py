"""One trace from the client's prompt turn to the agent's spans and to the agent's MCP-over-ACP
call, as real processes: ``acplink prompt --otel`` runs ``acplink demo-agent --otel`` (directly,
and behind ``acplink serve``), both export with OTLP/HTTP to a receiver this test starts on
loopback, and the spans it decodes must form one tree."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from receiver import OtlpReceiver, Span, stop

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("mcp")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

ACPLINK = [sys.executable, "-m", "acplink"]
MCP_SERVER = ROOT / "tests" / "mcp" / "mcp_tools_server.py"
TOOLS = f"tools={sys.executable} {MCP_SERVER}"


@pytest.fixture
def rx() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiver:
        yield receiver


def _env(rx: OtlpReceiver, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(rx.env())
    env["ACPLINK_DEMO_STORE"] = str(tmp_path / "store")
    return env


def _by(spans: list[Span], service: str, name: str, kind: str) -> list[Span]:
    return [s for s in spans if s.service == service and s.name == name and s.kind == kind]


def _check_one_trace(rx: OtlpReceiver, agent_service: str) -> None:
    def complete(r: OtlpReceiver) -> bool:
        spans = r.spans()
        return (bool(_by(spans, "acplink prompt", "session/prompt", "CLIENT"))
                and bool(_by(spans, agent_service, "session/prompt", "SERVER"))
                and bool(_by(spans, "acplink prompt", "mcp/message", "SERVER")))

    assert rx.wait_for(complete), [(s.service, s.name, s.kind) for s in rx.spans()]
    spans = rx.spans()
    [turn] = _by(spans, "acplink prompt", "session/prompt", "CLIENT")
    trace_id = turn.trace_id
    assert turn.parent_id == "" and turn.attributes["rpc.system"] == "jsonrpc"
    assert turn.attributes["acp.stop_reason"] == "end_turn" and turn.attributes["acp.session.id"]
    # the agent's side of the turn: a child of the client's span, in the same trace
    [served] = _by(spans, agent_service, "session/prompt", "SERVER")
    assert (served.trace_id, served.parent_id) == (trace_id, turn.span_id)
    assert served.attributes["acp.stop_reason"] == "end_turn"
    assert served.attributes["acp.session.id"] == turn.attributes["acp.session.id"]
    # the turn's updates are events of both turn spans
    assert any(name == "session/update" for name, _ in turn.events)
    assert {"agent_message_chunk", "tool_call"} <= {a["acp.update.kind"] for _, a in served.events}
    # the agent's MCP-over-ACP calls (tools/list, tools/call): children of its turn, each answered
    # by the client in a span whose parent is the agent's call
    calls = _by(spans, agent_service, "mcp/message", "CLIENT")
    answers = _by(spans, "acplink prompt", "mcp/message", "SERVER")
    assert len(calls) >= 2 and len(answers) == len(calls)
    assert {c.trace_id for c in calls} == {trace_id} and {c.parent_id for c in calls} == {served.span_id}
    assert {a.parent_id for a in answers} == {c.span_id for c in calls}
    assert {a.trace_id for a in answers} == {trace_id}
    # the updates: the agent's PRODUCER spans, the client's CONSUMER spans under them
    produced = {s.span_id for s in _by(spans, agent_service, "session/update", "PRODUCER") if s.trace_id == trace_id}
    consumed = [s for s in _by(spans, "acplink prompt", "session/update", "CONSUMER") if s.trace_id == trace_id]
    assert produced and consumed and {c.parent_id for c in consumed} <= produced
    # and nothing during the turn started a trace of its own (what the agent sends after
    # answering session/new, its commands, belongs to session/new's trace)
    opened = {s.trace_id for s in spans if s.name == "session/new"}
    within = [s for s in spans if s.attributes.get("acp.session.id") == turn.attributes["acp.session.id"]
              and turn.start_ns <= s.start_ns and s.end_ns <= turn.end_ns]
    assert {s.trace_id for s in within} <= {trace_id} | opened


def test_one_trace_from_the_turn_to_the_agents_mcp_call(rx: OtlpReceiver, tmp_path: Path) -> None:
    proc = subprocess.run([*ACPLINK, "prompt", "--otel", "--mcp", TOOLS, "mcp", "--",
                           *ACPLINK, "demo-agent", "--otel"], capture_output=True, text=True,
                          env=_env(rx, tmp_path), cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "tools: echo, count, sleep, crash; echo: echo: ping\n"  # (no telemetry on stdout)
    _check_one_trace(rx, "acplink demo-agent")
    # the metrics went the same way
    assert rx.wait_for(lambda r: ("acplink prompt", "rpc.client.duration") in r.got.metrics
                       and ("acplink demo-agent", "rpc.server.duration") in r.got.metrics)
    got = rx.got.metrics
    methods = {p["attributes"]["rpc.method"] for p in got[("acplink demo-agent", "rpc.server.duration")]}
    assert {"initialize", "session/new", "session/prompt", "mcp/message"} - {"mcp/message"} <= methods
    assert "mcp/message" in {p["attributes"]["rpc.method"] for p in got[("acplink demo-agent", "rpc.client.duration")]}
    # one turn on each side, ended end_turn; the session was open, and is not once the connection ended
    for service in ("acplink prompt", "acplink demo-agent"):
        turns = got[(service, "acp.turn.duration")]
        assert {p["attributes"]["acp.stop_reason"] for p in turns} == {"end_turn"} and turns[-1]["value"] == 1
        assert got[(service, "acp.sessions.active")][-1]["value"] == 0
        assert got[(service, "acp.bytes.sent")][-1]["value"] > 0 and got[(service, "acp.bytes.received")][-1]["value"] > 0
    # what one side sent, the other received
    assert got[("acplink prompt", "acp.bytes.sent")][-1]["value"] == got[("acplink demo-agent", "acp.bytes.received")][-1]["value"]


def test_the_trace_goes_through_acplink_serve(rx: OtlpReceiver, tmp_path: Path) -> None:
    env = _env(rx, tmp_path)
    serve = subprocess.Popen([*ACPLINK, "serve", "--otel", "--port", "0", "--ws"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline()
        assert line.startswith("ws:"), line
        url = line.split()[-1]
        proc = subprocess.run([*ACPLINK, "prompt", "--otel", "--url", url, "--mcp", TOOLS, "mcp"],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr
        # the agent behind the server is `acplink demo-agent --otel` (serve --otel's default)
        _check_one_trace(rx, "acplink demo-agent")
    finally:
        stop(serve)
