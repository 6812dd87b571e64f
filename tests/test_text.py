"""sanitize_for_terminal: what an agent sends never acts on the user's terminal."""

from __future__ import annotations

import pytest

from acplink._text import sanitize_for_terminal

CASES = [
    ("plain text, é 中", "plain text, é 中"),
    ("keeps\nnewlines\tand tabs", "keeps\nnewlines\tand tabs"),
    ("a\x1b]52;c;SGVsbG8=\x07b", "ab"),  # OSC 52 (clipboard), BEL-terminated
    ("a\x1b]0;title\x1b\\b", "ab"),  # OSC 0 (window title), ST-terminated
    ("a\x9d0;title\x9cb", "ab"),  # the same with C1 introducer and terminator
    ("x\x1b[2Jy", "xy"),  # CSI 2J (clear screen)
    ("x\x1b[38;5;196mred\x1b[0m", "xred"),
    ("x\x9b2Jy", "xy"),  # C1 CSI
    ("a\x1bPq#0;2;0\x1b\\b", "ab"),  # DCS
    ("a\x1b_apc\x1b\\b", "ab"),  # APC
    ("reset\x1bc!", "reset!"),  # ESC c
    ("charset\x1b(B!", "charset!"),
    ("cr\r\nbs\x08del\x7fnul\x00", "cr\nbsdelnul"),
    ("lone esc\x1b", "lone esc"),
    ("a\x1b]0;unterminated", "a0;unterminated"),  # no terminator: the introducer goes, the text stays
    ("c1 \x85\x8d\x9f!", "c1 !"),
]


@pytest.mark.parametrize(("raw", "shown"), CASES)
def test_sanitize(raw: str, shown: str) -> None:
    assert sanitize_for_terminal(raw) == shown


def test_no_control_character_survives_any_mix() -> None:
    # every control character, alone and after ESC and the C1 introducers, in one string
    controls = [chr(c) for c in [*range(0x20), *range(0x7f, 0xa0)]]
    text = "".join(c + d + "x" for c in ["\x1b", "\x9b", "\x9d", "\x90", ""] for d in controls)
    out = sanitize_for_terminal(text)
    assert not [c for c in out if c in controls and c not in "\n\t"]


def test_clean_text_is_returned_as_is() -> None:
    text = "no controls here " * 100
    assert sanitize_for_terminal(text) is text
