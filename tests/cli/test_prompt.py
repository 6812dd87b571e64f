"""``acplink prompt`` end to end: the demo agent, the official Python and TypeScript SDK
agents, --json, --allow/--deny, the fs/terminal handlers and failing agents."""

from __future__ import annotations

import json

import pytest
from cliutil import CRASH_AGENT, Cli, official_agent, official_params

from acplink.schema import SessionNotification, UnknownSessionUpdate
from acplink.schema._parse import parse


def _error_line(stderr: str) -> str:
    """The single `acplink: error:` line (continuation lines may follow it)."""
    lines = [line for line in stderr.splitlines() if line.startswith("acplink: error:")]
    assert len(lines) == 1, stderr
    return lines[0]


def _json_lines(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _check_updates(lines: list[dict[str, object]]) -> list[object]:
    """Every line but the last is a valid session update; the last has the stop reason."""
    *updates, last = lines
    parsed = []
    for line in updates:
        note = parse(SessionNotification, line)
        assert not isinstance(note.update, UnknownSessionUpdate), line
        parsed.append(note.update)
    assert set(last) == {"sessionId", "stopReason"}
    return parsed


# -- the demo agent ---------------------------------------------------------------------------------

def test_demo_reply(cli: Cli) -> None:
    proc = cli.run("prompt", "hello there")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "You said: hello there\n"
    assert proc.stderr == ""


def test_demo_json(cli: Cli) -> None:
    proc = cli.call("prompt", "--json", "read hello.txt")
    assert proc.returncode == 0, proc.stderr
    lines = _json_lines(proc.stdout)
    updates = _check_updates(lines)
    kinds = [type(u).__name__ for u in updates]
    assert "ToolCall" in kinds and "AgentMessageChunk" in kinds
    assert lines[-1]["stopReason"] == "end_turn"
    assert len({line["sessionId"] for line in lines}) == 1
    text = "".join(u.content.text for u in updates if type(u).__name__ == "AgentMessageChunk")  # type: ignore[attr-defined]
    assert "hello.txt has 1 lines" in text


def test_deny_writes_nothing(cli: Cli) -> None:  # (deny is also the default)
    proc = cli.call("prompt", "--deny", "write notes.txt hi")
    assert proc.returncode == 0
    assert "Permission denied" in proc.stdout
    assert "[tool] Write notes.txt" in proc.stderr and "failed" in proc.stderr
    assert not (cli.workdir / "notes.txt").exists()


def test_allow_writes_the_file(cli: Cli) -> None:
    proc = cli.call("prompt", "--allow", "write notes.txt hi there")
    assert proc.returncode == 0, proc.stderr
    assert "Wrote" in proc.stdout
    assert (cli.workdir / "notes.txt").read_text() == "hi there\n"
    assert "[tool] Write notes.txt: completed" in proc.stderr


def test_allow_and_deny_exclude_each_other(cli: Cli) -> None:
    proc = cli.call("prompt", "--allow", "--deny", "hi")
    assert proc.returncode == 2
    assert "not allowed with" in proc.stderr


def test_file_access_is_confined_to_cwd(cli: Cli) -> None:
    outside = cli.workdir.parent / "outside.txt"
    proc = cli.call("prompt", "--allow", "write ../outside.txt nope")
    assert proc.returncode == 0
    assert "could not write" in proc.stdout
    assert not outside.exists()


def test_no_fs(cli: Cli) -> None:
    proc = cli.call("prompt", "--no-fs", "read hello.txt")
    assert proc.returncode == 0
    assert "could not read" in proc.stdout


def test_terminal_runs_real_processes_in_cwd(cli: Cli) -> None:
    sub = cli.workdir / "sub"
    sub.mkdir()
    (sub / "x.txt").write_text("from-sub\n")
    proc = cli.call("prompt", "--allow", "--cwd", "sub", "run cat x.txt")
    assert proc.returncode == 0, proc.stderr
    assert "finished with exit code 0" in proc.stdout
    # the command's output: once, below its [tool] line (the reply does not repeat it)
    assert "from-sub" not in proc.stdout and "completed\n    from-sub\n" in proc.stderr


def test_no_terminal(cli: Cli) -> None:
    proc = cli.call("prompt", "--allow", "--no-terminal", "run echo hi")
    assert proc.returncode == 0
    assert "could not run" in proc.stdout


def test_bad_cwd_is_one_line(cli: Cli) -> None:
    proc = cli.call("prompt", "--cwd", "nowhere", "hi")
    assert proc.returncode == 2  # a usage error (it was 1)
    assert "nowhere" in _error_line(proc.stderr)
    assert "Traceback" not in proc.stderr


def test_auth_method(cli: Cli) -> None:
    ok = cli.call("prompt", "--auth-method", "demo", "hi")
    assert ok.returncode == 0, ok.stderr
    bad = cli.call("prompt", "--auth-method", "bogus", "hi")
    assert bad.returncode == 1
    assert "bogus" in _error_line(bad.stderr)
    assert "Traceback" not in bad.stderr


# -- failing agents ---------------------------------------------------------------------------------

def test_agent_exits_at_once(cli: Cli) -> None:
    proc = cli.call("prompt", "hi", "--", "false")
    assert proc.returncode != 0
    line = _error_line(proc.stderr)
    assert "'false'" in line
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_agent_command_not_found(cli: Cli) -> None:
    proc = cli.call("prompt", "hi", "--", "no-such-agent-xyz", "--acp")
    assert proc.returncode != 0
    line = _error_line(proc.stderr)
    assert "no-such-agent-xyz --acp" in line
    assert "Traceback" not in proc.stderr


def test_agent_crashing_mid_turn_shows_its_stderr(cli: Cli) -> None:
    proc = cli.call("prompt", "hi", "--", *CRASH_AGENT)
    assert proc.returncode == 1
    line = _error_line(proc.stderr)
    assert "crash_agent.py" in line and "exited with code 3" in line
    assert "crash_agent: something broke" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_debug_shows_the_traceback(cli: Cli) -> None:
    proc = cli.run("prompt", "--debug", "hi", "--", *CRASH_AGENT)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr


# -- the official SDK agents ------------------------------------------------------------------------

@pytest.mark.parametrize("peer", official_params())
def test_official_hello(cli: Cli, peer: str) -> None:
    proc = cli.call("prompt", "hello", "--", *official_agent(peer))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hello, world\n"


@pytest.mark.parametrize("peer", official_params())
def test_official_full_denied(cli: Cli, peer: str) -> None:
    proc = cli.call("prompt", "--deny", "full", "--", *official_agent(peer))
    assert proc.returncode == 0, proc.stderr
    assert "denied" in proc.stdout
    assert not (cli.workdir / "interop.txt").exists()
    assert "[tool] Write file: failed" in proc.stderr


@pytest.mark.parametrize("peer", official_params())
def test_official_json(cli: Cli, peer: str) -> None:
    proc = cli.call("prompt", "--json", "--allow", "full", "--", *official_agent(peer))
    assert proc.returncode == 0, proc.stderr
    lines = _json_lines(proc.stdout)
    updates = _check_updates(lines)
    kinds = {type(u).__name__ for u in updates}
    assert {"AgentMessageChunk", "AgentThoughtChunk", "Plan", "ToolCall", "ToolCallProgress"} <= kinds
    assert lines[-1]["stopReason"] == "end_turn"
    text = "".join(u.content.text for u in updates if type(u).__name__ == "AgentMessageChunk")  # type: ignore[attr-defined]
    assert "read:written by peer" in text and "term:term-ok:0" in text
    assert (cli.workdir / "interop.txt").read_text() == "written by peer\n"
    assert updates[-1].status == "completed"  # type: ignore[attr-defined]


@pytest.mark.parametrize("peer", official_params())
def test_official_failing_prompt(cli: Cli, peer: str) -> None:
    proc = cli.call("prompt", "fail", "--", *official_agent(peer))
    assert proc.returncode == 1
    line = _error_line(proc.stderr)
    assert "peer failure" in line
    assert proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr
