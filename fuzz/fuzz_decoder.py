"""Fuzz harness for acplink's decoder: NDJSON framing, the JSON-RPC envelope and params parsing.

Coverage-guided (atheris, ``pip install atheris``)::

    python fuzz/fuzz_decoder.py fuzz/seeds -max_total_time=180 -rss_limit_mb=2048 -timeout=10

(any libFuzzer flag works; give a scratch corpus directory first to keep what it finds:
``python fuzz/fuzz_decoder.py /tmp/corpus fuzz/seeds -max_total_time=600``).

Without atheris, random inputs from hypothesis for N seconds::

    python fuzz/fuzz_decoder.py --hypothesis --seconds 60

One input is one byte stream: byte 0 chooses the size limit, ``skip_noise`` and whether the
typed ``session/update`` fast path is on; byte 1 seeds how the rest is cut into chunks. The
target (:func:`check_input`) feeds the chunks to ``Engine.receive``, then ``receive_eof``, and
the whole input to ``Engine.receive_message``; every request and notification's params go
through ``acplink.schema.parse`` (lenient and strict) with the registry's params type. It
asserts that only ``AcpError`` escapes, that every reply the engine produces is one valid
JSON-RPC error line, and that the decoder never buffers more than the size limit.
See docs/robustness.md.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

import orjson

from acplink.errors import AcpError
from acplink.rpc.engine import Engine, IncomingNotification, IncomingRequest, IncomingResponse, Violation
from acplink.schema import _generated, method_info, parse

LIMITS = (64, 256, 1024, 4096, 65536)
#: the requests we have "sent" before the input arrives, so responses can match them
PENDING = ("session/prompt", "fs/read_text_file", "initialize")


try:
    import atheris  # type: ignore[import-not-found]
except ImportError:  # the fallback runner and the CI smoke test do not need it
    atheris = None


def _chunks(data: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(data):
        n = rng.choice((1, 2, 7, 64, 1000, 1 << 20)) if seed else 1 << 20
        out.append(data[i:i + n])
        i += n
    return out


def _check_reply(reply: bytes) -> None:
    assert reply.endswith(b"\n") and reply.count(b"\n") == 1, reply
    msg = orjson.loads(reply)
    assert msg["jsonrpc"] == "2.0" and type(msg["id"]) in (int, str, type(None)), msg
    err = msg.get("error")
    assert isinstance(err, dict) and type(err.get("code")) is int and type(err.get("message")) is str, msg


def _check_params(kind: str, method: str, params: Any) -> None:
    info = method_info(method, kind)
    if info is None:
        return
    for strict in (False, True):
        try:
            parse(info.params_type, params if params is not None else {}, strict=strict, name=info.params_name)
        except AcpError:
            pass


def _check_event(ev: Any, engine: Engine) -> None:
    if type(ev) is bytes:  # a deferred notification: decoded when its turn comes
        ev = engine.decode_deferred(ev)
    t = type(ev)
    if t is IncomingRequest:
        assert type(ev.id) in (int, str) and type(ev.method) is str
        _check_params("request", ev.method, ev.params)
    elif t is IncomingNotification:
        assert type(ev.method) is str
        if not ev.typed:
            _check_params("notification", ev.method, ev.params)
    elif t is IncomingResponse:
        assert (ev.error is None) or isinstance(ev.error, AcpError)
    else:
        assert t is Violation, ev
        if ev.reply is not None:
            _check_reply(ev.reply)
        assert ev.error is None or isinstance(ev.error, AcpError)


def new_engine(flags: int) -> Any:
    limit = LIMITS[flags % len(LIMITS)]
    engine = Engine(max_message_size=limit, skip_noise=bool(flags & 8), max_pending=16)
    if flags & 16:  # the client's typed fast path for session/update
        validate = _generated.SessionNotification.__pydantic_validator__.validate_json
        engine.add_fast_notification("session/update", validate)
    for method in PENDING:
        engine.request(method, None)
    return engine


def check_input(data: bytes) -> None:
    """The fuzz target: must return normally (AcpError from parsing is caught inside)."""
    if len(data) < 2:
        return
    flags, seed, stream = data[0], data[1], data[2:]
    engine = new_engine(flags)
    limit = engine.max_message_size
    for chunk in _chunks(stream, seed):
        for ev in engine.receive(chunk):
            _check_event(ev, engine)
        assert engine.decoder.buffered <= limit, (engine.decoder.buffered, limit)
    for ev in engine.receive_eof():
        _check_event(ev, engine)
    assert engine.decoder.buffered == 0
    # the same bytes as one framed message (WebSocket-style transports)
    framed = new_engine(flags)
    _check_event(framed.receive_message(stream), framed)


def TestOneInput(data: bytes) -> None:  # the name atheris looks for
    check_input(data)


# -- inputs without atheris ---------------------------------------------------------------------

_METHODS = ("session/update", "session/prompt", "session/new", "initialize", "fs/read_text_file",
            "session/request_permission", "terminal/create", "$/cancel_request", "_x/y", "session/cancel")


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 4 or r < 0.4:
        return rng.choice([None, True, False, 0, -1, 10**30, 1.5, "", "text", "s", "sess_1", "\u00e9\ud7ff",
                           rng.randint(-2**63, 2**63), "x" * rng.randint(0, 300)])
    if r < 0.7:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["type", "sessionId", "sessionUpdate", "content", "text", "_meta", "prompt", "update", "id",
            "toolCallId", "status", "outcome", "cwd", "mcpServers", "protocolVersion", "path", "requestId"]
    return {rng.choice(keys): _json_value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def _message(rng: random.Random) -> dict[str, Any]:
    kind = rng.random()
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind < 0.7:
        msg["method"] = rng.choice(_METHODS)
        if kind < 0.4:
            msg["id"] = rng.choice([1, 2, "a", 10**20, None, [1], 3.5])
        if rng.random() < 0.9:
            msg["params"] = _json_value(rng)
            if msg["method"] == "session/update" and rng.random() < 0.6:
                msg["params"] = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                                                             "content": {"type": "text", "text": "hi"}}}
    else:
        msg["id"] = rng.choice([1, 2, 3, 4, "x", None])
        msg["result" if rng.random() < 0.6 else "error"] = _json_value(rng)
    return msg


def _mangle(rng: random.Random, line: bytes) -> bytes:
    r = rng.random()
    if r < 0.2:
        return line[:rng.randint(0, len(line))]
    if r < 0.3:
        i = rng.randint(0, len(line))
        return line[:i] + bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4))) + line[i:]
    if r < 0.35:
        return b"[" * rng.randint(1, 3000) + line
    return line


def random_input(rng: random.Random) -> bytes:
    """One input for the smoke test and the fallback runner (no atheris needed)."""
    head = bytes([rng.getrandbits(8), rng.getrandbits(8)])
    if rng.random() < 0.15:
        return head + rng.randbytes(rng.randint(0, 3000))
    lines = [_mangle(rng, json.dumps(_message(rng)).encode()) for _ in range(rng.randint(1, 8))]
    sep = rng.choice([b"\n", b"\r\n", b"\n\n", b"\nnoise line\n"])
    return head + sep.join(lines) + (sep if rng.random() < 0.8 else b"")


def run_hypothesis(seconds: float) -> int:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    count = 0
    inputs = st.one_of(st.binary(min_size=2, max_size=4000),
                       st.randoms(use_true_random=False).map(random_input))

    @settings(max_examples=2000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=inputs)
    def run(data: bytes) -> None:
        nonlocal count
        count += 1
        check_input(data)

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run()
    return count


def main(argv: list[str]) -> None:
    if "--hypothesis" in argv:
        seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 60.0
        start = time.monotonic()
        n = run_hypothesis(seconds)
        print(f"fuzz_decoder (hypothesis): {n} inputs in {time.monotonic() - start:.0f} s, no failure")
        return
    if atheris is None:
        sys.exit("atheris is not installed (pip install atheris); or run with --hypothesis --seconds N")
    atheris.instrument_all()  # coverage feedback from every loaded Python function (acplink included)
    atheris.Setup(argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
