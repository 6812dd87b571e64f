"""McpServer, called directly with McpCalls: the schema made of annotations, argument
validation, results, tool errors, progress, the methods it answers and those it refuses."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from acplink import McpError, UsageError
from acplink.errors import ResourceNotFound
from acplink.mcp import (
    MCP_CLIENT_CAPABILITIES,
    MCP_PROTOCOL_VERSION,
    MCP_PROTOCOL_VERSION_KEY,
    McpCall,
    McpServer,
    ToolResult,
)

Sent = list[tuple[str, Any]]


def make_call(method: str, params: dict[str, Any] | None = None, sent: Sent | None = None,
              **fields: Any) -> McpCall:
    async def notify(m: str, p: dict[str, Any] | None) -> None:
        if sent is not None:
            sent.append((m, p))

    return McpCall("srv", 7, method, params, _notify=notify, **fields)


def tool_call(name: str, arguments: Any = None, *, token: str | int | None = None, sent: Sent | None = None) -> McpCall:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return make_call("tools/call", params, sent)


async def mcp_error(server: McpServer, call: McpCall) -> McpError:
    with pytest.raises(McpError) as info:
        await server(call)
    return info.value


def text_of(result: dict[str, Any]) -> str:
    assert [item["type"] for item in result["content"]] == ["text"]
    text: str = result["content"][0]["text"]
    return text


def demo() -> McpServer:
    server = McpServer("demo-tools", "1.2.3", instructions="use the tools")

    @server.tool()
    def greet(name: str, punctuation: Annotated[str, Field(description="How to end")] = "!") -> str:
        """Greet someone by name."""
        return f"hello {name}{punctuation}"

    @server.tool(name="sum", description="Add numbers.", title="Sum", annotations={"readOnlyHint": True})
    async def add(numbers: list[int], call: McpCall) -> dict[str, int]:
        await call.progress(1, 2, "half way")
        await call.progress(2, 2)
        return {"total": sum(numbers)}

    return server


# -- tools/list: the schema ---------------------------------------------------------------------


async def test_tools_list_describes_each_tool_from_its_function() -> None:
    result = await demo()(make_call("tools/list"))
    assert "nextCursor" not in result
    greet, add = result["tools"]
    assert greet == {
        "name": "greet",
        "description": "Greet someone by name.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"},
                           "punctuation": {"type": "string", "default": "!", "description": "How to end"}},
            "required": ["name"],
            "additionalProperties": False,
        },
    }
    # explicit name/description/title/annotations win; the McpCall parameter is not an argument
    assert add["name"] == "sum" and add["description"] == "Add numbers." and add["title"] == "Sum"
    assert add["annotations"] == {"readOnlyHint": True}
    assert add["inputSchema"]["properties"] == {"numbers": {"type": "array", "items": {"type": "integer"}}}
    assert add["inputSchema"]["required"] == ["numbers"]


async def test_argument_names_that_shadow_model_attributes_work() -> None:
    server = McpServer()

    @server.tool()
    def shadow(json: str, copy: int = 1, model_config: bool = False) -> str:
        return f"{json}-{copy}-{model_config}"

    schema = server.tools[0]["inputSchema"]
    assert list(schema["properties"]) == ["json", "copy", "model_config"]
    result = await server(tool_call("shadow", {"json": "j", "copy": 3}))
    assert text_of(result) == "j-3-False"


def test_registration_mistakes_are_usage_errors() -> None:
    server = McpServer()

    @server.tool()
    def one() -> None:
        return None

    with pytest.raises(UsageError, match="already registered"):
        server.add_tool(one)
    with pytest.raises(UsageError, match="invalid tool name"):
        server.add_tool(one, name="has space")

    def star(*values: int) -> None:
        return None

    with pytest.raises(UsageError, match="'values'"):
        server.add_tool(star)
    assert [t["name"] for t in server.tools] == ["one"]
    server.remove_tool("one")
    assert server.tools == []


async def test_a_cursor_is_refused_since_none_is_handed_out() -> None:
    err = await mcp_error(demo(), make_call("tools/list", {"cursor": "abc"}))
    assert err.code == -32602 and "cursor" in err.message


# -- tools/call: arguments ------------------------------------------------------------------------


async def test_arguments_are_validated_and_converted() -> None:
    server = demo()
    assert text_of(await server(tool_call("greet", {"name": "ada"}))) == "hello ada!"
    assert text_of(await server(tool_call("greet", {"name": "ada", "punctuation": "?"}))) == "hello ada?"
    result = await server(tool_call("sum", {"numbers": [1, "2", 3]}))  # (lax: "2" is a number)
    assert result["structuredContent"] == {"total": 6}


@pytest.mark.parametrize(("arguments", "expected"), [
    (None, "name: missing"),
    ({}, "name: missing"),
    ({"name": 5}, "name: Input should be a valid string"),
    ({"name": "x", "shout": True}, "shout: unknown argument"),
    ([1, 2], "arguments must be an object"),
])
async def test_bad_arguments_are_an_inner_invalid_params_error(arguments: Any, expected: str) -> None:
    err = await mcp_error(demo(), tool_call("greet", arguments))
    assert err.code == -32602
    assert err.message.startswith("invalid arguments for tool 'greet': ")
    assert expected in err.message
    for pydantic_talk in ("pydantic", "validation error for", "type=", "input_value"):
        assert pydantic_talk not in err.message


async def test_the_problems_are_listed_in_the_error_data() -> None:
    err = await mcp_error(demo(), tool_call("sum", {"numbers": [1, "x"], "extra": 1}))
    assert err.data == {"problems": [
        {"path": "numbers.1", "message": "Input should be a valid integer, unable to parse string as an integer"},
        {"path": "extra", "message": "unknown argument"}]}


async def test_unknown_tool_and_missing_name_are_invalid_params() -> None:
    err = await mcp_error(demo(), tool_call("nope", {}))
    assert err.code == -32602 and err.message == "Unknown tool: nope" and err.data == {"tool": "nope"}
    err = await mcp_error(demo(), make_call("tools/call", {"arguments": {}}))
    assert err.code == -32602 and "name" in err.message
    err = await mcp_error(demo(), make_call("tools/call", None))
    assert err.code == -32602


# -- tools/call: results and failures -------------------------------------------------------------


class Point(BaseModel):
    x: int
    y: int


@pytest.mark.parametrize(("value", "expected"), [
    ("plain", {"content": [{"type": "text", "text": "plain"}]}),
    (None, {"content": []}),
    ({"a": [1, "é"]}, {"content": [{"type": "text", "text": '{"a": [1, "é"]}'}], "structuredContent": {"a": [1, "é"]}}),
    ([1, 2], {"content": [{"type": "text", "text": "[1, 2]"}]}),
    (42, {"content": [{"type": "text", "text": "42"}]}),
    (Point(x=1, y=2), {"content": [{"type": "text", "text": '{"x": 1, "y": 2}'}], "structuredContent": {"x": 1, "y": 2}}),
    ([{"type": "text", "text": "a"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}],
     {"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
    (ToolResult.text("t", structured={"k": 1}, is_error=True),
     {"content": [{"type": "text", "text": "t"}], "structuredContent": {"k": 1}, "isError": True}),
    (object(),  # not JSON: the tool's fault, told as a tool failure
     {"content": [{"type": "text", "text": "the tool returned a value that is not JSON (object)"}], "isError": True}),
])
async def test_return_values_become_results(value: Any, expected: dict[str, Any]) -> None:
    server = McpServer()
    server.add_tool(lambda: value, name="give")
    assert await server(tool_call("give")) == expected


async def test_a_failing_tool_is_an_error_result_not_a_traceback() -> None:
    server = McpServer()

    @server.tool()
    def boom(what: str) -> str:
        raise ValueError(f"cannot {what}")

    @server.tool()
    async def gone() -> str:
        raise ResourceNotFound("no such thing")

    @server.tool()
    async def silent() -> str:
        raise RuntimeError

    assert await server(tool_call("boom", {"what": "fly"})) == {
        "content": [{"type": "text", "text": "ValueError: cannot fly"}], "isError": True}
    assert await server(tool_call("gone")) == {"content": [{"type": "text", "text": "no such thing"}], "isError": True}
    assert await server(tool_call("silent")) == {"content": [{"type": "text", "text": "RuntimeError"}],
                                                 "isError": True}


async def test_a_tool_raising_mcp_error_answers_that_inner_error() -> None:
    server = McpServer()

    @server.tool()
    async def strict() -> str:
        raise McpError(-32002, "resource gone", {"uri": "x"})

    err = await mcp_error(server, tool_call("strict"))
    assert (err.code, err.message, err.data) == (-32002, "resource gone", {"uri": "x"})


async def test_a_cancelled_tool_is_cancelled_not_an_error_result() -> None:
    server = McpServer()
    started = asyncio.Event()

    @server.tool()
    async def wait() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    task = asyncio.ensure_future(server(tool_call("wait")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- progress -------------------------------------------------------------------------------------


async def test_a_tool_reports_progress_when_the_caller_asked_for_it() -> None:
    sent: Sent = []
    result = await demo()(tool_call("sum", {"numbers": [2, 3]}, token="tok", sent=sent))
    assert result["structuredContent"] == {"total": 5}
    assert sent == [
        ("notifications/progress", {"progressToken": "tok", "progress": 1, "total": 2, "message": "half way"}),
        ("notifications/progress", {"progressToken": "tok", "progress": 2, "total": 2}),
    ]
    quiet: Sent = []
    await demo()(tool_call("sum", {"numbers": [2, 3]}, sent=quiet))
    assert quiet == []  # no progressToken: nothing sent


# -- the other methods ----------------------------------------------------------------------------


async def test_legacy_initialize_is_answered() -> None:
    server = demo()
    result = await server(make_call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                   "clientInfo": {"name": "old", "version": "1"}}))
    assert result == {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "demo-tools", "version": "1.2.3"}, "instructions": "use the tools"}
    result = await server(make_call("initialize", {"protocolVersion": "1999-01-01"}))
    assert result["protocolVersion"] == "2025-11-25"  # a version it does not know: its newest legacy one
    assert await server(make_call("notifications/initialized")) is None
    assert await server(make_call("ping")) == {}


async def test_server_discover_and_the_modern_result_type() -> None:
    meta = {MCP_PROTOCOL_VERSION_KEY: MCP_PROTOCOL_VERSION, MCP_CLIENT_CAPABILITIES: {}}
    server = demo()
    found = await server(make_call("server/discover", {"_meta": meta}, mcp_meta=meta))
    assert found == {"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                     "supportedVersions": [MCP_PROTOCOL_VERSION],
                     "capabilities": {"tools": {}}, "serverInfo": {"name": "demo-tools", "version": "1.2.3"},
                     "instructions": "use the tools"}
    listed = await server(make_call("tools/list", {"_meta": meta}, mcp_meta=meta))
    assert listed["resultType"] == "complete" and len(listed["tools"]) == 2
    assert (listed["ttlMs"], listed["cacheScope"]) == (0, "private")  # (required on lists by 2026-07-28)
    called = await server(make_call("tools/call", {"name": "greet", "arguments": {"name": "x"}, "_meta": meta},
                                    mcp_meta=meta))
    assert called["resultType"] == "complete"
    assert "resultType" not in await server(tool_call("greet", {"name": "x"}))  # a legacy request


@pytest.mark.parametrize("method", ["resources/list", "prompts/get", "sampling/createMessage", "tools", ""])
async def test_other_methods_are_method_not_found(method: str) -> None:
    err = await mcp_error(demo(), make_call(method, {}))
    assert err.code == -32601 and err.message == f"Method not found: {method}"
