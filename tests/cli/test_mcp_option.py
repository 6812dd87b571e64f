"""``acplink prompt|chat --mcp NAME=COMMAND`` / ``--mcp NAME=URL``: a real MCP server (the
``mcp`` package's, tests/mcp/mcp_tools_server.py) offered to the demo agent over ACP
(MCP-over-ACP), as real processes over real pipes, on ACP v1 and v2; and each way it fails."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from cliutil import ROOT, Cli, no_traceback

pytest.importorskip("mcp")
sys.path.insert(0, str(ROOT / "tests" / "mcp"))

import mcp_tools_server

SERVER = ROOT / "tests" / "mcp" / "mcp_tools_server.py"
TOOLS = f"tools={sys.executable} {SERVER}"
LISTED = "tools: echo, count, sleep, crash; echo: echo: ping\n"


@pytest.mark.parametrize("protocol", ["1", "2"])
def test_prompt_mcp_lists_and_echoes(cli: Cli, protocol: str) -> None:
    proc = cli.run("prompt", "--protocol", protocol, "--mcp", TOOLS, "mcp", timeout=120)
    assert (proc.returncode, proc.stdout) == (0, LISTED), proc.stderr
    assert "[tool] echo (other): in_progress" in proc.stderr and "[tool] echo: completed" in proc.stderr


@pytest.mark.parametrize("protocol", ["1", "2"])
def test_prompt_mcp_calls_one_tool_with_progress(cli: Cli, protocol: str) -> None:
    proc = cli.run("prompt", "--json", "--protocol", protocol, "--mcp", TOOLS, 'mcp count {"n": 3}', timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json

    updates = [json.loads(line).get("update") or {} for line in proc.stdout.splitlines()]
    text = "".join(u["content"]["text"] for u in updates if u.get("sessionUpdate") == "agent_message_chunk")
    assert text == "count: counted to 3"
    progress = [u["content"][0]["content"]["text"] for u in updates
                if u.get("sessionUpdate") == "tool_call_update" and "status" not in u]
    assert progress == ["step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"]


def test_prompt_mcp_unknown_tool_and_bad_json(cli: Cli) -> None:
    proc = cli.run("prompt", "--mcp", TOOLS, "mcp nope {}", timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "nope: error: Unknown tool: nope\n"), proc.stderr
    proc = cli.run("prompt", "--mcp", TOOLS, "mcp echo {oops", timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("The arguments of echo are not JSON (")


def test_two_servers_and_the_cwd(cli: Cli) -> None:
    # (a relative command runs in --cwd: the server's script given relative to it)
    sub = cli.workdir / "sub"
    sub.mkdir()
    (sub / "server.py").write_text(SERVER.read_text())
    proc = cli.run("prompt", "--cwd", "sub", "--mcp", TOOLS, "--mcp", f"more={sys.executable} server.py", "mcp",
                   timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "tools: " + LISTED + "more: " + LISTED


def test_chat_mcp_piped(cli: Cli) -> None:
    pytest.importorskip("rich")
    proc = cli.run("chat", "--mcp", TOOLS, input='mcp\nmcp echo {"text": "from chat"}\n', timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "tools: echo, count, sleep, crash; echo: echo: ping" in proc.stdout
    assert "echo: echo: from chat" in proc.stdout


def test_no_mcp_says_how(cli: Cli) -> None:
    proc = cli.run("prompt", "mcp")
    assert proc.returncode == 0 and "--mcp NAME=COMMAND" in proc.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def url(cli: Cli) -> Iterator[str]:
    """The tools server over Streamable HTTP on loopback."""
    with mcp_tools_server.over_http(cli.env) as address:
        yield address


def test_prompt_mcp_url(cli: Cli, url: str) -> None:
    proc = cli.run("prompt", "--protocol", "2", "--mcp", f"web={url}", 'mcp echo {"text": "over http"}', timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "echo: echo: over http\n"), proc.stderr


# -- failures -------------------------------------------------------------------------------------


def _one_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.startswith("acplink: error: ") and proc.stderr.count("acplink: error:") == 1, proc.stderr
    assert no_traceback(proc.stderr)
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def test_a_server_that_cannot_start(cli: Cli) -> None:
    proc = cli.run("prompt", "--mcp", f"{TOOLS} --fail-at-start", "hello", timeout=120)
    _one_error(proc, "--mcp tools: cannot start the MCP server", "  | missing API key")
    proc = cli.run("prompt", "--mcp", "tools=no-such-mcp-server-xyz --flag", "hello", timeout=60)
    _one_error(proc, "'no-such-mcp-server-xyz' was not found")
    proc = cli.run("prompt", "--mcp", f"web=http://127.0.0.1:{_free_port()}/mcp", "hello", timeout=60)
    _one_error(proc, "--mcp web: cannot start the MCP server 'http://127.0.0.1:")


def test_a_server_that_does_not_answer(cli: Cli) -> None:
    # (stopped: the cli fixture fails the test if the server's process outlives the command)
    proc = cli.run("prompt", "--startup-timeout", "1", "--mcp", f"slow={sys.executable} -c 'import time; "
                   "time.sleep(100)'", "hello", timeout=60)
    _one_error(proc, "acplink: error: --mcp slow: the MCP server", "did not answer within 1 s (--startup-timeout)")


def test_chat_with_a_server_that_cannot_start(cli: Cli) -> None:
    pytest.importorskip("rich")
    _one_error(cli.run("chat", "--mcp", f"{TOOLS} --fail-at-start", input="hello\n", timeout=120),
               "  | missing API key")


@pytest.mark.parametrize(("spec", "message"), [
    ("tools", "argument --mcp: expected NAME=COMMAND or NAME=URL"),
    ("=cmd", "argument --mcp: expected NAME=COMMAND or NAME=URL"),
    ("tools=", "argument --mcp: expected NAME=COMMAND or NAME=URL"),
    ("tools='unclosed", "argument --mcp: cannot split the command"),
])
def test_bad_spec_is_a_usage_error(cli: Cli, spec: str, message: str) -> None:
    proc = cli.call("prompt", "--mcp", spec, "hello")
    assert proc.returncode == 2 and proc.stderr.startswith("usage: acplink prompt"), proc.stderr
    assert f"acplink: error: {message}" in proc.stderr


def test_two_servers_with_one_name(cli: Cli) -> None:
    proc = cli.call("chat", "--mcp", "a=x", "--mcp", "a=http://127.0.0.1:1/mcp")
    assert proc.returncode == 2 and "acplink: error: --mcp: two servers are named 'a'" in proc.stderr


def test_missing_extra_is_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # (as if the mcp extra were not installed)
    proc = cli.call("prompt", "--mcp", TOOLS, "hello")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("acplink: error: --mcp needs the 'mcp' extra (not installed: mcp): "
                           "pip install 'acplink[mcp]'\n")


def test_an_agent_without_acp_mcp_is_warned_about(cli: Cli) -> None:
    agent = cli.workdir / "plain_agent.py"
    agent.write_text(textwrap.dedent("""\
        from acplink import AgentApp, PromptContext, run_agent

        app = AgentApp("plain", mcp_over_acp=False)


        @app.prompt
        async def prompt(ctx: PromptContext) -> None:
            await ctx.send_text(f"servers: {len(ctx.session.mcp_servers)}")


        run_agent(app)
        """))
    proc = cli.run("prompt", "--mcp", TOOLS, "hi", "--", sys.executable, str(agent), timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "servers: 0\n"), proc.stderr
    assert "the agent does not take MCP servers over ACP" in proc.stderr and "--mcp tools is not offered" in proc.stderr


def test_the_server_stops_with_the_command(cli: Cli) -> None:
    # (the cli fixture fails the test if the server process, which carries its marker, outlives it)
    proc = cli.run("prompt", "--mcp", TOOLS, "hello", timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "You said: hello\n"), proc.stderr
