"""``acplink chat``'s permission questions on a terminal (pyte): "Always allow" is remembered
for what the client can check (not the agent's claimed kind, not the whole session), and a
command's output is shown once."""

from __future__ import annotations

from cliutil import Cli
from termscreen import SHAPES_AGENT, Term, squash, start


def test_always_allow_does_not_cover_a_hostile_kind(cli: Cli, terms: list[Term]) -> None:
    """Reads of notes.txt allowed always; a tool call the agent also calls a "read" that runs
    ``rm -rf ~`` is asked again."""
    t = start(terms, cli, 80, 24, *SHAPES_AGENT)
    t.send("sneaky")
    t.wait(r"choose 1-3")
    t.send("2")  # Always allow
    t.wait(r"choose 1-3.*choose 1-3")  # asked again: the third request (the second is remembered)
    t.send("3")
    t.wait(r"answers: sneaky1=allow_always sneaky2=allow_always sneaky3=reject")
    assert "(allowed from now on in this chat: “Read notes.txt” (read) tool calls)" in t.text()
    assert squash(t.text()).count("The agent asks to") == 2
    t.send("/quit")
    assert t.finish() == 0


def test_always_allow_is_for_that_file_not_the_session(cli: Cli, terms: list[Term]) -> None:
    t = start(terms, cli, 80, 24)
    t.send("write a.txt one")
    t.wait(r"choose 1-3")
    t.send("2")
    t.wait(r"Wrote 4 characters to a\.txt")
    t.prompt(2)
    said = f"(allowed from now on in this chat: writes to {cli.workdir / 'a.txt'})"
    # (spaces dropped: a long temporary path wraps at the 80-column edge, anywhere in it)
    assert "".join(said.split()) in "".join(t.text().split())
    t.send("write a.txt two")  # the same file: not asked again
    t.wait(r"Wrote 4 characters to a\.txt.*Wrote 4 characters to a\.txt")
    t.prompt(3)
    assert squash(t.text()).count("The agent asks to") == 1
    t.send("write b.txt three")  # another file: asked, and the session is still in "ask" mode
    t.wait(r"Write b\.txt.*choose 1-3")
    t.send("3")
    t.prompt(4)
    assert not any(line.startswith("auto>") for line in t.lines())
    assert "mode: auto" not in t.text()
    t.send("/quit")
    assert t.finish() == 0


def test_a_commands_output_is_shown_once(cli: Cli, terms: list[Term]) -> None:
    t = start(terms, cli, 80, 24)
    t.send("run seq 101 120")
    t.wait(r"choose 1-3")
    t.send("1")
    t.wait(r"finished with exit code 0")
    t.prompt(2)
    lines = [line.strip() for line in t.lines()]
    assert lines.count("120") == 1 and lines.count("116") == 1, "\n".join(lines)  # (folded: the last 5)
    assert "101" not in lines
    t.send("/expand")
    t.prompt(3)
    assert [line.strip() for line in t.lines()].count("101") == 1
    t.send("/quit")
    assert t.finish() == 0
