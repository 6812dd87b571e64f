"""The v2 checks added for parity with the official kit (acp-tck, v2): session ids and the
``mcpServers`` forms, message ids of successive prompts, cancellation with ``_meta`` and what
follows it, notifications never answered, unknown ``_`` requests, ``session/list`` filters,
resume without replay, delete then list, and the advertised auth methods.
(Requirements: :mod:`.v2_requirements`; the kit ids they cover: ``tck_ids.json``.)"""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

from .check_helpers import attachments, context_prompt, repeated
from .checks import Check, judge_shutdown
from .probe import Probe, _short, text_block
from .v2_checks import (
    METHOD_NOT_FOUND,
    V2_MONITORED,
    _code,
    _is_idle,
    _is_update,
    _result,
    _session_caps,
    _update,
    initialize_v2,
    run_turn,
    setup_v2,
)

__all__ = ["V2_KIT_CHECKS", "check_auth_methods", "check_cancel_more", "check_close_running", "check_content", "check_list",
           "check_shutdown", "check_notifications",
           "check_prompt_ids", "check_session_ids"]

AUTH_REQUIRED = -32000


def _unanswerable(p: Probe, mark: int) -> list[dict[str, Any]]:
    """The agent's responses since ``mark`` that answer no request (no id, or id null): answers
    to notifications."""
    return [r["msg"] for r in p.records[mark:] if r.get("dir") == "a2c" and r.get("kind") == "response"
            and isinstance(r.get("msg"), dict) and r["msg"].get("id") is None]


async def check_session_ids(p: Probe) -> None:
    """V2-SESS-005 (distinct ids), V2-SESS-006 (``mcpServers`` omitted or ``[]``)."""
    await initialize_v2(p)
    first = await p.request(p.protocol.wire("new_session"), {"cwd": p.workdir, "mcpServers": []})
    second = await p.request(p.protocol.wire("new_session"), {"cwd": p.workdir})
    ids = [(_result(r) or {}).get("sessionId") if isinstance(_result(r), dict) else None for r in (first, second)]
    if isinstance(ids[1], str) and ids[1]:
        p.ok("V2-SESS-006", "session/new without mcpServers accepted (and with [])")
    else:
        p.fail("V2-SESS-006", f"session/new without mcpServers got {_short(second) if second else 'no response'}")
    if not all(isinstance(i, str) and i for i in ids):
        p.skip("V2-SESS-005", f"two sessions could not be created: {_short([first, second])}")
    elif ids[0] == ids[1]:
        p.fail("V2-SESS-005", f"two session/new calls both returned {ids[0]!r}")
    else:
        p.ok("V2-SESS-005", f"{ids[0]!r} and {ids[1]!r}")


async def check_prompt_ids(p: Probe) -> None:
    """V2-PROMPT-006 (distinct messageIds), V2-PROMPT-007 (updates name the prompted session),
    V2-EXT-002 (a prompt carrying ``_meta``)."""
    _, sid = await setup_v2(p)
    mark = len(p.records)
    one = await run_turn(p, sid, "hello")
    meta_mark = len(p.records)
    resp = await p.request(p.protocol.wire("prompt"), {"sessionId": sid, "prompt": [text_block("hello again")],
                                                       "_meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-"
                                                                                "b7ad6b7169203331-01", "acplink": True}})
    idle = await p.wait_for(lambda r: _is_idle(p, r, sid), p.opts.timeout, start=meta_mark)
    second = _result(resp).get("messageId") if isinstance(_result(resp), dict) else None
    if isinstance(second, str) and second and idle is not None:
        p.ok("V2-EXT-002", "a session/prompt with _meta was accepted and its turn ended idle")
    else:
        p.fail("V2-EXT-002", f"a session/prompt with _meta got {_short(resp) if resp else 'no response'}"
               + ("" if idle is not None else f", and no idle within {p.opts.timeout:g} s"))
    first = one.message_id
    if not (isinstance(first, str) and first and isinstance(second, str) and second):
        p.skip("V2-PROMPT-006", f"no two receipts with a messageId ({first!r}, {second!r})")
    elif first == second:
        p.fail("V2-PROMPT-006", f"two prompts on one session both got messageId {first!r}")
    else:
        p.ok("V2-PROMPT-006", f"{first!r} and {second!r}")
    end = p.records.index(idle) + 1 if idle is not None else len(p.records)
    stray = [r["msg"].get("params", {}).get("sessionId") for r in p.records[mark:end]
             if r.get("dir") == "a2c" and r.get("method") == p.protocol.wire("session_update") and isinstance(r.get("msg"), dict)
             and isinstance(r["msg"].get("params"), dict) and r["msg"]["params"].get("sessionId") != sid]
    if stray:
        p.fail("V2-PROMPT-007", f"{len(stray)} session/update during the turns of {sid!r} named another session: "
               f"{stray[:3]}")
    else:
        p.ok("V2-PROMPT-007", "every update of the turns named the prompted session")


async def check_cancel_more(p: Probe) -> None:
    """V2-CANCEL-002 (a cancel carrying ``_meta`` is honoured, never answered), V2-CANCEL-003
    (nothing of the cancelled work after its idle)."""
    _, sid = await setup_v2(p)
    mark = len(p.records)

    async def cancel() -> None:
        p.notify(p.protocol.wire("cancel"), {"sessionId": sid, "_meta": {"acplink": "cancel"}})

    turn = await run_turn(p, sid, p.opts.cancel_prompt, bound=p.opts.timeout + p.opts.cancel_bound, during=cancel)
    if turn.response is None or "error" in turn.response or turn.idle is None:
        why = _short(turn.response) if turn.response else "no response"
        p.fail("V2-CANCEL-002", f"the turn did not end idle after session/cancel with _meta ({why})")
        p.skip("V2-CANCEL-003", "no cancelled idle to watch after")
        return
    reason = turn.idle.get("stopReason")
    after = next(i for i in range(mark, len(p.records)) if _is_idle(p, p.records[i], sid)) + 1
    await asyncio.sleep(max(p.opts.settle, 0.5))
    answers = _unanswerable(p, mark)
    if answers:
        p.fail("V2-CANCEL-002", f"the session/cancel notification was answered: {_short(answers[0])}")
    elif reason != "cancelled":
        p.fail("V2-CANCEL-002", f"after session/cancel with _meta the turn ended with stopReason {reason!r}")
    else:
        p.ok("V2-CANCEL-002", "session/cancel with _meta: idle cancelled, no answer")
    late = [_update(r).get("state") for r in p.records[after:]
            if _is_update(p, r, sid) and _update(r).get("sessionUpdate") == p.protocol.turns.state_kind]
    if late:
        p.fail("V2-CANCEL-003", f"state_update after the cancelled idle with no new prompt: {late[:3]}")
    else:
        p.ok("V2-CANCEL-003", "nothing after the cancelled idle")


async def check_close_running(p: Probe) -> None:
    """V2-CLOSE-004: session/close of a session whose turn runs cancels that turn."""
    _, sid = await setup_v2(p)
    closed: list[dict[str, Any] | None] = []

    async def close() -> None:
        closed.append(await p.request(p.protocol.wire("close_session"), {"sessionId": sid}))

    turn = await run_turn(p, sid, p.opts.cancel_prompt, bound=p.opts.timeout + p.opts.cancel_bound, during=close)
    if turn.response is None or "error" in turn.response:
        p.skip("V2-CLOSE-004", f"the prompt failed: {_short(turn.response) if turn.response else 'no response'}")
        return
    reason = turn.idle.get("stopReason") if turn.idle is not None else None
    if reason == "cancelled":
        p.ok("V2-CLOSE-004", "the running turn ended idle cancelled")
    else:
        p.fail("V2-CLOSE-004", "session/close during a running turn (answered "
               f"{_short(closed[0]) if closed and closed[0] else 'nothing'}): "
               + (f"idle with stopReason {reason!r}" if turn.idle else
                  f"no idle within {p.opts.timeout + p.opts.cancel_bound:g} s"))


async def check_content(p: Probe) -> None:
    """V2-CONTENT-001..004: text + resource_link, and each advertised attachment kind, are
    accepted and their turns end idle."""
    init, sid = await setup_v2(p)

    def judge(req: str, what: str, turn: Any) -> None:
        if turn.response is None or "error" in turn.response:
            p.fail(req, f"a prompt with {what} got {_short(turn.response) if turn.response else 'no response'}")
        elif turn.idle is None:
            p.fail(req, f"a prompt with {what} was accepted but its turn did not end idle within {p.opts.timeout:g} s")
        else:
            p.ok(req, f"{what}: accepted, idle {turn.idle.get('stopReason')!r}")

    judge("V2-CONTENT-001", "text and resource_link", await run_turn(p, sid, context_prompt()))
    prompt_caps = _session_caps(init).get("prompt")
    prompt_caps = prompt_caps if isinstance(prompt_caps, dict) else {}
    for req, (cap, block) in zip(("V2-CONTENT-002", "V2-CONTENT-003", "V2-CONTENT-004"), attachments(), strict=True):
        if prompt_caps.get(cap) is None:
            p.skip(req, f"capabilities.session.prompt.{cap} not advertised")
            continue
        judge(req, f"a {block['type']} block", await run_turn(
            p, sid, [text_block("Describe the attachment in one sentence."), block]))


async def check_shutdown(p: Probe) -> None:
    """V2-SHUT-001: the agent exits once its stdin closes."""
    await initialize_v2(p)
    await judge_shutdown(p, "V2-SHUT-001")


async def check_notifications(p: Probe) -> None:
    """V2-RPC-005 (an unknown ``_`` request gets -32601), V2-RPC-006 (notifications never
    answered), V2-RPC-007 (still answering after them and after erroneous requests)."""
    await initialize_v2(p)
    ext = await p.request("_acplink/no_such_extension", {"x": 1})
    if ext is None:
        p.skip("V2-RPC-005", "an unknown `_` request got no response (V2-RPC-003 fails)")
    elif _code(ext) == METHOD_NOT_FOUND:
        p.ok("V2-RPC-005", "an unknown `_` request got -32601")
    else:
        p.fail("V2-RPC-005", f"an unknown `_` request was answered {_short(ext)}, not error -32601: the client "
               "cannot tell the extension is not there")
    mark = len(p.records)
    p.notify(p.protocol.wire("cancel"), {"sessionId": "no-such-session"})
    p.notify("_acplink/notice", {"x": 1})
    await p.request(p.protocol.wire("prompt"), {"sessionId": 1})  # invalid params
    await asyncio.sleep(p.opts.settle)
    answers = _unanswerable(p, mark)
    if answers:
        p.fail("V2-RPC-006", f"a notification was answered: {_short(answers[0])}")
    else:
        p.ok("V2-RPC-006", "session/cancel (unknown session) and an unknown `_` notification got no answer")
    new = await p.request(p.protocol.wire("new_session"), {"cwd": p.workdir, "mcpServers": []})
    if isinstance(_result(new), dict) and isinstance(_result(new).get("sessionId"), str):
        p.ok("V2-RPC-007", "session/new still works after the notifications and an invalid request")
    else:
        p.fail("V2-RPC-007", "after an unknown `_` notification and an invalid request, session/new got "
               f"{_short(new) if new else 'no response'}" + ("" if p.alive else f" ({p.died()})"))


def _sessions(resp: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    result = _result(resp)
    listed = result.get("sessions") if isinstance(result, dict) else None
    return [s for s in listed if isinstance(s, dict)] if isinstance(listed, list) else None


async def check_list(p: Probe) -> None:
    """V2-LIST-001/002 (session/list filters), V2-SESS-008 (resume without replayFrom),
    V2-SESS-007 (a deleted session leaves the list)."""
    init, sid = await setup_v2(p)
    with tempfile.TemporaryDirectory(prefix="acplink-check-unused-") as unused:
        empty = await p.request(p.protocol.wire("list_sessions"), {"cwd": unused})
    got = _sessions(empty)
    if got == []:
        p.ok("V2-LIST-001", "sessions: [] for a cwd no session uses")
    else:
        p.fail("V2-LIST-001", f"session/list for a cwd no session uses got {_short(empty) if empty else 'no response'}"
               ", not sessions: []")
    here = await p.request(p.protocol.wire("list_sessions"), {"cwd": p.workdir})
    listed = _sessions(here)
    if listed is None:
        p.fail("V2-LIST-002", f"session/list filtered by the cwd got {_short(here) if here else 'no response'}")
    else:
        wrong = [s.get("cwd") for s in listed if s.get("cwd") != p.workdir or not os.path.isabs(str(s.get("cwd")))]
        if wrong:
            p.fail("V2-LIST-002", f"session/list for cwd {p.workdir!r} returned sessions of {wrong[:3]}")
        else:
            p.ok("V2-LIST-002", f"{len(listed)} sessions, each of cwd {p.workdir!r}")
    await run_turn(p, sid, "hello")
    mark = len(p.records)
    resumed = await p.request(p.protocol.wire("resume_session"), {"sessionId": sid, "cwd": p.workdir})
    answer = next((i for i, r in enumerate(p.records[mark:], mark) if r.get("dir") == "a2c"
                   and r.get("kind") == "response" and r.get("method") == p.protocol.wire("resume_session")), len(p.records))
    history = [_update(r).get("sessionUpdate") for r in p.records[mark:answer] if _is_update(p, r, sid)
               and str(_update(r).get("sessionUpdate", "")).startswith(("user_message", "agent_message",
                                                                       "agent_thought"))]
    if resumed is None or not isinstance(_result(resumed), dict):
        p.fail("V2-SESS-008", f"session/resume without replayFrom got {_short(resumed) if resumed else 'no response'}")
    elif history:
        p.fail("V2-SESS-008", f"session/resume without replayFrom replayed {history[:5]} before its response")
    else:
        p.ok("V2-SESS-008", "resumed, no history replayed")
    if _session_caps(init).get("delete") is None:
        p.skip("V2-SESS-007", "session.delete not advertised")
        return
    before = _sessions(await p.request(p.protocol.wire("list_sessions"), {}))
    if not before or sid not in [s.get("sessionId") for s in before]:
        p.skip("V2-SESS-007", "the session was never listed: nothing to compare after the delete")
        return
    deleted = await p.request(p.protocol.wire("delete_session"), {"sessionId": sid})
    after = _sessions(await p.request(p.protocol.wire("list_sessions"), {}))
    if deleted is None or "error" in deleted:
        p.skip("V2-SESS-007", f"session/delete failed ({_short(deleted) if deleted else 'no response'}: V2-SESS-004)")
    elif after is None:
        p.fail("V2-SESS-007", "session/list failed after the delete")
    elif sid in [s.get("sessionId") for s in after]:
        p.fail("V2-SESS-007", f"session {sid!r} is still listed after session/delete")
    else:
        p.ok("V2-SESS-007", "gone from session/list")


async def check_auth_methods(p: Probe) -> None:
    """V2-AUTH-002..005 from the initialize answer to a client advertising nothing."""
    init = await initialize_v2(p)
    methods = [m for m in init.get("authMethods") or [] if isinstance(m, dict)]
    ids = [m.get("methodId") for m in methods]
    dupes = repeated(ids)
    if dupes:
        p.fail("V2-AUTH-002", f"auth method ids advertised more than once: {dupes}")
    else:
        p.ok("V2-AUTH-002", f"{len(ids)} auth methods, ids unique")
    terminal = [m.get("methodId") for m in methods if m.get("type") == "terminal"]
    if terminal:
        p.fail("V2-AUTH-003", f"terminal auth methods {terminal} offered to a client without capabilities.auth.terminal")
    else:
        p.ok("V2-AUTH-003", "no terminal auth method offered")
    odd = [m.get("type") for m in methods if "type" in m
           and not (m["type"] in ("agent", "terminal") or (isinstance(m["type"], str) and m["type"].startswith("_")))]
    if odd:
        p.fail("V2-AUTH-004", f"auth method types that are neither defined nor `_`-prefixed: {odd}")
    else:
        p.ok("V2-AUTH-004", "every auth method type is defined or `_`-prefixed")
    if methods:
        p.skip("V2-AUTH-005", "the agent advertises auth methods")
        return
    new = await p.request(p.protocol.wire("new_session"), {"cwd": p.workdir, "mcpServers": []})
    if _code(new) == AUTH_REQUIRED:
        p.fail("V2-AUTH-005", f"no auth methods advertised, yet session/new failed with -32000: {_short(new)}")
    else:
        p.ok("V2-AUTH-005", "no auth methods, and session/new did not ask for authentication")


V2_KIT_CHECKS: tuple[Check, ...] = (
    Check("v2-session-ids", check_session_ids, ("V2-SESS-005", "V2-SESS-006"), V2_MONITORED),
    Check("v2-prompt-ids", check_prompt_ids, ("V2-PROMPT-006", "V2-PROMPT-007", "V2-EXT-002"), V2_MONITORED),
    Check("v2-cancel-meta", check_cancel_more, ("V2-CANCEL-002", "V2-CANCEL-003"), V2_MONITORED),
    Check("v2-close-running", check_close_running, ("V2-CLOSE-004",), V2_MONITORED),
    Check("v2-content", check_content, ("V2-CONTENT-001", "V2-CONTENT-002", "V2-CONTENT-003", "V2-CONTENT-004"),
          V2_MONITORED),
    Check("v2-shutdown", check_shutdown, ("V2-SHUT-001",)),
    Check("v2-notifications", check_notifications, ("V2-RPC-005", "V2-RPC-006", "V2-RPC-007"), V2_MONITORED),
    Check("v2-list", check_list, ("V2-LIST-001", "V2-LIST-002", "V2-SESS-007", "V2-SESS-008"), V2_MONITORED),
    Check("v2-auth-methods", check_auth_methods, ("V2-AUTH-002", "V2-AUTH-003", "V2-AUTH-004", "V2-AUTH-005"),
          V2_MONITORED),
)
