"""Drive any ACP agent from the command line: one prompt, streamed to the terminal.

    python examples/client.py "PROMPT" [--cwd DIR] [--permission allow|deny|ask] -- AGENT_CMD [ARGS...]

    python examples/client.py "hello" -- python -m acplink.demo
    python examples/client.py "write notes.txt hi" --permission allow -- python -m acplink.demo

Agent text is printed as it streams; thoughts, plans and tool calls are printed as
``[thought] ...``, ``[plan] ...`` and ``[tool] ...`` lines. Permission requests are
answered by a :class:`PermissionPolicy` (``ask`` asks on the terminal). Exit status 0
when the turn ended, 1 on an error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from acplink import AcpError, PermissionPolicy, connect, schema, tune_gc


def parse_args(argv: list[str]) -> argparse.Namespace:
    if "--" not in argv:
        sys.exit('usage: client.py "PROMPT" [--cwd DIR] [--permission allow|deny|ask] -- AGENT_CMD [ARGS...]')
    split = argv.index("--")
    parser = argparse.ArgumentParser(description="Send one prompt to an ACP agent.")
    parser.add_argument("prompt")
    parser.add_argument("--cwd", default=".", help="the session's working directory")
    parser.add_argument("--permission", choices=["allow", "deny", "ask"], default="deny")
    args = parser.parse_args(argv[:split])
    args.agent = argv[split + 1:]
    if not args.agent:
        parser.error("no agent command after --")
    return args


async def ask(request: schema.RequestPermissionRequest) -> str | None:
    """Ask on the terminal; returns the chosen option id (None = cancelled)."""
    print(f"\n[permission] {request.tool_call.title or request.tool_call.tool_call_id}")
    for i, option in enumerate(request.options, 1):
        print(f"  {i}. {option.name} ({option.kind})")
    line = await asyncio.to_thread(sys.stdin.readline)
    try:
        return request.options[int(line) - 1].option_id
    except (ValueError, IndexError):
        return None


class Printer:
    """Prints updates: agent text as it streams, everything else on lines of its own."""

    def __init__(self) -> None:
        self.mid_line = False

    def text(self, text: str) -> None:
        print(text, end="", flush=True)
        self.mid_line = bool(text) and not text.endswith("\n")

    def line(self, text: str) -> None:
        print(("\n" if self.mid_line else "") + text, flush=True)
        self.mid_line = False

    def show(self, update: object) -> None:
        if isinstance(update, schema.AgentMessageChunk) and isinstance(update.content, schema.TextContent):
            self.text(update.content.text)
        elif isinstance(update, schema.AgentThoughtChunk) and isinstance(update.content, schema.TextContent):
            self.line(f"[thought] {update.content.text}")
        elif isinstance(update, schema.Plan):
            self.line("[plan] " + "; ".join(f"{e.content} ({e.status})" for e in update.entries))
        elif isinstance(update, schema.ToolCall):
            self.line(f"[tool] {update.tool_call_id} {update.title!r} ({update.kind}): {update.status}")
        elif isinstance(update, schema.ToolCallUpdate) and update.status:
            self.line(f"[tool] {update.tool_call_id}: {update.status}")


async def main(argv: list[str]) -> int:
    args = parse_args(argv)
    policy = PermissionPolicy(default=args.permission, ask=ask if args.permission == "ask" else None)
    async with connect(args.agent, permission=policy) as client:
        info = client.agent_info
        out = Printer()
        out.line(f"[agent] {info.name if info else '?'} {info.version if info else ''}")
        session = await client.new_session(cwd=args.cwd)
        turn = session.prompt(args.prompt)
        try:
            async for update in turn:
                out.show(update)
        except AcpError as exc:
            out.line(f"[error] {exc}")
            return 1
        out.line(f"[stop] {turn.stop_reason}")
    return 0


if __name__ == "__main__":
    tune_gc()  # this process only moves ACP traffic: a collector tuned for it (docs/performance.md)
    sys.exit(asyncio.run(main(sys.argv[1:])))
