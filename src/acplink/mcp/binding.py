"""The request-scoped MCP-over-ACP binding on the wire, without I/O.

What both sides need to agree on about one ``mcp/message``: the outer envelope (checked on the
provider's side: :func:`check_envelope`), the carrier of its answer (built by the provider:
:func:`result_carrier` / :func:`error_carrier`; read by the caller: :func:`parse_carrier`), the
inner MCP metadata every inner request carries (added by the caller: :func:`with_inner_meta`;
checked by the provider: :func:`check_inner_meta`), the declaration of a server in a session's
``mcpServers`` and the outer error codes of the binding. Nothing here does I/O or knows a
connection: the provider (:mod:`acplink.client`) and the caller (:mod:`acplink.agent`) do.

Inner errors and outer errors are kept apart: an inner MCP error is the *answer* (a carrier
``{"error": ...}`` in a successful ACP response, :class:`acplink.McpError` in Python), an outer
error is the binding failing (an ACP error response, :class:`acplink.RequestError` with one of
the codes below).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..errors import InvalidParams, McpError, ProtocolError
from ._call import MCP_CLIENT_CAPABILITIES, MCP_CLIENT_INFO, MCP_PROTOCOL_VERSION, MCP_PROTOCOL_VERSION_KEY

__all__ = [
    "BACKEND_FAILED",
    "INVALID_PARAMS",
    "LIMIT_EXCEEDED",
    "REQUEST_CANCELLED",
    "SERVER_UNAVAILABLE",
    "UNSUPPORTED_VERSION",
    "WORKSPACE_META_KEY",
    "WORKSPACE_TERMINAL_META_KEY",
    "Envelope",
    "check_envelope",
    "check_inner_meta",
    "declaration",
    "error_carrier",
    "is_acp_declaration",
    "workspace_tools",
    "mcp_meta_of",
    "parse_carrier",
    "result_carrier",
    "with_inner_meta",
]

# -- the outer error codes of the binding (ACP error responses to ``mcp/message``) ---------------

#: a malformed envelope, or a duplicate active ``(serverId, requestId)``
INVALID_PARAMS: Final = -32602
#: the request was cancelled (``$/cancel_request``, or its server was unregistered)
REQUEST_CANCELLED: Final = -32800
#: a limit of the binding was exceeded (too many active requests for one server)
LIMIT_EXCEEDED: Final = -33000
#: no server is registered under that ``serverId`` (never was, or unregistered)
SERVER_UNAVAILABLE: Final = -33001
#: the server failed without a valid MCP outcome (its handler raised, or answered junk)
BACKEND_FAILED: Final = -33002

#: the inner error code of a request in an MCP version the provider does not speak
UNSUPPORTED_VERSION: Final = -32022

#: the codes only the binding gives (never an MCP server's own error: never inside a carrier)
BINDING_CODES: Final = frozenset({REQUEST_CANCELLED, LIMIT_EXCEEDED, SERVER_UNAVAILABLE, BACKEND_FAILED})

#: the handshake-era MCP revisions a legacy ``initialize`` may ask for
LEGACY_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def legacy_version(asked: Any) -> str:
    """The revision to answer a legacy ``initialize`` with: the one asked for when it is known,
    else the newest handshake-era one."""
    return asked if asked in LEGACY_VERSIONS else LEGACY_VERSIONS[-1]


@dataclass(frozen=True, slots=True)
class Envelope:
    """One checked ``mcp/message`` envelope (a request's or a notification's params)."""

    server_id: str
    #: the caller's inner request id (a string: the schemas' ``McpRequestId``)
    request_id: str
    method: str
    #: the inner params (None: it had none)
    params: dict[str, Any] | None
    #: the outer (ACP) ``_meta``, when it is an object
    meta: dict[str, Any] | None


def _bad(message: str, path: str, value: Any = None) -> InvalidParams:
    data: dict[str, Any] = {"path": path}
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        data["value"] = value
    return InvalidParams(f"Invalid params for mcp/message: {message}", data)


def check_envelope(params: Any) -> Envelope:
    """The envelope of ``params`` (a request's or a notification's), or :class:`InvalidParams`
    (-32602) saying which field is wrong: params must be an object with a string
    ``serverId``, a string ``requestId``, a string ``method`` and ``params`` an object or null.
    (``_meta`` that is not an object is ignored, as the schema says.)

    ``requestId`` is a string in both schemas (``McpRequestId``), and the TypeScript SDK takes
    nothing else (its provider answers an integer -32602): an integer, as an inner JSON-RPC id
    could be, is refused here too, so that acplink's provider and caller take what the
    reference peers take, and ``5`` and ``"5"`` never name two requests of one server."""
    if not isinstance(params, dict):
        raise _bad(f"params must be an object, not {_kind(params)}", "")
    server_id = params.get("serverId")
    if not isinstance(server_id, str):
        raise _bad(f"serverId must be a string, not {_kind(server_id)}", "serverId")
    request_id = params.get("requestId")
    if not isinstance(request_id, str):
        raise _bad(f"requestId must be a string, not {_kind(request_id)}", "requestId", request_id)
    method = params.get("method")
    if not isinstance(method, str):
        raise _bad(f"method must be a string, not {_kind(method)}", "method")
    inner = params.get("params")
    if inner is not None and not isinstance(inner, dict):
        raise _bad(f"params must be an object or null, not {_kind(inner)}", "params")
    meta = params.get("_meta")
    return Envelope(server_id, request_id, method, inner, meta if isinstance(meta, dict) else None)


def _kind(value: Any) -> str:
    if value is None:
        return "missing or null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


# -- the carrier ----------------------------------------------------------------------------------


def result_carrier(result: Any) -> dict[str, Any]:
    """The answer carrying an inner result (``None`` is sent as the empty result ``{}``)."""
    return {"result": {} if result is None else result}


def error_carrier(error: McpError) -> dict[str, Any]:
    """The answer carrying an inner MCP error."""
    return {"error": error.to_wire()}


def parse_carrier(raw: Any) -> Any:
    """The inner outcome of an ``mcp/message`` answer: the inner result, or an
    :class:`McpError` *value* for an inner error. ``result`` wins when both are there. Not a
    carrier (neither key, an error without an integer ``code`` or string ``message``):
    :class:`ProtocolError`."""
    if not isinstance(raw, dict):
        raise ProtocolError(f"invalid mcp/message answer: expected a carrier object, got {_kind(raw)}")
    if "result" in raw:
        return raw["result"]
    error = raw.get("error")
    if not isinstance(error, dict):
        raise ProtocolError("invalid mcp/message answer: the carrier has neither `result` nor an `error` object")
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool):
        raise ProtocolError(f"invalid mcp/message answer: the inner error's code must be an integer, not {_kind(code)}")
    if not isinstance(message, str):
        raise ProtocolError(f"invalid mcp/message answer: the inner error's message must be a string, "
                            f"not {_kind(message)}")
    return McpError(code, message, error.get("data"))


# -- the inner metadata ------------------------------------------------------------------------


def with_inner_meta(params: Mapping[str, Any] | None, client_capabilities: Mapping[str, Any] | None = None,
                    client_info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``params`` (a copy) with the metadata MCP 2026-07-28 wants in every request's
    ``params._meta``: the protocol version, the client's capabilities (default ``{}``) and,
    when given, its info. Values already there are kept."""
    out = dict(params or {})
    existing = out.get("_meta")
    meta = dict(existing) if isinstance(existing, dict) else {}
    meta.setdefault(MCP_PROTOCOL_VERSION_KEY, MCP_PROTOCOL_VERSION)
    meta.setdefault(MCP_CLIENT_CAPABILITIES, dict(client_capabilities or {}))
    if client_info is not None:
        meta.setdefault(MCP_CLIENT_INFO, dict(client_info))
    out["_meta"] = meta
    return out


def mcp_meta_of(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``io.modelcontextprotocol/*`` entries of ``params._meta``."""
    meta = (params or {}).get("_meta")
    if not isinstance(meta, dict):
        return {}
    return {k: v for k, v in meta.items() if isinstance(k, str) and k.startswith("io.modelcontextprotocol/")}


def check_inner_meta(params: Mapping[str, Any] | None) -> McpError | None:
    """The inner error a provider answers a request with when its metadata is wrong (None: it
    is fine): no protocol version → -32602; another version than ours → -32022 with
    ``{"supported": [...], "requested": ...}``; client capabilities that are not an object
    → -32602."""
    meta = (params or {}).get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    version = meta.get(MCP_PROTOCOL_VERSION_KEY)
    if not isinstance(version, str):
        return McpError(INVALID_PARAMS, f"Invalid params: missing {MCP_PROTOCOL_VERSION_KEY} in params._meta")
    if version != MCP_PROTOCOL_VERSION:
        return McpError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                        {"supported": [MCP_PROTOCOL_VERSION], "requested": version})
    if not isinstance(meta.get(MCP_CLIENT_CAPABILITIES), dict):
        return McpError(INVALID_PARAMS, f"Invalid params: missing {MCP_CLIENT_CAPABILITIES} in params._meta")
    return None


# -- declarations ---------------------------------------------------------------------------------


#: the ``_meta`` key of an ``acp`` declaration that marks acplink's built-in workspace server
#: (the client's files and terminals as MCP tools); its value: ``{"tools": [names]}``
WORKSPACE_META_KEY: Final = "acplink.dev/workspace"
#: the ``_meta`` key of the workspace server's first progress report of a ``run`` call: the id of
#: the client's terminal running the command
WORKSPACE_TERMINAL_META_KEY: Final = "acplink.dev/terminalId"


def declaration(name: str, server_id: str, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` entry of a server provided over ACP (``meta``: its ``_meta``)."""
    out: dict[str, Any] = {"type": "acp", "name": name, "serverId": server_id}
    if meta is not None:
        out["_meta"] = dict(meta)
    return out


def workspace_tools(entry: Any) -> list[str] | None:
    """The tools of a declared workspace server (an ``acp`` entry whose ``_meta`` carries
    :data:`WORKSPACE_META_KEY`), or None for any other entry."""
    if not is_acp_declaration(entry):
        return None
    meta = entry.get("_meta") if isinstance(entry, dict) else getattr(entry, "meta", None)
    mark = meta.get(WORKSPACE_META_KEY) if isinstance(meta, dict) else None
    if not isinstance(mark, dict):
        return None
    tools = mark.get("tools")
    return [t for t in tools if isinstance(t, str)] if isinstance(tools, list) else []


def is_acp_declaration(entry: Any) -> bool:
    """Whether an ``mcpServers`` entry (wire dict or model) declares a server provided over ACP."""
    if isinstance(entry, dict):
        kind, name, server_id = entry.get("type"), entry.get("name"), entry.get("serverId")
    else:
        kind, name, server_id = (getattr(entry, "type", None), getattr(entry, "name", None),
                                 getattr(entry, "server_id", None))
    return kind == "acp" and isinstance(name, str) and isinstance(server_id, str)
