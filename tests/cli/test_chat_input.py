"""``acplink chat`` on a terminal (pyte) while a reply streams: type-ahead is held in an input
area below the reply (never echoed into it) and sent once the turn ends; a resize mid-stream
shows no line twice; the permission question takes an arrow-key choice as well as a number."""

from __future__ import annotations

import pytest
from cliutil import Cli
from prompt_toolkit.keys import Keys
from termscreen import SIZE_IDS, SIZES, Term, chunks, start

from acplink.cli.chat_input import TypeAhead

DOWN, UP = "\x1b[B", "\x1b[A"


@pytest.mark.parametrize(("cols", "rows"), SIZES, ids=SIZE_IDS)
def test_type_ahead_is_held_below_the_reply_and_sent_after_it(cli: Cli, terms: list[Term], cols: int,
                                                              rows: int) -> None:
    t = start(terms, cli, cols, rows)
    t.send("slow 150")
    t.wait(r"chunk 30/150", on_screen=True)
    t.child.send("next questio")
    t.child.send("x\x7fn")  # (a typo, rubbed out)
    t.wait(r"✎ next question", on_screen=True)  # held in the input area, below the reply
    t.send("")  # Enter: queued
    t.child.send("and a draft")  # typed, not sent: it waits in the next prompt
    t.wait(r"You said: next question")
    t.wait(r"> and a draft", on_screen=True)
    text = t.text()
    assert chunks(text, 150) == list(range(1, 151))  # the reply whole, once, in order
    reply = text[text.index("> slow 150"):text.index("chunk 150/150")]
    assert "next question" not in reply and "draft" not in reply  # nothing typed landed in the reply
    assert text.count("next question") == 2  # its prompt line, and the agent's echo
    t.child.sendcontrol("u")
    t.send("/quit")
    assert t.finish() == 0


@pytest.mark.parametrize(("cols", "rows"), SIZES[:1], ids=SIZE_IDS[:1])
def test_ctrl_c_with_type_ahead_cancels_and_keeps_the_text_unsent(cli: Cli, terms: list[Term], cols: int,
                                                                 rows: int) -> None:
    t = start(terms, cli, cols, rows)
    t.send("slow 500")
    t.wait(r"chunk 20/500", on_screen=True)
    t.send("queued line")
    t.child.sendintr()
    t.wait(r"turn ended: cancelled")
    t.wait(r"> queued line", on_screen=True)  # back in the prompt, not sent by itself
    assert "You said: queued line" not in t.text()
    t.send("")
    t.wait(r"You said: queued line")
    t.send("/quit")
    assert t.finish() == 0


def test_a_resize_mid_stream_shows_no_line_twice(cli: Cli, terms: list[Term]) -> None:
    t = start(terms, cli, 50, 20)
    t.send("slow 300")
    for i, (cols, rows) in enumerate([(70, 20), (100, 20), (120, 24)]):  # (wider, taller: pyte cuts nothing)
        t.wait(rf"chunk {60 * (i + 1)}/300", on_screen=True)
        t.child.setwinsize(rows, cols)
        t.screen.resize(rows, cols)
        t.cols, t.rows = cols, rows
    t.prompt(2)
    assert chunks(t.text(), 300) == list(range(1, 301))  # every chunk once, in order
    t.send("/quit")
    assert t.finish() == 0


@pytest.mark.parametrize(("cols", "rows"), SIZES, ids=SIZE_IDS)
def test_permission_options_by_arrow_keys_or_number(cli: Cli, terms: list[Term], cols: int, rows: int) -> None:
    t = start(terms, cli, cols, rows)
    t.send("write a.txt first")
    t.wait(r"choose 1-3")
    t.send("")  # Enter with nothing chosen: nothing happens (no accidental allow)
    t.child.send(DOWN + DOWN + DOWN + UP)  # 1, 2, 3, then back to 2
    t.wait(r"→ 2\. Always allow", on_screen=True)
    t.child.send(DOWN)
    t.wait(r"→ 3\. Reject", on_screen=True)
    t.send("")
    t.wait(r"Permission denied: I did not write a\.txt")
    t.prompt(2)
    assert not (cli.workdir / "a.txt").exists()
    t.send("write a.txt second")
    t.wait(r"choose 1-3.*choose 1-3")  # (keys sent before the question are type-ahead)
    t.send("1")  # typing the number still works
    t.wait(r"Wrote 7 characters to a\.txt")
    t.prompt(3)
    assert (cli.workdir / "a.txt").read_text() == "second\n"
    t.send("/quit")
    assert t.finish() == 0


def test_type_ahead_editing() -> None:
    """The keys the input area understands (no terminal: key presses fed one by one)."""
    changes: list[str] = []
    interrupts: list[bool] = []
    typed = TypeAhead(lambda: changes.append("x"), lambda: interrupts.append(True))
    for ch in "hello wrld":
        typed.feed(ch, ch)
    for _ in range(3):
        typed.feed(Keys.ControlH, "\x7f")
    typed.feed("o", "o")
    assert typed.text == "hello wo"
    typed.feed(Keys.ControlW, "\x17")
    assert typed.text == "hello "
    typed.feed(Keys.BracketedPaste, "two\r\nlines")
    typed.feed(Keys.ControlM, "\r")
    typed.feed(Keys.ControlM, "\r")  # (an empty line is not queued)
    typed.feed("\x1b", "\x1b")  # (not printable: ignored)
    typed.feed("n", "n")
    assert typed.queued == ["hello two\nlines"] and typed.text == "n"
    assert [line.plain for line in typed.lines()] == ["⏎ hello two\nlines", "✎ n▏"]
    typed.feed(Keys.ControlC, "\x03")
    assert interrupts == [True]
    typed.unqueue()  # (a cancelled turn: nothing is sent by itself)
    assert typed.queued == [] and typed.text == "hello two\nlines\nn" and changes == ["x"]
    assert typed.next_line() is None and typed.take_draft() == "hello two\nlines\nn" and typed.text == ""
    typed.feed(Keys.ControlU, "\x15")
    assert typed.text == ""
