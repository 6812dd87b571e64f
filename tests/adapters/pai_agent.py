"""A Pydantic AI agent on scripted models (FunctionModel: no network, no key), served over ACP
by acplink's adapter: what tests/adapters/test_pydantic_ai.py starts as a subprocess.

What the model does depends on the prompt's first word:
  hello      thinks, then streams "Hello there"
  read P     calls read_note(path=P), then says what it read
  delete P   calls delete_note(path=P) (needs approval), then says whether it is gone
  boom       calls explode (a tool that raises)
  crash      the model itself fails
  slow       streams 200 chunks slowly (to be cancelled)
  count      says how many user prompts the session's history holds
  ACP P      reads P through the client (fs/read_text_file) with the tool client_read
  recall     lists the model's input before this prompt, part by part (what the history gave it)
  pid        says the agent process's id

With ``--store PATH`` the app keeps its sessions in ``SqliteStore(PATH)``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel

from acplink import PromptContext, SqliteStore
from acplink.adapters import serve_pydantic_ai

NOTES = {"a.txt": "apples", "b.txt": "bananas"}


def scripted(label: str) -> FunctionModel:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | dict[int, object]]:
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        if returns:
            yield f"[{label}] {returns[0].tool_name} said: {returns[0].content}"
            return
        prompts = [p.content for m in messages if isinstance(m, ModelRequest)
                   for p in m.parts if isinstance(p, UserPromptPart)]
        words = str(prompts[-1]).split()
        first, rest = (words[0], words[1:]) if words else ("", [])
        if first == "hello":
            yield {0: DeltaThinkingPart(content="pondering")}
            yield "Hello "
            yield "there"
        elif first in ("read", "delete", "boom", "acp"):
            tool = {"read": "read_note", "delete": "delete_note", "boom": "explode", "acp": "client_read"}[first]
            args = '{"path": "%s"}' % (rest[0] if rest else "a.txt")
            yield {1: DeltaToolCall(name=tool, json_args=args, tool_call_id=f"{first}-{len(prompts)}")}
        elif first == "crash":
            raise RuntimeError("the model fell over")
        elif first == "slow":
            for i in range(200):
                yield f"{i} "
                await asyncio.sleep(0.05)
        elif first == "recall":
            yield " | ".join(_described(p) for msg in messages[:-1] for p in msg.parts)
        elif first == "pid":
            yield str(os.getpid())
        elif first == "count":
            yield f"[{label}] {len(prompts)} prompts"
        else:
            yield f"[{label}] echo: {' '.join(words)}"

    return FunctionModel(stream_function=stream, model_name=label, profile={"context_window": 4096})


def _described(part: object) -> str:
    if isinstance(part, UserPromptPart):
        return f"user:{part.content}"
    if isinstance(part, TextPart):
        return f"text:{part.content}"
    if isinstance(part, ThinkingPart):
        return f"thought:{part.content}"
    if isinstance(part, ToolCallPart):
        return f"call:{part.tool_name}{part.args_as_dict()}"
    if isinstance(part, ToolReturnPart):
        return f"return:{part.tool_name}={part.content}"
    return type(part).__name__


agent = Agent(name="notes-agent", deps_type=PromptContext)


@agent.tool_plain
def read_note(path: str) -> str:
    """Read a note."""
    return NOTES[path]


@agent.tool_plain(requires_approval=True)
def delete_note(path: str) -> str:
    """Delete a note."""
    NOTES.pop(path, None)
    return f"{path} deleted"


@agent.tool_plain
def explode(path: str) -> str:
    """A tool that fails."""
    raise RuntimeError(f"disk on fire at {path}")


@agent.tool
async def client_read(ctx: RunContext[PromptContext], path: str) -> str:
    """Read a file of the client's workspace (ACP fs/read_text_file)."""
    return await ctx.deps.read_file(path)


if __name__ == "__main__":
    store = {"store": SqliteStore(sys.argv[2])} if sys.argv[1:2] == ["--store"] else {}
    serve_pydantic_ai(agent, models={"alpha": scripted("alpha"), "beta": scripted("beta")}, deps=lambda ctx: ctx,
                      **store)
