"""An agent in the subclass style: override the hooks you implement.

Keeps a per-session note list in ``ctx.session.data``; ``/notes`` lists them, anything
else is added as a note. A session title is set from the first note.

    python examples/subclass_agent.py        # serves ACP on stdio
"""

from __future__ import annotations

from acplink import Agent, PromptContext, run_agent


class NotesAgent(Agent):
    async def prompt(self, ctx: PromptContext) -> str:
        notes: list[str] = ctx.session.data.setdefault("notes", [])
        text = ctx.text.strip()
        if text == "/notes":
            await ctx.send_text("\n".join(f"{i}. {n}" for i, n in enumerate(notes, 1)) or "No notes yet.")
            return "end_turn"
        if not notes:
            await ctx.send_title(text[:40])
        notes.append(text)
        await ctx.send_text(f"Noted ({len(notes)} so far).")
        return "end_turn"


app = NotesAgent("notes-agent", "1.0.0")

if __name__ == "__main__":
    run_agent(app)
