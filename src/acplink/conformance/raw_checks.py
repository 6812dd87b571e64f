"""The probes of a receipt lifecycle (ACP v2's: ``acplink check --protocol 2``), written once
against the protocol object: its wire names, its turn rules, its requirement set's data.

Every probe runs on a fresh agent over the raw channel of a :class:`Probe`: a turn is a
``session/prompt`` answered with a receipt, then updates until the update the turn rules say
ends it (``state_update`` idle in v2). A probe reports under roles (``"receipt"``); the check
table of the requirement set (:mod:`acplink.protocol.requirements`) names the probes it runs
and maps each role to one of its requirement ids. After each check, its transcript is judged
for the set's monitored requirements (the schema of every message the agent sent, response ids).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import AcpError
from ..protocol.initialize import agent_info
from ..protocol.state import default_protocol
from ..schema import parse
from .checks import ProbeFn
from .probe import CheckAbort, Probe, _short, text_block

__all__ = ["PROBES", "Turn", "handshake", "run_turn", "setup"]

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
#: ACP's error of an initialize asking for a version the agent does not speak
UNSUPPORTED_PROTOCOL_VERSION = -32022


def _init_params(p: Probe, version: int | None = None, **extra: Any) -> dict[str, Any]:
    """The params of the checker's ``initialize`` (the requirement set's), for ``version``."""
    return {"protocolVersion": p.protocol.version if version is None else version, **p.rules.initialize, **extra}


def _code(resp: dict[str, Any] | None) -> int | None:
    err = resp.get("error") if resp else None
    return err.get("code") if isinstance(err, dict) and type(err.get("code")) is int else None


def _result(resp: dict[str, Any] | None) -> Any:
    return resp.get("result") if resp else None


def _update(rec: dict[str, Any]) -> dict[str, Any]:
    params = rec["msg"].get("params") if isinstance(rec.get("msg"), dict) else None
    upd = params.get("update") if isinstance(params, dict) else None
    return upd if isinstance(upd, dict) else {}


def _is_update(p: Probe, rec: dict[str, Any], sid: str) -> bool:
    msg = rec.get("msg")
    params = msg.get("params") if isinstance(msg, dict) else None
    return (rec.get("dir") == "a2c" and p.protocol.is_(str(rec.get("method")), "session_update")
            and isinstance(params, dict) and params.get("sessionId") == sid)


def _is_idle(p: Probe, rec: dict[str, Any], sid: str) -> bool:
    """Whether ``rec`` is the update that ends the session's turn (the protocol's turn rules)."""
    return _is_update(p, rec, sid) and p.protocol.turns.end_of(_update(rec)) is not None


async def handshake(p: Probe, **extra: Any) -> dict[str, Any]:
    """The checker's ``initialize`` for the protocol checked; its result. Raises CheckAbort when
    the agent does not agree on that version."""
    resp = await p.request(p.protocol.wire("initialize"), _init_params(p, **extra))
    result = _result(resp)
    if not isinstance(result, dict) or result.get("protocolVersion") != p.protocol.version:
        raise CheckAbort(f"initialize with protocolVersion {p.protocol.version} failed: "
                         f"{_short(resp) if resp else 'no response'}")
    return result


async def setup(p: Probe) -> tuple[dict[str, Any], str]:
    """initialize (+ the login of ``--auth-method``) + session/new: the initialize result and
    the session id."""
    init = await handshake(p)
    if p.opts.auth_method:
        try:
            await p.raw_call(p.protocol.wire("authenticate"), {"methodId": p.opts.auth_method})
        except AcpError as exc:
            raise CheckAbort(f"{p.protocol.wire('authenticate')} failed: {exc}") from None
    return init, await p.new_session()


@dataclass
class Turn:
    """One turn as seen on the wire."""

    response: dict[str, Any] | None
    updates: list[dict[str, Any]] = field(default_factory=list)  # the session's updates, idle included
    idle: dict[str, Any] | None = None

    @property
    def message_id(self) -> Any:
        result = _result(self.response)
        return result.get("messageId") if isinstance(result, dict) else None

    def kinds(self) -> list[str]:
        return [str(u.get("sessionUpdate")) for u in self.updates]


async def run_turn(p: Probe, sid: str, text: str | list[dict[str, Any]], *, bound: float | None = None,
                   during: Callable[[], Any] | None = None) -> Turn:
    """Send a prompt (``text``, or these content blocks), wait for the receipt and for the
    session's next idle state_update (within ``bound``, default the request timeout).
    ``during``: awaited once the turn is running (e.g. to cancel it)."""
    mark = len(p.records)
    blocks = [text_block(text)] if isinstance(text, str) else text
    resp = await p.request(p.protocol.wire("prompt"), {"sessionId": sid, "prompt": blocks})
    turn = Turn(resp)
    if resp is None or "error" in resp:
        return turn
    if during is not None:
        await p.wait_for(lambda r: _is_update(p, r, sid) and _update(r).get("sessionUpdate") != p.protocol.turns.echo_kind,
                         p.opts.timeout, start=mark)
        await during()
    idle = await p.wait_for(lambda r: _is_idle(p, r, sid), bound or p.opts.timeout, start=mark)
    turn.idle = _update(idle) if idle is not None else None
    end = p.records.index(idle) + 1 if idle is not None else len(p.records)
    turn.updates = [_update(r) for r in p.records[mark:end] if _is_update(p, r, sid)]
    return turn


def _judge_turn(p: Probe, turn: Turn, *, echo: bool = True) -> None:
    """The roles receipt, echo, running and idle from one turn."""
    if turn.response is None:
        p.fail("receipt", f"session/prompt got no response within {p.opts.timeout} s")
        return
    if "error" in turn.response:
        p.fail("receipt", f"the prompt was answered with an error: {_short(turn.response['error'])}")
        return
    mid = turn.message_id
    if isinstance(mid, str) and mid:
        p.ok("receipt", f"receipt messageId {mid!r}")
    else:
        p.fail("receipt", f"the receipt has no string messageId: {_short(turn.response)}")
    if echo:
        echoed = any(u.get("sessionUpdate") in (p.protocol.turns.echo_kind, "user_message_chunk")
                     and u.get("messageId") == mid for u in turn.updates)
        if echoed:
            p.ok("echo", "the user message was echoed with the receipt's messageId")
        else:
            p.fail("echo", f"no user_message with messageId {mid!r} among {turn.kinds()}")
    if turn.idle is None:
        p.fail("idle", f"no idle state_update within {p.opts.timeout} s (updates: {turn.kinds()})")
        p.fail("running", "the turn never ended idle")
        return
    states = [u.get("state") for u in turn.updates if u.get("sessionUpdate") == p.protocol.turns.state_kind]
    if p.protocol.turns.running_state in states[:-1]:
        p.ok("running", "running before idle")
    else:
        p.fail("running", f"no `running` state_update before the idle one (states: {states})")
    reason = turn.idle.get("stopReason")
    if isinstance(reason, str) and (reason in p.protocol.turns.stop_reasons or reason.startswith("_")):
        p.ok("idle", f"idle with stopReason {reason!r}")
    else:
        p.fail("idle", f"the idle state_update has no valid stopReason: {_short(turn.idle)}")


def _session_caps(p: Probe, init: dict[str, Any]) -> dict[str, Any]:
    """The session capabilities the agent advertised (where the requirement set says they are)."""
    caps: Any = init
    for key in p.rules.facts["session_capabilities"]:
        caps = caps.get(key) if isinstance(caps, dict) else None
    return caps if isinstance(caps, dict) else {}


# -- checks ---------------------------------------------------------------------------------------


async def check_initialize(p: Probe) -> None:
    version = p.protocol.version
    resp = await p.request(p.protocol.wire("initialize"), _init_params(p))
    if resp is None or "error" in resp:
        p.fail("answer", f"initialize failed: {_short(resp) if resp else 'no response'}")
        return
    try:
        init = parse(p.protocol.models.InitializeResponse, _result(resp))
    except AcpError as exc:
        p.fail("answer", f"invalid v{version} InitializeResponse: {exc}")
        return
    info = agent_info(_result(resp)) or {}
    if init.protocol_version == version:
        p.ok("answer", f"protocolVersion {version}, agent {info.get('name')} {info.get('version')}")
    else:
        p.fail("answer", f"asked for {version}, got protocolVersion {init.protocol_version}")
        return
    first = default_protocol()  # (a repeated initialize asking for the first version, in its shape)
    again = await p.request(p.protocol.wire("initialize"), {"protocolVersion": first.version,
                                                            first.capabilities_field[1]: {}})
    if _code(again) == INVALID_REQUEST:
        p.ok("repeat", f"a repeated initialize asking for {first.version} got -32600")
    else:
        p.fail("repeat", f"a repeated initialize asking for {first.version} got "
               f"{_short(again) if again else 'no response'}")
    if p.opts.auth_method:
        login = await p.request(p.protocol.wire("authenticate"), {"methodId": p.opts.auth_method})
        if login is not None and "result" in login:
            p.ok("login", f"logged in with {p.opts.auth_method!r}")
        else:
            p.fail("login", f"auth/login with {p.opts.auth_method!r}: {_short(login) if login else 'no response'}")
    else:
        p.skip("login", "no --auth-method given")


async def check_versions(p: Probe) -> None:
    version = p.protocol.version
    newer = await p.request(p.protocol.wire("initialize"), _init_params(p, version + 1))
    got = _result(newer).get("protocolVersion") if isinstance(_result(newer), dict) else None
    if got == p.protocol.version:
        p.ok("newer", f"asked for {version + 1}, got {version}")
    else:
        p.fail("newer", f"asked for {version + 1}, got {_short(newer) if newer else 'no response'}")
    # a fresh agent for the too-old version: the first initialize is settled now
    await p.aclose()
    await p.start()
    old = await p.request(p.protocol.wire("initialize"), _init_params(p, 0))
    err = old.get("error") if old else None
    data = err.get("data") if isinstance(err, dict) else None
    if _code(old) == UNSUPPORTED_PROTOCOL_VERSION and isinstance(data, dict) and data.get("requested") == 0 \
            and isinstance(data.get("supported"), list):
        p.ok("too_old", f"-32022 with supported {data['supported']}")
    else:
        p.fail("too_old", f"protocolVersion 0 got {_short(old) if old else 'no response'}")


async def check_prompt(p: Probe) -> None:
    _, sid = await setup(p)
    p.ok("session", f"session {sid}")
    _judge_turn(p, await run_turn(p, sid, "hello"))
    mark = len(p.records)
    empty = await p.request(p.protocol.wire("prompt"), {"sessionId": sid, "prompt": []})
    await asyncio.sleep(p.opts.settle)
    inserted = [r for r in p.records[mark:] if _is_update(p, r, sid)
                and _update(r).get("sessionUpdate") in (p.protocol.turns.echo_kind, "user_message_chunk")]
    if _code(empty) == INVALID_PARAMS and not inserted:
        p.ok("empty", "an empty prompt got -32602")
    else:
        p.fail("empty", f"an empty prompt got {_short(empty) if empty else 'no response'}"
               + (f" and {len(inserted)} user message updates" if inserted else ""))


async def check_cancel(p: Probe) -> None:
    _, sid = await setup(p)

    async def cancel() -> None:
        p.notify(p.protocol.wire("cancel"), {"sessionId": sid})

    turn = await run_turn(p, sid, p.opts.cancel_prompt, bound=p.opts.timeout + p.opts.cancel_bound, during=cancel)
    if turn.response is None or "error" in turn.response:
        p.fail("cancelled", f"the prompt failed: {_short(turn.response) if turn.response else 'no response'}")
        return
    reason = turn.idle.get("stopReason") if turn.idle is not None else None
    if reason == "cancelled":
        p.ok("cancelled", "idle cancelled")
    else:
        p.fail("cancelled", "after session/cancel: " + (f"idle with stopReason {reason!r}" if turn.idle
                                                             else f"no idle within {p.opts.cancel_bound} s"))


async def check_close(p: Probe) -> None:
    init, sid = await setup(p)
    await run_turn(p, sid, "hello")
    resp = await p.request(p.protocol.wire("close_session"), {"sessionId": sid})
    if resp is None or "error" in resp:
        p.fail("answered", f"session/close got {_short(resp) if resp else 'no response'}")
        return
    p.ok("answered", "closed")
    mark = next(i for i in range(len(p.records) - 1, -1, -1) if p.records[i].get("msg") is resp) + 1
    await asyncio.sleep(max(p.opts.settle, 0.5))
    late = [_update(r).get("sessionUpdate") for r in p.records[mark:] if _is_update(p, r, sid)]
    if late:
        p.fail("quiet_after", f"{len(late)} session/update after the close response: {late[:5]}")
    else:
        p.ok("quiet_after", "no update after the close response")
    ghosts = {p.protocol.wire("close_session"): await p.request(p.protocol.wire("close_session"), {"sessionId": "no-such-session"})}
    if _session_caps(p, init).get("delete") is not None:
        ghosts[p.protocol.wire("delete_session")] = await p.request(p.protocol.wire("delete_session"), {"sessionId": "no-such-session"})
    bad = {k: _short(g) if g else "no response" for k, g in ghosts.items() if g is None or "result" not in g}
    if bad:
        p.fail("unknown", f"an unknown session: {bad}")
    else:
        p.ok("unknown", f"{' and '.join(ghosts)} of an unknown session succeed")


async def check_sessions(p: Probe) -> None:
    init, sid = await setup(p)
    listed = await p.request(p.protocol.wire("list_sessions"), {})
    try:
        resp = parse(p.protocol.models.ListSessionsResponse, _result(listed))
        ids = [s.session_id for s in resp.sessions]
        if sid in ids:
            p.ok("listed", f"{len(ids)} sessions listed")
        else:
            p.fail("listed", f"session {sid} not in the list {ids[:10]}")
    except AcpError as exc:
        p.fail("listed", f"session/list: {_short(listed) if listed else 'no response'} ({exc})")
    await run_turn(p, sid, "hello")
    mark = len(p.records)
    resumed = await p.request(p.protocol.wire("resume_session"), {"sessionId": sid, "cwd": p.workdir,
                                                      "replayFrom": {"type": "start"}})
    answer = next((i for i, r in enumerate(p.records[mark:], mark) if r.get("kind") == "response"
                   and r.get("dir") == "a2c" and r.get("method") == p.protocol.wire("resume_session")), len(p.records))
    replayed = [u for u in (_update(r) for r in p.records[mark:answer] if _is_update(p, r, sid))
                if u.get("sessionUpdate") in (p.protocol.turns.echo_kind, "user_message_chunk")]
    if resumed is None or "error" in resumed:
        p.fail("replay", f"session/resume got {_short(resumed) if resumed else 'no response'}")
    elif replayed:
        p.ok("replay", f"{len(replayed)} user message updates replayed before the response")
    else:
        p.fail("replay", "no user message of the history was replayed before the resume response")
    if _session_caps(p, init).get("delete") is None:
        p.skip("delete", "session.delete not advertised")
        return
    deleted = await p.request(p.protocol.wire("delete_session"), {"sessionId": sid})
    if deleted is not None and "result" in deleted:
        p.ok("delete", "deleted")
    else:
        p.fail("delete", f"session/delete got {_short(deleted) if deleted else 'no response'}")


async def check_rpc(p: Probe) -> None:
    await handshake(p, _meta={"acme": 1})
    unknown = await p.request("acplink/no_such_method", {})
    if _code(unknown) == METHOD_NOT_FOUND:
        p.ok("unknown_method", "-32601")
    else:
        p.fail("unknown_method", f"an unknown method got {_short(unknown) if unknown else 'no response'}")
    wrong = {}
    for method in sorted(m for m in p.rules.facts.get("removed_methods", ()) if p.protocol.info(m) is None):
        got = await p.request(method, {"sessionId": "s", "methodId": "m", "cwd": p.workdir, "path": p.workdir})
        if _code(got) != METHOD_NOT_FOUND:
            wrong[method] = _short(got) if got else "no response"
    if wrong:
        p.fail("removed", f"v1 methods not answered -32601: {wrong}")
    else:
        p.ok("removed", "every v1-only method got -32601")
    ext = await p.request("_acplink/check", {})
    if ext is not None:
        p.ok("extension", "answered")
    else:
        p.fail("extension", "a `_` extension request got no response")
    mark = len(p.records)
    p.send_raw({"jsonrpc": "2.0", "id": None, "method": p.protocol.wire("list_sessions"), "params": {}})
    rec = await p.wait_for(lambda r: r.get("dir") == "a2c" and r.get("kind") == "response", p.opts.timeout,
                           start=mark)
    msg = rec["msg"] if rec is not None else None
    if isinstance(msg, dict) and msg.get("id") is None and _code(msg) == INVALID_REQUEST:
        p.ok("null_id", "-32600 with id null")
    else:
        p.fail("null_id", f"a request with id null got {_short(msg) if msg else 'no response'}")
    new = await p.request(p.protocol.wire("new_session"), {"cwd": p.workdir, "mcpServers": [], "_meta": {"acme": True}})
    if isinstance(_result(new), dict) and isinstance(_result(new).get("sessionId"), str):
        p.ok("meta", "`_meta` tolerated")
    else:
        p.fail("meta", f"session/new with _meta got {_short(new) if new else 'no response'}")


PROBES: dict[str, ProbeFn] = {
    "handshake": check_initialize,
    "negotiation": check_versions,
    "receipt-turn": check_prompt,
    "cancel-to-idle": check_cancel,
    "close": check_close,
    "list-resume-delete": check_sessions,
    "rpc": check_rpc,
}
