"""``acplink mcp-server --protocol 2`` and ``serve_as_mcp(..., protocol=2)``: the bridge speaks ACP
v2 (the draft) to the agent. Driven by the Python ``mcp`` client; the agents say which version
they were spoken to (tests/bridges/versions_agent.py), or write files through v2's workspace MCP
server (the demo agent)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcputil import DEMO, HERE, stdio_mcp, text_of

from acplink.bridges.mcp_server import build_mcp_server

pytestmark = pytest.mark.timeout(120)

VERSIONS = [sys.executable, str(HERE / "versions_agent.py")]
V1_ONLY = [sys.executable, str(HERE / "flaky_agent.py")]


@pytest.mark.parametrize(("option", "spoken"), [("1", 1), ("2", 2), ("auto", 2)])
async def test_the_protocol_option_is_the_version_spoken_to_the_agent(tmp_path: Path, option: str,
                                                                     spoken: int) -> None:
    asked: list[str] = []

    async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"allow": True})

    async with stdio_mcp(VERSIONS, "--protocol", option, "--cwd", str(tmp_path), elicitation_callback=elicit) as mcp:
        result = await mcp.call_tool("prompt", {"text": "which"})
    assert not result.is_error, text_of(result)
    assert result.structured_content["reply"] == f"ACP v{spoken}, deploy allowed"
    # the agent's permission request (a v2 one too) reached the host as an elicitation
    assert len(asked) == 1 and "Deploy (execute)" in asked[0]
    assert [c["status"] for c in result.structured_content["toolCalls"]] == ["completed"]


async def test_the_demo_agent_on_v2_streams_writes_and_continues(tmp_path: Path) -> None:
    async with stdio_mcp(DEMO, "--protocol", "2", "--allow", "--cwd", str(tmp_path)) as mcp:
        progress: list[str | None] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        first = await mcp.call_tool("prompt", {"text": "hello there"}, progress_callback=on_progress)
        assert first.structured_content["reply"] == "You said: hello there"
        assert "".join(m or "" for m in progress) == "You said: hello there"
        sid = first.structured_content["sessionId"]
        # v2 has no fs/*: the demo writes through the client's workspace MCP server over ACP
        wrote = await mcp.call_tool("prompt", {"text": "write notes.txt hi", "session_id": sid})
        assert wrote.structured_content["sessionId"] == sid
        assert [(c["title"], c["status"]) for c in wrote.structured_content["toolCalls"]] == [
            ("Write notes.txt", "completed")]
    assert (tmp_path / "notes.txt").read_text() == "hi\n"


async def test_v2_asked_of_a_v1_agent_is_an_error_result_naming_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLAKY_MARK", str(tmp_path / "mark"))
    async with stdio_mcp(V1_ONLY, "--protocol", "2", "--cwd", str(tmp_path)) as mcp:
        result = await mcp.call_tool("prompt", {"text": "hi"})
    assert result.is_error
    assert "flaky_agent.py" in text_of(result) and "asked for ACP protocol version 2, the agent answered 1" in text_of(
        result)


async def test_serve_as_mcp_takes_the_protocol_too() -> None:
    """In-process: ``build_mcp_server(..., protocol=2)`` (what ``serve_as_mcp`` serves) behind the
    ``mcp`` client's in-memory transport, the agent a subprocess."""
    server = build_mcp_server(VERSIONS, permission="deny", protocol=2)
    async with Client(server) as mcp:
        result = await mcp.call_tool("prompt", {"text": "which"})
    assert result.structured_content["reply"] == "ACP v2, deploy denied"
