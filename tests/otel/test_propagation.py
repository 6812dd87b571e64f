"""The trace context a peer sends in ``params._meta``, over real pipes: the test is the client,
writing JSON-RPC lines to ``acplink demo-agent --otel``. A valid ``traceparent`` is continued
(the agent's span is its child; the agent's own call to the client carries the same trace and
the baggage, cut to the W3C limits); a malformed, oversized or non-string one is ignored: the
request is answered as any other and its span starts a new trace. And the carrier functions
themselves (limits, the splice into params)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from receiver import OtlpReceiver

from acplink.connection._propagation import (
    BAGGAGE_MAX_BYTES,
    BAGGAGE_MAX_MEMBERS,
    carrier_of,
    limit_baggage,
    limit_tracestate,
    with_carrier,
)

pytest.importorskip("opentelemetry.sdk")

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
GOOD = f"00-{TRACE}-{PARENT}-01"
#: 100 members of ~120 bytes: over both W3C limits (64 members, 8,192 bytes)
BIG_BAGGAGE = ",".join(f"k{i:03d}={'v' * 110}" for i in range(100))


class RawClient:
    """The client side, by hand: lines in, lines out; answers the agent's fs/read_text_file."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.agent_requests: list[dict[str, Any]] = []

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(msg) + b"\n")
        self.proc.stdin.flush()

    def call(self, rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the agent closed its output"
            msg = json.loads(line)
            if msg.get("id") == rid and "method" not in msg:
                return msg
            if msg.get("method") == "fs/read_text_file":
                self.agent_requests.append(msg)
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": "one\ntwo\n"}})


def _prompt(text: str, meta: Any) -> dict[str, Any]:
    return {"sessionId": "", "prompt": [{"type": "text", "text": text}], "_meta": meta}


def test_the_context_in_meta_is_continued_or_ignored(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["ACPLINK_DEMO_STORE"] = str(tmp_path / "store")
    with OtlpReceiver() as rx:
        env.update(rx.env())
        proc = subprocess.Popen([sys.executable, "-m", "acplink", "demo-agent", "--otel", "--delay", "0"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, cwd=tmp_path)
        try:
            c = RawClient(proc)
            init = c.call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}})
            assert "result" in init
            sid = c.call(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})["result"]["sessionId"]
            cases = {
                10: {"traceparent": GOOD, "tracestate": "vendor=abc", "baggage": BIG_BAGGAGE},
                11: {"traceparent": "00-not-a-trace-context-01"},
                12: {"traceparent": GOOD + "-" + "a" * 5000},  # oversized
                13: {"traceparent": 12345},
                14: {"traceparent": f"00-{'0' * 32}-{PARENT}-01"},  # the all-zero trace id is invalid
                15: "not an object",
            }
            for rid, meta in cases.items():
                params = _prompt("read notes.txt" if rid == 10 else "hello", meta)
                params["sessionId"] = sid
                answer = c.call(rid, "session/prompt", params)
                assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        finally:
            _, err = proc.communicate(timeout=30)  # (closes its stdin: the agent ends)
        assert proc.returncode == 0, err.decode()
        assert b"Traceback" not in err

        # the agent's call to the client in the traced turn: our trace, our baggage, cut whole
        [read] = c.agent_requests
        meta = read["params"]["_meta"]
        version, trace_id, span_id, flags = meta["traceparent"].split("-")
        assert (version, trace_id, flags) == ("00", TRACE, "01") and span_id != PARENT
        assert meta["tracestate"] == "vendor=abc"
        members = meta["baggage"].split(",")
        assert len(meta["baggage"].encode()) <= BAGGAGE_MAX_BYTES and len(members) <= BAGGAGE_MAX_MEMBERS
        assert members == BIG_BAGGAGE.split(",")[:len(members)] and len(members) >= 60

        def served(r: OtlpReceiver) -> dict[str, Any]:
            return {s.attributes.get("rpc.jsonrpc.request_id"): s for s in r.spans()
                    if s.name == "session/prompt" and s.kind == "SERVER"}

        assert rx.wait_for(lambda r: len(served(r)) == len(cases)), rx.spans()
        spans = served(rx)
        assert (spans["10"].trace_id, spans["10"].parent_id) == (TRACE, PARENT)
        ignored = [spans[str(rid)] for rid in cases if rid != 10]
        assert all(s.parent_id == "" and s.trace_id != TRACE for s in ignored)
        assert len({s.trace_id for s in ignored}) == len(ignored)  # (each a new trace)
        assert all(s.status_code != 2 for s in spans.values())  # (none is an error)
        # the read's span on the agent's side: a CLIENT span in our trace, under the turn
        [call] = [s for s in rx.spans() if s.name == "fs/read_text_file"]
        assert (call.kind, call.trace_id, call.parent_id, call.span_id) == ("CLIENT", TRACE, spans["10"].span_id, span_id)


# -- the carrier functions -----------------------------------------------------------------------


def test_carrier_of_applies_the_limits() -> None:
    assert carrier_of({"traceparent": GOOD}) == {"traceparent": GOOD}
    assert carrier_of({"traceparent": GOOD, "tracestate": 7, "baggage": ["x"]}) == {"traceparent": GOOD}
    assert carrier_of({"traceparent": "x" * 300}) is None
    assert carrier_of({"traceparent": None, "baggage": "a=1"}) is None
    assert carrier_of("nope") is None and carrier_of(None) is None and carrier_of({}) is None
    got = carrier_of({"traceparent": GOOD, "baggage": BIG_BAGGAGE})
    assert got is not None and got["baggage"] == limit_baggage(BIG_BAGGAGE)


def test_baggage_and_tracestate_are_cut_at_whole_members() -> None:
    small = "a=1,b=2"
    assert limit_baggage(small) == small
    cut = limit_baggage(BIG_BAGGAGE)
    assert cut is not None
    kept = cut.split(",")
    assert len(kept) == BAGGAGE_MAX_MEMBERS or len(cut) + len(kept[0]) > BAGGAGE_MAX_BYTES
    assert kept == BIG_BAGGAGE.split(",")[:len(kept)]
    one_huge = "big=" + "x" * 9000
    assert limit_baggage(one_huge) is None  # (never a partial member)
    assert limit_baggage(one_huge + ",small=1") is None  # (order kept: nothing after a dropped one)
    many = ",".join(f"m{i}=1" for i in range(70))
    assert limit_baggage(many) == ",".join(f"m{i}=1" for i in range(64))
    # tracestate: entries over 128 characters go first, then from the end, to 512 characters
    long_entry = "long=" + "y" * 200
    state = ",".join([long_entry] + [f"v{i}=" + "z" * 20 for i in range(30)])
    limited = limit_tracestate(state)
    assert limited is not None and len(limited) <= 512 and "long=" not in limited
    assert limited.split(",") == [f"v{i}=" + "z" * 20 for i in range(len(limited.split(",")))]
    assert limit_tracestate("a=1,b=2") == "a=1,b=2"


def test_with_carrier_keeps_every_other_key() -> None:
    carrier = {"traceparent": GOOD}
    assert orjson.loads(with_carrier(b'{"sessionId":"s"}', carrier) or b"") == {"_meta": carrier, "sessionId": "s"}
    assert orjson.loads(with_carrier(b"{}", carrier) or b"") == {"_meta": carrier}
    assert orjson.loads(with_carrier(None, carrier) or b"") == {"_meta": carrier}
    mine = b'{"_meta":{"mine":1,"traceparent":"old","baggage":"old=1"},"x":2}'
    assert orjson.loads(with_carrier(mine, carrier) or b"") == {"_meta": {"mine": 1, **carrier}, "x": 2}
    assert with_carrier(b"[1,2]", carrier) == b"[1,2]"
    assert with_carrier(b'{"a":1}', {}) == b'{"a":1}'
    # MCP-over-ACP: the inner MCP request's _meta too (its MCP keys kept)
    envelope = {"serverId": "s", "method": "tools/call", "params": {"name": "t", "_meta": {"mcp": 1}}}
    out = orjson.loads(with_carrier(orjson.dumps(envelope), carrier, inner=True) or b"")
    assert out["_meta"] == carrier and out["params"]["_meta"] == {"mcp": 1, **carrier}
