"""``acplink chat`` against the shapes real agents send (a scripted agent, shapes_agent.py), as
seen in a terminal (pyte) of 60x15 and 200x50."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from cliutil import Cli
from termscreen import SHAPES_AGENT, SIZE_IDS, SIZES, Term


@pytest.fixture
def term(cli: Cli, request: pytest.FixtureRequest) -> Iterator[Term]:
    cols, rows = request.param
    (cli.workdir / "numbers.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    t = Term(cli, cols, rows, *SHAPES_AGENT)
    try:
        t.prompt(1)
        yield t
    finally:
        t.close()


class Turns:
    """Sends inputs one after the other, each ending at the next prompt."""

    def __init__(self, term: Term) -> None:
        self.term = term
        self.count = 1

    def __call__(self, line: str) -> str:
        """The text shown for ``line`` (squashed), from its input line to the next prompt."""
        t = self.term
        before = len(t.text())
        t.send(line)
        self.count += 1
        t.prompt(self.count)
        return t.text()[before:]


@pytest.mark.parametrize("term", SIZES, ids=SIZE_IDS, indirect=True)
def test_real_agent_shapes(term: Term) -> None:
    turn = Turns(term)
    # an edit hunk is numbered from the file (the snippet is line 3), not from the snippet
    out = turn("edit")
    assert "@@ -3 +3 @@" in out and "-three" in out and "+THREE" in out
    # tool output: the fence rendered, the internal tag hidden, long output folded
    out = turn("output")
    assert "print('fenced')" in out and "```" not in out
    assert "system-reminder" not in out and "internal note" not in out
    assert "output line 1" in out and "output line 30" not in out
    m = re.search(r"… (\d+) more lines \(/expand (\d+)", out)
    assert m is not None, out
    out = turn(f"/expand {m.group(2)}")
    assert "output line 30" in out
    # usage: tokens of the turn, the context window, the session's cost
    out = turn("usage")
    assert "1.5k tokens (1.2k in, 340 out)" in out and "context 45k/200k (22%)" in out and "$0.0123" in out
    out = turn("metausage")  # gemini-cli's _meta.quota.token_count
    assert "520 tokens (500 in, 20 out)" in out
    # errors show their data details
    out = turn("fail")
    assert "the model is overloaded, try again later" in out
    out = turn("/mode bypassPermissions")
    assert "Internal error (code -32603): bypassPermissions is not allowed when running as root" in out
    # /help: one line per command; the agent's multi-line descriptions cut to their first line
    out = turn("/help")
    assert "Review the pending changes." in out and "Looks at every file" not in out
    assert "with a long second paragraph" not in out
    help_lines = [line for line in term.lines() if line.lstrip().startswith(("/review", "/init", "/mode "))]
    assert len(help_lines) >= 3 and all(len(line) <= term.cols for line in help_lines)
    # /mode: aligned columns
    turn("/mode")
    lines = term.lines()
    start = max(i for i, line in enumerate(lines) if line.endswith("> /mode"))
    rows = lines[start + 1:start + 5]
    names = [re.search(r"(Default|Accept Edits|Plan|Bypass)", line) for line in rows]
    assert len(rows) == 4 and len({m.start() for m in names if m is not None}) == 1, rows
    # a link's URL is written out where the terminal has no hyperlinks
    out = turn("link")
    assert "the docs" in out and "https://example.com/docs" in out
    # a cancelled turn marks its unfinished tool call cancelled; /status counts failed ones
    term.send("hang")
    term.wait(r"Run forever … in_progress")
    term.child.sendintr()
    term.wait(r"turn ended: cancelled")
    turn.count += 1
    term.prompt(turn.count)
    assert "Run forever … cancelled" in term.text()
    turn("failtool")
    out = turn("/status")
    assert "4 tool calls (2 done, 1 failed, 1 cancelled)" in out
    term.send("/quit")
    assert term.finish() == 0
