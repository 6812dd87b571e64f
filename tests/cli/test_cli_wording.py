"""CLI messages name the command's flags, not Python arguments: an agent that finds a client
capability missing says which flag offers it (--remote-fs, --no-fs, --allow), not
``check_capabilities=False``; the library's own message keeps the Python advice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cliutil import ROOT, Cli

from acplink.errors import AcpError, CapabilityError


def test_a_missing_capability_names_the_flags(cli: Cli) -> None:
    proc = cli.run("prompt", "--protocol", "1", "--no-fs", "read hello.txt", timeout=60)
    assert "I could not read hello.txt" in proc.stdout, proc.stdout + proc.stderr
    assert "--no-fs" in proc.stdout and "--remote-fs" in proc.stdout
    assert "check_capabilities" not in proc.stdout + proc.stderr


async def test_the_library_keeps_the_python_advice() -> None:
    from acplink import AgentApp, PromptContext, connect

    app = AgentApp("reader")
    seen: list[BaseException] = []

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        try:
            await ctx.read_file("/etc/hostname")
        except AcpError as exc:
            seen.append(exc)

    async with connect(app, fs=False) as client:
        session = await client.new_session(cwd=".")
        await session.prompt("hi")
    [err] = seen
    assert isinstance(err, CapabilityError) and err.capability == "client:fs.readTextFile"
    assert "pass check_capabilities=False" in str(err)
    assert err.cli_message is not None and "check_capabilities" not in err.cli_message and "--remote-fs" in err.cli_message


@pytest.mark.parametrize("path", sorted((ROOT / "src" / "acplink" / "cli").glob("*.py")), ids=lambda p: p.name)
def test_no_cli_message_gives_python_advice(path: Path) -> None:
    """(every message of the CLI's own modules: `pass xyz=` is advice for Python callers)"""
    found = re.findall(r"pass [a-z_]+=", path.read_text())
    assert not found, found


def test_an_error_answer_names_the_reason_its_data_gives() -> None:
    """An agent's "Internal error" alone tells a user nothing: the reason in its ``data`` (a
    string, or ``details``/``message``) follows on the same line, sanitised and bounded."""
    from acplink.cli.common import one_line
    from acplink.errors import InternalError, InvalidParams

    assert one_line(InternalError(data={"details": "Query closed before response received"})) == (
        "Internal error (code -32603): Query closed before response received")
    assert one_line(InvalidParams("bad cwd", "not absolute")) == "bad cwd (code -32602): not absolute"
    assert one_line(InternalError(data={"message": "boom"})) == "Internal error (code -32603): boom"
    assert one_line(InternalError(data={"other": 1})) == "Internal error (code -32603)"
    hostile = one_line(InternalError(data="\x1b]0;pwned\x07line\nnext " + "x" * 1000))
    assert "\x1b" not in hostile and "\n" not in hostile and len(hostile) < 350
    assert one_line(InternalError("Internal error: boom", "boom")) == "Internal error: boom (code -32603)"
