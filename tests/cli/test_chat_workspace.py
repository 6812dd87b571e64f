"""``acplink chat --protocol 2`` with the demo agent: its read, write and run reach the client's
files and terminals through the workspace MCP server, and the chat shows the same tool calls,
diffs, permission questions and command output as on v1 (a pseudo-terminal, pyte)."""

from __future__ import annotations

import pytest
from cliutil import Cli
from termscreen import Term, squash, start


def screen_of(t: Term) -> str:
    return squash(t.text())


@pytest.mark.parametrize("protocol", ["1", "2"])
def test_write_shows_the_diff_and_asks(cli: Cli, terms: list[Term], protocol: str) -> None:
    (cli.workdir / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    t = start(terms, cli, 100, 40, options=("--protocol", protocol))
    t.send(r"write notes.txt alpha\nBETA\ngamma")
    t.wait(r"choose 1-3")
    text = screen_of(t)
    assert "Write notes.txt" in text and "The agent asks to" in text
    # the diff, the same on both versions: the hunk, the removed and the added line
    lines = [line.strip() for line in t.lines()]
    assert {"@@ -1,3 +1,3 @@", "alpha", "-beta", "+BETA", "gamma"} <= set(lines), t.dump()
    t.send("1")
    t.wait(r"Wrote 17 characters to notes\.txt")
    assert (cli.workdir / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
    t.send("/quit")
    assert t.finish() == 0


@pytest.mark.parametrize("protocol", ["1", "2"])
def test_read_and_run_show_their_tool_calls(cli: Cli, terms: list[Term], protocol: str) -> None:
    (cli.workdir / "notes.txt").write_text("one\ntwo\n")
    t = start(terms, cli, 100, 40, options=("--protocol", protocol))
    t.send("read notes.txt")
    t.wait(r"notes\.txt has 2 lines and 8 characters")
    assert "Read notes.txt" in screen_of(t)
    t.prompt(2)
    t.send("run seq 7 9")
    t.wait(r"choose 1-3")
    assert "Run seq 7 9" in screen_of(t)
    t.send("1")
    t.wait(r"finished with exit code 0 \(3 lines of output\)")
    t.prompt(3)
    lines = [line.strip() for line in t.lines()]
    assert lines.count("8") == 1 and lines.count("9") == 1, "\n".join(lines)  # (the command's output, once)
    t.send("/quit")
    assert t.finish() == 0


def test_the_agent_is_refused_outside_the_folder(cli: Cli, terms: list[Term]) -> None:
    t = start(terms, cli, 100, 40, options=("--protocol", "2"))
    t.send("read /etc/hostname")
    t.wait(r"I could not read /etc/hostname: .*outside the session roots")
    t.send("/quit")
    assert t.finish() == 0
