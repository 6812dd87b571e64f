"""One trace through ``acplink conduct`` and its proxies, as real processes: ``acplink prompt
--otel`` runs ``acplink conduct --otel`` with an in-process proxy (``acplink:passthrough``) and
an external one (``acplink proxy passthrough --otel``) in front of ``acplink demo-agent --otel``;
every process exports to a receiver this test starts on loopback. The client's turn, each hop
of the chain, the agent's turn and its MCP-over-ACP call (and the client's answer to it, back
through the chain) must be one trace, each span the child of the hop before it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from receiver import OtlpReceiver, Span

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("mcp")

ROOT = Path(__file__).resolve().parents[1].parent
ACPLINK = [sys.executable, "-m", "acplink"]
TOOLS = f"tools={sys.executable} {ROOT / 'tests' / 'mcp' / 'mcp_tools_server.py'}"
OUT = "tools: echo, count, sleep, crash; echo: echo: ping\n"


@pytest.fixture
def rx() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiver:
        yield receiver


def _run(rx: OtlpReceiver, tmp_path: Path, otel: bool) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(rx.env())  # (set either way: without --otel, nothing may be sent to it)
    env["ACPLINK_DEMO_STORE"] = str(tmp_path / "store")
    flag = ["--otel"] if otel else []
    external = shlex.join([*ACPLINK, "proxy", "passthrough", *flag])
    proc = subprocess.run([*ACPLINK, "prompt", *flag, "--mcp", TOOLS, "mcp", "--",
                           *ACPLINK, "conduct", *flag, "--proxy", "acplink:passthrough", "--proxy", external,
                           "--", *ACPLINK, "demo-agent", *flag],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == OUT  # (no telemetry on stdout, whatever the chain)


def _spans_of(span: Span, by_id: dict[str, Span]) -> list[Span]:
    """``span`` and each of its ancestors, up to the root (every parent was exported)."""
    out = [span]
    while out[-1].parent_id:
        assert out[-1].parent_id in by_id, f"{[(s.service, s.name) for s in out]}: a parent that was not exported"
        out.append(by_id[out[-1].parent_id])
    return out


def _find(spans: list[Span], service: str, name: str, kind: str) -> list[Span]:
    return [s for s in spans if (s.service, s.name, s.kind) == (service, name, kind)]


def test_one_trace_through_the_conductor_and_its_proxies(rx: OtlpReceiver, tmp_path: Path) -> None:
    _run(rx, tmp_path, otel=True)

    def complete(r: OtlpReceiver) -> bool:
        spans = r.spans()
        return (bool(_find(spans, "acplink prompt", "session/prompt", "CLIENT"))
                and bool(_find(spans, "acplink prompt", "mcp/message", "SERVER"))
                and bool(_find(spans, "acplink proxy", "session/prompt", "SERVER"))
                and len(_find(spans, "acplink demo-agent", "mcp/message", "CLIENT")) >= 2)

    assert rx.wait_for(complete), sorted({(s.service, s.name, s.kind) for s in rx.spans()})
    spans = rx.spans()
    by_id = {s.span_id: s for s in spans}
    [turn] = _find(spans, "acplink prompt", "session/prompt", "CLIENT")
    assert turn.parent_id == ""
    trace_id = turn.trace_id
    # the agent's turn descends from the client's through each hop, in chain order: the
    # conductor's upstream, the in-process proxy (served in the conductor), the conductor's hop
    # to the external proxy, that proxy's own span, and the conductor's hop to the agent
    [served] = _find(spans, "acplink demo-agent", "session/prompt", "SERVER")
    assert served.trace_id == trace_id
    down = [(s.service, s.name, s.kind) for s in _spans_of(served, by_id)]
    assert down[0] == ("acplink demo-agent", "session/prompt", "SERVER")
    assert down[1] == ("acplink conduct", "session/prompt", "CLIENT")  # (the hop to the agent)
    assert down[-1] == ("acplink prompt", "session/prompt", "CLIENT")
    assert down[-2] == ("acplink conduct", "session/prompt", "SERVER")  # (the conductor's upstream)
    path = [(service, name) for service, name, _ in reversed(down)]
    external = path.index(("acplink proxy", "session/prompt"))
    assert ("acplink proxy", "proxy/successor") in path[external:]  # (it forwards to its successor)
    # the in-process proxy's hop comes before the external one: a SERVER span in the conductor
    # (side "proxy") that is not the conductor's upstream
    inprocess = [s for s in _spans_of(served, by_id) if s.service == "acplink conduct"
                 and s.name == "session/prompt" and s.kind == "SERVER" and s.attributes["acp.side"] == "proxy"]
    assert len(inprocess) == 1
    assert down.index(("acplink conduct", "session/prompt", "SERVER")) > down.index(("acplink proxy", "session/prompt", "SERVER"))
    # the agent's MCP-over-ACP calls are children of its turn; each is answered by the client in
    # a span of the same trace that descends from that call, through both proxies on the way up
    calls = _find(spans, "acplink demo-agent", "mcp/message", "CLIENT")
    assert {c.trace_id for c in calls} == {trace_id} and {c.parent_id for c in calls} == {served.span_id}
    answers = _find(spans, "acplink prompt", "mcp/message", "SERVER")
    assert len(answers) == len(calls) and {a.trace_id for a in answers} == {trace_id}
    call_ids = {c.span_id for c in calls}
    for answer in answers:
        up = _spans_of(answer, by_id)
        [call] = [s for s in up if s.span_id in call_ids]
        between = up[:up.index(call)]
        assert ("acplink proxy", "mcp/message", "CLIENT") in {(s.service, s.name, s.kind) for s in between}
        assert any(s.service == "acplink conduct" and s.attributes["acp.side"] == "proxy" for s in between)
    # the agent's updates reach the client in the same trace (consumed under a producer's span)
    consumed = [s for s in _find(spans, "acplink prompt", "session/update", "CONSUMER") if s.trace_id == trace_id]
    assert consumed and all(by_id[c.parent_id].kind == "PRODUCER" for c in consumed)


def test_without_otel_nothing_is_sent(rx: OtlpReceiver, tmp_path: Path) -> None:
    _run(rx, tmp_path, otel=False)  # (the processes have exited: whatever they exported was sent)
    assert rx.got.requests == 0 and rx.spans() == []
