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
    commits          replies with how many commits that carried writes the store's database
                     made in this process so far (``counted_app_from_env``'s store only)
    anything else    "turn K: TEXT" (K: the turn's number from ctx.history), and a tool call
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from acplink import AgentApp, PromptContext, run_agent
from acplink.agent import HistoryStore, SqliteStore

#: the commits that carried writes, made by the counting stores' databases in this process
COMMITS = [0]


def _counted(found: Any) -> Any:
    """The store's database (one per file or DSN in a process), its commits counted."""
    if not getattr(found, "counted", False):
        real = found.commit

        def commit() -> None:
            if found.pending:  # (a transaction is open: something was written)
                COMMITS[0] += 1
            real()

        found.commit = commit
        found.counted = True
    return found


def store(db: str, *, counted: bool = False) -> HistoryStore:
    if db.startswith("postgresql://"):
        from acplink.agent import PostgresStore

        class CountedPostgresStore(PostgresStore):
            def _open_database(self) -> Any:
                return _counted(super()._open_database())

        return (CountedPostgresStore if counted else PostgresStore)(db)

    class CountedSqliteStore(SqliteStore):
        def _open_database(self) -> Any:
            return _counted(super()._open_database())

    return (CountedSqliteStore if counted else SqliteStore)(db)


def build(path: str, *, counted: bool = False) -> AgentApp:
    app = AgentApp("store-agent", protocols=(1, 2), store=store(path, counted=counted))

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
        elif word == "commits":
            await ctx.send_text(str(COMMITS[0]))
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


def counted_app_from_env() -> AgentApp:
    """:func:`app_from_env` with a store that counts its commits (prompt ``commits``:
    tests/server/test_store_group_commit.py)."""
    return build(os.environ["ACPLINK_TEST_STORE"], counted=True)


if __name__ == "__main__":
    run_agent(build(sys.argv[1]))
