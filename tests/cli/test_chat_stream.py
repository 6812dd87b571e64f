"""``acplink chat`` streaming, as seen in a terminal (pyte) of 60x15 and 200x50: a long reply is
always visible and printed once (also after Ctrl-C), Markdown keeps single newlines, the
permission question and the diff come in one order, a status line shows while the agent is
silent, and end of input ends the chat."""

from __future__ import annotations

import pytest
from cliutil import Cli
from termscreen import SHAPES_AGENT, SIZE_IDS, SIZES, Term, chunks, squash, start


@pytest.mark.parametrize(("cols", "rows", "n"), [(*SIZES[0], 200), (*SIZES[1], 120)], ids=SIZE_IDS)
def test_a_long_reply_is_visible_while_it_streams_and_kept_after(cli: Cli, terms: list[Term], cols: int,
                                                                  rows: int, n: int) -> None:
    t = start(terms, cli, cols, rows)
    t.send(f"slow {n}")
    t.wait(rf"chunk {n * 3 // 5}/{n}", on_screen=True)  # the newest text is on the screen while it streams
    assert not any(line.strip() in ("...", "…") for line in t.visible())
    t.prompt(2)
    shown = t.text()
    assert chunks(shown, n) == list(range(1, n + 1))  # every chunk, once, in order
    assert f"chunk {n}/{n}" in squash("\n".join(t.visible()))  # the end of the reply stays on screen
    t.send("/quit")
    assert t.finish() == 0


@pytest.mark.parametrize(("cols", "rows"), SIZES, ids=SIZE_IDS)
def test_ctrl_c_during_a_long_reply_prints_nothing_twice(cli: Cli, terms: list[Term], cols: int, rows: int) -> None:
    t = start(terms, cli, cols, rows)
    t.send("slow 500")
    t.wait(r"chunk 50/500", on_screen=True)
    t.child.sendintr()
    t.wait(r"turn ended: cancelled")
    t.prompt(2)
    seen = chunks(t.text(), 500)
    assert seen == list(range(1, len(seen) + 1)) and len(seen) >= 50
    assert t.text().count("cancelling") == 1
    t.send("/quit")
    assert t.finish() == 0


@pytest.mark.parametrize(("cols", "rows"), SIZES, ids=SIZE_IDS)
def test_markdown_newlines_question_order_and_plans(cli: Cli, terms: list[Term], cols: int, rows: int) -> None:
    t = start(terms, cli, cols, rows)
    t.send("help")
    t.prompt(2)
    lines = [line.strip() for line in t.lines()]
    assert "I am the acplink demo agent. Try:" in lines  # not run on into the list
    assert any(line.startswith("read FILE - Read a file") for line in lines)
    assert any(line.startswith("slow N - Stream slowly") for line in lines)
    t.send("plan a; b; c")
    t.prompt(3)
    lines = [line.strip() for line in t.lines()]
    assert any(line.endswith("Working on: c") for line in lines)
    assert "All steps done." in lines
    # two pasted lines (bracketed paste) stay two lines
    t.child.send("\x1b[200~first pasted line\nsecond pasted line\x1b[201~")
    t.send("")
    t.prompt(4)
    lines = [line.strip() for line in t.lines()]
    assert "You said: first pasted line" in lines and "second pasted line" in lines
    # the permission question, then the diff, then the options
    for i in range(2):  # the order used to change from one run to the next
        t.send(f"write new{i}.txt text {i}")
        t.wait(r"choose 1-3:")
        t.wait(rf"\+text {i}.*1\. Allow")
        text = t.text()
        at = text.rindex(f"> write new{i}.txt")
        shown = text[at:]
        assert shown.index("The agent asks to") < shown.index("new file") < shown.index(f"+text {i}") < \
            shown.index("1. Allow"), shown
        t.send("3")
        t.wait(rf"Permission denied: I did not write new{i}.txt")
        t.prompt(5 + i)
    assert not list(cli.workdir.glob("new*.txt"))
    # a plan is shown where it was updated, not after the reply
    t.send("plan first; second")
    t.prompt(7)
    text = t.text()
    text = text[text.rindex("> plan first"):]
    assert text.index("Plan (0/2 done)") < text.index("Working on: first") < text.index("Plan (1/2 done)") \
        < text.index("Working on: second") < text.index("Plan (2/2 done)") < text.index("All steps done")
    t.send("/quit")
    assert t.finish() == 0


@pytest.mark.parametrize(("cols", "rows"), SIZES, ids=SIZE_IDS)
def test_status_line_while_the_agent_is_silent(cli: Cli, terms: list[Term], cols: int, rows: int) -> None:
    t = Term(cli, cols, rows, *SHAPES_AGENT, "--start-delay", "1.5")
    terms.append(t)
    t.wait(r"starting agent… [1-9]s", on_screen=True)
    t.prompt(1)
    assert "starting agent" not in squash("\n".join(t.visible()))  # erased once the agent answered
    t.send("quiet")
    t.wait(r"waiting for the agent… [1-9]s", on_screen=True)
    t.wait(r"done waiting\.")
    t.prompt(2)
    assert "waiting for the agent" not in squash("\n".join(t.visible()))
    t.send("/quit")
    assert t.finish() == 0


def test_end_of_input_during_a_permission_question_ends_the_chat(cli: Cli) -> None:
    """`printf 'write n.txt hi\\n' | acplink chat` used to hang for ever."""
    proc = cli.run("chat", input="write n.txt hi\n", timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "choose 1-3:" in proc.stdout
    assert not (cli.workdir / "n.txt").exists()
    # the same for an elicitation, and for a question after more turns
    proc = cli.run("chat", input="hello\nask\n", timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "You said: hello" in proc.stdout and "Colour" in proc.stdout


@pytest.mark.parametrize(("cols", "rows"), SIZES[:1], ids=SIZE_IDS[:1])
def test_ctrl_d_at_a_permission_question_ends_the_chat(cli: Cli, terms: list[Term], cols: int, rows: int) -> None:
    t = start(terms, cli, cols, rows)
    t.send("write n.txt hi")
    t.wait(r"choose 1-3:")
    t.child.sendcontrol("d")
    assert t.finish() == 0
    assert not (cli.workdir / "n.txt").exists()
