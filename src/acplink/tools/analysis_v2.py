"""Trace analysis of ACP v2 (draft) traffic (used by :func:`.analysis.analyze` once a trace's
``initialize`` agreed on version 2).

What changes from v1: a ``session/prompt`` response is the insertion receipt, so a turn ends
at the session's idle ``state_update`` (its stop reason), not at the response; prompts sent
while a turn runs are held by the agent (not an error); ``tool_call_update`` is an upsert (it
announces the call); permission requests name their tool call in ``subject``; the agent's
name and capabilities are ``info`` and ``capabilities``; and an update for a session after its
``session/close`` response is a finding (``update-after-close``). Schema checks of the records
already follow the agreed version (see :class:`.trace.TraceWriter`).
"""

from __future__ import annotations

from typing import Any

from ..protocol.v2 import Method, Update
from ..rpc.messages import message_kind
from .analysis import Permission, TraceTurn, _Analyzer, _blocks_text, _obj
from .validate import agreed_version, validate_message

__all__ = ["V2Analyzer", "speaks_v2"]

_TEXT = {Update.AGENT_MESSAGE_CHUNK: "reply", Update.AGENT_THOUGHT_CHUNK: "thought"}


def speaks_v2(records: list[dict[str, Any]]) -> bool:
    """Whether the trace's ``initialize`` was answered with protocol version 2."""
    for rec in records:
        msg = rec.get("msg")
        if rec.get("kind") == "response" and rec.get("method") == Method.INITIALIZE and isinstance(msg, dict):
            if agreed_version(msg, Method.INITIALIZE) == 2:
                return True
    return False


class V2Analyzer(_Analyzer):
    """The v1 analyser until ``initialize`` agrees on 2, the v2 rules afterwards."""

    def __init__(self) -> None:
        super().__init__()
        self.v2 = False
        #: session id → its prompt turns not ended yet, oldest first (held prompts wait)
        self.open: dict[str, list[TraceTurn]] = {}
        self.closed: set[str] = set()

    def message(self, rec: dict[str, Any]) -> None:
        msg = rec.get("msg")
        if rec.get("violations") is None and isinstance(msg, dict):
            # (a record without schema checks: checked here, against the v2 schema once agreed,
            # the initialize response that agrees on it included)
            call = self.calls.peek(str(rec.get("dir")), msg.get("id")) if message_kind(msg) == "response" else None
            answered = call[0] if call is not None else None
            if agreed_version(msg, answered, 2 if self.v2 else 1) >= 2:
                rec = {**rec, "violations": validate_message(msg, answered, 2)}
        super().message(rec)

    def request(self, rec: dict[str, Any], d: str, msg: dict[str, Any], method: str) -> None:
        if not self.v2:
            super().request(rec, d, msg, method)
            return
        params = _obj(msg.get("params"))
        rid = msg.get("id")
        mono = float(rec.get("mono") or 0.0)
        self.calls.sent(d, rid, (method, params, int(rec.get("seq") or 0)))
        sid = str(params.get("sessionId"))
        if method == Method.SESSION_RESUME:
            self.loading[sid] = self.loading.get(sid, 0) + 1
        elif method == Method.SESSION_PROMPT:
            turn = TraceTurn(sid, rid, mono)
            turn.prompt = _blocks_text(params.get("prompt"))
            turn.add("prompt", turn.prompt)
            self.open.setdefault(sid, []).append(turn)
            sess = self.t.sessions.get(sid)
            if sess is not None:
                sess.turns.append(turn)
        elif method == Method.REQUEST_PERMISSION:
            self._permission(params, mono)

    def _permission(self, params: dict[str, Any], mono: float) -> None:
        opts = [str(o.get("optionId")) for o in params.get("options") or [] if isinstance(o, dict)]
        tool = _obj(_obj(params.get("subject")).get("toolCall"))
        self.t.permissions.append(Permission(params.get("sessionId"), tool.get("toolCallId"), opts, mono))

    def response(self, rec: dict[str, Any], d: str, msg: dict[str, Any]) -> None:
        call = self.calls.peek(d, msg.get("id"))
        method = call[0] if call is not None else None
        if self.v2 and method == Method.SESSION_PROMPT and "error" in msg:
            sid = str(_obj(call[1]).get("sessionId")) if call is not None else ""
            for turn in self.open.get(sid, []):
                if turn.request_id == msg.get("id"):  # refused: nothing was inserted
                    turn.end = float(rec.get("mono") or 0.0)
                    turn.error = str(_obj(msg.get("error")).get("message"))
                    self.open[sid].remove(turn)
                    break
        if self.v2 and method == Method.SESSION_PROMPT:
            self.calls.answer(d, msg.get("id"))  # (a receipt: the turn goes on until idle)
            return
        super().response(rec, d, msg)
        result = msg.get("result")
        if method == Method.INITIALIZE and isinstance(result, dict) and agreed_version(msg, method) == 2:
            self.v2 = True
            self.t.agent_capabilities = result.get("capabilities")
        elif self.v2 and method == Method.SESSION_CLOSE and call is not None and "result" in msg:
            self.closed.add(str(_obj(call[1]).get("sessionId")))

    def notification(self, rec: dict[str, Any], d: str, msg: dict[str, Any], method: str) -> None:
        params = msg.get("params")
        if not self.v2 or method != Method.SESSION_UPDATE or not isinstance(params, dict):
            super().notification(rec, d, msg, method)
            return
        sid = str(params.get("sessionId"))
        upd = _obj(params.get("update"))
        kind = str(upd.get("sessionUpdate"))
        mono = float(rec.get("mono") or 0.0)
        sess = self.t.sessions.get(sid)
        if sid in self.closed:
            self.find("update-after-close", f"{kind} for session {sid!r} after its session/close response", rec)
        elif sess is None and not self.loading.get(sid):
            self.find("update-unknown-session", f"{kind} for unknown session {sid!r}", rec)
        if sess is not None:
            sess.updates[kind] = sess.updates.get(kind, 0) + 1
        turns = self.open.get(sid)
        turn = turns[0] if turns else None
        if turn is not None:
            turn.updates[kind] = turn.updates.get(kind, 0) + 1
            if kind in _TEXT:
                turn.add(_TEXT[kind], _blocks_text([upd.get("content")]))
        if kind == Update.STATE_UPDATE and upd.get("state") == "idle" and turn is not None:
            turn.end = mono
            turn.stop_reason = upd.get("stopReason")
            turns.pop(0)  # type: ignore[union-attr]
        if kind == Update.TOOL_CALL_UPDATE:
            self.tool_call(str(upd.get("toolCallId")), sid, mono, turn, upd, upd.get("status"))
