"""The local ``/commands`` of ``acplink chat`` (modes, config options, models, sessions) and
their completion."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Iterable, Iterator
from typing import Any, TypeVar

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from ..client.client import Client
from ..client.session import Session
from ..errors import AcpError, TransportError
from ..schema import _generated as s
from .common import start_session

__all__ = ["LOCAL_COMMANDS", "LOCAL_NAMES", "LocalCommands", "Quit", "SlashCompleter"]

T = TypeVar("T")

LOCAL_COMMANDS: list[tuple[str, str, str]] = [
    ("help", "", "this list, and the agent's own commands"),
    ("mode", "[ID]", "list the session modes, or switch to one"),
    ("config", "[ID [VALUE]]", "list the session's config options, or set one"),
    ("model", "[ID]", "list the models, or switch to one"),
    ("sessions", "", "list the agent's sessions"),
    ("resume", "ID|N", "continue a listed session"),
    ("new", "", "start a new session"),
    ("status", "", "the session's state in one line"),
    ("quit", "", "shut the agent down and leave"),
]
LOCAL_NAMES = {name for name, _, _ in LOCAL_COMMANDS} | {"exit"}


class Quit(Exception):
    """Leave the chat (Ctrl-D, a second Ctrl-C, /quit)."""


class SlashCompleter(Completer):
    """Completes ``/commands`` (local and the agent's) and their arguments."""

    def __init__(self, app: LocalCommands) -> None:
        self.app = app

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/"):
            return
        if " " not in text:
            for name, meta in self.app.command_table():
                if name.startswith(text[1:]):
                    yield Completion("/" + name, start_position=-len(text), display_meta=meta)
            return
        cmd, _, rest = text[1:].partition(" ")
        *before, word = rest.split(" ")
        for value, meta in self.app.argument_choices(cmd, before):
            if value.startswith(word):
                yield Completion(value, start_position=-len(word), display_meta=meta)


class LocalCommands:
    """The local /commands; mixed into :class:`acplink.cli.chat.ChatApp`."""

    console: Console
    args: argparse.Namespace
    client: Client | None
    session: Session | None
    listing: list[s.SessionInfo]
    live: bool

    async def _until_quit(self, aw: Awaitable[T], *, watch_agent: bool = False) -> T:
        raise NotImplementedError

    def _require(self) -> tuple[Client, Session]:
        assert self.client is not None and self.session is not None
        return self.client, self.session

    # -- waiting, Ctrl-C ---------------------------------------------------------------------

    def command_table(self) -> list[tuple[str, str]]:
        """(name, description) of every /command: local ones first, then the agent's."""
        rows = [(name, desc) for name, _, desc in LOCAL_COMMANDS]
        if self.session is not None:
            rows += [(c.name, c.description) for c in self.session.state.available_commands
                     if c.name not in LOCAL_NAMES]
        return rows

    def argument_choices(self, cmd: str, before: list[str]) -> Iterable[tuple[str, str]]:
        state = self.session.state if self.session is not None else None
        if state is None:
            return []
        if cmd == "mode" and not before:
            return [(m.id, m.name) for m in state.available_modes]
        if cmd == "model" and not before:
            return [(m.model_id, m.name) for m in state.available_models]
        if cmd == "config":
            if not before:
                return [(o.id, o.name) for o in state.config_options if isinstance(o, _KNOWN_OPTIONS)]
            if len(before) == 1:
                option = _find_option(state.config_options, before[0])
                return _option_values(option) if option is not None else []
        if cmd == "resume" and not before:
            return [(i.session_id, i.title or "") for i in self.listing]
        return []

    async def _local(self, text: str) -> None:
        cmd, _, rest = text[1:].partition(" ")
        arg = rest.strip()
        try:
            if cmd in ("quit", "exit"):
                raise Quit
            if cmd == "help":
                self._help()
            elif cmd == "mode":
                await self._mode(arg)
            elif cmd == "config":
                await self._config(arg)
            elif cmd == "model":
                await self._model(arg)
            elif cmd == "sessions":
                await self._sessions()
            elif cmd == "resume":
                await self._resume(arg)
            elif cmd == "new":
                await self._new()
            elif cmd == "status":
                _, session = self._require()
                self.console.print(f"session {session.session_id} in {session.cwd}: {session.state.summary()}")
        except (TransportError, Quit):
            raise
        except AcpError as exc:
            self._error(str(exc))

    def _error(self, message: str) -> None:
        self.console.print(Text(f"error: {message}", style="red"))

    def _help(self) -> None:
        table = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
        for name, args, desc in LOCAL_COMMANDS:
            table.add_row(f"/{name} {args}".rstrip(), desc)
        self.console.print(Text("Local commands:", style="bold"))
        self.console.print(table)
        session = self.session
        commands = session.state.available_commands if session is not None else []
        if commands:
            agent = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
            for c in commands:
                if c.name in LOCAL_NAMES:
                    continue
                hint = getattr(c.input, "hint", None) if c.input is not None else None
                agent.add_row(f"/{c.name} {hint or ''}".rstrip(), c.description)
            self.console.print(Text("The agent's commands (sent to the agent as the prompt):", style="bold"))
            self.console.print(agent)
        self.console.print(Text("Ctrl-C cancels the running turn, a second Ctrl-C quits; Ctrl-D quits.",
                                style="dim"))

    async def _mode(self, arg: str) -> None:
        _, session = self._require()
        state = session.state
        if not state.available_modes:
            self._error("the agent offers no session modes")
            return
        if not arg:
            for m in state.available_modes:
                mark = "*" if m.id == state.current_mode_id else " "
                self.console.print(f" {mark} {m.id}  {m.name}" + (f" - {m.description}" if m.description else ""))
            return
        wanted = next((m for m in state.available_modes if arg.lower() in (m.id.lower(), m.name.lower())), None)
        if wanted is None:
            self._error(f"no mode {arg!r}; one of: {', '.join(m.id for m in state.available_modes)}")
            return
        await session.set_mode(wanted.id)
        self.console.print(Text(f"mode: {wanted.id}", style="dim"))

    async def _config(self, arg: str) -> None:
        _, session = self._require()
        options = [o for o in session.state.config_options if isinstance(o, _KNOWN_OPTIONS)]
        if not options:
            self._error("the agent offers no config options")
            return
        if not arg:
            for o in options:
                values = ", ".join(v for v, _ in _option_values(o))
                self.console.print(f"  {o.id} = {_current(o)}  ({o.name}; {values})")
            return
        config_id, _, value = arg.partition(" ")
        option = _find_option(options, config_id)
        if option is None:
            self._error(f"no config option {config_id!r}; one of: {', '.join(o.id for o in options)}")
            return
        value = value.strip()
        choices = _option_values(option)
        match = next((v for v, name in choices if value.lower() in (v.lower(), name.lower())), None)
        if match is None:
            self._error(f"{option.id} takes one of: {', '.join(v for v, _ in choices)}")
            return
        new: Any = (match == "true") if isinstance(option, s.SessionConfigOptionBoolean) else match
        await session.set_config_option(option.id, new)
        self.console.print(Text(f"{option.id} = {match}", style="dim"))

    async def _model(self, arg: str) -> None:
        _, session = self._require()
        state = session.state
        if not state.available_models:
            self._error("the agent offers no model selector (try /config)")
            return
        if not arg:
            for m in state.available_models:
                mark = "*" if m.model_id == state.current_model_id else " "
                self.console.print(f" {mark} {m.model_id}  {m.name}")
            return
        wanted = next((m for m in state.available_models if arg.lower() in (m.model_id.lower(), m.name.lower())),
                      None)
        if wanted is None:
            self._error(f"no model {arg!r}; one of: {', '.join(m.model_id for m in state.available_models)}")
            return
        await session.set_model(wanted.model_id)
        self.console.print(Text(f"model: {wanted.model_id}", style="dim"))

    async def _sessions(self) -> None:
        client, session = self._require()
        if not client.supports("sessionCapabilities.list"):
            self._error("the agent cannot list its sessions")
            return
        self.listing = await self._until_quit(client.list_sessions(session.cwd))
        if not self.listing:
            self.console.print("no sessions")
            return
        table = Table(box=None, padding=(0, 2, 0, 0))
        for col in ("#", "session", "title", "updated"):
            table.add_column(col, style="bold" if col == "#" else None)
        for i, info in enumerate(self.listing, 1):
            current = " (this one)" if info.session_id == session.session_id else ""
            table.add_row(str(i), info.session_id + current, info.title or "", info.updated_at or "")
        self.console.print(table)
        self.console.print(Text("/resume N (or ID) continues one", style="dim"))

    async def _resume(self, arg: str) -> None:
        client, session = self._require()
        if not arg:
            self._error("usage: /resume ID (or N from /sessions)")
            return
        session_id = arg
        if arg.isdigit():
            if not 0 < int(arg) <= len(self.listing):
                self._error(f"no session #{arg} in the last /sessions list")
                return
            session_id = self.listing[int(arg) - 1].session_id
        can_load = client.supports("loadSession")
        if not can_load and not client.supports("sessionCapabilities.resume"):
            self._error("the agent cannot resume sessions")
            return
        if session_id == session.session_id:
            self._error("that is the current session")
            return
        if can_load:  # load replays the conversation, so it can be shown
            new = await self._until_quit(client.load_session(session_id, session.cwd))
        else:
            new = await self._until_quit(client.resume_session(session_id, session.cwd))
        self.session = new
        self._show_history(new)
        self.console.print(Text(f"resumed session {new.session_id}", style="dim"))

    async def _new(self) -> None:
        client, _ = self._require()
        self.session = await self._until_quit(start_session(client, self.args))
        self.console.print(Text(f"new session {self.session.session_id}", style="dim"))

    def _show_history(self, session: Session, last: int = 10) -> None:
        messages = session.state.messages[-last:]
        for m in messages:
            if m.role == "user":
                self.console.print(Text(f"> {m.text.strip()}", style="bold"))
            else:
                self.console.print(Markdown(m.text) if self.live else m.text)


# -- helpers -------------------------------------------------------------------------------------

_KNOWN_OPTIONS = (s.SessionConfigOptionSelect, s.SessionConfigOptionBoolean)


def _find_option(options: Iterable[Any], config_id: str) -> Any:
    for o in options:
        if isinstance(o, _KNOWN_OPTIONS) and config_id.lower() in (o.id.lower(), o.name.lower()):
            return o
    return None


def _option_values(option: Any) -> list[tuple[str, str]]:
    if isinstance(option, s.SessionConfigOptionBoolean):
        return [("true", "on"), ("false", "off")]
    out: list[tuple[str, str]] = []
    for item in option.options:
        if isinstance(item, s.SessionConfigSelectGroup):
            out += [(o.value, o.name) for o in item.options]
        else:
            out.append((item.value, item.name))
    return out


def _current(option: Any) -> str:
    value = option.current_value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
