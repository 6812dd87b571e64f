"""The probes of the v1 requirement set: one async function per requirement group, each on a
fresh agent (the check table that names them is the protocol's data,
:mod:`acplink.protocol.requirements`).

A probe reports outcomes for requirement ids (or for roles the check table maps to ids). After
each check the runner also analyses its transcript (schema, ordering, capability use, response
ids) and turns findings into failures of the matching requirements.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..connection.rules import advertises, missing_capability, required_capability
from ..errors import AcpError
from ..protocol.state import default_protocol
from ..schema import _generated as s
from ..schema._parse import parse
from . import checks_kit as kit
from .check_helpers import (
    _busy_turn_retrying,
    _error_code,
    _prompt,
    _stop_reason,
    _too_fast,
    attachments,
    context_prompt,
)
from .probe import Probe, _short, prompt_params, text_block

__all__ = ["PROBES", "Check", "ProbeFn"]

UNKNOWN_VERSION = 60000  # a valid uint16 that no agent speaks
#: the version these checks ask for (the first: every agent supports it)
ASKED = default_protocol().version
#: the valid protocol version numbers (a uint16)
_UINT16 = range(65536)
#: a probe: what one check does with its fresh agent
ProbeFn = Callable[[Probe], Awaitable[None]]


@dataclass(frozen=True)
class Check:
    name: str
    fn: ProbeFn
    requirements: tuple[str, ...]
    #: monitored requirements this check exercises: passed when its transcript shows no violation
    vouches: tuple[str, ...] = ()
    #: the probe's roles → the requirement ids they report (see :class:`~acplink.protocol.requirements.CheckSpec`)
    roles: Mapping[str, str] = field(default_factory=dict)


# -- initialization ------------------------------------------------------------------------------

async def check_initialize(p: Probe) -> None:
    resp = await p.request("initialize", {"protocolVersion": ASKED, "clientCapabilities": {},
                                          "clientInfo": {"name": "acplink-check", "version": "1"}})
    if resp is None:
        p.fail("INIT-001", f"no response to initialize within {p.opts.init_timeout} s"
               + ("" if p.alive else f" ({p.died()})"))
        return
    if "error" in resp:
        p.fail("INIT-001", f"initialize failed: {_short(resp['error'])}")
        return
    result = resp.get("result")
    try:
        init = parse(s.InitializeResponse, result)
    except AcpError as exc:
        p.fail("INIT-001", f"invalid InitializeResponse: {exc}")
        return
    p.ok("INIT-001", f"protocolVersion {init.protocol_version}")
    if init.protocol_version == ASKED:
        p.ok("INIT-002", f"asked for {ASKED}, got {ASKED}")
    else:
        p.fail("INIT-002", f"asked for protocol version {ASKED} (supported by every v{ASKED} agent), got "
               f"{init.protocol_version}")
    info = init.agent_info
    if info is not None and info.name and info.version:
        p.ok("INIT-004", f"{info.name} {info.version}")
    else:
        p.fail("INIT-004", "no agentInfo with name and version in the initialize response")
    if p.opts.auth_method:
        methods = [getattr(m, "id", None) for m in init.auth_methods or []]
        resp = await p.request("authenticate", {"methodId": p.opts.auth_method})
        if resp is not None and "result" in resp:
            p.ok("AUTH-001", f"authenticated with {p.opts.auth_method!r}")
        else:
            p.fail("AUTH-001", f"authenticate with {p.opts.auth_method!r} (advertised: {methods}) failed: "
                   f"{_short(resp) if resp else 'no response'}")
    else:
        p.skip("AUTH-001", "no --auth-method given")


async def check_unknown_version(p: Probe) -> None:
    resp = await p.request("initialize", {"protocolVersion": UNKNOWN_VERSION, "clientCapabilities": {}})
    if resp is None:
        p.fail("INIT-003", f"no response to initialize with protocolVersion {UNKNOWN_VERSION}"
               + ("" if p.alive else f" ({p.died()})"))
        return
    if "error" in resp:
        p.fail("INIT-003", f"answered an unknown version with an error instead of its own latest version: "
               f"{_short(resp['error'])}")
        return
    version = resp.get("result", {}).get("protocolVersion") if isinstance(resp.get("result"), dict) else None
    if version == UNKNOWN_VERSION:
        p.fail("INIT-003", f"echoed the unknown protocol version {UNKNOWN_VERSION} instead of its own latest")
    elif type(version) is not int or version not in _UINT16:
        p.fail("INIT-003", f"protocolVersion {version!r} is not a valid version")
    else:
        p.ok("INIT-003", f"asked for {UNKNOWN_VERSION}, got {version}")


# -- sessions and prompts ------------------------------------------------------------------------

async def check_session_new(p: Probe) -> None:
    await p.initialize()
    resp = await p.request("session/new", {"cwd": p.workdir, "mcpServers": []})
    if resp is None or "error" in resp:
        p.fail("SESS-001", f"session/new failed: {_short(resp) if resp else 'no response'}")
        return
    try:
        first = parse(s.NewSessionResponse, resp.get("result"))
    except AcpError as exc:
        p.fail("SESS-001", f"invalid NewSessionResponse: {exc}")
        return
    p.ok("SESS-001", f"sessionId {first.session_id!r}")
    second = await p.new_session()
    if second != first.session_id:
        p.ok("SESS-002", "two sessions, two ids")
    else:
        p.fail("SESS-002", f"two session/new calls both returned {second!r}")


async def check_prompt(p: Probe) -> None:
    sid = await p.setup()
    mark = len(p.records)
    resp = await _prompt(p, sid, [text_block("Hello! Please reply with one short sentence.")], "PROMPT-001")
    if resp is not None:
        _stop_reason(p, resp)
        others = {str((u["msg"].get("params") or {}).get("sessionId")) for u in p.updates(None, mark)} - {sid}
        if others:
            p.fail("PROMPT-006", f"while session {sid!r} was prompted, updates named session(s) "
                   f"{', '.join(sorted(others))}")
        else:
            p.ok("PROMPT-006", f"{len(p.updates(sid, mark))} update(s), all for the prompted session")
    tail = p.transport.stderr_tail if p.transport is not None else []
    p.ok("TRANS-002", f"{len(tail)} line(s) on stderr" + (f", the last: {tail[-1][:200]!r}" if tail else ""))
    resp = await p.request("session/prompt", prompt_params("sess-that-does-not-exist-0000", [text_block("hi")]))
    if resp is None:
        p.fail("PROMPT-005", "a prompt for an unknown session got no response")
    elif "error" in resp:
        p.ok("PROMPT-005", f"error {_error_code(resp)}")
    else:
        p.fail("PROMPT-005", f"a prompt for an unknown session succeeded: {_short(resp)}")


async def check_capability_honesty(p: Probe) -> None:
    """No client capabilities at all: the agent must not call fs, terminal or elicitation."""
    sid = await p.setup(caps={})
    for text in ("Read the file README.md in the current directory and summarise it.",
                 "Run the command `ls -la` in a terminal and tell me what you see.",
                 "Ask me a question using a form, then answer."):
        resp = await _prompt(p, sid, [text_block(text)], "PROMPT-001")
        if resp is None:
            return
    p.ok("CAP-004", "the baseline methods (initialize, session/new, session/prompt) work")


async def check_content(p: Probe) -> None:
    sid = await p.setup()
    resp = await _prompt(p, sid, context_prompt(), "CONTENT-001")
    if resp is not None:
        if "error" in resp:
            p.fail("CONTENT-001", f"text + resource_link prompt failed: {_short(resp['error'])}")
        else:
            p.ok("CONTENT-001", "accepted")
    assert p.init is not None
    caps = p.init.agent_capabilities
    for req, (cap, block) in zip(("CONTENT-002", "CONTENT-003", "CONTENT-004"), attachments(), strict=True):
        if not advertises(caps, f"promptCapabilities.{cap}"):
            p.skip(req, f"promptCapabilities.{cap} not advertised")
            continue
        resp = await _prompt(p, sid, [text_block("Describe the attachment in one sentence."), block], req)
        if resp is None:
            continue
        if "error" in resp:
            p.fail(req, f"advertised, but a prompt with a {block['type']} block failed: {_short(resp['error'])}")
        else:
            p.ok(req, "accepted")


# -- cancellation --------------------------------------------------------------------------------

async def check_cancel(p: Probe) -> None:
    sid = await p.setup()
    held: list[asyncio.Future[Any]] = []

    async def hold(_params: s.RequestPermissionRequest) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        held.append(fut)
        return await fut

    p.permission_handler = hold
    rid, early, mark = await _busy_turn_retrying(p, sid, "cancel-turn")
    if early is not None:
        why = _too_fast(early)
        p.skip("CANCEL-001", why)
        p.skip("CANCEL-002", why)
        return
    t = time.monotonic()
    p.notify("session/cancel", {"sessionId": sid})
    # the client side of cancellation: answer pending permission requests with `cancelled`
    await asyncio.sleep(0.05)
    for fut in held:
        if not fut.done():
            fut.set_result({"outcome": {"outcome": "cancelled"}})
    rec = await p.wait_for(lambda r: r.get("dir") == "a2c" and r.get("kind") == "response" and r.get("id") == rid,
                           p.opts.cancel_bound, start=mark)
    if rec is None:
        p.fail("CANCEL-001", f"the turn did not end within {p.opts.cancel_bound} s of session/cancel"
               + ("" if p.alive else f" ({p.died()})"))
        if held:
            p.fail("CANCEL-002", "a permission request was answered `cancelled`, and the turn did not end")
        else:
            p.skip("CANCEL-002", "the agent asked no permission during the cancelled turn")
        return
    took = time.monotonic() - t
    msg = rec["msg"]
    reason = msg.get("result", {}).get("stopReason") if isinstance(msg.get("result"), dict) else None
    if reason == "cancelled":
        p.ok("CANCEL-001", f"stopReason cancelled {took:.2f} s after session/cancel")
    elif "error" in msg:
        p.fail("CANCEL-001", f"the cancelled turn was answered with an error instead of stopReason cancelled: "
               f"{_short(msg['error'])}")
    else:
        p.fail("CANCEL-001", f"the cancelled turn ended with stopReason {reason!r}, not 'cancelled'")
    if held:
        if reason == "cancelled":
            p.ok("CANCEL-002", f"{len(held)} permission request(s) answered cancelled; the turn ended cancelled")
        else:
            p.fail("CANCEL-002", f"after a permission request was answered cancelled the turn ended with {reason!r}")
    else:
        p.skip("CANCEL-002", "the agent asked no permission during the cancelled turn")
    await asyncio.sleep(p.opts.settle)


async def check_cancel_request(p: Probe) -> None:
    sid = await p.setup()
    rid, early, mark = await _busy_turn_retrying(p, sid, "cancel-request")
    if early is not None:
        p.skip("CANCEL-003", _too_fast(early))
        return
    p.notify("$/cancel_request", {"requestId": rid})
    rec = await p.wait_for(lambda r: r.get("dir") == "a2c" and r.get("kind") == "response" and r.get("id") == rid,
                           p.opts.cancel_bound, start=mark)
    if rec is None:
        p.fail("CANCEL-003", f"the request cancelled with $/cancel_request got no response within "
               f"{p.opts.cancel_bound} s")
        p.notify("session/cancel", {"sessionId": sid})  # end the turn before shutting down
        return
    code = _error_code(rec["msg"])
    if code == -32800:
        p.ok("CANCEL-003", "answered -32800")
    elif "result" in rec["msg"]:
        p.ok("CANCEL-003", f"answered with a result: {_short(rec['msg']['result'])}")
    else:
        p.ok("CANCEL-003", f"answered with error {code} (the standard is -32800)")


# -- JSON-RPC ------------------------------------------------------------------------------------

async def check_unknown_method(p: Probe) -> None:
    await p.initialize()
    resp = await p.request("acplink/no_such_method", {"x": 1})
    if resp is None:
        p.fail("RPC-001", "an unknown method got no response" + ("" if p.alive else f" ({p.died()})"))
    elif _error_code(resp) == -32601:
        p.ok("RPC-001", "answered -32601")
    else:
        p.fail("RPC-001", f"an unknown method was answered {_short(resp)}, not error -32601")


async def check_extensions(p: Probe) -> None:
    await p.initialize()
    resp = await p.request("_acplink/check_extension", {"hello": "world"})
    if resp is None:
        p.fail("RPC-002", "a `_` extension request got no response" + ("" if p.alive else f" ({p.died()})"))
    else:
        p.ok("RPC-002", f"answered {'error ' + str(_error_code(resp)) if 'error' in resp else 'with a result'}")
    if resp is None:
        p.skip("RPC-016", "the `_` extension request got no response")
    elif _error_code(resp) == -32601:
        p.ok("RPC-016", "an unknown `_` request got -32601")
    else:
        p.fail("RPC-016", f"an unknown `_` request (_acplink/check_extension) was answered {_short(resp)}, "
               "not error -32601: the client cannot tell the extension is not there")
    p.notify("_acplink/check_notice", {"hello": "world"})
    why = await p.still_alive()
    if why is None:
        p.ok("RPC-003", "still answering after an unknown `_` notification")
    else:
        p.fail("RPC-003", f"after an unknown `_` notification: {why}")


async def _malformed(p: Probe, data: bytes, survive: str, answer: str, code: int, what: str) -> None:
    await p.initialize()
    mark = len(p.records)
    p.send_raw(data)
    rec = await p.wait_for(lambda r: r.get("dir") == "a2c" and r.get("kind") == "response"
                           and "id" in r["msg"] and r.get("id") is None, min(p.opts.timeout, 3.0), start=mark)
    why = await p.still_alive()
    if why is None:
        p.ok(survive, f"still answering after {what}")
    else:
        p.fail(survive, f"after {what}: {why}")
    if rec is None:
        idless = next((r for r in p.records[mark:] if r.get("dir") == "a2c" and isinstance(r.get("msg"), dict)
                       and "error" in r["msg"] and "id" not in r["msg"]), None)
        if idless is not None:
            p.fail(answer, f"{what} was answered with an error without an `id` member (JSON-RPC requires "
                   f"`\"id\": null` here): {_short(idless['msg'])}")
        else:
            p.fail(answer, f"{what} got no error response within {min(p.opts.timeout, 3.0):g} s")
    elif _error_code(rec["msg"]) == code:
        p.ok(answer, f"answered {code}")
    else:
        p.fail(answer, f"{what} was answered {_short(rec['msg'])}, expected error {code}")


async def check_invalid_json(p: Probe) -> None:
    await _malformed(p, b'{"jsonrpc": "2.0", "id": 77, "method": "session/new", "params": {\n',
                     "RPC-004", "RPC-005", -32700, "invalid JSON")


async def check_batch(p: Probe) -> None:
    await _malformed(p, b'[{"jsonrpc":"2.0","id":"b1","method":"acplink/x"},{"jsonrpc":"2.0","method":"_acplink/y"}]\n',
                     "RPC-006", "RPC-007", -32600, "a JSON array (batch)")


async def check_not_jsonrpc(p: Probe) -> None:
    await _malformed(p, b'{"foo": "bar"}\n', "RPC-004", "RPC-015", -32600, 'a JSON object that is not JSON-RPC')


async def check_notifications(p: Probe) -> None:
    """session/cancel of an idle session and an unknown `_` notification: never answered."""
    sid = await p.setup()
    mark = len(p.records)
    p.notify("session/cancel", {"sessionId": sid})
    p.notify("_acplink/check_notice", {"hello": "world"})
    why = await p.still_alive()
    await asyncio.sleep(p.opts.settle)
    answers = [r for r in p.records[mark:] if r.get("dir") == "a2c" and isinstance(r.get("msg"), dict)
               and "method" not in r["msg"] and ("result" in r["msg"] or "error" in r["msg"])
               and not isinstance(r["msg"].get("id"), str | int)]
    if answers:
        p.fail("RPC-013", f"the agent answered a notification: {_short(answers[0]['msg'])}")
    elif why is not None:
        p.fail("RPC-013", f"after two notifications: {why}")
    else:
        p.ok("RPC-013", "session/cancel (idle session) and an unknown `_` notification got no answer")


async def check_invalid_request(p: Probe) -> None:
    await p.initialize()
    mark = len(p.records)
    p.send_raw({"jsonrpc": "2.0", "id": "bad-method", "method": 42})
    rec = await p.wait_for(lambda r: r.get("dir") == "a2c" and r.get("kind") == "response",
                           min(p.opts.timeout, 3.0), start=mark)
    if rec is None:
        p.fail("RPC-012", "a request whose method is not a string got no response")
    elif _error_code(rec["msg"]) == -32600:
        p.ok("RPC-012", "answered -32600")
    else:
        p.fail("RPC-012", f"answered {_short(rec['msg'])}, expected error -32600")


async def check_invalid_params(p: Probe) -> None:
    await p.initialize()
    for method, params in (("session/new", {"cwd": 42, "mcpServers": "none"}),
                           ("session/prompt", {"sessionId": ["not", "a", "string"]})):
        resp = await p.request(method, params)
        if resp is None:
            p.fail("RPC-008", f"{method} with invalid params got no response"
                   + ("" if p.alive else f" ({p.died()})"))
            return
        if "error" not in resp:
            p.fail("RPC-008", f"{method} with invalid params {_short(params)} succeeded: {_short(resp)}")
            return
        if _error_code(resp) != -32602:
            p.fail("RPC-009", f"{method} with invalid params answered {_error_code(resp)}, not -32602")
    why = await p.still_alive()
    if why is not None:
        p.fail("RPC-008", why)
        return
    p.ok("RPC-008", "answered with errors and kept working")
    if not p.reported("RPC-009"):
        p.ok("RPC-009", "answered -32602")


async def check_ids(p: Probe) -> None:
    for rid, method, params in (("init-\u03b1/1", "initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
                                (0, "session/new", {"cwd": p.workdir, "mcpServers": []}),
                                (2**53 - 1, "acplink/unknown", {})):
        mark = len(p.records)
        p.send_raw({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        rec = await p.wait_for(lambda r: r.get("dir") == "a2c" and r.get("kind") == "response",
                               p.opts.timeout, start=mark)
        if rec is None:
            p.fail("RPC-010", f"{method} with id {rid!r} got no response")
            return
        got = rec.get("id")
        if got != rid or type(got) is not type(rid):
            p.fail("RPC-010", f"{method} sent with id {rid!r} was answered with id {got!r}")
            return
    p.ok("RPC-010", "string, zero and large ids answered with the same id")


async def check_meta(p: Probe) -> None:
    meta = {"acplink.dev/check": {"nested": [1, 2, 3]}, "traceparent": "00-0af7651916cd43dd-b7ad6b7169203331-01"}
    init = {"protocolVersion": 1, "clientCapabilities": {"_meta": meta, "fs": {"_meta": meta}},
            "clientInfo": {"name": "acplink-check", "version": "1", "_meta": meta}, "_meta": meta}
    steps = [("initialize", init)]
    for method, params in steps:
        resp = await p.request(method, params)
        if resp is None or "error" in resp:
            p.fail("RPC-011", f"{method} with _meta failed: {_short(resp) if resp else 'no response'}")
            return
    resp = await p.request("session/new", {"cwd": p.workdir, "mcpServers": [], "_meta": meta})
    if resp is not None and "error" in resp:
        await p.new_session()  # fails the same way without _meta: a setup error, not _meta's fault
    if resp is None or "error" in resp or not isinstance(resp.get("result"), dict):
        p.fail("RPC-011", f"session/new with _meta failed: {_short(resp) if resp else 'no response'}")
        return
    sid = resp["result"].get("sessionId")
    block = {"type": "text", "text": "Hello (with _meta everywhere).", "_meta": meta,
             "annotations": {"_meta": meta, "audience": ["user"]}}
    resp = await p.request("session/prompt", {"sessionId": sid, "prompt": [block], "_meta": meta})
    if resp is None or "error" in resp:
        p.fail("RPC-011", f"session/prompt with _meta failed: {_short(resp) if resp else 'no response'}")
        return
    p.notify("session/cancel", {"sessionId": sid, "_meta": meta})
    why = await p.still_alive()
    if why is not None:
        p.fail("RPC-011", f"after session/cancel with _meta: {why}")
        return
    p.ok("RPC-011", "initialize, session/new, session/prompt, content blocks and session/cancel with _meta")


# -- optional session methods --------------------------------------------------------------------

#: what a lifecycle check does after a successful answer: (probe, session id, response, mark)
After = Callable[[Probe, str, dict[str, Any], int], Awaitable[None]]


def _lifecycle(method: str, req: str, build: Callable[[str, str], dict[str, Any]],
               *, needs_session: bool = True, after: After | None = None) -> Callable[[Probe], Awaitable[None]]:
    need = required_capability(method)
    assert need is not None, method
    cap = need[1]

    async def check(p: Probe) -> None:
        sid = await p.setup()
        assert p.init is not None
        if missing_capability(method, None, p.init.agent_capabilities) is not None:
            p.skip(req, f"{cap} not advertised")
            return
        if needs_session:
            await _prompt(p, sid, [text_block("Remember the word 'acplink'.")], req)
        mark = len(p.records)
        resp = await p.request(method, build(sid, p.workdir))
        if resp is None:
            p.fail(req, f"{method} got no response" + ("" if p.alive else f" ({p.died()})"))
            return
        if _error_code(resp) == -32601:
            p.fail(req, f"{cap} advertised, but {method} answered -32601")
            p.fail("CAP-004", f"{cap} advertised, but {method} answered -32601")
            return
        if "error" in resp:
            p.fail(req, f"{method} failed: {_short(resp['error'])}")
            return
        p.ok("CAP-004", f"{method} implemented")
        if after is not None:
            await after(p, sid, resp, mark)
        if method == "session/load":
            replay = [r for r in p.updates(sid, mark)
                      if (r["msg"]["params"].get("update") or {}).get("sessionUpdate") in
                      ("user_message_chunk", "agent_message_chunk")]
            if not replay:
                p.fail(req, "session/load answered, but no history was replayed before the response")
                return
        p.ok(req, f"{method} answered")

    return check


async def judge_shutdown(p: Probe, req: str) -> None:
    """Close the agent's stdin: ``req`` passes when it exits within the shutdown bound."""
    took = await p.aclose()
    code = p.transport.returncode if p.transport is not None else None
    if took < p.opts.shutdown_bound:
        p.ok(req, f"exited {took:.2f} s after stdin closed (exit code {code})")
    else:
        p.fail(req, f"still running {p.opts.shutdown_bound} s after its stdin closed (it had to be "
               f"signalled; exit code {code})")


def _build_load(sid: str, cwd: str) -> dict[str, Any]:
    return {"sessionId": sid, "cwd": cwd, "mcpServers": []}


PROBES: dict[str, ProbeFn] = {
    "initialize": check_initialize,
    "unknown-version": check_unknown_version,
    "session-new": check_session_new,
    "prompt": check_prompt,
    "capabilities": check_capability_honesty,
    "content": check_content,
    "cancel": check_cancel,
    "cancel-request": check_cancel_request,
    "unknown-method": check_unknown_method,
    "extensions": check_extensions,
    "notifications": check_notifications,
    "invalid-json": check_invalid_json,
    "not-jsonrpc": check_not_jsonrpc,
    "batch": check_batch,
    "invalid-params": check_invalid_params,
    "invalid-request": check_invalid_request,
    "ids": check_ids,
    "meta": check_meta,
    "session-list": _lifecycle("session/list", "SESS-010", lambda sid, cwd: {"cwd": cwd}, needs_session=False,
                               after=kit.after_list),
    "session-load": _lifecycle("session/load", "SESS-011", _build_load, after=kit.after_load),
    "session-resume": _lifecycle("session/resume", "SESS-012", _build_load, after=kit.after_resume),
    "session-close": _lifecycle("session/close", "SESS-013", lambda sid, cwd: {"sessionId": sid}),
    "session-delete": _lifecycle("session/delete", "SESS-014", lambda sid, cwd: {"sessionId": sid},
                                 after=kit.after_delete),
    "session-fork": _lifecycle("session/fork", "SESS-015", lambda sid, cwd: {"sessionId": sid, "cwd": cwd,
                                                                           "mcpServers": []}),
    "close-running": kit.check_close_running,
    "additional-directories": kit.check_additional_directories,
    "logout": kit.check_logout,
    "modes": kit.check_modes,
    "config-options": kit.check_config_options,
}
