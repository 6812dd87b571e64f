"""The rough edges of the CLI: argument errors (the subcommand's usage, the bad option named,
one error prefix), time limits (a silent agent, a turn that does not end) and a closed stdout
(`acplink ... | head`: no traceback, exit status 141)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from cliutil import ACPLINK, Cli

DEMO = [sys.executable, "-m", "acplink.demo"]


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error:" in line]


# -- argument errors --------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "usage", "named"), [
    (["prompt", "-x"], "usage: acplink prompt", "unknown option: -x"),
    (["prompt", "--bogus", "hi"], "usage: acplink prompt", "unknown option: --bogus"),
    (["prompt", "hi", "--bogus=1", "--", "agent"], "usage: acplink prompt", "unknown option: --bogus"),
    (["prompt", "--timeout", "soon", "hi"], "usage: acplink prompt", "argument --timeout"),
    (["prompt", "--startup-timeout", "0", "hi"], "usage: acplink prompt", "argument --startup-timeout"),
    (["prompt"], "usage: acplink prompt", "required: text"),
    (["chat", "--bogus"], "usage: acplink chat", "unknown option: --bogus"),
    (["check", "--bogus", "--", "agent"], "usage: acplink check", "unknown option: --bogus"),
    (["inspect", "--bogus", "t.jsonl"], "usage: acplink inspect", "unknown option: --bogus"),
    (["inspect"], "usage: acplink inspect", "required: FILE"),
    (["record", "-q", "--out", "t", "--", "agent"], "usage: acplink record", "unknown option: -q"),
    (["demo-agent", "extra"], "usage: acplink demo-agent", "unexpected argument: extra"),
    (["--bogus"], "usage: acplink [-h]", "unknown option: --bogus"),
])
def test_argument_errors_show_the_usage_and_name_the_option(cli: Cli, args: list[str], usage: str,
                                                            named: str) -> None:
    proc = cli.call(*args)
    assert proc.returncode == 2
    assert proc.stderr.startswith(usage), proc.stderr
    (line,) = _errors(proc.stderr)
    assert line.startswith("acplink: error: ") and named in line, line
    assert "-- AGENT_CMD" not in line and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [["check"], ["record", "--out", "t"]])
def test_run_time_errors_use_the_same_prefix(cli: Cli, args: list[str]) -> None:
    proc = cli.call(*args)
    assert proc.returncode == 2
    assert _errors(proc.stderr) == [proc.stderr.strip()]
    assert proc.stderr.startswith("acplink: error: no agent command given")


# -- time limits ------------------------------------------------------------------------------------

def test_prompt_gives_up_on_an_agent_that_never_answers_initialize(cli: Cli) -> None:
    proc = cli.run("prompt", "--startup-timeout", "0.5", "hi", "--", "sleep", "100", timeout=60)
    assert proc.returncode == 124
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line == "acplink: error: the agent 'sleep 100' did not answer initialize within 0.5 s (--startup-timeout)"


def test_prompt_timeout_bounds_the_agents_start_up_too(cli: Cli) -> None:
    # --timeout is the whole run's limit: it ends the start-up long before --startup-timeout would
    proc = cli.run("prompt", "--timeout", "1", "--startup-timeout", "3600", "hi", "--", "sleep", "100", timeout=120)
    assert proc.returncode == 124
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "acplink: error: the agent 'sleep 100' did not answer initialize within 1 s (--timeout)"]


def test_chat_gives_up_on_an_agent_that_never_answers_initialize(cli: Cli) -> None:
    proc = cli.run("chat", "--startup-timeout", "0.5", "--", "sleep", "100", timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == ("acplink: error: the agent 'sleep 100' did not answer "
                                                    "initialize within 0.5 s (--startup-timeout)")
    assert "Traceback" not in proc.stderr


def test_prompt_timeout_cancels_a_turn_that_does_not_end(cli: Cli) -> None:
    # (the limit includes the demo's start-up: 10 s leave room for it on a loaded machine, and
    # cut the 200 s turn short)
    proc = cli.run("prompt", "--timeout", "10", "slow 4000", timeout=120)
    assert proc.returncode == 124
    assert proc.stdout.startswith("chunk 1/4000 ") and proc.stdout.endswith("\n")
    assert "chunk 4000/4000" not in proc.stdout
    assert proc.stderr.splitlines() == ["acplink: error: the turn did not end within 10 s (--timeout); it was cancelled"]


def test_prompt_timeout_leaves_a_quick_turn_alone(cli: Cli) -> None:
    proc = cli.call("prompt", "--timeout", "60", "hello")
    assert (proc.returncode, proc.stdout) == (0, "You said: hello\n")


# -- a closed stdout --------------------------------------------------------------------------------

def _piped(cli: Cli, pipeline: str) -> tuple[str, int, str]:
    """Run ``pipeline`` (``$ACPLINK`` is the command) in bash: head's output, the exit status
    of the pipeline's first command and that command's stderr."""
    err = cli.workdir / "stderr.txt"
    script = f'{pipeline}; echo "status=${{PIPESTATUS[0]}}"'
    env = {**cli.env, "ACPLINK": " ".join(ACPLINK), "ERR": str(err)}
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=cli.workdir, env=env,
                          timeout=90, stdin=subprocess.DEVNULL)
    out, status = proc.stdout.rsplit("status=", 1)
    return out, int(status), err.read_text()


def test_prompt_into_head_ends_quietly(cli: Cli) -> None:
    out, status, err = _piped(cli, '$ACPLINK prompt "slow 60" 2>"$ERR" | head -c 5')
    assert out == "chunk"
    assert (status, err) == (141, "")


def test_prompt_json_into_head_ends_quietly(cli: Cli) -> None:
    out, status, err = _piped(cli, '$ACPLINK prompt --json "slow 60" 2>"$ERR" | head -1')
    assert out.startswith('{"sessionId":') and out.count("\n") == 1
    assert (status, err) == (141, "")


def test_check_and_inspect_into_head_end_quietly(cli: Cli, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    rec = subprocess.run([*ACPLINK, "prompt", "hi", "--", *ACPLINK, "record", "--out", str(trace), "--", *DEMO],
                         capture_output=True, text=True, timeout=60, env=cli.env, stdin=subprocess.DEVNULL)
    assert rec.returncode == 0, rec.stderr
    # head has read its fill and gone before the command writes: every write meets a closed pipe
    for command in (f'$ACPLINK inspect --json "{trace}"', f'$ACPLINK inspect --text "{trace}"',
                    "$ACPLINK check -k initialize -- " + " ".join(DEMO)):
        out, status, err = _piped(cli, f"{{ printf 12345; {command} 2>\"$ERR\"; }} | head -c 5")
        assert out == "12345"
        assert (status, err) == (141, ""), command
    # and a reader that stops half-way through a long output
    out, status, err = _piped(cli, f'$ACPLINK inspect --json "{trace}" 2>"$ERR" | head -2')
    assert re.fullmatch(r'\{\n  "header": \{\n', out)
    assert err == "" and status in (0, 141)


def test_chat_into_head_ends_quietly(cli: Cli) -> None:
    (cli.workdir / "input.txt").write_text("hello\nslow 20\n")
    out, status, err = _piped(cli, '{ printf 12345; $ACPLINK chat < input.txt 2>"$ERR"; } | head -c 5')
    assert out == "12345"
    assert (status, err) == (141, "")
