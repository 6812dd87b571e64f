"""A tiny acplink agent on AgentSideConnection + Router + StdioTransport, for the subprocess tests.

Options: ``--max-size N`` (message size limit), ``--cancel-grace S``, ``--no-check-caps``.
Behaviour is driven by the prompt text and a few ``_test/*`` extension methods.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from acplink.connection import AgentSideConnection, PeerLimits, Router
from acplink.errors import AcpError
from acplink.schema import _generated as s
from acplink.transports import StdioTransport


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-size", type=int, default=None)
    ap.add_argument("--cancel-grace", type=float, default=2.0)
    ap.add_argument("--no-check-caps", action="store_true")
    args = ap.parse_args()

    router = Router()
    state: dict[str, object] = {"notes": [], "cancelled": [], "sessions": 0}
    releases: dict[str, asyncio.Event] = {}
    conn: AgentSideConnection

    async def initialize(p: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1, agent_info={"name": "test-agent", "version": "0"})

    async def new_session(p: s.NewSessionRequest) -> dict:
        state["sessions"] = int(state["sessions"]) + 1  # type: ignore[arg-type]
        sid = f"s{state['sessions']}"
        releases[sid] = asyncio.Event()
        return {"sessionId": sid, "_meta": {"seen": p.meta}}

    async def say(sid: str, text: str) -> None:
        await conn.session_update(session_id=sid, update={
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})

    async def prompt(p: s.PromptRequest) -> dict:
        sid = p.session_id
        words = p.prompt[0].text.split()
        cmd = words[0]
        if cmd == "stream":
            for i in range(int(words[1])):
                await say(sid, str(i))
        elif cmd == "mixed":
            pings = []
            for i in range(int(words[1])):
                await say(sid, str(i))
                if i % 10 == 0:
                    pings.append(asyncio.ensure_future(conn.call("_client/ping", {"i": i})))
            answers = await asyncio.gather(*pings)
            if [a["i"] for a in answers] != list(range(0, int(words[1]), 10)):
                raise RuntimeError("bad ping answers")
        elif cmd == "block":  # until released by _test/release; ignores session/cancel
            await say(sid, "started")
            await releases[sid].wait()
        elif cmd == "cooperative":  # watches the turn's cancel event, then claims end_turn
            await say(sid, "started")
            await conn.turns[sid].cancel_event.wait()
        elif cmd == "exit":
            await say(sid, "started")
            await asyncio.sleep(0)  # sends are batched: let the batch go out before dying
            os._exit(3)
        return {"stopReason": "end_turn"}

    async def release(p: dict) -> dict:
        releases[p["sessionId"]].set()
        return {}

    async def echo(p: object) -> object:
        return p

    async def note(p: object) -> None:
        state["notes"].append(p)  # type: ignore[attr-defined]

    async def notes(p: object) -> object:
        return state["notes"]

    async def sleep(p: dict) -> dict:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            state["cancelled"].append(p.get("tag"))  # type: ignore[attr-defined]
            raise
        return {}

    async def cancelled(p: object) -> object:
        return state["cancelled"]

    async def boom(p: object) -> None:
        raise RuntimeError(f"secret detail in {os.path.abspath(__file__)}")

    async def big(p: dict) -> dict:
        return {"data": "x" * int(p["size"])}

    async def size(p: dict) -> dict:
        return {"size": len(p["data"])}

    async def read(p: dict) -> dict:
        conn.check_capabilities = p.get("check", not args.no_check_caps)
        try:
            r = await conn.fs_read_text_file(session_id=p["sessionId"], path=p["path"])
        except AcpError as exc:
            return {"error": type(exc).__name__, "message": str(exc)}
        return {"content": r.content}

    for name, h in [("initialize", initialize), ("session/new", new_session), ("session/prompt", prompt),
                    ("_test/release", release), ("_acme/echo", echo), ("_acme/notes", notes),
                    ("_test/sleep", sleep), ("_test/cancelled", cancelled), ("_test/boom", boom),
                    ("_test/big", big), ("_test/size", size), ("_test/read", read)]:
        router.add_request(name, h)
    router.add_notification("_acme/note", note)

    limits = PeerLimits(max_message_size=args.max_size) if args.max_size else None
    conn = AgentSideConnection(StdioTransport(), router, limits=limits, cancel_grace=args.cancel_grace,
                               check_capabilities=not args.no_check_caps)
    await conn.start()
    await conn.wait_closed()
    await conn.aclose()
    print("agent: client went away, exiting", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
