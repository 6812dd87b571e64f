"""The demo agent served as ACP v2 (a real subprocess pipe) works on the client's files and
terminals through the workspace MCP server: its write sends a v2 diff with the patch text
(``changes`` + ``git_patch``), which the client reads back as v1's diff, and its run shows the
client's own terminal, as on v1."""

from __future__ import annotations

import sys
from pathlib import Path

from acplink import PermissionPolicy, connect, schema

DEMO = [sys.executable, "-m", "acplink.demo"]


async def test_demo_write_and_run_on_v2(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    env = {"ACPLINK_DEMO_STORE": str(tmp_path / "store")}
    async with connect(DEMO, protocol=2, env=env, permission=PermissionPolicy.allow_all()) as client:
        session = await client.new_session(tmp_path)
        await session.prompt(r"write a.txt one\nTWO")
        assert (tmp_path / "a.txt").read_text() == "one\nTWO\n"
        [call] = [c for c in session.state.tool_calls.values() if c.title == "Write a.txt"]
        [diff] = [item for item in call.content if isinstance(item, schema.Diff)]
        assert (diff.path, diff.old_text, diff.new_text) == (str(tmp_path / "a.txt"), "one\ntwo\n", "one\nTWO\n")
        # on the wire (the session's v2 state), the diff is v2's: changes and the patch text
        [native] = [c for c in session.native_state.tool_calls.values() if c.title == "Write a.txt"]
        [wire] = [item.to_wire() for item in native.content if item.to_wire().get("type") == "diff"]
        assert wire["changes"] == [{"operation": "modify", "path": str(tmp_path / "a.txt")}]
        assert wire["patch"]["format"] == "git_patch" and "-two\n+TWO\n" in wire["patch"]["text"]

        await session.prompt("run seq 3")
        assert session.state.last_agent_message is not None
        assert session.state.last_agent_message.text == "`seq 3` finished with exit code 0 (3 lines of output)."
        [run] = [c for c in session.state.tool_calls.values() if c.title == "Run seq 3"]
        [terminal] = [item for item in run.content if isinstance(item, schema.Terminal)]
        assert client.terminals is not None
        assert client.terminals.snapshot(terminal.terminal_id).output == "1\n2\n3\n"  # (the client's own terminal)
