"""Trace analysis: records → a timeline (sessions, turns, tool calls, permissions, errors) and
findings (schema violations and protocol-order violations).

The session rules are not restated here: every record goes through the protocol's state
machine (:class:`acplink.protocol.state.ConnectionState`, the version the trace's
``initialize`` agreed on), whose verdicts give the findings, and whose events (session opened,
turn started and ended, update, question asked and answered) build the timeline.

Used by ``acplink inspect``, devtools and the conformance checker, which maps finding codes to
requirement ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..protocol.base import get_protocol, known_versions
from ..protocol.initialize import agent_info, client_info
from ..protocol.messages import message_kind
from ..protocol.state import (
    FINDINGS,
    ConnectionState,
    Event,
    QuestionAnswered,
    QuestionAsked,
    Ready,
    SessionOpened,
    TurnEnded,
    TurnStarted,
    Update,
)
from .mcp_traffic import MCP_FINDINGS, McpExchange, McpTraffic
from .validate import protocol_after, validate_message

__all__ = ["FINDING_CODES", "Finding", "Timeline", "TraceSession", "TraceTurn", "analyze", "expected_error"]

#: finding codes → what they mean (the session rules' are the state machine's)
FINDING_CODES = {
    "schema": "a message does not match the ACP schema",
    "schema-strict": "a message matches the schema only thanks to its leniency rules",
    "invalid-json": "a line that is not JSON",
    **FINDINGS,
    **MCP_FINDINGS,
}


#: error codes of "the resource does not exist" (ACP's -32002; some clients answer a missing
#: file with an internal error whose message says so)
_NOT_FOUND_CODE = -32002
_NOT_FOUND_WORDS = ("not found", "no such file", "does not exist", "enoent")


def expected_error(method: str | None, error: Any) -> bool:
    """Whether an error response is an expected one, shown as informational rather than as an
    error: a ``fs/read_text_file`` of a file that does not exist (an agent looks before it
    writes a new file, or probes for an optional one). Every other error is an error."""
    if method is None or not isinstance(error, dict) or not any(
            get_protocol(v).is_(method, "read_text_file") for v in known_versions()):
        return False
    if error.get("code") == _NOT_FOUND_CODE:
        return True
    text = str(error.get("message") or "").lower()
    return any(w in text for w in _NOT_FOUND_WORDS)


@dataclass
class Finding:
    code: str
    message: str
    seq: int | None = None
    dir: str | None = None
    mono: float | None = None

    @property
    def is_schema(self) -> bool:
        return self.code in ("schema", "schema-strict", "invalid-json")


@dataclass
class TraceToolCall:
    id: str
    session_id: str
    title: str | None = None
    kind: str | None = None
    statuses: list[str] = field(default_factory=list)
    first: float = 0.0
    last: float = 0.0


@dataclass
class Permission:
    session_id: str | None
    tool_call_id: str | None
    options: list[str]
    asked: float
    answer: str | None = None
    answered: float | None = None


@dataclass
class TraceTurn:
    session_id: str
    request_id: Any
    start: float
    end: float | None = None
    stop_reason: str | None = None
    error: str | None = None
    updates: dict[str, int] = field(default_factory=dict)
    tool_calls: list[str] = field(default_factory=list)
    #: the prompt's text (other content blocks as ``[type uri]``) and the agent's reply text
    prompt: str = ""
    reply: str = ""
    #: the turn in order: ``["prompt" | "reply" | "thought", text]`` and ``["tool", tool call id]``
    events: list[list[str]] = field(default_factory=list)

    @property
    def duration(self) -> float | None:
        return None if self.end is None else self.end - self.start

    def add(self, kind: str, text: str) -> None:
        """Text of ``kind`` (prompt, reply or thought) joins the previous piece of that kind.
        The pieces are collected and joined by :meth:`settle` (the analysis calls it at the end):
        adding to a string piece by piece is quadratic, minutes for a long streamed reply."""
        pending: dict[str, list[str]] = self.__dict__.setdefault("_pieces", {})
        if kind == "reply":
            pending.setdefault("reply", [self.reply]).append(text)
        if self.events and self.events[-1][0] == kind and kind != "tool":
            pending.setdefault("last", [self.events[-1][1]]).append(text)
        else:
            self.settle(reply=False)
            self.events.append([kind, text])

    def settle(self, reply: bool = True) -> None:
        """Join the pieces :meth:`add` collected into the last event (and :attr:`reply`)."""
        pending: dict[str, list[str]] = self.__dict__.get("_pieces") or {}
        if "last" in pending:
            self.events[-1][1] = "".join(pending.pop("last"))
        if reply and "reply" in pending:
            self.reply = "".join(pending.pop("reply"))


@dataclass
class TraceSession:
    id: str
    created: float
    how: str
    cwd: str | None = None
    turns: list[TraceTurn] = field(default_factory=list)
    updates: dict[str, int] = field(default_factory=dict)


@dataclass
class Timeline:
    header: dict[str, Any] = field(default_factory=dict)
    start: float = 0.0
    end: float = 0.0
    messages: int = 0
    by_dir: dict[str, int] = field(default_factory=dict)
    protocol_version: Any = None
    agent_info: Any = None
    client_info: Any = None
    client_capabilities: Any = None
    agent_capabilities: Any = None
    sessions: dict[str, TraceSession] = field(default_factory=dict)
    tool_calls: dict[str, TraceToolCall] = field(default_factory=dict)
    permissions: list[Permission] = field(default_factory=list)
    #: error responses: seq, dir, method, code, message and severity ("info" for an
    #: :func:`expected_error`, else "error")
    errors: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: MCP-over-ACP: each ``mcp/message`` exchange (server, inner method, tool, latency, outcome)
    mcp: list[McpExchange] = field(default_factory=list)
    exit_code: Any = None
    #: the trace's last line was cut off (a killed recorder): ``{"line": N, "size": BYTES}``
    cut: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for sess in out["sessions"].values():
            for t in sess["turns"]:
                t["duration"] = None if t["end"] is None else t["end"] - t["start"]
        out["sessions"] = list(out["sessions"].values())
        out["tool_calls"] = list(out["tool_calls"].values())
        for ex, data in zip(self.mcp, out["mcp"], strict=True):
            data["latency"] = ex.latency
        return out


class _Analyzer:
    """Feeds the records through the protocol's state machine and builds the timeline from its
    events; its findings are the machine's, plus the schema checks of the records."""

    def __init__(self) -> None:
        self.t = Timeline()
        self.state = ConnectionState()
        #: (session id, request id key) → the turn of each prompt not ended yet
        self.prompts: dict[tuple[str, Any], TraceTurn] = {}
        #: the protocol the records' schema is judged by (follows initialize)
        self.protocol = self.state.protocol
        #: the trace's header says its messages were checked as they were recorded
        self.checked = False
        self.mcp = McpTraffic()

    def find(self, code: str, message: str, rec: dict[str, Any]) -> None:
        self.t.findings.append(Finding(code, message, rec.get("seq"), rec.get("dir"), rec.get("mono")))

    def run(self, records: list[dict[str, Any]]) -> Timeline:
        t = self.t
        for rec in records:
            typ = rec.get("type")
            if typ == "message":
                self.message(rec)
            elif typ == "header":
                t.header = {k: v for k, v in rec.items() if k not in ("type",)}
                t.start = float(rec.get("mono") or 0.0)
                # (recorded with schema checks: a record without violations has none)
                self.checked = rec.get("validated") is True
            elif typ == "exit":
                t.exit_code = rec.get("code")
            elif typ == "cut":
                t.cut = {"line": rec.get("line"), "size": rec.get("size")}
            mono = rec.get("mono")
            if isinstance(mono, (int, float)) and mono > t.end:
                t.end = float(mono)
        if not t.start and records:
            t.start = min((float(r["mono"]) for r in records if isinstance(r.get("mono"), (int, float))), default=0.0)
        for sess in t.sessions.values():
            for turn in sess.turns:
                turn.settle()
        t.mcp = self.mcp.exchanges
        for role, rid, method, seq in self.state.unanswered():
            d = _DIR[role]
            t.findings.append(Finding("unanswered", f"{method} request {rid!r} ({d}) never answered", seq, d))
        return t

    def message(self, rec: dict[str, Any]) -> None:
        t = self.t
        t.messages += 1
        d = str(rec.get("dir"))
        t.by_dir[d] = t.by_dir.get(d, 0) + 1
        if "msg" not in rec:
            self.find("invalid-json", f"not JSON: {str(rec.get('raw', ''))[:80]!r}", rec)
            return
        msg = rec["msg"]
        role = _ROLE.get(d, "agent")
        kind = message_kind(msg)
        answered = self.state.answering(role, msg.get("id")) if kind == "response" else None
        violations = rec.get("violations")
        if violations is None and not self.checked:  # (a record without schema checks: checked here)
            self.protocol = protocol_after(msg, answered, self.protocol)
            violations = validate_message(msg, answered, self.protocol)
        for v in violations or ():
            code = "schema-strict" if v.get("strict_only") else ("invalid-json" if "invalid JSON" in
                                                                 str(v.get("message")) else "schema")
            self.find(code, f"{v.get('path')}: {v.get('message')}", rec)
        if not isinstance(msg, dict):
            return
        verdict = self.state.process(role, msg, int(rec.get("seq") or 0))
        for f in verdict.findings:
            self.find(f.id, f.message, rec)
        for code, text in self.mcp.message(d, msg, _mono(rec), rec.get("seq")):
            self.find(code, text, rec)
        if kind == "request":
            self.request(rec, msg, verdict.events)
        elif kind == "response" and "error" in msg and (answered is not None or msg.get("id") is None):
            err = _obj(msg.get("error"))
            self.t.errors.append({"seq": rec.get("seq"), "dir": d, "method": answered, "code": err.get("code"),
                                  "message": err.get("message"),
                                  "severity": "info" if expected_error(answered, msg.get("error")) else "error"})
        for ev in verdict.events:
            on = _ON.get(type(ev))
            if on is not None:
                on(self, rec, msg, ev)

    # -- what the machine's events mean for the timeline -------------------------------------

    def request(self, rec: dict[str, Any], msg: dict[str, Any], events: tuple[Event, ...]) -> None:
        proto = self.state.protocol
        if proto.is_(msg["method"], "initialize"):
            self.t.client_capabilities = self.state.client_capabilities
            self.t.client_info = client_info(msg.get("params"))

    def ready(self, rec: dict[str, Any], msg: dict[str, Any], ev: Ready) -> None:
        result = msg["result"]
        self.t.protocol_version = ev.agreed
        self.t.agent_capabilities = self.state.agent_capabilities
        self.t.client_capabilities = self.state.client_capabilities
        self.t.agent_info = agent_info(result)

    def opened(self, rec: dict[str, Any], msg: dict[str, Any], ev: SessionOpened) -> None:
        self.t.sessions.setdefault(ev.session_id, TraceSession(ev.session_id, _mono(rec), ev.method.split("/")[-1],
                                                               ev.cwd))

    def started(self, rec: dict[str, Any], msg: dict[str, Any], ev: TurnStarted) -> None:
        turn = TraceTurn(ev.session_id, ev.request_id, _mono(rec))
        turn.prompt = _blocks_text(_obj(msg.get("params")).get("prompt"))
        turn.add("prompt", turn.prompt)
        if _hashable(ev.request_id):
            self.prompts[(ev.session_id, ev.request_id)] = turn
        sess = self.t.sessions.get(ev.session_id)
        if sess is not None:
            sess.turns.append(turn)

    def ended(self, rec: dict[str, Any], msg: dict[str, Any], ev: TurnEnded) -> None:
        turn = self.prompts.pop((ev.session_id, ev.request_id), None) if _hashable(ev.request_id) else None
        if turn is None:
            return
        turn.end = _mono(rec)
        if ev.error is not None:
            turn.error = str(ev.error.get("message"))
        turn.stop_reason = ev.stop_reason

    def update(self, rec: dict[str, Any], msg: dict[str, Any], ev: Update) -> None:
        sid, kind = ev.session_id, ev.kind
        upd = _obj(msg["params"].get("update"))
        sess = self.t.sessions.get(sid)
        if sess is not None:
            sess.updates[kind] = sess.updates.get(kind, 0) + 1
        turn = self.prompts.get((sid, ev.turn)) if ev.turn is not None and _hashable(ev.turn) else None
        if turn is not None:
            turn.updates[kind] = turn.updates.get(kind, 0) + 1
            if kind in _TEXT_KINDS:
                turn.add(_TEXT_KINDS[kind], _blocks_text([upd.get("content")]))
        announce, change = self.state.protocol.tool_call_kinds
        if kind in announce or kind in change:
            tid = str(upd.get("toolCallId"))
            if kind in announce or tid in self.t.tool_calls:
                status = upd.get("status") or ("pending" if kind not in change else None)
                self.tool_call(tid, sid, _mono(rec), turn, upd, status)

    def asked(self, rec: dict[str, Any], msg: dict[str, Any], ev: QuestionAsked) -> None:
        if not self.state.protocol.is_(ev.method, "request_permission"):
            return
        params = ev.params
        opts = [str(o.get("optionId")) for o in params.get("options") or [] if isinstance(o, dict)]
        # (the tool call it is about: ``toolCall``, or inside its ``subject``)
        tool = _obj(params.get("toolCall")) or _obj(_obj(params.get("subject")).get("toolCall"))
        self.t.permissions.append(Permission(params.get("sessionId"), tool.get("toolCallId"), opts, _mono(rec)))

    def answered(self, rec: dict[str, Any], msg: dict[str, Any], ev: QuestionAnswered) -> None:
        if not self.state.protocol.is_(ev.method, "request_permission"):
            return
        for p in reversed(self.t.permissions):
            if p.answer is None and p.session_id == ev.session_id:
                outcome = _obj(ev.result).get("outcome")
                if isinstance(outcome, dict):
                    p.answer = (str(outcome.get("optionId")) if outcome.get("outcome") == "selected"
                                else str(outcome.get("outcome")))
                else:
                    p.answer = "error" if ev.error is not None else "?"
                p.answered = _mono(rec)
                break

    def tool_call(self, tid: str, sid: str, mono: Any, turn: TraceTurn | None, upd: dict[str, Any],
                  status: Any) -> None:
        """Record an update of tool call ``tid`` (created, and attached to ``turn``, on first sight)."""
        tc = self.t.tool_calls.get(tid)
        if tc is None:
            tc = self.t.tool_calls[tid] = TraceToolCall(tid, sid, first=mono)
            if turn is not None:
                turn.tool_calls.append(tid)
                turn.add("tool", tid)
        tc.title = upd.get("title") or tc.title
        tc.kind = upd.get("kind") or tc.kind
        if status and (not tc.statuses or tc.statuses[-1] != status):
            tc.statuses.append(str(status))
        tc.last = mono


_ROLE = {"c2a": "client", "a2c": "agent"}
_DIR = {"client": "c2a", "agent": "a2c"}
_ON: dict[type, Callable[[_Analyzer, dict[str, Any], dict[str, Any], Any], None]] = {
    Ready: _Analyzer.ready, SessionOpened: _Analyzer.opened, TurnStarted: _Analyzer.started,
    TurnEnded: _Analyzer.ended, Update: _Analyzer.update, QuestionAsked: _Analyzer.asked,
    QuestionAnswered: _Analyzer.answered,
}


def _mono(rec: dict[str, Any]) -> float:
    return float(rec.get("mono") or 0.0)


_TEXT_KINDS = {"agent_message_chunk": "reply", "agent_thought_chunk": "thought"}


def _blocks_text(blocks: Any) -> str:
    """The text of content blocks; other blocks as ``[image]``, ``[resource file:///a]``."""
    parts = []
    for block in blocks if isinstance(blocks, list) else []:
        b = _obj(block)
        kind = b.get("type")
        if kind == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
        elif kind is not None:
            uri = b.get("uri") or _obj(b.get("resource")).get("uri")
            parts.append(f"[{kind} {uri}]" if uri else f"[{kind}]")
    return " ".join(parts)


def _obj(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def analyze(records: list[dict[str, Any]]) -> Timeline:
    """Build the timeline and findings of a trace's records: the session rules' findings come
    from the protocol's state machine (:class:`acplink.protocol.state.ConnectionState`), the
    version the trace's ``initialize`` agreed on, the schema findings from the records' checks."""
    return _Analyzer().run(records)
