"""More probes of a receipt lifecycle, for parity with the official kit (acp-tck, v2): session
ids and the ``mcpServers`` forms, message ids of successive prompts, cancellation with
``_meta`` and what follows it, notifications never answered, unknown ``_`` requests,
``session/list`` filters, resume without replay, delete then list; and two probes every
version's check table names: the advertised auth methods and the exit at end of input.
(Roles and requirement ids: the requirement set's check table; the kit ids they cover:
``tck_ids.json``.)"""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

from .check_helpers import attachments, context_prompt, repeated
from .checks import ProbeFn, judge_shutdown
from .probe import Probe, _short, text_block
from .raw_checks import (
    METHOD_NOT_FOUND,
    _code,
    _is_idle,
    _is_update,
    _result,
    _session_caps,
    _update,
    handshake,
    run_turn,
    setup,
)

__all__ = ["PROBES"]

AUTH_REQUIRED = -32000


def _unanswerable(p: Probe, mark: int) -> list[dict[str, Any]]:
    """The agent's responses since ``mark`` that answer no request (no id, or id null): answers
    to notifications."""
    return [r["msg"] for r in p.records[mark:] if r.get("dir") == "a2c" and r.get("kind") == "response"
            and isinstance(r.get("msg"), dict) and r["msg"].get("id") is None]


async def check_session_ids(p: Probe) -> None:
    """distinct (session ids), mcp_omitted (``mcpServers`` omitted or ``[]``)."""
    await handshake(p)
    first = await p.request(p.protocol.wire("new_session"), {"cwd": p.workdir, "mcpServers": []})
    second = await p.request(p.protocol.wire("new_session"), {"cwd": p.workdir})
    ids = [(_result(r) or {}).get("sessionId") if isinstance(_result(r), dict) else None for r in (first, second)]
    if isinstance(ids[1], str) and ids[1]:
        p.ok("mcp_omitted", "session/new without mcpServers accepted (and with [])")
    else:
        p.fail("mcp_omitted", f"session/new without mcpServers got {_short(second) if second else 'no response'}")
    if not all(isinstance(i, str) and i for i in ids):
        p.skip("distinct", f"two sessions could not be created: {_short([first, second])}")
    elif ids[0] == ids[1]:
        p.fail("distinct", f"two session/new calls both returned {ids[0]!r}")
    else:
        p.ok("distinct", f"{ids[0]!r} and {ids[1]!r}")


async def check_prompt_ids(p: Probe) -> None:
    """distinct (messageIds), same_session (updates name the prompted session), meta (a prompt
    carrying ``_meta``)."""
    _, sid = await setup(p)
    mark = len(p.records)
    one = await run_turn(p, sid, "hello")
    meta_mark = len(p.records)
    resp = await p.request(p.protocol.wire("prompt"), {"sessionId": sid, "prompt": [text_block("hello again")],
                                                       "_meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-"
                                                                                "b7ad6b7169203331-01", "acplink": True}})
    idle = await p.wait_for(lambda r: _is_idle(p, r, sid), p.opts.timeout, start=meta_mark)
    second = _result(resp).get("messageId") if isinstance(_result(resp), dict) else None
    if isinstance(second, str) and second and idle is not None:
        p.ok("meta", "a session/prompt with _meta was accepted and its turn ended idle")
    else:
        p.fail("meta", f"a session/prompt with _meta got {_short(resp) if resp else 'no response'}"
               + ("" if idle is not None else f", and no idle within {p.opts.timeout:g} s"))
    first = one.message_id
    if not (isinstance(first, str) and first and isinstance(second, str) and second):
        p.skip("distinct", f"no two receipts with a messageId ({first!r}, {second!r})")
    elif first == second:
        p.fail("distinct", f"two prompts on one session both got messageId {first!r}")
    else:
        p.ok("distinct", f"{first!r} and {second!r}")
    end = p.records.index(idle) + 1 if idle is not None else len(p.records)
    stray = [r["msg"].get("params", {}).get("sessionId") for r in p.records[mark:end]
             if r.get("dir") == "a2c" and r.get("method") == p.protocol.wire("session_update") and isinstance(r.get("msg"), dict)
             and isinstance(r["msg"].get("params"), dict) and r["msg"]["params"].get("sessionId") != sid]
    if stray:
        p.fail("same_session", f"{len(stray)} session/update during the turns of {sid!r} named another session: "
               f"{stray[:3]}")
    else:
        p.ok("same_session", "every update of the turns named the prompted session")


async def check_cancel_more(p: Probe) -> None:
    """honoured (a cancel carrying ``_meta`` is honoured, never answered), quiet_after
    (nothing of the cancelled work after its idle)."""
    _, sid = await setup(p)
    mark = len(p.records)

    async def cancel() -> None:
        p.notify(p.protocol.wire("cancel"), {"sessionId": sid, "_meta": {"acplink": "cancel"}})

    turn = await run_turn(p, sid, p.opts.cancel_prompt, bound=p.opts.timeout + p.opts.cancel_bound, during=cancel)
    if turn.response is None or "error" in turn.response or turn.idle is None:
        why = _short(turn.response) if turn.response else "no response"
        p.fail("honoured", f"the turn did not end idle after session/cancel with _meta ({why})")
        p.skip("quiet_after", "no cancelled idle to watch after")
        return
    reason = turn.idle.get("stopReason")
    after = next(i for i in range(mark, len(p.records)) if _is_idle(p, p.records[i], sid)) + 1
    await asyncio.sleep(max(p.opts.settle, 0.5))
    answers = _unanswerable(p, mark)
    if answers:
        p.fail("honoured", f"the session/cancel notification was answered: {_short(answers[0])}")
    elif reason != "cancelled":
        p.fail("honoured", f"after session/cancel with _meta the turn ended with stopReason {reason!r}")
    else:
        p.ok("honoured", "session/cancel with _meta: idle cancelled, no answer")
    late = [_update(r).get("state") for r in p.records[after:]
            if _is_update(p, r, sid) and _update(r).get("sessionUpdate") == p.protocol.turns.state_kind]
    if late:
        p.fail("quiet_after", f"state_update after the cancelled idle with no new prompt: {late[:3]}")
    else:
        p.ok("quiet_after", "nothing after the cancelled idle")


async def check_close_running(p: Probe) -> None:
    """cancelled: session/close of a session whose turn runs cancels that turn."""
    _, sid = await setup(p)
    closed: list[dict[str, Any] | None] = []

    async def close() -> None:
        closed.append(await p.request(p.protocol.wire("close_session"), {"sessionId": sid}))

    turn = await run_turn(p, sid, p.opts.cancel_prompt, bound=p.opts.timeout + p.opts.cancel_bound, during=close)
    if turn.response is None or "error" in turn.response:
        p.skip("cancelled", f"the prompt failed: {_short(turn.response) if turn.response else 'no response'}")
        return
    reason = turn.idle.get("stopReason") if turn.idle is not None else None
    if reason == "cancelled":
        p.ok("cancelled", "the running turn ended idle cancelled")
    else:
        p.fail("cancelled", "session/close during a running turn (answered "
               f"{_short(closed[0]) if closed and closed[0] else 'nothing'}): "
               + (f"idle with stopReason {reason!r}" if turn.idle else
                  f"no idle within {p.opts.timeout + p.opts.cancel_bound:g} s"))


async def check_content(p: Probe) -> None:
    """context, image, audio, embedded: text + resource_link, and each advertised attachment kind, are
    accepted and their turns end idle."""
    init, sid = await setup(p)

    def judge(req: str, what: str, turn: Any) -> None:
        if turn.response is None or "error" in turn.response:
            p.fail(req, f"a prompt with {what} got {_short(turn.response) if turn.response else 'no response'}")
        elif turn.idle is None:
            p.fail(req, f"a prompt with {what} was accepted but its turn did not end idle within {p.opts.timeout:g} s")
        else:
            p.ok(req, f"{what}: accepted, idle {turn.idle.get('stopReason')!r}")

    judge("context", "text and resource_link", await run_turn(p, sid, context_prompt()))
    where = p.rules.facts["prompt_capabilities"]
    prompt_caps = _session_caps(p, init).get(where)
    prompt_caps = prompt_caps if isinstance(prompt_caps, dict) else {}
    path = ".".join((*p.rules.facts["session_capabilities"][1:], where))
    for req, (cap, block) in zip(("image", "audio", "embedded"), attachments(), strict=True):
        if prompt_caps.get(cap) is None:
            p.skip(req, f"{p.rules.facts['session_capabilities'][0]}.{path}.{cap} not advertised")
            continue
        judge(req, f"a {block['type']} block", await run_turn(
            p, sid, [text_block("Describe the attachment in one sentence."), block]))


async def check_shutdown(p: Probe) -> None:
    """exits: the agent exits once its stdin closes."""
    await handshake(p)
    await judge_shutdown(p, "exits")


async def check_notifications(p: Probe) -> None:
    """unknown_extension (an unknown ``_`` request gets -32601), unanswered (notifications
    never answered), still_working (still answering after them and after erroneous requests)."""
    await handshake(p)
    ext = await p.request("_acplink/no_such_extension", {"x": 1})
    if ext is None:
        p.skip("unknown_extension", "an unknown `_` request got no response (the extension role fails)")
    elif _code(ext) == METHOD_NOT_FOUND:
        p.ok("unknown_extension", "an unknown `_` request got -32601")
    else:
        p.fail("unknown_extension", f"an unknown `_` request was answered {_short(ext)}, not error -32601: the client "
               "cannot tell the extension is not there")
    mark = len(p.records)
    p.notify(p.protocol.wire("cancel"), {"sessionId": "no-such-session"})
    p.notify("_acplink/notice", {"x": 1})
    await p.request(p.protocol.wire("prompt"), {"sessionId": 1})  # invalid params
    await asyncio.sleep(p.opts.settle)
    answers = _unanswerable(p, mark)
    if answers:
        p.fail("unanswered", f"a notification was answered: {_short(answers[0])}")
    else:
        p.ok("unanswered", "session/cancel (unknown session) and an unknown `_` notification got no answer")
    new = await p.request(p.protocol.wire("new_session"), {"cwd": p.workdir, "mcpServers": []})
    if isinstance(_result(new), dict) and isinstance(_result(new).get("sessionId"), str):
        p.ok("still_working", "session/new still works after the notifications and an invalid request")
    else:
        p.fail("still_working", "after an unknown `_` notification and an invalid request, session/new got "
               f"{_short(new) if new else 'no response'}" + ("" if p.alive else f" ({p.died()})"))


def _sessions(resp: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    result = _result(resp)
    listed = result.get("sessions") if isinstance(result, dict) else None
    return [s for s in listed if isinstance(s, dict)] if isinstance(listed, list) else None


async def check_list(p: Probe) -> None:
    """empty, cwd (session/list filters), no_replay (resume without replayFrom), deleted (a
    deleted session leaves the list)."""
    init, sid = await setup(p)
    with tempfile.TemporaryDirectory(prefix="acplink-check-unused-") as unused:
        empty = await p.request(p.protocol.wire("list_sessions"), {"cwd": unused})
    got = _sessions(empty)
    if got == []:
        p.ok("empty", "sessions: [] for a cwd no session uses")
    else:
        p.fail("empty", f"session/list for a cwd no session uses got {_short(empty) if empty else 'no response'}"
               ", not sessions: []")
    here = await p.request(p.protocol.wire("list_sessions"), {"cwd": p.workdir})
    listed = _sessions(here)
    if listed is None:
        p.fail("cwd", f"session/list filtered by the cwd got {_short(here) if here else 'no response'}")
    else:
        wrong = [s.get("cwd") for s in listed if s.get("cwd") != p.workdir or not os.path.isabs(str(s.get("cwd")))]
        if wrong:
            p.fail("cwd", f"session/list for cwd {p.workdir!r} returned sessions of {wrong[:3]}")
        else:
            p.ok("cwd", f"{len(listed)} sessions, each of cwd {p.workdir!r}")
    await run_turn(p, sid, "hello")
    mark = len(p.records)
    resumed = await p.request(p.protocol.wire("resume_session"), {"sessionId": sid, "cwd": p.workdir})
    answer = next((i for i, r in enumerate(p.records[mark:], mark) if r.get("dir") == "a2c"
                   and r.get("kind") == "response" and r.get("method") == p.protocol.wire("resume_session")), len(p.records))
    history = [_update(r).get("sessionUpdate") for r in p.records[mark:answer] if _is_update(p, r, sid)
               and str(_update(r).get("sessionUpdate", "")).startswith(("user_message", "agent_message",
                                                                       "agent_thought"))]
    if resumed is None or not isinstance(_result(resumed), dict):
        p.fail("no_replay", f"session/resume without replayFrom got {_short(resumed) if resumed else 'no response'}")
    elif history:
        p.fail("no_replay", f"session/resume without replayFrom replayed {history[:5]} before its response")
    else:
        p.ok("no_replay", "resumed, no history replayed")
    if _session_caps(p, init).get("delete") is None:
        p.skip("deleted", "session.delete not advertised")
        return
    before = _sessions(await p.request(p.protocol.wire("list_sessions"), {}))
    if not before or sid not in [s.get("sessionId") for s in before]:
        p.skip("deleted", "the session was never listed: nothing to compare after the delete")
        return
    deleted = await p.request(p.protocol.wire("delete_session"), {"sessionId": sid})
    after = _sessions(await p.request(p.protocol.wire("list_sessions"), {}))
    if deleted is None or "error" in deleted:
        p.skip("deleted", f"session/delete failed ({_short(deleted) if deleted else 'no response'})")
    elif after is None:
        p.fail("deleted", "session/list failed after the delete")
    elif sid in [s.get("sessionId") for s in after]:
        p.fail("deleted", f"session {sid!r} is still listed after session/delete")
    else:
        p.ok("deleted", "gone from session/list")


async def check_auth_methods(p: Probe) -> None:
    """unique_ids, no_terminal, types and no_auth_required from the initialize answer to a
    client advertising nothing (the key of a method's id and the defined types: the
    requirement set's facts)."""
    init = await handshake(p)
    key = p.rules.facts["auth_method_id"]
    methods = [m for m in init.get("authMethods") or [] if isinstance(m, dict)]
    ids = [m.get(key) for m in methods]
    dupes = repeated(ids)
    if dupes:
        p.fail("unique_ids", f"auth method ids advertised more than once: {dupes}")
    else:
        p.ok("unique_ids", f"{len(ids)} auth methods, ids unique")
    terminal = [m.get(key) for m in methods if m.get("type") == "terminal"]
    if terminal:
        p.fail("no_terminal", f"terminal auth methods {terminal} offered to a client without "
               f"{p.protocol.capabilities_field[1]}.auth.terminal")
    else:
        p.ok("no_terminal", "no terminal auth method offered")
    odd = [m.get("type") for m in methods if "type" in m
           and not (m["type"] in p.rules.facts.get("auth_method_types", ())
                    or (isinstance(m["type"], str) and m["type"].startswith("_")))]
    if odd:
        p.fail("types", f"auth method types that are neither defined nor `_`-prefixed: {odd}")
    else:
        p.ok("types", "every auth method type is defined or `_`-prefixed")
    if methods:
        p.skip("no_auth_required", "the agent advertises auth methods")
        return
    new = await p.request(p.protocol.wire("new_session"), {"cwd": p.workdir, "mcpServers": []})
    if _code(new) == AUTH_REQUIRED:
        p.fail("no_auth_required", f"no auth methods advertised, yet session/new failed with -32000: {_short(new)}")
    else:
        p.ok("no_auth_required", "no auth methods, and session/new did not ask for authentication")


PROBES: dict[str, ProbeFn] = {
    "session-ids": check_session_ids,
    "message-ids": check_prompt_ids,
    "cancel-meta": check_cancel_more,
    "close-running-turn": check_close_running,
    "content-turns": check_content,
    "shutdown": check_shutdown,
    "unanswered-notifications": check_notifications,
    "list-filters": check_list,
    "auth-methods": check_auth_methods,
}
