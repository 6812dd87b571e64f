"""A small in-process MCP server made of Python functions: :class:`McpServer`.

An :class:`McpServer` *is* an :data:`~acplink.mcp.McpHandler` (``await server(call)``), so a
client can offer it to an agent over the ACP connection (MCP-over-ACP) with no port and no
subprocess::

    server = McpServer("project-tools")

    @server.tool()
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

Tools: the name is the function's, the description its docstring, the ``inputSchema`` a JSON
Schema made from the parameters' annotations (pydantic; ``Annotated[str, Field(description=...)]``
describes one); arguments are validated against the same model (bad ones: inner ``-32602``
with the problems listed, never pydantic's own text). A parameter annotated :class:`McpCall`
receives the request (to report progress, read the caller's metadata), and is not part of
the schema. Sync functions run on the event loop (keep them short; write long ones ``async``).

What a tool returns becomes a ``tools/call`` result: a ``str`` one text item; a ``dict`` (or
a pydantic model) its JSON as text and as ``structuredContent``; a list of MCP content blocks
(``{"type": "text" | "image" | "audio" | "resource_link" | "resource", ...}``) those blocks;
``None`` no content; a :class:`ToolResult` exactly what it says; anything else its JSON as
text. A tool that raises an ordinary exception answers a result with ``isError: true`` and the
message (MCP's convention: the model sees the failure and can correct itself); raising
:class:`acplink.McpError` answers the inner error itself.

Methods: ``tools/list`` (every tool in one page: a ``cursor`` is refused, since none is ever
handed out), ``tools/call``, ``server/discover`` (MCP 2026-07-28), ``ping``, and for legacy
clients ``initialize`` and ``notifications/initialized``; any other method is inner ``-32601``.
The provider checks the inner ``_meta`` (protocol version, capabilities) before a call
reaches the server; this module does no I/O.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .._version import __version__
from ..errors import AcpError, McpError, RequestError, UsageError
from ._call import MCP_PROTOCOL_VERSION, MCP_PROTOCOL_VERSION_KEY, McpCall
from .binding import legacy_version

__all__ = ["McpServer", "ToolResult"]

log = logging.getLogger("acplink.mcp")

F = TypeVar("F", bound=Callable[..., Any])

#: inner (MCP) error codes used here
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601

#: MCP content block types a tool may return as a list
CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}\Z")
_MAX_PROBLEMS = 8


@dataclass
class ToolResult:
    """A ``tools/call`` result spelled out: ``content`` (MCP content blocks), ``structured``
    (``structuredContent``, a JSON object), ``is_error`` (``isError``: the tool failed; the
    content says why)."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False

    @classmethod
    def text(cls, text: str, *, structured: dict[str, Any] | None = None, is_error: bool = False) -> ToolResult:
        """One text item (and optionally structured content)."""
        return cls([{"type": "text", "text": text}], structured, is_error)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": list(self.content)}
        if self.structured is not None:
            out["structuredContent"] = self.structured
        if self.is_error:
            out["isError"] = True
        return out


class _Schema(GenerateJsonSchema):
    """JSON Schema without the titles pydantic derives from field names (noise for a model)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _is_call(annotation: Any) -> bool:
    """``McpCall``, or ``McpCall | None``."""
    if annotation is McpCall:
        return True
    origin = get_origin(annotation)
    args = get_args(annotation)
    return origin in (Union, types.UnionType) and McpCall in args and all(a in (McpCall, type(None)) for a in args)


@dataclass(frozen=True)
class _Tool:
    name: str
    fn: Callable[..., Any]
    model: type[BaseModel]
    #: model field name -> argument name
    params: dict[str, str]
    call_param: str | None
    definition: dict[str, Any]


def _build_tool(fn: Callable[..., Any], name: str, description: str | None, title: str | None,
                annotations: Mapping[str, Any] | None) -> _Tool:
    if not _TOOL_NAME.match(name):
        raise UsageError(f"invalid tool name {name!r}: 1 to 128 letters, digits, '_', '-' or '.'")
    try:
        hints = get_type_hints(fn, include_extras=True)
        sig = inspect.signature(fn)
    except (NameError, TypeError, ValueError) as exc:
        raise UsageError(f"tool {name!r}: cannot read the function's signature ({exc})") from None
    fields: dict[str, Any] = {}
    params: dict[str, str] = {}
    call_param: str | None = None
    for index, p in enumerate(sig.parameters.values()):
        annotation = hints.get(p.name, Any)
        if _is_call(annotation):
            call_param = p.name
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise UsageError(f"tool {name!r}: parameter {p.name!r} must be an ordinary or keyword-only one")
        key = f"arg{index}"  # (the model's own field names never shadow BaseModel attributes)
        default = ... if p.default is p.empty else p.default
        fields[key] = (annotation, Field(default, alias=p.name))
        params[key] = p.name
    try:
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        schema = model.model_json_schema(by_alias=True, schema_generator=_Schema)
    except Exception as exc:  # pydantic cannot make a schema of an annotation
        raise UsageError(f"tool {name!r}: cannot make a JSON Schema of its parameters ({exc})") from None
    schema.pop("title", None)
    schema.setdefault("properties", {})
    definition: dict[str, Any] = {"name": name}
    if title is not None:
        definition["title"] = title
    doc = description if description is not None else inspect.getdoc(fn)
    if doc:
        definition["description"] = doc
    definition["inputSchema"] = schema
    if annotations:
        definition["annotations"] = dict(annotations)
    return _Tool(name, fn, model, params, call_param, definition)


def _problems(exc: ValidationError) -> list[dict[str, str]]:
    out = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        kind = err["type"]
        message = "unknown argument" if kind == "extra_forbidden" else "missing" if kind == "missing" else err["msg"]
        out.append({"path": where, "message": message})
    return out


def _invalid_arguments(tool: str, exc: ValidationError) -> McpError:
    problems = _problems(exc)
    shown = "; ".join(f"{p['path']}: {p['message']}" for p in problems[:_MAX_PROBLEMS])
    if len(problems) > _MAX_PROBLEMS:
        shown += f"; and {len(problems) - _MAX_PROBLEMS} more"
    return McpError(INVALID_PARAMS, f"invalid arguments for tool {tool!r}: {shown}", {"problems": problems})


def _failure_text(exc: Exception) -> str:
    if isinstance(exc, RequestError):
        return exc.message
    text = str(exc)
    if isinstance(exc, AcpError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_content(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in CONTENT_TYPES


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def to_result(value: Any) -> dict[str, Any]:
    """A tool's return value as a ``tools/call`` result (see the module doc)."""
    if isinstance(value, ToolResult):
        return value.to_wire()
    if value is None:
        return {"content": []}
    if isinstance(value, str):
        return ToolResult.text(value).to_wire()
    if isinstance(value, list | tuple) and value and all(_is_content(item) for item in value):
        return {"content": list(value)}
    try:
        plain = to_jsonable_python(value, by_alias=True)
    except PydanticSerializationError:
        return ToolResult.text(f"the tool returned a value that is not JSON ({type(value).__name__})",
                               is_error=True).to_wire()
    structured = plain if isinstance(plain, dict) else None
    return ToolResult.text(_json_text(plain), structured=structured).to_wire()


class McpServer:
    """An in-process MCP server whose tools are Python functions; an :data:`McpHandler`.

    ``name`` / ``version``: the ``serverInfo`` it reports. ``instructions``: guidance for the
    model, reported by ``server/discover`` and ``initialize``.
    """

    def __init__(self, name: str = "acplink", version: str = __version__, *,
                 instructions: str | None = None) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions
        self._tools: dict[str, _Tool] = {}

    # -- tools ----------------------------------------------------------------------------------

    def tool(self, name: str | None = None, *, description: str | None = None, title: str | None = None,
             annotations: Mapping[str, Any] | None = None) -> Callable[[F], F]:
        """Decorator: register the function as a tool (see :meth:`add_tool`); returns it unchanged."""
        def register(fn: F) -> F:
            self.add_tool(fn, name=name, description=description, title=title, annotations=annotations)
            return fn

        return register

    def add_tool(self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None,
                 title: str | None = None, annotations: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Register ``fn`` (sync or async) as a tool; returns its definition (as ``tools/list``
        shows it). ``name`` defaults to the function's name, ``description`` to its docstring;
        ``annotations``: MCP tool annotations (``readOnlyHint``, ``destructiveHint``, ...).
        A name already taken is a :class:`~acplink.UsageError`."""
        tool_name = name if name is not None else getattr(fn, "__name__", "")
        if tool_name in self._tools:
            raise UsageError(f"a tool named {tool_name!r} is already registered")
        tool = _build_tool(fn, tool_name, description, title, annotations)
        self._tools[tool_name] = tool
        return tool.definition

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (later calls of it are refused as unknown)."""
        self._tools.pop(name, None)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool definitions, in registration order (what ``tools/list`` answers)."""
        return [tool.definition for tool in self._tools.values()]

    # -- the handler ----------------------------------------------------------------------------

    async def __call__(self, call: McpCall) -> Any:
        """Answer one inner MCP request (an :data:`~acplink.mcp.McpHandler`)."""
        params = call.params or {}
        method = call.method
        if method == "tools/call":
            return self._modern(call, await self.call_tool(call))
        if method == "tools/list":
            if params.get("cursor") is not None:
                raise McpError(INVALID_PARAMS, "invalid cursor: this server lists every tool in one page")
            return self._modern(call, {"tools": self.tools}, cacheable=True)
        if method == "server/discover":
            discovered = {"supportedVersions": [MCP_PROTOCOL_VERSION], **self._about()}
            return self._modern(call, discovered, cacheable=True)
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = legacy_version(asked)
            return {"protocolVersion": version, **self._about()}
        if method == "ping":
            return {}
        if method in ("notifications/initialized", "notifications/cancelled"):
            return None
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _about(self) -> dict[str, Any]:
        out: dict[str, Any] = {"capabilities": {"tools": {}}, "serverInfo": {"name": self.name, "version": self.version}}
        if self.instructions:
            out["instructions"] = self.instructions
        return out

    @staticmethod
    def _modern(call: McpCall, result: dict[str, Any], cacheable: bool = False) -> dict[str, Any]:
        """A request of the stateless revision (its ``_meta`` names the version) gets the
        ``resultType`` that revision's results carry and, for the cacheable methods (lists,
        discovery), the caching fields it requires: never cached (``ttlMs`` 0, private)."""
        if call.mcp_meta.get(MCP_PROTOCOL_VERSION_KEY) == MCP_PROTOCOL_VERSION:
            return {"resultType": "complete", **({"ttlMs": 0, "cacheScope": "private"} if cacheable else {}),
                    **result}
        return result

    async def call_tool(self, call: McpCall) -> dict[str, Any]:
        """``tools/call``: validate the arguments, run the tool, shape its result."""
        params = call.params or {}
        name = params.get("name")
        if not isinstance(name, str):
            raise McpError(INVALID_PARAMS, "tools/call needs the tool's name (a string)")
        tool = self._tools.get(name)
        if tool is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {name}", {"tool": name})
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise McpError(INVALID_PARAMS, f"invalid arguments for tool {name!r}: arguments must be an object")
        try:
            parsed = tool.model.model_validate(arguments)
        except ValidationError as exc:
            raise _invalid_arguments(name, exc) from None
        kwargs = {arg: getattr(parsed, key) for key, arg in tool.params.items()}
        if tool.call_param is not None:
            kwargs[tool.call_param] = call
        try:
            value = tool.fn(**kwargs)
            if inspect.isawaitable(value):
                value = await value
        except McpError:
            raise
        except Exception as exc:
            log.debug("tool %r failed", name, exc_info=True)
            return ToolResult.text(_failure_text(exc), is_error=True).to_wire()
        return to_result(value)
