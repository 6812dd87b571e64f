"""One prompt to any agent, on ACP v2 (the draft) when the agent agrees, else on v1.

    python examples/v2_client.py "PROMPT" -- AGENT_CMD [ARGS...]

    python examples/v2_client.py "hello" -- node tests/interop/js/v2_agent.mjs

Prints the protocol version agreed, the receipt's message id (v2), the reply as it streams,
the tool calls as they settle and the stop reason; exit status 0 on ``end_turn``.
"""

from __future__ import annotations

import asyncio
import sys

from acplink import AcpError, connect


async def main(prompt: str, agent: list[str]) -> int:
    async with connect(agent, protocol="auto") as client:
        print(f"[protocol {client.protocol_version}]")
        session = await client.new_session()
        turn = session.prompt(prompt)
        async for item in turn:
            if item is turn.receipt:  # v2: the receipt comes first
                print(f"[inserted as {turn.message_id}]")
            elif getattr(item, "session_update", None) == "agent_message_chunk" and item.content.type == "text":
                print(item.content.text, end="", flush=True)
        print()
        if session.native_state is not None:  # v2's own state: upserts folded by id
            for call in session.native_state.tool_calls.values():
                print(f"[tool] {call.title}: {call.status}")
        print(f"[stop reason: {turn.stop_reason}]")
        return 0 if turn.stop_reason == "end_turn" else 1


if __name__ == "__main__":
    if "--" not in sys.argv[1:-1]:
        sys.exit('usage: v2_client.py "PROMPT" -- AGENT_CMD [ARGS...]')
    cut = sys.argv.index("--")
    try:
        sys.exit(asyncio.run(main(" ".join(sys.argv[1:cut]), sys.argv[cut + 1:])))
    except AcpError as exc:
        sys.exit(f"error: {exc}")
