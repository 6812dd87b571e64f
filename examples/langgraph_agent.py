"""A LangGraph graph served over ACP (``pip install 'acplink[langgraph]'``): a model node, a
tool node, and a node that asks before it acts (``interrupt()`` → an ACP permission request).

    acplink chat -- python examples/langgraph_agent.py
    acplink chat -- python examples/langgraph_agent.py sessions.db   # sessions kept in a file

The model is LangChain's fake chat model here, scripted, so it runs with no network and no
key: put your own chat model (``init_chat_model(...).bind_tools(TOOLS)``) in ``model``.
"""

# (LangGraph ships no type information for langgraph.graph, and its builder methods have
# parameters pyright cannot fully resolve)
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

from acplink import SqliteStore
from acplink.adapters import serve_langgraph


@tool
def word_count(text: str) -> int:
    """How many words ``text`` has."""
    return len(text.split())


def scripted(messages: Sequence[BaseMessage]) -> AIMessage:
    """The stand-in model: counts the prompt's words with the tool, then says how many."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(content=f"That is {last.content} words.")
    call = {"name": "word_count", "args": {"text": str(last.content)}, "id": f"count-{len(messages)}"}
    return AIMessage(content="", tool_calls=[call])


async def model(state: MessagesState) -> dict[str, Any]:
    reply = await FakeMessagesListChatModel(responses=[scripted(state["messages"])]).ainvoke(state["messages"])
    return {"messages": [reply]}


def publish(state: MessagesState) -> dict[str, Any]:
    """Asks the user (an ACP permission request) before publishing the answer."""
    allowed = interrupt({"permission": "Publish the answer", "kind": "edit"})
    return {"messages": [AIMessage(content=" Published." if allowed else " Not published.")]}


def route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else "publish"


builder = StateGraph(MessagesState)
builder.add_node("model", model)
builder.add_node("tools", ToolNode([word_count]))
builder.add_node("publish", publish)
builder.add_edge(START, "model")
builder.add_conditional_edges("model", route, ["tools", "publish"])
builder.add_edge("tools", "model")
builder.add_edge("publish", END)
graph = builder.compile()

if __name__ == "__main__":
    # with a file: the sessions survive restarts (session/load, session/list, ...), and a thread
    # the MemorySaver lost starts from the stored conversation
    if len(sys.argv) > 1:
        serve_langgraph(graph, store=SqliteStore(sys.argv[1]))
    else:
        serve_langgraph(graph)
