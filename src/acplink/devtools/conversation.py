"""The Conversation view: a session as a person reads it (prompts, agent text as Markdown,
thoughts, tool calls with diffs and terminal output, plans, permission questions and their
answers, stop reasons), folded with acplink's own reducer (:class:`SessionState`)."""

from __future__ import annotations

from typing import Any

import orjson

from ..client.state import Message, SessionState, block_text
from ..errors import AcpError
from ..schema import Content, Diff, SessionNotification, Terminal
from ..schema._parse import parse
from .cache import cached
from .html import diff_html, esc, markdown, page
from .store import ConnectionRow, Store

__all__ = ["conversation_page"]

#: text longer than this is cut in the conversation (the timeline has the whole message)
TEXT_LIMIT = 100_000


def _cut(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    return text[:TEXT_LIMIT] + f"\n\n… ({len(text) - TEXT_LIMIT} more characters: see the message in the timeline)"


def _obj(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _prompt_text(params: Any) -> str:
    parts = []
    blocks = params.get("prompt") if isinstance(params, dict) else None
    for block in blocks if isinstance(blocks, list) else []:
        if isinstance(block, dict):
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            else:
                parts.append(f"[{block.get('type')} {block.get('uri') or ''}]".replace(" ]", "]"))
    return " ".join(parts)


class _Fold:
    """Messages of one session → items in the order they first appeared."""

    def __init__(self) -> None:
        self.state = SessionState()
        self.items: list[tuple[str, Any]] = []
        self._seen: set[tuple[str, Any]] = set()
        self.terminals: dict[str, str] = {}
        self.bad_updates = 0

    def _add(self, kind: str, key: Any, value: Any = None) -> None:
        if (kind, key) not in self._seen:
            self._seen.add((kind, key))
            self.items.append((kind, value if value is not None else key))

    def message(self, seq: int, kind: str | None, method: str | None, msg: Any, pair_msg: Any) -> None:
        if not isinstance(msg, dict):
            return
        params = msg.get("params")
        if kind == "request" and method == "session/prompt" and isinstance(params, dict):
            # the prompt joins the conversation as the user's message (a new turn for the reducer)
            blocks = params.get("prompt")
            blocks = blocks if isinstance(blocks, list) else []
            for block in blocks:
                self._update({"sessionId": params.get("sessionId"),
                              "update": {"sessionUpdate": "user_message_chunk", "content": block,
                                         "messageId": f"prompt-{seq}"}})
            if not blocks:
                self._add("prompt", seq, _prompt_text(params))
        elif kind == "response" and method == "session/prompt":
            result = msg.get("result")
            if isinstance(result, dict):
                self._add("stop", seq, str(result.get("stopReason")))
            else:
                err = _obj(msg.get("error"))
                self._add("stop", seq, f"error: {err.get('message')}")
        elif kind == "request" and method == "session/request_permission" and isinstance(params, dict):
            self._add("permission", seq, (params, pair_msg))
        elif kind == "response" and method == "terminal/output" and isinstance(pair_msg, dict):
            tid = _obj(pair_msg.get("params")).get("terminalId")
            result = msg.get("result")
            if isinstance(result, dict) and tid is not None:
                self.terminals[str(tid)] = str(result.get("output", ""))
        elif kind == "notification" and method == "session/update" and isinstance(params, dict):
            self._update(params)

    def _update(self, params: dict[str, Any]) -> None:
        try:
            note = parse(SessionNotification, params)
        except AcpError:
            self.bad_updates += 1
            return
        n_messages, n_thoughts = len(self.state.messages), len(self.state.thoughts)
        self.state.apply(note)
        upd = _obj(params.get("update"))
        what = upd.get("sessionUpdate")
        for m in self.state.messages[n_messages:]:
            self._add("message", id(m), m)
        for m in self.state.thoughts[n_thoughts:]:
            self._add("thought", id(m), m)
        if what in ("tool_call", "tool_call_update"):
            self._add("tool", str(upd.get("toolCallId")))
        elif what in ("plan", "plan_update"):
            self._add("plan", str(upd.get("planId") or ""))


def _render_message(m: Message) -> str:
    text = "".join(block_text(b) for b in m.blocks) or m.text
    if m.role == "thought":
        return f'<div class="thought"><span class="who">thinking</span>{esc(_cut(text))}</div>'
    who = "agent" if m.role == "agent" else "user"
    return f'<div class="{who}"><span class="who">{who}</span>{markdown(_cut(text))}</div>'


def _render_tool(fold: _Fold, tid: str) -> str:
    tc = fold.state.tool_calls.get(tid)
    if tc is None:
        return ""
    parts = [f'<div class="tool"><div class="toolhead"><span class="kind">{esc(tc.kind)}</span> '
             f'<b>{esc(tc.title)}</b> <span class="status {esc(tc.status)}">{esc(tc.status)}</span></div>']
    for c in tc.content:
        if isinstance(c, Diff):
            parts.append(diff_html(c.path, c.old_text, _cut(c.new_text)))
        elif isinstance(c, Content):
            parts.append(f'<pre class="out">{esc(_cut(block_text(c.content)))}</pre>')
        elif isinstance(c, Terminal):
            out = fold.terminals.get(c.terminal_id, "(no output recorded)")
            parts.append(f'<pre class="term">{esc(_cut(out))}</pre>')
    parts.append("</div>")
    return "".join(parts)


def _render_plan(fold: _Fold, plan_id: str) -> str:
    plan = fold.state.plans.get(plan_id) if plan_id else fold.state.plan
    if plan is None:
        return ""
    if plan.markdown:
        return f'<div class="plan"><b>Plan</b>{markdown(plan.markdown)}</div>'
    rows = "".join(f'<li class="{esc(e.status)}"><span class="st">{esc(e.status)}</span> {esc(e.content)}</li>'
                   for e in plan.entries)
    return f'<div class="plan"><b>Plan</b> ({plan.completed}/{len(plan.entries)} done)<ol>{rows}</ol></div>'


def _render_permission(params: dict[str, Any], answer: Any) -> str:
    tool = _obj(params.get("toolCall"))
    opts = ", ".join(esc(o.get("name") or o.get("optionId")) for o in params.get("options") or []
                     if isinstance(o, dict))
    outcome = "(no answer)"
    if isinstance(answer, dict):
        res = answer.get("result")
        out = res.get("outcome") if isinstance(res, dict) else None
        if isinstance(out, dict):
            outcome = str(out.get("optionId") if out.get("outcome") == "selected" else out.get("outcome"))
        elif "error" in answer:
            outcome = "error"
    return (f'<div class="permission"><span class="who">permission</span> {esc(tool.get("title") or "")} '
            f'<span class="dim">options: {opts}</span> → <b>{esc(outcome)}</b></div>')


def conversation_page(store: Store, c: ConnectionRow, session: str) -> str:
    sessions = list(c.sessions)
    session = session or (sessions[0] if sessions else "")
    picker = "".join(f'<a href="/c/{c.id}/conversation?session={esc(s)}"{" class=on" if s == session else ""}>'
                     f"{esc(s)}</a>" for s in sessions)
    talk = cached(store, [c], f"conversation {session}", lambda: _conversation(store, c, session))
    body = f'<p class="sessions">{picker or "no sessions"}</p>{talk}'
    return page(f"Conversation · #{c.id}", body, conn=c.id, active="Conversation")


def _conversation(store: Store, c: ConnectionRow, session: str) -> str:
    fold = _Fold()
    rows = store.rows(c.id, "session = ? OR method LIKE 'terminal/%'", [session],
                      columns="seq, kind, method, pair, is_json, body")
    by_seq = {r["seq"]: r for r in rows}
    for r in rows:
        if not r["is_json"]:
            continue
        msg = orjson.loads(r["body"])
        pair = by_seq.get(r["pair"]) if r["pair"] is not None else None
        pair_msg = orjson.loads(pair["body"]) if pair is not None and pair["is_json"] else None
        fold.message(r["seq"], r["kind"], r["method"], msg, pair_msg)
    out = []
    for kind, value in fold.items:
        if kind == "prompt":
            out.append(f'<div class="user"><span class="who">prompt</span>{markdown(_cut(value))}</div>')
        elif kind == "message":
            out.append(_render_message(value))
        elif kind == "thought":
            out.append(_render_message(value))
        elif kind == "tool":
            out.append(_render_tool(fold, value))
        elif kind == "plan":
            out.append(_render_plan(fold, value))
        elif kind == "permission":
            out.append(_render_permission(*value))
        elif kind == "stop":
            out.append(f'<div class="stop">stop reason: <b>{esc(value)}</b></div>')
    if fold.bad_updates:
        out.append(f'<p class="warn">{fold.bad_updates} session/update messages do not match the schema and are '
                   "left out (see Findings).</p>")
    return f'<div class="conversation" id="conversation">{"".join(out) or "<p class=dim>nothing yet</p>"}</div>'
