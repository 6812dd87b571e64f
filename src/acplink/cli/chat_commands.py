"""The local ``/commands`` of ``acplink chat`` (modes, config options, models, sessions) and
their completion."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Collection, Iterable, Iterator
from typing import Any, TypeVar

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from .._text import sanitize_for_terminal
from ..client.client import Client
from ..client.session import Session
from ..client.state import SessionState
from ..errors import AcpError, TransportError
from ..schema import _generated as s
from .chat_render import Fold, error_text
from .chat_stream import ChatMarkdown
from .common import start_session

__all__ = ["LOCAL_COMMANDS", "LOCAL_NAMES", "LocalCommands", "Quit", "SlashCompleter"]

T = TypeVar("T")

LOCAL_COMMANDS: list[tuple[str, str, str]] = [
    ("help", "", "this list, and the agent's own commands"),
    ("mode", "[ID]", "list the session modes, or switch to one"),
    ("config", "[ID [VALUE]]", "list the session's config options, or set one"),
    ("model", "[ID]", "list the models, or switch to one"),
    ("sessions", "[more]", "list the agent's sessions of this cwd (20 at a time; more: the next 20)"),
    ("resume", "ID|N", "continue a listed session"),
    ("new", "", "start a new session"),
    ("status", "", "the session's state in one line"),
    ("expand", "[N]", "show a folded tool output in full (the last one, or number N)"),
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
    """The local /commands; mixed into :class:`acplink.cli.chat_app.ChatApp`."""

    console: Console
    args: argparse.Namespace
    client: Client | None
    session: Session | None
    listing: list[s.SessionInfo]
    listed: int  # sessions of the listing shown so far
    list_cursor: str | None  # the agent's cursor of the listing's next page (None: no more)
    live: bool
    hyperlinks: bool
    folds: list[Fold]
    cancelled_tools: set[str]

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
            rows += [(c.name, first_line(c.description)) for c in self.session.state.available_commands
                     if c.name not in LOCAL_NAMES]
        return rows

    def argument_choices(self, cmd: str, before: list[str]) -> Iterable[tuple[str, str]]:
        state = self.session.state if self.session is not None else None
        if state is None:
            return []
        if cmd == "mode" and not before:
            return [(m.id, m.name) for m in state.available_modes]
        if cmd == "model" and not before:
            if state.available_models:
                return [(m.model_id, m.name) for m in state.available_models]
            model_option = _model_option(state.config_options)
            return _option_values(model_option) if model_option is not None else []
        if cmd == "config":
            if not before:
                return [(o.id, o.name) for o in state.config_options if isinstance(o, _KNOWN_OPTIONS)]
            if len(before) == 1:
                option = _find_option(state.config_options, before[0])
                return _option_values(option) if option is not None else []
        if cmd == "sessions" and not before:
            return [("more", "the next page")]
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
                await self._sessions(more=arg == "more")
            elif cmd == "resume":
                await self._resume(arg)
            elif cmd == "new":
                await self._new()
            elif cmd == "status":
                _, session = self._require()
                self.console.print(f"session {session.session_id} in {session.cwd}: {status_summary(session.state, self.cancelled_tools)}")
            elif cmd == "expand":
                self._expand(arg)
        except (TransportError, Quit):
            raise
        except AcpError as exc:
            self._error(error_text(exc))

    def _error(self, message: str) -> None:
        self.console.print(Text(f"error: {sanitize_for_terminal(message)}", style="red"))

    def _table(self, rows: Iterable[tuple[str, ...]], *, header: tuple[str, ...] | None = None) -> None:
        """Aligned columns (see :func:`table_lines`)."""
        for line in table_lines(self.console, list(rows), header=header):
            self.console.print(line, soft_wrap=True)

    def _help(self) -> None:
        self.console.print(Text("Local commands:", style="bold"))
        self._table((f"/{name} {args}".rstrip(), desc) for name, args, desc in LOCAL_COMMANDS)
        session = self.session
        commands = [c for c in (session.state.available_commands if session is not None else [])
                    if c.name not in LOCAL_NAMES]
        if commands:
            self.console.print(Text("The agent's commands (sent to the agent as the prompt):", style="bold"))
            self._table((f"/{c.name} {_hint(c) or ''}".rstrip(), first_line(c.description)) for c in commands)
        self.console.print(Text("Ctrl-C cancels the running turn, a second Ctrl-C quits; Ctrl-D quits.",
                                style="dim"))

    async def _mode(self, arg: str) -> None:
        _, session = self._require()
        state = session.state
        if not state.available_modes:
            self._error("the agent offers no session modes")
            return
        if not arg:
            self._table((" *" if m.id == state.current_mode_id else "  ", m.id, m.name, first_line(m.description or ""))
                        for m in state.available_modes)
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
            self._table((o.id, _current(o), o.name, ", ".join(v for v, _ in _option_values(o))) for o in options)
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
            # the current way to offer models: a config option of category "model"
            model_option = _model_option(state.config_options)
            if model_option is None:
                self._error("the agent offers no model selector (try /config)")
                return
            await self._config(f"{model_option.id} {arg}" if arg else "")
            return
        if not arg:
            self._table((" *" if m.model_id == state.current_model_id else "  ", m.model_id, m.name,
                         first_line(m.description or "")) for m in state.available_models)
            return
        wanted = next((m for m in state.available_models if arg.lower() in (m.model_id.lower(), m.name.lower())),
                      None)
        if wanted is None:
            self._error(f"no model {arg!r}; one of: {', '.join(m.model_id for m in state.available_models)}")
            return
        await session.set_model(wanted.model_id)
        self.console.print(Text(f"model: {wanted.model_id}", style="dim"))

    async def _sessions(self, *, more: bool = False) -> None:
        """The agent's sessions of this cwd (``session/list``, its order: newest first for
        acplink's agents), :data:`SESSIONS_PAGE` at a time; ``more``: the next ones, the
        agent's next page fetched (its cursor) when those shown so far are all there is."""
        client, session = self._require()
        if not client.offers("list_sessions"):
            self._error("the agent cannot list its sessions (it does not advertise session/list)")
            return
        if more and (self.listed < len(self.listing) or self.list_cursor):
            first = self.listed
        else:
            if more:
                self.console.print(Text("(no more sessions: listing again from the most recent)", style="dim"))
            self.listing, self.list_cursor = [], None
            await self._fetch_sessions(client, session.cwd)
            first = 0
        while len(self.listing) < first + SESSIONS_PAGE and self.list_cursor:
            await self._fetch_sessions(client, session.cwd)
        if not self.listing:
            self.console.print("no sessions")
            return
        page = self.listing[first:first + SESSIONS_PAGE]
        self.listed = first + len(page)
        self._table(((str(i), info.session_id + (" *" if info.session_id == session.session_id else ""),
                      _when(info.updated_at), first_line(info.title or ""))
                     for i, info in enumerate(page, first + 1)), header=("#", "session", "updated", "title"))
        left = len(self.listing) - self.listed
        tail = f"; {left} more: /sessions more" if left else "; more: /sessions more" if self.list_cursor else ""
        self.console.print(Text(f"* this session · /resume N (or ID) continues one{tail}", style="dim"))

    async def _fetch_sessions(self, client: Client, cwd: str) -> None:
        """The agent's next page of sessions (from :attr:`list_cursor`) added to the listing."""
        page, self.list_cursor = await self._until_quit(client.list_sessions_page(cwd, cursor=self.list_cursor))
        known = {info.session_id for info in self.listing}
        self.listing += [info for info in page if info.session_id not in known]
        if not page:  # (an agent that gives a cursor with an empty page: stop)
            self.list_cursor = None

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
        if not client.offers("load_session") and not client.offers("resume_session"):
            self._error("the agent cannot resume sessions")
            return
        if session_id == session.session_id:
            self._error("that is the current session")
            return
        # (load first: it replays the conversation, so it can be shown)
        new = await self._until_quit(client.reopen_session(session_id, session.cwd, prefer="load"))
        self.session = new
        self._show_history(new)
        self.console.print(Text(f"resumed session {new.session_id}", style="dim"))

    async def _new(self) -> None:
        client, _ = self._require()
        self.session = await self._until_quit(start_session(client, self.args))
        self.console.print(Text(f"new session {self.session.session_id}", style="dim"))

    def _expand(self, arg: str) -> None:
        if not self.folds:
            self._error("no folded tool output yet")
            return
        if arg and not (arg.isdigit() and 0 < int(arg) <= len(self.folds)):
            self._error(f"/expand takes a number from 1 to {len(self.folds)}")
            return
        fold = self.folds[int(arg) - 1 if arg else -1]
        self.console.print(Text(fold.title, style="bold"))
        self.console.print(fold.full)

    def _show_history(self, session: Session, last: int = 10) -> None:
        messages = session.state.messages[-last:]
        for m in messages:
            if m.role == "user":
                self.console.print(Text(f"> {sanitize_for_terminal(m.text).strip()}", style="bold"))
            else:
                text = sanitize_for_terminal(m.text)
                self.console.print(ChatMarkdown(text, hyperlinks=self.hyperlinks) if self.live else Text(text))


# -- helpers -------------------------------------------------------------------------------------

_KNOWN_OPTIONS = (s.SessionConfigOptionSelect, s.SessionConfigOptionBoolean)


def _model_option(options: Iterable[Any]) -> Any:
    """The config option that selects the model (category ``model``), if the agent has one."""
    return next((o for o in options if isinstance(o, s.SessionConfigOptionSelect) and o.category == "model"), None)


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


#: sessions shown by one /sessions
SESSIONS_PAGE = 20
#: the narrowest description column; narrower, the description goes below its row
MIN_DESCRIPTION = 16


def table_lines(console: Console, rows: list[tuple[str, ...]], *,
                header: tuple[str, ...] | None = None) -> list[Text]:
    """Rows as aligned columns in the console's width: every column but the last (ids,
    numbers, names) is kept whole; the last (a description) wraps in its column or, when the
    others leave it less than :data:`MIN_DESCRIPTION` cells, goes below its row, indented
    (with the columns that do not fit on the row's first line)."""
    if not rows:
        return []
    width = console.width
    table = [tuple(sanitize_for_terminal(cell) for cell in row) for row in rows]  # (the agent's text)
    if header is not None:
        table.insert(0, header)
    fixed = len(table[0]) - 1
    widths = [max(cell_len(row[i]) for row in table) for i in range(fixed)]
    room = width - sum(widths) - 2 * fixed
    out: list[Text] = []
    numbers = ["bold" if header is not None and name == "#" else "" for name in header or table[0]]
    for n, row in enumerate(table):
        styles = ["dim"] * len(row) if header is not None and n == 0 else numbers
        style = styles[-1]
        if room >= MIN_DESCRIPTION:
            body = list(Text(row[-1], style=style).wrap(console, room)) if row[-1] else []
            first = _cells(row[:fixed], widths, styles) + (body[0] if body else Text())
            first.rstrip()
            out.append(first)
            out += [Text(" " * (width - room)) + line for line in body[1:]]
            continue
        keep = 1  # narrow: the leading columns that fit on the first line, the rest below
        while keep < fixed and sum(widths[:keep + 1]) + 2 * keep <= width:
            keep += 1
        first = _cells(row[:keep], widths, styles)
        first.rstrip()
        out.append(first)
        below = " · ".join(cell for cell in row[keep:] if cell)
        out += [Text("    ") + line for line in Text(below, style=style).wrap(console, max(10, width - 4))]
    return out


def _cells(cells: tuple[str, ...], widths: list[int], styles: list[str]) -> Text:
    return Text.assemble(*((cell + " " * (widths[i] - cell_len(cell) + 2), styles[i]) for i, cell in enumerate(cells)))


def _when(stamp: str | None) -> str:
    """An ISO 8601 time as ``YYYY-MM-DD HH:MM`` (anything else as it is)."""
    if stamp and len(stamp) >= 16 and stamp[10] == "T":
        return f"{stamp[:10]} {stamp[11:16]}"
    return stamp or ""


def first_line(text: str) -> str:
    """The first non-blank line of a (possibly multi-line) description."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _hint(command: s.AvailableCommand) -> str | None:
    hint = getattr(command.input, "hint", None) if command.input is not None else None
    return hint if isinstance(hint, str) else None


def status_summary(state: SessionState, cancelled: Collection[str] = ()) -> str:
    """The session's one-line summary, with failed and cancelled tool calls counted apart
    (``cancelled``: the ids of tool calls a cancelled turn left unfinished)."""
    return state.summary(cancelled)


def _current(option: Any) -> str:
    value = option.current_value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
