"""The corpus of ``test_state_corpus.py`` replayed through LIVE connections: the fourth judge.

(d) the agent side: each trace's client messages are written, as they are, to a real
    :class:`~acplink.AgentApp` connection over an in-memory pipe (its prompt turns run until the
    trace ends them), and what the agent does with each request that the session rules decide
    (a request the machine refuses, every ``session/prompt``) is recorded: refused (with which
    error), started, or held. It must be the machine's verdict, reason and all;
(e) the client side: a real :class:`~acplink.Client` is driven through the trace (initialize,
    the session openers, prompts, close) against a scripted agent that answers with the trace's
    own messages; each ``session/update`` the client drops as breaking a session rule is logged
    with the rule's id, and those ids are the machine's update findings.

The machine and the live sides call the same rule functions (``protocol/rules.py``,
``TurnRules.prompt_action``): this test is what keeps them the same decisions.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest
from test_state_corpus import EXPECTED, ROLE, _records

from acplink import AgentApp, PromptContext, UsageError
from acplink.client import Client
from acplink.protocol.state import ConnectionState, TurnEnded
from acplink.transports.memory import memory_pair

#: the error code a live agent refuses with, per rule
CODES = {"before-initialize": -32600, "prompt-while-running": -32600, "prompt-unknown-session": -32002}
#: the rules whose verdict is a refusal of a client request
REFUSALS = set(CODES)
#: the update rules the live client enforces (it drops the update, naming the rule)
UPDATE_RULES = {"update-unknown-session", "update-after-close"}


class Wire:
    """The raw end of the pipe: writes messages, keeps every message received."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.buf = b""
        self.log: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            if line.strip():
                self.log.append(orjson.loads(line))
                self.arrived.set()

    def message_received(self, message: bytes, meta: Any = None) -> None:
        self.data_received(message.rstrip(b"\n") + b"\n")

    def eof_received(self, exc: BaseException | None) -> None: ...

    def write_paused(self) -> None: ...

    def send_failed(self, exc: BaseException) -> None: ...

    def send(self, msg: Any) -> None:
        self.transport.write(orjson.dumps(msg) + b"\n")

    async def until(self, what: Any, *, steps: int = 2000) -> Any:
        """Let the other side run until ``what()`` is true (its value): a bounded number of
        loop turns, no clock."""
        for _ in range(steps):
            got = what()
            if got:
                return got
            await asyncio.sleep(0)
        raise AssertionError("the live side never got there")

    def answer(self, rid: Any) -> dict[str, Any] | None:
        return next((m for m in self.log if m.get("id") == rid and "method" not in m), None)


def _versions(version: Any) -> tuple[int, ...]:
    return (1, 2) if version == 2 else (1,)


async def _agent_replay(name: str) -> tuple[list[tuple[int, str, Any]], list[tuple[int, str, Any]]]:
    """(what the machine decided, what the live agent did) for each decided client request:
    (trace number, "refuse:<rule>" / "start" / "hold", the refusal's reason or error)."""
    app = AgentApp("corpus", protocols=_versions(EXPECTED[name]["version"]))
    real_create = app.create_session
    app.create_session = lambda cwd, **kw: real_create(cwd, **{**kw, "session_id": "s"})  # type: ignore[method-assign]
    releases: list[asyncio.Event] = []  # the live turns, in the order they started

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        go = asyncio.Event()
        releases.append(go)
        await go.wait()  # until the trace ends this turn

    a, b = memory_pair()
    conn = app.connection(a)
    wire = Wire(b)
    await b.start(wire)
    await conn.start()
    state = ConnectionState()
    judged: list[tuple[int, str, Any]] = []
    lived: list[tuple[int, str, Any]] = []
    live_turns: dict[Any, asyncio.Event] = {}  # trace prompt id -> its live turn
    try:
        for rec in _records(name):
            if rec.get("type") != "message":
                continue
            msg, role, seq = rec["msg"], ROLE[rec["dir"]], rec["seq"]
            verdict = state.process(role, msg, seq)
            if role == "agent":  # the trace's agent: what it ends, the live one ends too
                for ev in verdict.events:
                    go = live_turns.pop(ev.request_id, None) if isinstance(ev, TurnEnded) else None
                    if go is not None:
                        n = len(wire.log)
                        go.set()
                        await wire.until(lambda n=n: len(wire.log) > n)  # (its answer, or its idle state)
                continue
            if "method" not in msg:
                continue  # (answers to requests the live agent does not make)
            method, rid = msg["method"], msg.get("id")
            wire.send(msg)
            if rid is None:
                continue
            rule = next((f.id for f in verdict.findings if f.id in REFUSALS), None)
            is_prompt = method == "session/prompt"
            if verdict.refusal is None and not is_prompt:
                await wire.until(lambda rid=rid: wire.answer(rid))
                continue
            judged.append((seq, f"refuse:{rule}" if verdict.refusal is not None else
                           "hold" if any(getattr(e, "held", False) for e in verdict.events) else "start",
                           verdict.refusal))
            started, held = len(releases), _held(conn)

            def outcome(rid: Any = rid, started: int = started, held: int = held) -> Any:
                ans = wire.answer(rid)
                if ans is not None and "error" in ans:
                    return ans
                if len(releases) > started:
                    return "start"
                if _held(conn) > held:
                    return "hold"
                return None

            got = await wire.until(outcome)
            if isinstance(got, dict):
                err = got["error"]
                code = next((r for r, c in CODES.items() if c == err["code"] and r == rule), err["code"])
                lived.append((seq, f"refuse:{code}", err["message"]))
            else:
                lived.append((seq, got, None))
                if got == "start":
                    live_turns[rid] = releases[-1]
                else:  # (held: it starts when the running turn ends)
                    live_turns[rid] = await _started_later(wire, releases, started)
    finally:
        for go in releases:
            go.set()
        for task in list(_RELAYS):
            task.cancel()
        await conn.aclose()
    return judged, lived


def _held(conn: Any) -> int:
    lifecycle = getattr(conn, "lifecycle", None)
    return sum(len(st.held) for st in lifecycle.sessions.values()) if lifecycle is not None else 0


async def _started_later(wire: Wire, releases: list[asyncio.Event], started: int) -> asyncio.Event:
    """The live turn of a held prompt (it starts once the turn before it ends): a proxy event
    that, set, releases it as soon as it exists."""
    proxy = asyncio.Event()

    async def relay() -> None:
        await proxy.wait()
        await wire.until(lambda: len(releases) > started)
        releases[started].set()

    task = asyncio.get_running_loop().create_task(relay())
    _RELAYS.add(task)
    task.add_done_callback(_RELAYS.discard)
    return proxy


_RELAYS: set[asyncio.Task[None]] = set()


def _reason(message: str) -> str:
    """An error message without its JSON-RPC prefix (``Invalid request: ...``)."""
    return message.split(": ", 1)[1] if message.startswith("Invalid request: ") else message


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_d_the_live_agent_decides_as_the_machine(name: str) -> None:
    judged, lived = await _agent_replay(name)
    assert [(seq, what) for seq, what, _ in lived] == [(seq, what) for seq, what, _ in judged]
    for (_seq, what, why), (_, _, error) in zip(judged, lived, strict=True):
        if what in ("refuse:prompt-while-running", "refuse:prompt-unknown-session"):
            assert _reason(error) == why  # the same reason: one rule, one sentence
        elif what == "refuse:before-initialize":
            assert "initialize" in error


def test_the_live_replay_covers_every_decision() -> None:
    whats = {w for name in EXPECTED for _, w, _ in asyncio.run(_agent_replay(name))[1]}
    assert whats == {"start", "hold", "refuse:before-initialize", "refuse:prompt-while-running",
                     "refuse:prompt-unknown-session"}


# -- (e) the client side ------------------------------------------------------------------------

async def _client_replay(name: str, caplog: pytest.LogCaptureFixture) -> tuple[list[str], list[str]]:
    """(the machine's update findings, the rules the live client named for the updates it
    dropped), for a trace whose client is an acplink ``Client``."""
    version = EXPECTED[name]["version"]
    a, b = memory_pair()
    client = Client(a, protocol=version, fs=False, terminal=False)
    agent = Wire(b)
    await b.start(agent)
    await client.start(initialize=False)
    state = ConnectionState()
    judged: list[str] = []
    ids: dict[Any, Any] = {}  # trace request id -> the live client's
    pending: list[asyncio.Task[Any]] = []
    seen = 0

    async def next_request(method: str) -> Any:
        nonlocal seen
        while True:
            await agent.until(lambda n=seen: len(agent.log) > n)
            msg = agent.log[seen]
            seen += 1
            if msg.get("method") == method and "id" in msg:
                return msg["id"]

    try:
        for rec in _records(name):
            if rec.get("type") != "message":
                continue
            msg, role = rec["msg"], ROLE[rec["dir"]]
            verdict = state.process(role, msg, rec["seq"])
            judged += [f.id for f in verdict.findings if f.id in UPDATE_RULES]
            if role == "client":
                method = msg.get("method")
                if "id" not in msg or method is None:
                    continue
                call = _client_call(client, method, msg.get("params") or {})
                if call is None:
                    continue
                pending.append(asyncio.get_running_loop().create_task(call))
                ids[msg["id"]] = await next_request(method)
                continue
            if "method" in msg and "id" not in msg:  # an update: written as it is
                agent.send(msg)
            elif "method" not in msg and msg.get("id") in ids:  # an answer to the live client
                agent.send({**msg, "id": ids.pop(msg["id"])})
            else:
                continue
            for _ in range(50):  # (the client handles it: a bounded number of loop turns)
                await asyncio.sleep(0)
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await client.aclose()
    named = [r.getMessage().rsplit("(", 1)[1].rstrip(")") for r in caplog.records
             if "ignored (update-" in r.getMessage()]
    return judged, named


def _client_call(client: Client, method: str, params: dict[str, Any]) -> Any:
    """The ``Client`` API call that sends the trace's request (None: not one a Client makes)."""
    if method == "initialize":
        return client.initialize()
    if method == "session/new":
        return client.new_session(params.get("cwd"))
    sess = client.sessions.get(params.get("sessionId", ""))
    if method == "session/prompt" and sess is not None:
        try:
            return sess.prompt(params["prompt"][0]["text"]).result()
        except UsageError:  # (a second prompt: the Session refuses it itself, see test_session_rules)
            return None
    if method == "session/close" and sess is not None:
        return sess.close()
    return None


#: the traces a Client can drive (a client that sends what the trace's client sends)
CLIENT_TRACES = sorted(n for n in EXPECTED if "before_initialize" not in n and n != "unknown_version")


@pytest.mark.parametrize("name", CLIENT_TRACES)
async def test_e_the_live_client_drops_what_the_machine_finds(name: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="acplink")
    judged, named = await _client_replay(name, caplog)
    assert named == judged


def test_the_client_replay_covers_the_update_rules(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="acplink")
    found: set[str] = set()
    for name in CLIENT_TRACES:
        caplog.clear()
        found |= set(asyncio.run(_client_replay(name, caplog))[1])
    assert found == UPDATE_RULES
