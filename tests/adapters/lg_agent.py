"""A LangGraph graph on LangChain's fake chat models (no network, no key), served over ACP by
acplink's adapter: what tests/adapters/test_langgraph.py starts as a subprocess.

The graph is model → (tools → model)*; the model node answers the last message:
  hello      streams "Hello there friend" token by token
  think      one message with a reasoning block and a text block
  read P     calls read_note(path=P), then says what it read
  boom       calls explode (a tool that raises out of the tool node)
  shaky      calls shaky (a tool that raises in a tool node that handles errors: an error ToolMessage)
  crash      the node raises
  deploy     interrupt({"permission": ...}): an ACP permission request, then "deployed" or not
  name       interrupt("What is your name?"): an ACP elicitation, then a greeting
  slow       streams a word, then works for a long time (to be cancelled)
  count      says how many user prompts the thread holds, and which model is chosen
  recall     lists the thread's messages before this prompt (what the model is given)
  pid        says the agent process's id

With ``--store PATH`` the app keeps its sessions in ``SqliteStore(PATH)``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

from acplink import SqliteStore
from acplink.adapters import serve_langgraph

NOTES = {"a.txt": "apples", "b.txt": "bananas"}


@tool
def read_note(path: str) -> str:
    """Read a note."""
    return NOTES[path]


@tool
def explode(path: str) -> str:
    """A tool that fails."""
    raise RuntimeError(f"disk on fire at {path}")


@tool
def shaky(path: str) -> str:
    """A tool that fails, in a tool node that reports errors to the model."""
    raise ValueError(f"no such note {path}")


async def say(messages: list[BaseMessage], text: str) -> AIMessage:
    """Stream ``text`` through a fake chat model (tokens reach the graph's messages stream)."""
    return await GenericFakeChatModel(messages=iter([AIMessage(content=text)])).ainvoke(messages)  # type: ignore[return-value]


async def fixed(messages: list[BaseMessage], message: AIMessage) -> AIMessage:
    """One whole message (tool calls, content blocks) through a fake chat model."""
    return await FakeMessagesListChatModel(responses=[message]).ainvoke(messages)  # type: ignore[return-value]


async def model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
    messages = state["messages"]
    last = messages[-1]
    if isinstance(last, ToolMessage):
        verb = "failed" if last.status == "error" else "said"
        return {"messages": [await say(messages, f"{last.name} {verb}: {last.content}")]}
    words = str(last.content).split()
    first, rest = (words[0], words[1:]) if words else ("", [])
    if first == "hello":
        reply = await say(messages, "Hello there friend")
    elif first == "think":
        reply = await fixed(messages, AIMessage(content=[{"type": "reasoning", "reasoning": "pondering"},
                                                         {"type": "text", "text": "thought it through"}]))
    elif first in ("read", "boom", "shaky"):
        name = {"read": "read_note", "boom": "explode", "shaky": "shaky"}[first]
        reply = await fixed(messages, AIMessage(content="", tool_calls=[
            {"name": name, "args": {"path": rest[0] if rest else "a.txt"}, "id": f"{first}-{len(messages)}"}]))
    elif first == "crash":
        raise RuntimeError("the model fell over")
    elif first == "deploy":
        allowed = interrupt({"permission": "Deploy to production", "kind": "execute", "raw_input": {"env": "prod"}})
        reply = await say(messages, "deployed" if allowed else "not deployed")
    elif first == "name":
        answer = interrupt("What is your name?")
        reply = await say(messages, f"Hi {answer}" if answer else "No name given")
    elif first == "slow":
        reply = await say(messages, "working")
        await asyncio.sleep(60)
    elif first == "recall":
        reply = await say(messages, " | ".join(_described(m) for m in messages[:-1]))
    elif first == "pid":
        reply = await say(messages, str(os.getpid()))
    elif first == "count":
        prompts = sum(isinstance(m, HumanMessage) for m in messages)
        chosen = config.get("configurable", {}).get("model")
        reply = await say(messages, f"{prompts} prompts on {chosen}")
    else:
        reply = await say(messages, f"echo: {' '.join(words)}")
    return {"messages": [reply]}


def _described(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return f"human:{message.content}"
    if isinstance(message, ToolMessage):
        return f"tool:{message.name}={message.content}" + (" (error)" if message.status == "error" else "")
    if isinstance(message, AIMessage):
        calls = "".join(f" call:{c['name']}{c['args']}" for c in message.tool_calls)
        return f"ai:{message.content}{calls}"
    return type(message).__name__


def route(state: MessagesState) -> str:
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        return "handled_tools" if last.tool_calls[0]["name"] == "shaky" else "tools"
    return END


builder = StateGraph(MessagesState)
builder.add_node("model", model)
builder.add_node("tools", ToolNode([read_note, explode]))
builder.add_edge(START, "model")
builder.add_node("handled_tools", ToolNode([shaky], handle_tool_errors=True))
builder.add_conditional_edges("model", route, ["tools", "handled_tools", END])
builder.add_edge("tools", "model")
builder.add_edge("handled_tools", "model")
graph = builder.compile(name="notes-graph")  # no checkpointer: the adapter gives it a MemorySaver

if __name__ == "__main__":
    store = {"store": SqliteStore(sys.argv[2])} if sys.argv[1:2] == ["--store"] else {}
    serve_langgraph(graph, models=["small", "large"], **store)
