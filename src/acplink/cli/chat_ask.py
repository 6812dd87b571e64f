"""The questions ``acplink chat`` asks during a turn: permission requests (the options chosen
with the arrow keys or by number) and form elicitations (field by field). Mixed into
:class:`acplink.cli.chat_app.ChatApp`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from prompt_toolkit import PromptSession
from rich.console import Console
from rich.text import Text

from .._text import sanitize_for_terminal
from ..client.client import Client
from ..client.permissions import allow_scope
from ..client.session import Session
from ..schema import _generated as s
from .chat_commands import Quit
from .chat_input import choose_option, option_label, pick_option
from .chat_render import TurnRenderer

__all__ = ["CtrlC", "Questions"]

T = TypeVar("T")
_CANCELLED: Any = object()


def scope_text(params: s.RequestPermissionRequest) -> str:
    """What an "Always allow" answer to ``params`` covers, in words (see ``allow_scope``)."""
    what, _, rest = allow_scope(params).partition(":")
    if what == "command":
        return f"the command `{sanitize_for_terminal(rest)}`"
    if what == "write":
        return "writes to " + ", ".join(sanitize_for_terminal(path) for path in rest.split("\n"))
    kind, _, title = rest.partition(":")
    return f"“{sanitize_for_terminal(title)}” ({kind}) tool calls"


class CtrlC(Exception):
    """Ctrl-C pressed at a prompt."""


class Questions:
    """Asking the user while a turn waits (see the module doc)."""

    console: Console
    interactive: bool
    live: bool
    prompting: bool
    eof: bool
    quit: asyncio.Event
    ask_lock: asyncio.Lock
    renderer: TurnRenderer | None
    _choice: PromptSession[str] | None

    if TYPE_CHECKING:  # (provided by ChatApp)
        def _require(self) -> tuple[Client, Session]:
            raise NotImplementedError

        async def _until_quit(self, aw: Awaitable[T], *, watch_agent: bool = False) -> T:
            raise NotImplementedError

        async def _guarded(self, prompt: Awaitable[str], *, watch_agent: bool = False) -> str:
            raise NotImplementedError

        async def _prompt(self, session: PromptSession[str], message: str, *, watch_agent: bool = False,
                          default: str = "") -> str:
            raise NotImplementedError

        async def _line_unless_cancelled(self) -> str | None:
            raise NotImplementedError

        def _keyboard(self, during_turn: bool) -> None:
            raise NotImplementedError

        def _cancel_turn(self) -> None:
            raise NotImplementedError

        def _end_of_input(self) -> None:
            raise NotImplementedError

    # -- permission requests -----------------------------------------------------------------

    async def _ask(self, params: s.RequestPermissionRequest) -> str | None:
        async with self.ask_lock:
            if self.prompting or self.quit.is_set():
                return None  # not during a turn: nobody to ask
            if self.eof:
                self._end_of_input()
                return None
            renderer = self.renderer
            if renderer is not None:
                renderer.suspend()
            self._keyboard(False)
            try:
                self._show_request(params, renderer)
                picked = await self._choose(params.options)
                option = next((o for o in params.options if o.option_id == picked), None)
                if option is not None and option.kind == "allow_always":
                    self.console.print(Text(f"(allowed from now on in this chat: {scope_text(params)})", style="dim"))
                return picked
            finally:
                self._keyboard(True)
                if renderer is not None:
                    renderer.resume()

    def _show_request(self, params: s.RequestPermissionRequest, renderer: TurnRenderer | None) -> None:
        """The question, then the tool call's content not shown yet (its diff), then the
        options: always in this order (a running tool call's content is not shown before)."""
        _, session = self._require()
        call = params.tool_call
        known = session.state.tool_calls.get(call.tool_call_id)
        title = sanitize_for_terminal(call.title or (known.title if known is not None else "") or call.tool_call_id)
        self.console.print(Text.assemble(("? ", "bold yellow"), "The agent asks to: ", (title, "bold")))
        content = call.content if call.content is not None else (known.content if known is not None else [])
        if renderer is not None:
            renderer.show_content(call.tool_call_id, content, title=title)
        if self._selector():
            return  # (the selector lists the options)
        for i, option in enumerate(params.options, 1):  # the kind, so a name cannot mislead
            name, kind, style = option_label(option)
            self.console.print(Text.assemble(f"  {i}. ", (name, style), ("  [", "dim"), (kind, style), ("]", "dim")))

    def _selector(self) -> bool:
        """Whether options are chosen with the arrow keys (a real terminal)."""
        return self.interactive and self.live

    async def _choose(self, options: list[s.PermissionOption]) -> str | None:
        if self._selector():
            if self._choice is None:
                self._choice = PromptSession()
            return await self._answer(self._guarded(choose_option(self._choice, options)))
        question = f"choose 1-{len(options)}: "
        while True:
            answer = await self._ask_line(question)
            if answer is None:
                return None
            picked = pick_option(options, answer.strip())
            if picked is not None:
                return picked
            self.console.print(Text(f"type a number from 1 to {len(options)}", style="yellow"))

    # -- elicitation (the agent asks the user for structured input) ---------------------------

    async def _elicit(self, params: Any) -> dict[str, Any]:
        """Form-mode ``elicitation/create``: ask for each field of the requested schema."""
        wire = params.to_wire() if hasattr(params, "to_wire") else dict(params)
        schema = wire.get("requestedSchema") or {}
        if wire.get("mode") != "form" or not isinstance(schema.get("properties"), dict):
            return {"action": "decline"}
        async with self.ask_lock:
            if self.prompting or self.quit.is_set():
                return {"action": "cancel"}
            renderer = self.renderer
            if renderer is not None:
                renderer.suspend()
            self._keyboard(False)
            try:
                message = sanitize_for_terminal(str(wire.get("message", "")))
                self.console.print(Text.assemble(("? ", "bold yellow"), message))
                content: dict[str, Any] = {}
                required = set(schema.get("required") or [])
                for name, prop in schema["properties"].items():
                    value = await self._ask_field(name, prop if isinstance(prop, dict) else {}, name in required)
                    if value is _CANCELLED:
                        return {"action": "cancel"}
                    if value is not None:
                        content[name] = value
                return {"action": "accept", "content": content}
            finally:
                self._keyboard(True)
                if renderer is not None:
                    renderer.resume()

    async def _ask_field(self, name: str, prop: dict[str, Any], required: bool) -> Any:
        kind = prop.get("type", "string")
        label = prop.get("title") or name
        label = sanitize_for_terminal(str(label))  # (prompt_toolkit shows it)
        question = f"  {label}{'' if required else ' (optional)'}{' [y/n]' if kind == 'boolean' else ''}: "
        while True:
            answer = await self._ask_line(question)
            if answer is None:
                return _CANCELLED
            answer = answer.strip()
            if not answer and not required:
                return None
            try:
                if kind == "boolean" and answer.lower() in ("y", "yes", "true", "n", "no", "false"):
                    return answer.lower() in ("y", "yes", "true")
                if kind == "integer":
                    return int(answer)
                if kind == "number":
                    return float(answer)
                if kind in ("string", None) and answer:
                    return answer
            except ValueError:
                pass
            self.console.print(Text(f"a {kind} is expected", style="yellow"))

    async def _ask_line(self, question: str) -> str | None:
        """One line from the user while a turn waits; None when cancelled."""
        if self.interactive:
            if self._choice is None:
                self._choice = PromptSession()
            return await self._answer(self._prompt(self._choice, question))
        self.console.print(Text(question), end="")
        answer = await self._answer(self._until_quit(self._line_unless_cancelled()))
        self.console.print(answer or "")
        return answer

    async def _answer(self, question: Awaitable[str | None]) -> str | None:
        """The user's answer to ``question``; None when cancelled (Ctrl-C, end of input, quit,
        or the library withdrew the question)."""
        try:
            return await question
        except CtrlC:
            self._cancel_turn()
            return None
        except EOFError:
            self._end_of_input()
            return None
        except Quit:
            return None
        except asyncio.CancelledError:
            self._withdrawn()
            raise

    def _withdrawn(self) -> None:
        """The library cancelled the question shown (the turn was cancelled and the agent got
        the answer "cancelled"); the prompt it showed is gone: say so on a line of its own."""
        if not self.interactive:
            self.console.print()  # (after the unanswered "choose 1-2: ")
        self.console.print(Text("(question withdrawn: the turn was cancelled)", style="yellow"))
