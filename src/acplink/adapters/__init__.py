"""Serve agents written with other frameworks over ACP: Pydantic AI (:func:`pydantic_ai_app`,
``acplink[pydantic-ai]``) and LangGraph (:func:`langgraph_app`, ``acplink[langgraph]``). A
framework is imported only when its adapter is used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from .history import HistoryStore as HistoryStore
    from .history import MemoryHistory as MemoryHistory
    from .langgraph_adapter import langgraph_app as langgraph_app
    from .langgraph_adapter import serve_langgraph as serve_langgraph
    from .pydantic_ai_adapter import pydantic_ai_app as pydantic_ai_app
    from .pydantic_ai_adapter import serve_pydantic_ai as serve_pydantic_ai

_LAZY: dict[str, str] = {
    "HistoryStore": ".history",
    "MemoryHistory": ".history",
    "langgraph_app": ".langgraph_adapter",
    "pydantic_ai_app": ".pydantic_ai_adapter",
    "serve_langgraph": ".langgraph_adapter",
    "serve_pydantic_ai": ".pydantic_ai_adapter",
}

__all__ = ["HistoryStore", "MemoryHistory", "langgraph_app", "pydantic_ai_app", "serve_langgraph", "serve_pydantic_ai"]

__getattr__ = _lazy_getattr(__name__, _LAZY, globals())
