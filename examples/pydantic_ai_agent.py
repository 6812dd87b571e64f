"""A Pydantic AI agent served over ACP (``pip install 'acplink[pydantic-ai]'``).

    acplink chat -- python examples/pydantic_ai_agent.py
    acplink chat -- python examples/pydantic_ai_agent.py sessions.db   # sessions kept in a file

With ``OPENAI_API_KEY`` set (and ``pip install 'pydantic-ai-slim[openai]'``) it runs on OpenAI;
without a key, on a scripted stand-in model that calls the tool and answers, no network needed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Sequence

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from acplink import SqliteStore
from acplink.adapters import serve_pydantic_ai


async def offline(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    """The stand-in model: counts the prompt's words with the tool, then says how many."""
    last = messages[-1]
    parts: Sequence[ModelRequestPart] = last.parts if isinstance(last, ModelRequest) else ()
    returned = [p for p in parts if isinstance(p, ToolReturnPart)]
    if returned:
        yield "That is "
        yield f"{returned[0].content} words."
        return
    prompt = next((p.content for p in parts if isinstance(p, UserPromptPart)), "")
    yield {0: DeltaToolCall(name="word_count", json_args=json.dumps({"text": str(prompt)}), tool_call_id="count-1")}


def choose_model() -> Model | str:
    if os.environ.get("OPENAI_API_KEY"):
        return "openai:gpt-5-mini"
    return FunctionModel(stream_function=offline, model_name="offline")


agent = Agent(choose_model(), name="word-counter", instructions="Count words with the word_count tool.")


@agent.tool_plain
def word_count(text: str) -> int:
    """How many words ``text`` has."""
    return len(text.split())


if __name__ == "__main__":
    # with a file: the sessions survive restarts (session/load, session/list, ...), and the
    # agent's message history is rebuilt from the stored one
    if len(sys.argv) > 1:
        serve_pydantic_ai(agent, store=SqliteStore(sys.argv[1]))
    else:
        serve_pydantic_ai(agent)
