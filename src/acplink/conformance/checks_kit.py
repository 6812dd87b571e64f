"""The checks that cover the rest of the official kit's v1 requirements (acp-tck): session
lifecycle details, modes, config options, logout, additional directories."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from typing import Any

from ..connection.rules import advertises
from .check_helpers import HISTORY_KINDS, _busy_turn_retrying, _too_fast
from .probe import CheckAbort, Probe, _short

__all__ = ["after_delete", "after_list", "after_load", "after_resume", "check_additional_directories",
           "check_close_running", "check_config_options", "check_logout", "check_modes"]

_INIT = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "acplink-check", "version": "1"}}


def _result(resp: dict[str, Any] | None) -> dict[str, Any]:
    result = resp.get("result") if resp else None
    return result if isinstance(result, dict) else {}


async def _raw_init(p: Probe) -> dict[str, Any]:
    """initialize (no client capabilities) on the raw channel; its result. Raises CheckAbort."""
    resp = await p.request("initialize", _INIT)
    if resp is None or "error" in resp:
        raise CheckAbort(f"initialize failed: {_short(resp) if resp else 'no response'}")
    if p.opts.auth_method:
        await p.raw_call("authenticate", {"methodId": p.opts.auth_method})
    return _result(resp)


async def _raw_session(p: Probe, **extra: Any) -> dict[str, Any]:
    """session/new on the raw channel; its result. Raises CheckAbort."""
    resp = await p.request("session/new", {"cwd": p.workdir, "mcpServers": [], **extra})
    if resp is None or "error" in resp or not isinstance(_result(resp).get("sessionId"), str):
        raise CheckAbort(f"session/new failed: {_short(resp) if resp else 'no response'}")
    return _result(resp)


def _response_index(p: Probe, rid: Any, start: int) -> int:
    """The index in ``p.records`` of the response to ``rid`` (after ``start``)."""
    return next((i for i in range(start, len(p.records)) if p.records[i].get("dir") == "a2c"
                 and p.records[i].get("kind") == "response" and p.records[i].get("id") == rid), len(p.records))


def _history(p: Probe, sid: str, start: int, end: int | None = None) -> list[str]:
    kinds = [str((r["msg"]["params"].get("update") or {}).get("sessionUpdate")) for r in p.updates(sid, start)
             if end is None or p.records.index(r) < end]
    return [k for k in kinds if k in HISTORY_KINDS]


# -- additions to the session lifecycle checks ---------------------------------------------------

async def after_list(p: Probe, sid: str, resp: dict[str, Any], mark: int) -> None:
    cwd = f"/nonexistent/acplink-check-{uuid.uuid4().hex[:8]}"
    other = await p.request("session/list", {"cwd": cwd})
    if other is None or "error" in other:
        p.fail("SESS-019", f"session/list with cwd {cwd!r} failed: {_short(other) if other else 'no response'}")
    elif _result(other).get("sessions") != []:
        p.fail("SESS-019", f"session/list with cwd {cwd!r} (no session uses it) answered {_short(other['result'])}, "
               "not `sessions: []`")
    else:
        p.ok("SESS-019", "an unmatched cwd filter lists []")


async def after_load(p: Probe, sid: str, resp: dict[str, Any], mark: int) -> None:
    if resp.get("result") is None:
        p.fail("SESS-017", "session/load answered `\"result\": null`; the result is an object (`{}`)")
    else:
        p.ok("SESS-017", "the result is an object")
    end = _response_index(p, resp.get("id"), mark)
    await asyncio.sleep(p.opts.settle)
    late = _history(p, sid, end)
    if late:
        p.fail("SESS-016", f"{len(late)} history update(s) ({', '.join(sorted(set(late)))}) arrived after the "
               "session/load response; the replay must come before it")
    else:
        p.ok("SESS-016", "no history after the response")


async def after_resume(p: Probe, sid: str, resp: dict[str, Any], mark: int) -> None:
    replayed = _history(p, sid, mark, _response_index(p, resp.get("id"), mark))
    if replayed:
        p.fail("SESS-018", f"session/resume replayed {len(replayed)} history update(s) "
               f"({', '.join(sorted(set(replayed)))}) before its response; only session/load replays history")
    else:
        p.ok("SESS-018", "no history replayed")


async def after_delete(p: Probe, sid: str, resp: dict[str, Any], mark: int) -> None:
    unknown = f"acplink-check-never-created-{uuid.uuid4().hex[:8]}"
    other = await p.request("session/delete", {"sessionId": unknown})
    if other is None:
        p.fail("SESS-020", "session/delete of an unknown session got no response")
    elif "error" in other:
        p.fail("SESS-020", f"session/delete of an unknown session failed: {_short(other['error'])}; it should succeed")
    else:
        p.ok("SESS-020", "deleting an unknown session succeeded")


# -- whole checks --------------------------------------------------------------------------------

async def check_close_running(p: Probe) -> None:
    sid = await p.setup()
    assert p.init is not None
    if not advertises(p.init.agent_capabilities, "sessionCapabilities.close"):
        p.skip("SESS-021", "sessionCapabilities.close not advertised")
        return
    rid, early, mark = await _busy_turn_retrying(p, sid, "close-turn")
    if early is not None:
        p.skip("SESS-021", _too_fast(early))
        return
    closed = await p.request("session/close", {"sessionId": sid})
    rec = await p.wait_for(lambda r: r.get("dir") == "a2c" and r.get("kind") == "response" and r.get("id") == rid,
                           p.opts.cancel_bound, start=mark)
    if rec is None:
        p.fail("SESS-021", f"the running turn did not end within {p.opts.cancel_bound} s of session/close "
               f"(session/close answered {_short(closed) if closed else 'nothing'})")
        p.notify("session/cancel", {"sessionId": sid})
        return
    reason = _result(rec["msg"]).get("stopReason")
    if reason == "cancelled":
        p.ok("SESS-021", "the running turn ended with stopReason cancelled")
    else:
        p.fail("SESS-021", f"session/close during a running prompt: the turn ended with "
               f"{_short(rec['msg'].get('result') or rec['msg'].get('error'))}, not stopReason cancelled")


async def check_additional_directories(p: Probe) -> None:
    caps = (await _raw_init(p)).get("agentCapabilities")
    if not advertises(caps, "sessionCapabilities.additionalDirectories"):
        p.skip("SESS-022", "sessionCapabilities.additionalDirectories not advertised")
        return
    extra = tempfile.gettempdir()
    resp = await p.request("session/new", {"cwd": p.workdir, "mcpServers": [], "additionalDirectories": [extra]})
    if resp is None or "error" in resp:
        p.fail("SESS-022", f"advertised, but session/new with additionalDirectories [{extra!r}] failed: "
               f"{_short(resp) if resp else 'no response'}")
    else:
        p.ok("SESS-022", f"session/new with additionalDirectories [{extra!r}] accepted")


async def check_logout(p: Probe) -> None:
    caps = (await _raw_init(p)).get("agentCapabilities")
    if not advertises(caps, "auth.logout"):
        p.skip("AUTH-005", "auth.logout not advertised")
        return
    if not p.opts.allow_logout:
        p.skip("AUTH-005", "auth.logout advertised; not run without --allow-logout (it may end your login)")
        return
    resp = await p.request("logout", {})
    if resp is None or "error" in resp or not isinstance(resp.get("result"), dict):
        p.fail("AUTH-005", f"advertised, but logout answered {_short(resp) if resp else 'nothing'}")
    else:
        p.ok("AUTH-005", "logout answered with an object")


async def check_modes(p: Probe) -> None:
    await _raw_init(p)
    result = await _raw_session(p)
    modes = result.get("modes")
    if not isinstance(modes, dict):
        for req in ("MODE-001", "MODE-002"):
            p.skip(req, "session/new returned no modes")
        return
    ids = [m.get("id") for m in modes.get("availableModes") or [] if isinstance(m, dict)]
    current = modes.get("currentModeId")
    if current in ids:
        p.ok("MODE-001", f"current mode {current!r} among {ids}")
    else:
        p.fail("MODE-001", f"currentModeId {current!r} is not one of the available modes {ids}")
    target = next((i for i in ids if i != current), current)
    if not isinstance(target, str):
        p.skip("MODE-002", "no mode to switch to")
        return
    resp = await p.request("session/set_mode", {"sessionId": result["sessionId"], "modeId": target})
    if resp is None or "error" in resp:
        p.fail("MODE-002", f"session/set_mode to {target!r} failed: {_short(resp) if resp else 'no response'}")
    else:
        p.ok("MODE-002", f"switched to {target!r}")


def _select_values(option: dict[str, Any]) -> list[Any]:
    values: list[Any] = []
    for entry in option.get("options") or []:
        if isinstance(entry, dict) and "group" in entry:
            values.extend(o.get("value") for o in entry.get("options") or [] if isinstance(o, dict))
        elif isinstance(entry, dict):
            values.append(entry.get("value"))
    return values


def _invalid_value(option: dict[str, Any]) -> str | None:
    current = option.get("currentValue")
    if option.get("type") == "boolean":
        return None if isinstance(current, bool) else f"boolean option {option.get('id')!r} has value {current!r}"
    if option.get("type") == "select" and current not in _select_values(option):
        return (f"select option {option.get('id')!r} has value {current!r}, not one of its options "
                f"{_select_values(option)}")
    return None


async def check_config_options(p: Probe) -> None:
    """The client advertises no boolean config options."""
    await _raw_init(p)
    result = await _raw_session(p)
    options = [o for o in result.get("configOptions") or [] if isinstance(o, dict)]
    booleans = [str(o.get("id")) for o in options if o.get("type") == "boolean"]
    if booleans:
        p.fail("CONFIG-003", f"boolean config option(s) {', '.join(booleans)} offered although the client did not "
               "advertise session.configOptions.boolean")
    else:
        p.ok("CONFIG-003", f"{len(options)} config option(s), none boolean")
    if not options:
        for req in ("CONFIG-001", "CONFIG-002"):
            p.skip(req, "session/new returned no configOptions")
        return
    bad = [why for why in map(_invalid_value, options) if why]
    if bad:
        p.fail("CONFIG-001", "; ".join(bad))
    else:
        p.ok("CONFIG-001", f"{len(options)} option(s), every current value valid")
    target = next((o for o in options if o.get("type") == "select" and len(_select_values(o)) > 1), None)
    if target is None:
        p.skip("CONFIG-002", "no select option with two values to switch between")
        return
    value = next(v for v in _select_values(target) if v != target.get("currentValue"))
    resp = await p.request("session/set_config_option", {"sessionId": result["sessionId"],
                                                          "configId": target.get("id"), "value": value})
    if resp is None or "error" in resp:
        p.fail("CONFIG-002", f"session/set_config_option {target.get('id')!r} = {value!r} failed: "
               f"{_short(resp) if resp else 'no response'}")
        return
    after = {o.get("id"): o for o in _result(resp).get("configOptions") or [] if isinstance(o, dict)}
    missing = [str(o.get("id")) for o in options if o.get("id") not in after]
    if missing:
        p.fail("CONFIG-002", f"the answer to session/set_config_option lacks option(s) {', '.join(missing)}: "
               "it must list every option")
    elif after[target.get("id")].get("currentValue") != value:
        p.fail("CONFIG-002", f"after setting {target.get('id')!r} to {value!r}, the answer shows "
               f"{after[target.get('id')].get('currentValue')!r}")
    else:
        p.ok("CONFIG-002", f"set {target.get('id')!r} to {value!r}; the complete list came back")
