"""Trace analysis: records → a timeline (sessions, turns, tool calls, permissions, errors) and
findings (schema violations and protocol-order violations).

Used by ``acplink inspect`` and by the conformance checker, which maps finding codes to
requirement ids.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..connection.rules import TURN_UPDATE_KINDS, PromptTurns, missing_capability
from ..protocol import V1
from ..protocol.initialize import agent_info, agreed_version, client_info
from ..rpc.messages import CallMatcher, message_kind
from .validate import validate_message

#: the protocol version traces are judged by (ACP v1)
P = V1

__all__ = ["TURN_UPDATE_KINDS", "Finding", "Timeline", "TraceSession", "TraceTurn", "analyze", "expected_error"]

#: finding codes → what they mean
FINDING_CODES = {
    "schema": "a message does not match the ACP schema",
    "schema-strict": "a message matches the schema only thanks to its leniency rules",
    "invalid-json": "a line that is not JSON",
    "update-after-response": "a turn update after the prompt response (no turn running)",
    "update-unknown-session": "a session/update for a session that does not exist",
    "tool-update-unknown-id": "a tool_call_update for a tool call id never announced",
    "response-unknown-id": "a response to a request id that is not pending",
    "duplicate-response": "a second response to the same request",
    "capability": "a request the peer's capabilities did not allow",
    "before-initialize": "a request before the initialize response",
    "prompt-while-running": "a session/prompt while the session's previous prompt is still running",
    "unanswered": "a request that never got a response",
    "update-after-close": "a session/update for a session after its session/close response (v2)",
}


#: error codes of "the resource does not exist" (ACP's -32002; some clients answer a missing
#: file with an internal error whose message says so)
_NOT_FOUND_CODE = -32002
_NOT_FOUND_WORDS = ("not found", "no such file", "does not exist", "enoent")


def expected_error(method: str | None, error: Any) -> bool:
    """Whether an error response is an expected one, shown as informational rather than as an
    error: a ``fs/read_text_file`` of a file that does not exist (an agent looks before it
    writes a new file, or probes for an optional one). Every other error is an error."""
    if method is None or not P.is_(method, "read_text_file") or not isinstance(error, dict):
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
        return out


class _Analyzer:
    def __init__(self) -> None:
        self.t = Timeline()
        #: requests in flight: (method, params, seq)
        self.calls: CallMatcher[tuple[str, Any, int]] = CallMatcher()
        #: the session rules' turn state: the running turn of each session
        self.turns: PromptTurns[TraceTurn] = PromptTurns()
        #: (session id, request id) → the turn of each prompt still unanswered
        self.prompts: dict[tuple[str, Any], TraceTurn] = {}
        self.loading: dict[str, int] = {}  # session id → pending session/load|resume count
        self.initialized = False

    def find(self, code: str, message: str, rec: dict[str, Any]) -> None:
        self.t.findings.append(Finding(code, message, rec.get("seq"), rec.get("dir"), rec.get("mono")))

    def run(self, records: list[dict[str, Any]]) -> Timeline:
        t = self.t
        for rec in records:
            typ = rec.get("type")
            if typ == "header":
                t.header = {k: v for k, v in rec.items() if k not in ("type",)}
                t.start = float(rec.get("mono") or 0.0)
            elif typ == "exit":
                t.exit_code = rec.get("code")
            elif typ == "cut":
                t.cut = {"line": rec.get("line"), "size": rec.get("size")}
            elif typ == "message":
                self.message(rec)
            if isinstance(rec.get("mono"), (int, float)):
                t.end = max(t.end, float(rec["mono"]))
        if not t.start and records:
            t.start = min((float(r["mono"]) for r in records if isinstance(r.get("mono"), (int, float))), default=0.0)
        for sess in t.sessions.values():
            for turn in sess.turns:
                turn.settle()
        for d, rid, (method, _params, seq) in self.calls.unanswered():
            t.findings.append(Finding("unanswered", f"{method} request {rid!r} ({d}) never answered", seq, d))
        return t

    def message(self, rec: dict[str, Any]) -> None:
        t = self.t
        t.messages += 1
        d = str(rec.get("dir"))
        t.by_dir[d] = t.by_dir.get(d, 0) + 1
        msg = rec.get("msg")
        if "msg" not in rec:
            self.find("invalid-json", f"not JSON: {str(rec.get('raw', ''))[:80]!r}", rec)
            return
        kind = message_kind(msg)
        answered_method = None
        if kind == "response" and isinstance(msg, dict):
            call = self.calls.peek(d, msg.get("id"))
            answered_method = call[0] if call is not None else None
        violations = rec.get("violations")
        if violations is None:
            violations = validate_message(msg, answered_method)
        for v in violations or []:
            code = "schema-strict" if v.get("strict_only") else ("invalid-json" if "invalid JSON" in
                                                                 str(v.get("message")) else "schema")
            self.find(code, f"{v.get('path')}: {v.get('message')}", rec)
        if not isinstance(msg, dict):
            return
        if kind == "request":
            self.request(rec, d, msg, msg["method"])
        elif kind == "notification":
            self.notification(rec, d, msg, msg["method"])
        elif kind == "response":
            self.response(rec, d, msg)
        elif "method" in msg and "id" in msg:  # an invalid request (method not a string): still answerable
            self.calls.sent(d, msg.get("id"), ("(invalid request)", None, int(rec.get("seq") or 0)))

    # -- requests ------------------------------------------------------------------------------

    def request(self, rec: dict[str, Any], d: str, msg: dict[str, Any], method: str) -> None:
        rid = msg.get("id")
        params = msg.get("params")
        mono = float(rec.get("mono") or 0.0)
        self.calls.sent(d, rid, (method, params, int(rec.get("seq") or 0)))
        if not self.initialized and not P.may_precede_initialize(method) and d == "c2a":
            self.find("before-initialize", f"{method} sent before the initialize response", rec)
        if P.is_(method, "initialize") and isinstance(params, dict):
            self.t.client_capabilities = params.get(P.capabilities_field[1])
            self.t.client_info = client_info(params)
        missing = missing_capability(method, self.t.client_capabilities, self.t.agent_capabilities, P.table)
        if missing is not None and self.initialized:
            who, path = missing
            self.find("capability", f"{method} called but the {who} did not advertise {path!r}", rec)
        if P.is_(method, "prompt") and isinstance(params, dict):
            sid = str(params.get("sessionId"))
            turn = TraceTurn(sid, rid, mono)
            turn.prompt = _blocks_text(params.get("prompt"))
            turn.add("prompt", turn.prompt)
            refused = self.turns.start(sid, turn)
            if refused is not None:
                self.find("prompt-while-running", refused, rec)
            if _hashable(rid):
                self.prompts[(sid, rid)] = turn
            sess = self.t.sessions.get(sid)
            if sess is not None:
                sess.turns.append(turn)
        if method in P.wires("load_session", "resume_session") and isinstance(params, dict):
            sid = str(params.get("sessionId"))
            self.loading[sid] = self.loading.get(sid, 0) + 1
        if P.is_(method, "request_permission") and isinstance(params, dict):
            opts = [str(o.get("optionId")) for o in params.get("options") or [] if isinstance(o, dict)]
            tool = _obj(params.get("toolCall"))
            self.t.permissions.append(Permission(params.get("sessionId"), tool.get("toolCallId"), opts, mono))

    def response(self, rec: dict[str, Any], d: str, msg: dict[str, Any]) -> None:
        rid = msg.get("id")
        mono = float(rec.get("mono") or 0.0)
        call = self.calls.answer(d, rid)
        if call is None:
            if self.calls.answered(d, rid):
                self.find("duplicate-response", f"second response to request {rid!r}", rec)
            elif "error" in msg and rid is None:
                err = _obj(msg.get("error"))
                self.t.errors.append({"seq": rec.get("seq"), "dir": d, "method": None, "code": err.get("code"),
                                      "message": err.get("message"), "severity": "error"})
            else:
                self.find("response-unknown-id", f"response to unknown request id {rid!r}", rec)
            return
        method, params, _seq = call
        result = msg.get("result")
        error = msg.get("error") if "error" in msg else None
        if error is not None:
            err = error if isinstance(error, dict) else {}
            self.t.errors.append({"seq": rec.get("seq"), "dir": d, "method": method, "code": err.get("code"),
                                  "message": err.get("message"),
                                  "severity": "info" if expected_error(method, error) else "error"})
        sid = params.get("sessionId") if isinstance(params, dict) else None
        if P.is_(method, "initialize") and isinstance(result, dict):
            self.initialized = True
            self.t.protocol_version = agreed_version(result) or result.get("protocolVersion")  # (an echo: 1)
            self.t.agent_capabilities = result.get(P.capabilities_field[0])
            self.t.agent_info = agent_info(result)
        elif method in P.wires("new_session", "fork_session") and isinstance(result, dict) and result.get("sessionId"):
            new = str(result["sessionId"])
            cwd = params.get("cwd") if isinstance(params, dict) else None
            self.t.sessions.setdefault(new, TraceSession(new, mono, method.split("/")[1], cwd))
        elif method in P.wires("load_session", "resume_session") and sid is not None:
            sid = str(sid)
            self.loading[sid] = max(0, self.loading.get(sid, 0) - 1)
            if error is None:
                cwd = params.get("cwd") if isinstance(params, dict) else None
                self.t.sessions.setdefault(sid, TraceSession(sid, mono, method.split("/")[1], cwd))
        elif P.is_(method, "prompt") and sid is not None:
            turn = self.prompts.pop((str(sid), rid), None)
            if turn is not None:
                turn.end = mono
                if isinstance(result, dict):
                    turn.stop_reason = result.get("stopReason")
                elif error is not None:
                    turn.error = str(error.get("message") if isinstance(error, dict) else error)
                self.turns.end(str(sid), turn)
        elif P.is_(method, "request_permission"):
            for p in reversed(self.t.permissions):
                if p.answer is None and isinstance(params, dict) and p.session_id == params.get("sessionId"):
                    outcome = result.get("outcome") if isinstance(result, dict) else None
                    if isinstance(outcome, dict):
                        p.answer = (str(outcome.get("optionId")) if outcome.get("outcome") == "selected"
                                    else str(outcome.get("outcome")))
                    else:
                        p.answer = "error" if error is not None else "?"
                    p.answered = mono
                    break

    # -- notifications -------------------------------------------------------------------------

    def notification(self, rec: dict[str, Any], d: str, msg: dict[str, Any], method: str) -> None:
        params = msg.get("params")
        if not P.is_(method, "session_update") or not isinstance(params, dict):
            return
        sid = str(params.get("sessionId"))
        upd = _obj(params.get("update"))
        kind = str(upd.get("sessionUpdate"))
        mono = float(rec.get("mono") or 0.0)
        sess = self.t.sessions.get(sid)
        if sess is None and not self.loading.get(sid):
            self.find("update-unknown-session", f"{kind} for unknown session {sid!r}", rec)
        if sess is not None:
            sess.updates[kind] = sess.updates.get(kind, 0) + 1
        turn = self.turns.get(sid)
        if turn is not None:
            turn.updates[kind] = turn.updates.get(kind, 0) + 1
            if kind in _TEXT_KINDS:
                turn.add(_TEXT_KINDS[kind], _blocks_text([upd.get("content")]))
        elif self.turns.update_after_response(sid, kind) and not self.loading.get(sid):
            self.find("update-after-response", f"{kind} for session {sid!r} after its prompt response", rec)
        if kind in ("tool_call", "tool_call_update"):
            tid = str(upd.get("toolCallId"))
            tc = self.t.tool_calls.get(tid)
            if kind == "tool_call" or tc is not None:
                self.tool_call(tid, sid, mono, turn, upd, upd.get("status") or ("pending" if kind == "tool_call" else None))
            else:
                self.find("tool-update-unknown-id", f"tool_call_update for unknown tool call {tid!r}", rec)

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
    """Build the timeline and findings of a trace's records (v2 traffic: :mod:`.analysis_v2`)."""
    from .analysis_v2 import V2Analyzer, speaks_v2

    return (V2Analyzer() if speaks_v2(records) else _Analyzer()).run(records)
