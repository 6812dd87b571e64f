"""A confining policy (PermissionPolicy.deny_all) advertises and serves no write and no
terminal, whatever the agent calls."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acplink import PermissionPolicy
from acplink.client.client import connect
from acplink.errors import UsageError

HOSTILE = [sys.executable, str(Path(__file__).resolve().parents[1] / "cli" / "hostile_agent.py")]


async def test_deny_all_advertises_reads_only(tmp_path: Path) -> None:
    async with connect([*HOSTILE, "overreach", str(tmp_path)], permission=PermissionPolicy.deny_all(),
                       stderr="capture") as client:
        caps = client.client_capabilities()
        assert caps.fs is not None and caps.fs.read_text_file and not caps.fs.write_text_file
        assert not caps.terminal and client.terminals is None
        session = await client.new_session(tmp_path)
        text = ""
        async for update in session.prompt("hi"):
            text += getattr(getattr(update, "content", None), "text", "")
        assert "terminal: -32601 write: -32601" in text
    assert not (tmp_path / "ran").exists() and not (tmp_path / "written.txt").exists()


async def test_other_policies_keep_the_handlers(tmp_path: Path) -> None:
    async with connect([*HOSTILE, "overreach", str(tmp_path)], permission=PermissionPolicy(default="deny"),
                       fs="read", stderr="capture") as client:
        caps = client.client_capabilities()
        assert caps.fs is not None and caps.fs.read_text_file and not caps.fs.write_text_file
        assert caps.terminal and client.terminals is not None


def test_confine_needs_a_deny_policy() -> None:
    with pytest.raises(UsageError):
        PermissionPolicy(default="allow", confine=True)
    assert PermissionPolicy.deny_all().confine and not PermissionPolicy().confine
