"""Helpers the conformance checks share: error codes, prompt turns, stop reasons."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from ..schema import _generated as s
from .probe import Probe, _short, prompt_params, text_block

__all__ = ["HISTORY_KINDS", "attachments", "context_prompt", "repeated", "SLOWER_PROMPT", "STOP_REASONS", "_busy_turn", "_busy_turn_retrying", "_error_code", "_prompt",
           "_stop_reason", "_too_fast"]

STOP_REASONS = frozenset(s.StopReason.__args__)  # type: ignore[attr-defined]
#: the session/update kinds that carry conversation history
HISTORY_KINDS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})


def _error_code(resp: dict[str, Any] | None) -> int | None:
    err = resp.get("error") if resp else None
    return err.get("code") if isinstance(err, dict) and type(err.get("code")) is int else None


async def _prompt(p: Probe, sid: str, blocks: list[dict[str, Any]], req: str, *,
                  timeout: float | None = None) -> dict[str, Any] | None:
    """A prompt turn; reports PROMPT-001 on ``req`` failures; returns the response."""
    resp = await p.request("session/prompt", prompt_params(sid, blocks), timeout=timeout)
    if resp is None:
        p.fail(req, f"session/prompt got no response within {timeout or p.opts.timeout} s"
               + ("" if p.alive else f" ({p.died()})"))
        return None
    await asyncio.sleep(p.opts.settle)  # let late updates show themselves
    return resp


def _stop_reason(p: Probe, resp: dict[str, Any]) -> None:
    if "error" in resp:
        p.fail("PROMPT-001", f"the prompt was answered with an error: {_short(resp['error'])}")
        return
    result = resp.get("result")
    reason = result.get("stopReason") if isinstance(result, dict) else None
    if reason is None:
        p.fail("PROMPT-001", f"the prompt response has no stopReason: {_short(resp)}")
    elif reason not in STOP_REASONS:
        p.fail("PROMPT-001", f"invalid stopReason {reason!r} (valid: {', '.join(sorted(STOP_REASONS))})")
    else:
        p.ok("PROMPT-001", f"stopReason {reason!r}")


async def _busy_turn(p: Probe, sid: str, rid: str, text: str | None = None) -> tuple[dict[str, Any] | None, int]:
    """Start the cancel prompt; wait until the agent is visibly busy. (early response, mark)."""
    mark = len(p.records)
    p.send_raw({"jsonrpc": "2.0", "id": rid, "method": "session/prompt",
                "params": prompt_params(sid, [text_block(text or p.opts.cancel_prompt)])})
    busy = await p.wait_for(lambda r: r.get("dir") == "a2c" and (
        r.get("method") in ("session/update", "session/request_permission")
        or (r.get("kind") == "response" and r.get("id") == rid)), p.opts.timeout, start=mark)
    if busy is None:
        return None, mark
    if busy.get("kind") != "response":
        await asyncio.sleep(0.05)
    done = next((r for r in p.records[mark:] if r.get("dir") == "a2c" and r.get("kind") == "response"
                 and r.get("id") == rid), None)
    return (done["msg"] if done else None), mark


#: the second try of a cancellation check, when the agent finished the first prompt too fast
SLOWER_PROMPT = ("Write a very long, detailed essay (at least 3000 words) on the history of computing, "
                 "streaming it as you go. Do not use any tools.")


async def _busy_turn_retrying(p: Probe, sid: str, name: str) -> tuple[str, dict[str, Any] | None, int]:
    """:func:`_busy_turn` with the cancel prompt; if that turn ends before a cancel could be
    sent, once more with a slower prompt. (request id, early response or None, mark)."""
    rid = f"{name}-1"
    early, mark = await _busy_turn(p, sid, rid)
    if early is None:
        return rid, None, mark
    rid = f"{name}-2"
    early2, mark = await _busy_turn(p, sid, rid, SLOWER_PROMPT)
    return rid, (early2 and {**early2, "_first": early}), mark


def _too_fast(early: dict[str, Any]) -> str:
    first = early.get("_first", early)
    return (f"not judged: both the cancel prompt and a slower one ended before a cancel could be sent "
            f"({_short(first.get('result') or first.get('error'), 120)}); pass a longer --cancel-prompt")


def repeated(values: list[Any]) -> list[str]:
    """The values that occur more than once (sorted, as text): duplicated auth method ids."""
    return sorted({str(v) for v in values if values.count(v) > 1})


def context_prompt() -> list[dict[str, Any]]:
    """The baseline prompt every agent must accept: text and a resource_link."""
    return [{"type": "text", "text": "What is in this context? Reply briefly."},
            {"type": "resource_link", "uri": "file:///tmp/acplink-check.txt", "name": "acplink-check.txt"}]


def attachments() -> tuple[tuple[str, dict[str, Any]], ...]:
    """(prompt capability, a small valid block of it): a 1x1 PNG, an empty WAV, an embedded text resource."""
    png = base64.b64encode(bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")).decode()
    wav = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00"
                           b"\x80>\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00").decode()
    return (
        ("image", {"type": "image", "mimeType": "image/png", "data": png}),
        ("audio", {"type": "audio", "mimeType": "audio/wav", "data": wav}),
        ("embeddedContext", {"type": "resource", "resource": {
            "uri": "file:///tmp/acplink-check.txt", "mimeType": "text/plain", "text": "hello from acplink check\n"}}),
    )
