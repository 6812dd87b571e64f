"""What ``acplink chat`` reads from the keyboard while a turn runs, and how it asks for one
of a permission request's options.

:class:`TypeAhead`: while a reply streams, the terminal is in raw mode and keys are read here
(never echoed by the terminal into the reply); the line being typed and the lines queued with
Enter are drawn as an input area at the bottom of the live area. Once the turn ends, queued
lines are sent in order, and an unfinished line is put back in the next prompt.

:func:`choose_option`: the options of a permission request, chosen with the arrow keys and
Enter, or by typing the number (or the option's id, name or kind).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.input import Input, create_input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from rich.text import Text

from .._text import sanitize_for_terminal
from ..schema import _generated as s

__all__ = ["TypeAhead", "choose_option", "option_label", "pick_option"]

_PASTE_ON, _PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"


class TypeAhead:
    """Keys typed during a turn. ``on_change`` is called when the input area must be drawn
    again, ``on_interrupt`` for Ctrl-C (raw mode: the terminal sends no SIGINT)."""

    def __init__(self, on_change: Callable[[], None], on_interrupt: Callable[[], None]) -> None:
        self.on_change = on_change
        self.on_interrupt = on_interrupt
        self.text = ""  # the line being typed
        self.queued: list[str] = []  # lines ended with Enter, to send in order
        self._input: Input | None = None
        self._raw: Any = None
        self._attached: Any = None

    @property
    def active(self) -> bool:
        return self._input is not None

    def start(self) -> None:
        """Read the keyboard from now on (raw mode, no echo)."""
        if self._input is not None:
            return
        stdin = create_input(sys.stdin)
        self._raw = stdin.raw_mode()
        self._raw.__enter__()
        self._attached = stdin.attach(self._keys)
        self._attached.__enter__()
        self._input = stdin
        _write(_PASTE_ON)

    def stop(self) -> None:
        """Give the keyboard back (before a question, and when the turn ends)."""
        stdin, self._input = self._input, None
        if stdin is None:
            return
        _write(_PASTE_OFF)
        self._attached.__exit__(None, None, None)
        self._raw.__exit__(None, None, None)
        stdin.close()

    def next_line(self) -> str | None:
        """The first queued line (removed), or None."""
        return self.queued.pop(0) if self.queued else None

    def take_draft(self) -> str:
        """The unfinished line (cleared), for the next prompt."""
        text, self.text = self.text, ""
        return text

    def unqueue(self) -> None:
        """The turn was cancelled: nothing queued is sent by itself; it all becomes the draft."""
        if self.queued:
            self.text = "\n".join([*self.queued, *([self.text] if self.text else [])])
            self.queued.clear()
            self.on_change()

    def lines(self) -> list[Text]:
        """The input area: the queued lines, then the line being typed."""
        out = [Text.assemble(("⏎ ", "dim"), (sanitize_for_terminal(q), "dim")) for q in self.queued]
        if self.text:
            out.append(Text.assemble(("✎ ", "bold"), sanitize_for_terminal(self.text), ("▏", "dim")))
        return out

    def _keys(self) -> None:
        stdin = self._input
        if stdin is None:
            return
        before = (self.text, len(self.queued))
        for press in stdin.read_keys():
            self.feed(press.key, press.data)
        if (self.text, len(self.queued)) != before:
            self.on_change()

    def feed(self, key: str, data: str) -> None:
        """One key press (a :class:`~prompt_toolkit.keys.Keys` value, or a character)."""
        if key == Keys.ControlC:
            self.on_interrupt()
        elif key in (Keys.ControlM, Keys.ControlJ):
            if self.text.strip():
                self.queued.append(self.text)
            self.text = ""
        elif key == Keys.ControlH:
            self.text = self.text[:-1]
        elif key == Keys.ControlU:
            self.text = ""
        elif key == Keys.ControlW:
            self.text = self.text.rstrip().rpartition(" ")[0] + (" " if " " in self.text.rstrip() else "")
        elif key == Keys.BracketedPaste:
            self.text += data.replace("\r\n", "\n").replace("\r", "\n")
        elif len(key) == 1 and key.isprintable():
            self.text += key


def _write(data: str) -> None:
    try:
        sys.stdout.write(data)
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


# -- choosing a permission option ----------------------------------------------------------------


def option_label(option: s.PermissionOption) -> tuple[str, str, str]:
    """(name, kind in words, style) of an option: the kind is shown so a name cannot mislead."""
    style = "green" if option.kind.startswith("allow") else "red"
    return sanitize_for_terminal(option.name), str(option.kind).replace("_", " "), style


def pick_option(options: Sequence[s.PermissionOption], answer: str) -> str | None:
    """The option id ``answer`` names: its number, id, name or kind; None if none."""
    if answer.isdigit() and 0 < int(answer) <= len(options):
        return options[int(answer) - 1].option_id
    low = answer.lower()
    for option in options:
        if low and low in (option.option_id.lower(), option.name.lower(), option.kind):
            return option.option_id
    return None


async def choose_option(session: PromptSession[str], options: Sequence[s.PermissionOption]) -> str:
    """The options as a list with a pointer moved by ↑/↓, Enter to choose; typing a number (or
    a name) and Enter works too. Nothing is chosen until the user moves or types (Enter alone
    does nothing: a stray Enter must not allow anything). Returns the option id; raises what
    ``prompt_async`` raises (KeyboardInterrupt for Ctrl-C, EOFError for Ctrl-D)."""
    state = {"at": -1}
    bindings = KeyBindings()

    def current(text: str) -> int:
        picked = pick_option(options, text.strip())
        return next(i for i, o in enumerate(options) if o.option_id == picked) if picked else state["at"]

    def move(event: KeyPressEvent, step: int) -> None:
        at = current(event.current_buffer.text)
        at = 0 if at < 0 and step > 0 else len(options) - 1 if at < 0 else (at + step) % len(options)
        state["at"] = at
        event.current_buffer.text = str(at + 1)
        event.current_buffer.cursor_position = len(event.current_buffer.text)

    @bindings.add(Keys.Up)
    def _up(event: KeyPressEvent) -> None:
        move(event, -1)

    @bindings.add(Keys.Down)
    def _down(event: KeyPressEvent) -> None:
        move(event, 1)

    @bindings.add(Keys.ControlM)
    def _enter(event: KeyPressEvent) -> None:
        if pick_option(options, event.current_buffer.text.strip()) is not None:
            event.current_buffer.validate_and_handle()

    def message() -> FormattedText:
        at = current(session.default_buffer.text)
        parts: list[tuple[str, str]] = []
        for i, option in enumerate(options):
            name, kind, style = option_label(option)
            colour = "ansigreen" if style == "green" else "ansired"
            pointer = "→ " if i == at else "  "
            parts += [("bold" if i == at else "", f"{pointer}{i + 1}. "), (f"{colour} bold" if i == at else colour, name),
                      ("ansibrightblack", "  ["), (colour, kind), ("ansibrightblack", "]\n")]
        parts.append(("ansibrightblack", "(↑/↓ and Enter, or type a number)\n"))
        parts.append(("", f"choose 1-{len(options)}: "))
        return FormattedText(parts)

    # prompt_async keeps the bindings it is given on the session, which asks the chat's next
    # question too (an elicitation's field): put the session's own back
    kept = session.key_bindings
    try:
        while True:
            answer = await session.prompt_async(message, key_bindings=bindings, handle_sigint=False)
            picked = pick_option(options, answer.strip())
            if picked is not None:
                return picked
    finally:
        session.key_bindings = kept
