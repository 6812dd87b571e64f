"""An AgentApp for the robustness tests, served on stdio (``python rb_agent.py [--max-sessions N]``).

Prompt behaviours (first word of the prompt text):

    read PATH     asks the client for PATH (``fs/read_text_file``); when that call fails it
                  writes ``rb_agent: read_file failed: <ErrorType>: <message>`` to stderr
    flood N SIZE  sends N agent_message_chunk updates of SIZE characters each ("<i>:xxxx...")

On exit it writes ``rb_agent: exited`` to stderr.
"""

from __future__ import annotations

import argparse
import sys

from acplink import AgentApp, PromptContext, run_agent
from acplink.errors import AcpError


def build_app(max_sessions: int = 1000) -> AgentApp:
    app = AgentApp("rb-agent", "0", max_sessions=max_sessions)

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        word, *rest = ctx.text.split()
        if word == "read":
            print("rb_agent: reading", file=sys.stderr, flush=True)
            try:
                await ctx.read_file(rest[0])
            except AcpError as exc:
                print(f"rb_agent: read_file failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                raise
        elif word == "flood":
            n, size = int(rest[0]), int(rest[1])
            for i in range(n):
                head = f"{i}:"
                await ctx.send_text(head + "x" * max(0, size - len(head)))

    return app


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-sessions", type=int, default=1000)
    args = ap.parse_args()
    run_agent(build_app(args.max_sessions))
    print("rb_agent: exited", file=sys.stderr, flush=True)
