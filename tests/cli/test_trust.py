"""Trust boundaries seen from the command line: a deny policy serves no writes and no
terminals, and nothing an agent sends reaches the terminal as a control sequence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cliutil import ACPLINK, HERE, Cli

HOSTILE = [sys.executable, str(HERE / "hostile_agent.py")]


@pytest.mark.parametrize("flags", [["--deny"], []], ids=["deny", "default"])
def test_deny_serves_no_write_and_no_terminal(cli: Cli, tmp_path: Path, flags: list[str]) -> None:
    target = tmp_path / "target"
    target.mkdir()
    proc = cli.call("prompt", *flags, "hi", "--", *HOSTILE, "overreach", str(target))
    assert proc.returncode == 0, proc.stderr
    # the agent called both anyway: both refused as unknown methods
    assert "terminal: -32601 write: -32601" in proc.stdout
    caps = json.loads(proc.stdout.split("caps: ", 1)[1])
    assert caps["terminal"] is False and caps["fs"] == {"readTextFile": True, "writeTextFile": False}
    assert not (target / "ran").exists()
    assert not (target / "written.txt").exists()


def test_allow_still_serves_both(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    proc = cli.call("prompt", "--allow", "--cwd", str(target), "hi", "--", *HOSTILE, "overreach", str(target))
    assert proc.returncode == 0, proc.stderr
    assert "write: ok" in proc.stdout
    assert (target / "written.txt").read_text() == "x"


def _raw(cli: Cli, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """``acplink ARGS`` as a process; its stdout and stderr as the raw bytes it wrote."""
    return subprocess.run([*ACPLINK, *args], capture_output=True, cwd=cli.workdir, env=cli.env, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _clean(data: bytes) -> None:
    text = data.decode("utf-8")
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
    assert not bad, f"control characters on the terminal: {bad!r} in {text!r}"
    assert "52;c;" not in text and "pwned-title" not in text


def test_prompt_strips_escapes_from_text_titles_plan_and_stderr(cli: Cli) -> None:
    proc = _raw(cli, "prompt", "--debug", "hi", "--", *HOSTILE, "escapes")
    assert proc.returncode == 0, proc.stderr
    _clean(proc.stdout)
    _clean(proc.stderr)
    assert proc.stdout == b"hello world\n"
    err = proc.stderr.decode()
    assert "[tool] Run tool (execute): pending" in err and "[tool] Ran tool: completed" in err
    assert "step one" in err and "stderr line" in err  # (--debug shows the agent's stderr)


def test_prompt_strips_escapes_from_the_stderr_in_errors(cli: Cli) -> None:
    proc = _raw(cli, "prompt", "hi", "--", *HOSTILE, "escapes-die")
    assert proc.returncode == 1
    _clean(proc.stdout)
    _clean(proc.stderr)
    assert "dying now" in proc.stderr.decode()


def test_prompt_json_keeps_the_text_exact(cli: Cli) -> None:
    proc = _raw(cli, "prompt", "--json", "hi", "--", *HOSTILE, "escapes")
    assert proc.returncode == 0, proc.stderr
    first = json.loads(proc.stdout.splitlines()[0])
    assert "\x1b]52;c;cHduZWQ=\x07" in first["update"]["content"]["text"]


def _trace(path: Path) -> None:
    evil = "\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned-title\x1b\\\x1b[2J"
    msgs = [
        ("c2a", {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}),
        ("a2c", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": f"s{evil}1"}}),
        ("c2a", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                 "params": {"sessionId": f"s{evil}1", "prompt": [{"type": "text", "text": f"hi{evil}"}]}}),
        ("a2c", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": f"s{evil}1", "update": {
            "sessionUpdate": "tool_call", "toolCallId": "t1", "title": f"Run {evil}x", "status": "pending"}}}),
        ("a2c", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": f"s{evil}1", "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"reply {evil}text"}}}}),
        ("a2c", {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": f"boom {evil}"}}),
    ]
    lines = [{"type": "header", "format": "acplink-trace", "version": 1, "wall": 0.0, "mono": 0.0,
              "command": [f"agent{evil}"]}]
    for seq, (direction, msg) in enumerate(msgs, 1):
        lines.append({"type": "message", "seq": seq, "dir": direction, "mono": seq / 10, "wall": seq / 10,
                      "size": 10, "msg": msg})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_inspect_strips_escapes(cli: Cli, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    _trace(trace)
    for flag in ("--text", None):
        proc = _raw(cli, "inspect", *([flag] if flag else []), str(trace))
        assert proc.returncode == 0, proc.stderr
        _clean(proc.stdout)
        assert b"boom" in proc.stdout and b"Run x" in proc.stdout
        if flag:
            assert b"reply text" in proc.stdout
    proc = _raw(cli, "inspect", "--json", str(trace))
    assert "\x1b]52;c;" in json.loads(proc.stdout)["errors"][0]["message"]  # --json stays exact


def test_check_strips_escapes(cli: Cli) -> None:
    proc = _raw(cli, "check", "-k", "initialize", "--", *HOSTILE, "escapes")
    assert proc.returncode in (0, 1), proc.stderr
    _clean(proc.stdout)
    _clean(proc.stderr)
    assert b"agent: hostile" in proc.stdout


@pytest.mark.parametrize(("command", "code"), [("prompt", 1), ("check", 2)])
def test_a_program_that_prints_no_json_is_given_up(cli: Cli, command: str, code: int) -> None:
    args = [command, "hi"] if command == "prompt" else [command]
    proc = _raw(cli, *args, "--", "yes", timeout=30)  # (a bound against a hang: it used to run forever)
    assert proc.returncode == code
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("acplink: error: ") and "not JSON-RPC" in lines[0] and "gave up" in lines[0]
    assert proc.stdout == b""
