"""An agent that does not start is one line in the same words wherever acplink starts it
(prompt, chat, check, record), and those words are docs/cli.md's: each case of its
start-up failures block is run as written and must print exactly what the page shows."""

from __future__ import annotations

import os
import re
import shlex
import stat
from pathlib import Path

import pytest
from cliutil import ROOT, Cli, no_traceback

DOC = (ROOT / "docs" / "cli.md").read_text()


def _documented() -> list[tuple[str, list[str]]]:
    """(the agent command, the lines acplink prints) of each case of the docs' block."""
    block = DOC.split("<!-- startup-failures -->", 1)[1].split("```", 2)[1]
    cases: list[tuple[str, list[str]]] = []
    for line in block.strip("\n").splitlines():
        if line.startswith("$ acplink prompt hi -- "):
            cases.append((line.removeprefix("$ acplink prompt hi -- "), []))
        else:
            cases[-1][1].append(line)
    return cases


CASES = _documented()
#: exit status of each subcommand for an agent that does not start
CODES = {"prompt": 1, "chat": 1, "check": 2}


def _with_fake_agent(cli: Cli, tmp_path: Path) -> None:
    """`my-agent` on PATH: the docs' example of an agent that exits with code 3."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / "my-agent"
    script.write_text("#!/bin/sh\necho 'my-agent: ANTHROPIC_API_KEY is not set' >&2\nexit 3\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    cli.env["PATH"] = f"{bindir}{os.pathsep}{cli.env['PATH']}"


def test_the_docs_show_every_case() -> None:
    shown = " ".join(line for _, lines in CASES for line in lines)
    for words in ("was not found", "exited with code 3 before answering initialize", "last stderr lines:",
                  "its output is not JSON-RPC (the first line:", "gave up on it",
                  "sent acplink's initialize request back"):
        assert words in shown, words


@pytest.mark.parametrize("sub", list(CODES))
@pytest.mark.parametrize("case", range(len(CASES)), ids=[c for c, _ in CASES])
def test_a_failed_start_reads_as_documented(cli: Cli, tmp_path: Path, sub: str, case: int) -> None:
    command, expected = CASES[case]
    _with_fake_agent(cli, tmp_path)
    args = [sub, "hi"] if sub == "prompt" else [sub]
    proc = cli.run(*args, "--", *shlex.split(command), timeout=60)
    assert proc.returncode == CODES[sub], proc.stderr
    assert proc.stderr.splitlines() == expected, proc.stderr
    assert proc.stdout == "" or (sub == "chat" and "acplink: error" not in proc.stdout)


def test_a_killed_agent_names_the_signal_and_its_stderr(cli: Cli) -> None:
    proc = cli.run("prompt", "hi", "--", "sh", "-c", "echo dying >&2; kill -9 $$", timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "acplink: error: the agent \"sh -c 'echo dying >&2; kill -9 $$'\" was killed by signal 9 "
        "before answering initialize", "last stderr lines:", "  | dying"], proc.stderr


def test_a_crash_at_start_up_shows_the_traceback_of_the_agent_not_ours(cli: Cli) -> None:
    proc = cli.run("prompt", "hi", "--", "python3", "-c", "import nonexistent_module_xyz", timeout=60)
    assert proc.returncode == 1
    first, *rest = proc.stderr.splitlines()
    assert re.fullmatch(r"acplink: error: the agent .*nonexistent_module_xyz.* exited with code 1 before "
                        r"answering initialize", first), first
    assert rest[0] == "last stderr lines:" and rest[-1].startswith("  | ModuleNotFoundError"), rest
    assert all(line.startswith("  | ") for line in rest[1:])  # (that traceback is the agent's, quoted)


def test_record_says_not_found_in_the_same_words(cli: Cli) -> None:
    proc = cli.run("record", "--out", "t.jsonl", "--", "my-agnet", "--acp", timeout=60)
    assert proc.returncode == 127
    assert proc.stderr == ("acplink: error: cannot start the agent 'my-agnet --acp': 'my-agnet' was not found "
                           "(is it installed and on PATH?)\n")
    assert no_traceback(proc.stderr)
