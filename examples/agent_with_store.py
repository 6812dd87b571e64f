"""An agent whose conversations survive restarts, with no session code: it sets a store.

``AgentApp(store=SqliteStore(path))`` keeps every session (cwd, title, mode, history) in one
SQLite file; acplink answers ``session/list``, ``load``, ``resume``, ``fork``, ``delete``,
``archive``, ``set_title`` and ``status`` from it, and the prompt handler reads the
conversation so far from ``ctx.history`` (as an LLM agent rebuilds its context).

    python examples/agent_with_store.py [DB]     # serves ACP on stdio (DB: ./sessions.sqlite3)
    acplink chat -- python examples/agent_with_store.py /tmp/notes.sqlite3
"""

from __future__ import annotations

import sys

from acplink import AgentApp, PromptContext, SqliteStore, run_agent

app = AgentApp("notes-agent", store=SqliteStore(sys.argv[1] if len(sys.argv) > 1 else "sessions.sqlite3"))


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    said = [e.text for e in ctx.history if e.kind == "user_message"]  # this turn's prompt is the last
    earlier = said[:-1]
    if ctx.text.strip() == "recap":
        await ctx.send_text(f"You told me {len(earlier)} things: " + "; ".join(earlier) if earlier
                            else "You have told me nothing yet.")
        return
    await ctx.send_text(f"Noted ({len(said)} so far).")


if __name__ == "__main__":
    run_agent(app)
