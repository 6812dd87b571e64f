"""An agent that writes no session code but sets a store: ``python store_agent.py DB`` serves
it on stdio with ``SqliteStore(DB)``, or ``PostgresStore(DB)`` when DB is a ``postgresql://``
URL (tests/agent/test_store*.py).

Prompt behaviours (first word of the prompt text):

    pid              replies with its process id
    history          replies with what ``ctx.history`` holds: ``kind/turn[/interrupted]`` items
    stream N         streams chunks ``0,1,...,N-1,`` with a tool call every 100 chunks (its
                     final state at its end), then waits forever (for a SIGKILL)
    wait             waits until the turn is cancelled
    burst N          streams chunks ``0,1,...,N-1,`` as fast as it can, and ends the turn
    title TEXT       sets the session title (``session_info_update``)
    anything else    "turn K: TEXT" (K: the turn's number from ctx.history), and a tool call
"""

from __future__ import annotations

import asyncio
import os
import sys

from acplink import AgentApp, PromptContext, run_agent
from acplink.agent import HistoryStore, SqliteStore


def store(db: str) -> HistoryStore:
    if db.startswith("postgresql://"):
        from acplink.agent import PostgresStore

        return PostgresStore(db)
    return SqliteStore(db)


def build(path: str) -> AgentApp:
    app = AgentApp("store-agent", protocols=(1, 2), store=store(path))

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        word, _, rest = ctx.text.partition(" ")
        if word == "pid":
            await ctx.send_text(str(os.getpid()))
        elif word == "history":
            items = [f"{e.kind}/{e.turn}" + ("/interrupted" if e.interrupted else "") for e in ctx.history]
            await ctx.send_text(" ".join(items))
        elif word == "stream":
            call = None
            for i in range(int(rest)):
                if i % 100 == 0:
                    if call is not None:
                        await call.complete()
                    call = await ctx.start_tool_call(f"step {i // 100}", status="in_progress")
                await ctx.send_text(f"{i},")
                if i % 20 == 0:
                    await asyncio.sleep(0.001)  # (paced: the client reads while it streams)
            await asyncio.Event().wait()
        elif word == "wait":
            await ctx.send_text("waiting")
            await ctx.wait_cancelled()
        elif word == "burst":
            for i in range(int(rest)):
                await ctx.send_text(f"{i},")
        elif word == "title":
            await ctx.send_title(rest)
        else:
            turn = sum(1 for e in ctx.history if e.kind == "user_message")
            await ctx.send_text(f"turn {turn}: ")
            await ctx.send_text(ctx.text)
            call = await ctx.start_tool_call("look", kind="read")
            await call.complete()

    return app


def app_from_env() -> AgentApp:
    """The app of one connection of ``acplink serve --app store_agent:app_from_env``: its store
    is ``$ACPLINK_TEST_STORE`` (tests/server/test_store_scaleout.py)."""
    return build(os.environ["ACPLINK_TEST_STORE"])


if __name__ == "__main__":
    run_agent(build(sys.argv[1]))
