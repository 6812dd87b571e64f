"""The optional parts of acplink and what they need: ``pip install acplink`` brings only the
library (pydantic, orjson); the extras bring the rest (pyproject.toml, ``[project.optional-dependencies]``):

- ``cli``: rich and prompt_toolkit, for ``acplink chat`` and ``acplink inspect``;
- ``remote``: websockets, httpx (HTTP/2), httpx-sse, uvicorn, for the WebSocket and
  streamable-HTTP transports and ``acplink serve``;
- ``devtools``: Starlette and uvicorn, for ``acplink devtools``'s web UI;
- ``mcp``: the Python ``mcp`` package 2.x, for bridges to real MCP servers (``McpBridge``, ``--mcp``);
- ``otel``: ``opentelemetry-api``, for traces and metrics (the SDK is the application's; a
  connection reports only once one is configured: docs/tracing.md);
- ``otlp``: the OpenTelemetry SDK and its OTLP/HTTP exporter, for ``--otel`` and ``serve --metrics``;
- ``postgres``: psycopg 3, for :class:`~acplink.PostgresStore`;
- ``all``: all of the above;
- ``pydantic-ai``, ``langgraph``: the frameworks the adapters of :mod:`acplink.adapters` serve
  (not in ``all``).

Every place that imports one of them first calls :func:`require`, so that a missing
extra is one :class:`~acplink.errors.MissingDependency` naming it, not an ``ImportError``
traceback. Nothing is imported here: a module is looked up (``importlib.util.find_spec``)."""

from __future__ import annotations

import importlib.util
import sys

from .errors import MissingDependency

__all__ = ["require"]


def require(what: str, extra: str, *modules: str) -> None:
    """Raise :class:`MissingDependency` for ``what`` (``"acplink chat"``, ``"a ws:// URL"``)
    naming ``extra`` when one of ``modules`` (top-level names: ``"rich"``) cannot be imported."""
    missing = tuple(name for name in modules if not _importable(name))
    if missing:
        raise MissingDependency(what, extra, missing)


def _importable(name: str) -> bool:
    if name in sys.modules:  # imported already, or blocked (None)
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
