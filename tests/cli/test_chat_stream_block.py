"""The streamed block of ``acplink chat`` (no terminal): fed a message word by word, the lines
it prints for good, followed by its final lines, are exactly the message rendered at once;
the live tail stays short; a table stays live until it ends; a resize loses nothing."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from acplink.cli.chat_stream import ChatMarkdown, LiveArea, StreamBlock, plain, render_lines

PARAGRAPH = " ".join(f"word{i}" for i in range(90))
DOC = """# A title

Some text with **bold** and `code`,
and a second line that is long enough to wrap around at least once here.

- first item
- second item, also quite long so that it wraps onto another line
- third

```python
def f(x):
    return x + 1
```

1. one
2. two

> quoted text
> on two lines

""" + "\n\n".join(f"Paragraph {i} with a few words in it." for i in range(14)) + "\n\nThe end."
TABLE = "Before.\n\n| name | value |\n| --- | --- |\n" + "".join(f"| row{i} | {'x' * i} |\n" for i in range(12)) + \
    "\nAfter the table."


def _console(width: int = 40, height: int = 15) -> Console:
    return Console(file=io.StringIO(), width=width, height=height, force_terminal=True, color_system="truecolor")


def _pieces(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


def _stream(console: Console, text: str, kind: str = "text") -> tuple[list, list[int], StreamBlock]:
    block = StreamBlock(console, kind)
    printed: list = []
    tails: list[int] = []
    for piece in _pieces(text):
        block.add(piece)
        final, tail = block.take()
        printed += final
        tails.append(len(tail))
    final, tail = block.take(final=True)
    assert tail == []
    return printed + final, tails, block


@pytest.mark.parametrize("width", [30, 80])
@pytest.mark.parametrize("text", [PARAGRAPH, DOC], ids=["paragraph", "document"])
def test_streamed_lines_are_the_message_rendered_at_once(text: str, width: int) -> None:
    console = _console(width)
    printed, tails, _ = _stream(console, text)
    assert [plain(line) for line in printed] == [plain(line) for line in render_lines(console, ChatMarkdown(text))]
    assert max(tails) <= 6  # only the unfinished tail is live (a code block's padding and last line)


def test_a_thought_streams_the_same_way() -> None:
    console = _console(30)
    printed, tails, _ = _stream(console, PARAGRAPH, kind="thought")
    assert " ".join(plain(line) for line in printed).split() == PARAGRAPH.split()
    assert max(tails) <= 1


def test_long_messages_are_cut_at_block_boundaries() -> None:
    """Once printed, whole blocks leave the source, so each render stays short."""
    console = _console(60)
    printed, _, block = _stream(console, DOC)
    assert len(block.src) < len(DOC) / 2
    assert [plain(line) for line in printed] == [plain(line) for line in render_lines(console, ChatMarkdown(DOC))]


def test_a_table_stays_live_until_it_ends() -> None:
    console = _console(60, 40)
    block = StreamBlock(console, "text")
    printed: list = []
    in_table = False
    for piece in _pieces(TABLE):
        block.add(piece)
        final, _ = block.take()
        printed += final
        if "row3" in block.src and "After" not in block.src:
            in_table = True
            assert not any("row" in plain(line) for line in printed)  # columns may still widen
    assert in_table
    printed += block.take(final=True)[0]
    assert [plain(line) for line in printed] == [plain(line) for line in render_lines(console, ChatMarkdown(TABLE))]


def test_a_resize_loses_no_word() -> None:
    console = _console(50)
    block = StreamBlock(console, "text")
    printed: list = []
    for i, piece in enumerate(_pieces(PARAGRAPH)):
        if i == 60:
            console.width = 23
        block.add(piece)
        printed += block.take()[0]
    printed += block.take(final=True)[0]
    words = " ".join(plain(line) for line in printed).split()
    assert [w for w in PARAGRAPH.split() if w not in words] == []
    assert words == PARAGRAPH.split()  # nothing shown twice around the resize


def test_single_newlines_are_line_breaks() -> None:
    console = _console(60)
    lines = [plain(line) for line in render_lines(console, ChatMarkdown("one\ntwo\n- Working on: c\nAll steps done."))]
    assert lines[:2] == ["one", "two"]
    assert "All steps done." in lines[-1] and "Working on: c" not in lines[-1]


def test_the_live_area_is_never_taller_than_the_window() -> None:
    console = _console(40, 10)
    area = LiveArea(console)
    lines = [render_lines(console, ChatMarkdown(f"line {i}"))[0] for i in range(30)]
    area.show([], lines)
    assert area.drawn == 8
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "line 29" in out and "line 21" not in out
    area.show(lines[:2], lines[2:4])  # erases its 8 lines, prints 2 for good, draws 2
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[7A\x1b[J" in out and area.drawn == 2
