"""The trace context of a ``proxy/successor`` envelope is the wrapped message's, in its own
``params._meta`` (a wrapped ``mcp/message``'s inner MCP request too); the envelope's ``_meta``
is hop-local and gets none. Over real pipes: the
test is the conductor of ``acplink proxy passthrough --otel``, writing JSON-RPC lines to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from receiver import OtlpReceiver

pytest.importorskip("opentelemetry.sdk")

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
OTHER = "0af7651916cd43dd8448eb211c80319c"
PARENT = "00f067aa0ba902b7"


def _send(proc: subprocess.Popen[str], msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    proc.stdin.flush()


def _read(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the proxy closed its output"
    msg: dict[str, Any] = json.loads(line)
    return msg


def test_the_context_travels_in_the_wrapped_message() -> None:
    with OtlpReceiver() as rx:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(rx.env())
        proc = subprocess.Popen([sys.executable, "-m", "acplink", "proxy", "passthrough", "--otel"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        try:
            # from the predecessor, a plain request with a context: forwarded wrapped, the context
            # (a child of ours) in the wrapped initialize's _meta, none in the envelope's
            _send(proc, {"id": 1, "method": "proxy/initialize", "params": {
                "protocolVersion": 1, "clientCapabilities": {}, "_meta": {"traceparent": f"00-{TRACE}-{PARENT}-01"}}})
            out = _read(proc)
            assert out["method"] == "proxy/successor" and out["params"]["method"] == "initialize"
            assert "traceparent" not in out["params"].get("_meta", {})
            version, trace_id, span_id, _ = out["params"]["params"]["_meta"]["traceparent"].split("-")
            assert (version, trace_id) == ("00", TRACE) and span_id != PARENT
            _send(proc, {"id": out["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
            assert _read(proc)["id"] == 1
            # from the successor, wrapped: the wrapped message's context is continued (not a
            # context in the envelope's hop-local _meta), and the plain message carries it on
            update = {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                                                    "content": {"type": "text", "text": "hi"}},
                      "_meta": {"traceparent": f"00-{OTHER}-{PARENT}-01"}}
            _send(proc, {"method": "proxy/successor", "params": {
                "method": "session/update", "params": update,
                "_meta": {"traceparent": f"00-{TRACE}-{PARENT}-01", "hop": 1}}})
            out = _read(proc)
            assert out["method"] == "session/update"
            assert out["params"]["_meta"]["traceparent"].split("-")[1] == OTHER
            # an MCP-over-ACP request forwarded wrapped: the inner MCP request gets it too
            mcp = {"connectionId": "c1", "method": "tools/list", "params": {"_meta": {"progressToken": 7}}}
            _send(proc, {"id": 2, "method": "mcp/message",
                         "params": {**mcp, "_meta": {"traceparent": f"00-{TRACE}-{PARENT}-01"}}})
            out = _read(proc)
            assert out["method"] == "proxy/successor" and out["params"]["method"] == "mcp/message"
            wrapped = out["params"]["params"]
            assert "traceparent" not in out["params"].get("_meta", {})
            assert wrapped["_meta"]["traceparent"] == wrapped["params"]["_meta"]["traceparent"]
            assert wrapped["_meta"]["traceparent"].split("-")[1] == TRACE
            assert wrapped["params"]["_meta"]["progressToken"] == 7  # (the other keys kept)
            _send(proc, {"id": out["id"], "result": {"tools": []}})
            assert _read(proc) == {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()
            proc.stderr.close()
        assert proc.returncode == 0
        # and its spans say so: the wrapped update consumed under the context it carried
        assert rx.wait_for(lambda r: any(s.kind == "CONSUMER" for s in r.spans()))
        [consumed] = [s for s in rx.spans() if s.kind == "CONSUMER"]
        assert (consumed.trace_id, consumed.parent_id) == (OTHER, PARENT)
