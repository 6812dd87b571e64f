"""``acplink chat``'s application: an interactive terminal client for any ACP agent.

Input is read with prompt_toolkit (history, slash-command completion); output is drawn with
rich (see :mod:`.chat_render`). When stdin is not a terminal, prompts are read line by line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

from prompt_toolkit import PromptSession
from rich.text import Text

from .._tasks import TaskSet
from .._text import sanitize_for_terminal
from ..client._recover import RecoveryReport
from ..client.client import Client
from ..client.permissions import PermissionPolicy
from ..client.session import PromptTurn, Session
from ..errors import AcpError, ConnectionClosed, RequestError, TransportError
from ..schema import _generated as s
from .chat_ask import CtrlC, Questions
from .chat_commands import LOCAL_NAMES, LocalCommands, Quit, SlashCompleter
from .chat_input import TypeAhead
from .chat_reconnect import reconnect
from .chat_render import Fold, TurnRenderer, Waiting, error_text, usage_line
from .chat_resume import keep_recovery_if_useful, recover, recover_enabled, resume_session
from .chat_stream import SafeConsole, supports_hyperlinks
from .common import (
    describe_failure,
    fail,
    open_client,
    start_session,
)
from .mcp_option import McpStartFailed, mcp_servers

__all__ = ["ChatApp", "run_chat"]

log = logging.getLogger("acplink.cli.chat")
T = TypeVar("T")


def run_chat(args: argparse.Namespace) -> int:
    """``acplink chat`` (its options checked, rich and prompt_toolkit importable)."""
    lib = logging.getLogger("acplink")
    saved = lib.handlers[:], lib.propagate
    if args.debug:
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    else:  # library warnings would scribble over the screen; --debug shows them
        lib.handlers, lib.propagate = [logging.NullHandler()], False
    try:
        return asyncio.run(_chat(args))
    except McpStartFailed as exc:
        return fail(str(exc), 2)
    except AcpError as exc:
        if args.debug:
            raise
        return fail(error_text(exc))
    except KeyboardInterrupt:
        return 130
    finally:
        lib.handlers, lib.propagate = saved


async def _chat(args: argparse.Namespace) -> int:
    async with mcp_servers(args, args.startup_timeout):  # (--mcp: started before the agent, stopped after it)
        return await ChatApp(args).main()


class ChatApp(LocalCommands, Questions):
    """One ``acplink chat`` run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.console = SafeConsole(highlight=False)
        self.interactive = sys.stdin.isatty()
        self.live = self.console.is_terminal and not self.console.is_dumb_terminal
        self.hyperlinks = self.live and supports_hyperlinks()
        self.folds: list[Fold] = []  # folded tool outputs (/expand N)
        self.cancelled_tools: set[str] = set()  # tool calls left unfinished by a cancelled turn
        self.eof = False  # end of input seen: final (every later read is EOF too)
        self.client: Client | None = None
        self.session: Session | None = None
        self.renderer: TurnRenderer | None = None
        self.turn: PromptTurn | None = None
        self.interrupts = 0
        self.prompting = False
        self.listing: list[s.SessionInfo] = []
        self.listed = 0  # sessions of the listing shown so far (/sessions more)
        self.list_cursor: str | None = None  # the agent's cursor of the listing's next page
        #: background sends (session/cancel on Ctrl-C); closed before the client
        self._tasks = TaskSet("chat")
        self._lines: asyncio.Queue[str | None] | None = None
        self._input: PromptSession[str] | None = None
        self._choice: PromptSession[str] | None = None
        self.interrupted_turn = False  # a turn was running when the connection was lost
        self.shown_recovery: RecoveryReport | None = None  # the agent's last restart the user was told of
        #: keys typed while a turn runs (a real terminal only: raw mode, drawn in the live area)
        self.typeahead = TypeAhead(self._typed, self._on_sigint) if self.interactive and self.live else None

    # -- main loop ---------------------------------------------------------------------------

    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        self.quit = asyncio.Event()
        self.ask_lock = asyncio.Lock()
        self.turn_cancelled = asyncio.Event()
        loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        try:
            return await self._main()
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    async def _main(self) -> int:
        policy = self.policy = PermissionPolicy(default="ask", ask=self._ask)
        waiting = Waiting(self.console, "starting agent", enabled=self.live)
        recovery = {"recover": True} if recover_enabled(self.args) else {}  # (a local agent: restarted)
        try:
            client = await self._until_quit(open_client(self.args, policy, elicitation=self._elicit, **recovery))
        except Quit:
            return 0
        finally:
            waiting.stop()
        self.adopt(client)
        try:
            await keep_recovery_if_useful(client)
            waiting = Waiting(self.console, "starting a session", enabled=self.live)
            try:
                resuming = getattr(self.args, "resume", None) is not None
                self.session = await self._until_quit(
                    resume_session(client, self.args) if resuming else start_session(client, self.args))
            finally:
                waiting.stop()
            self._banner()
            if resuming:
                self._show_history(self.session)
                self.console.print(Text(f"resumed session {self.session.session_id}", style="dim"))
            while True:
                try:
                    await self._loop()
                    break
                except TransportError as exc:
                    self._end_turn_display()
                    if await recover(self, exc):  # (a local agent restarted: see chat_resume)
                        continue
                    offer = getattr(self.args, "url", None) and (self.args.reconnect or self.interactive)
                    if not offer or not await reconnect(self, exc):
                        raise
        except Quit:
            pass
        except TransportError as exc:
            self._end_turn_display()
            if self.args.debug:
                raise
            return fail(await describe_failure(self.client, exc))
        finally:
            self._keyboard(False)
            self._end_turn_display()
            await self._tasks.aclose()
            if self.client is not None:
                await self.client.aclose()
        return 0

    # (for chat_reconnect)
    async def elicit(self, params: Any) -> dict[str, Any]:
        return await self._elicit(params)

    async def until_quit(self, aw: Awaitable[T]) -> T:
        return await self._until_quit(aw)

    def adopt(self, client: Client) -> None:
        """Use ``client`` from now on (the first one, or one that replaces a lost connection)."""
        self.client = client
        client.observers.append(self._observe)

    async def ask_yes_no(self, question: str) -> bool:
        try:
            answer = await self._prompt(PromptSession(), question)
        except (CtrlC, EOFError):
            return False
        return answer.strip().lower() in ("", "y", "yes")

    async def _loop(self) -> None:
        while not self.eof:
            try:
                line = await self._read_line()
            except EOFError:
                return
            except CtrlC:  # Ctrl-C at the input prompt
                if self.interrupts:
                    return
                self.interrupts += 1
                self.console.print(Text("(press Ctrl-C again or Ctrl-D to quit)", style="dim"))
                continue
            self.interrupts = 0
            text = line.strip()
            if not text:
                continue
            if not self.interactive:
                self.console.print(Text(f"> {text}", style="bold"))
            if text.startswith("/") and text[1:].split(" ")[0] in LOCAL_NAMES:
                await self._local(text)
                continue
            await self._run_turn(text)

    async def _run_turn(self, text: str) -> None:
        client, session = self._require()
        renderer = self.renderer = TurnRenderer(self.console, client, session, live=self.live,
                                                folds=self.folds, hyperlinks=self.hyperlinks,
                                                cancelled=self.cancelled_tools)
        if self.typeahead is not None:
            renderer.input_lines = self.typeahead.lines
        renderer.begin()
        self.turn_cancelled.clear()
        self.turn = turn = session.prompt(text)
        self._keyboard(True)
        try:
            response = await self._until_quit(turn.result())
        except RequestError as exc:
            self._end_turn_display(None)
            self.console.print(Text(f"the agent failed the prompt: {error_text(exc)}", style="red"))
            return
        except TransportError:
            self.interrupted_turn = True
            raise
        finally:
            self.turn = None
            self._keyboard(False)
        usage = renderer.usage
        self._end_turn_display(str(response.stop_reason))
        if response.stop_reason != "end_turn":
            self.console.print(Text(f"(turn ended: {response.stop_reason})", style="yellow"))
        line = usage_line(response, usage)
        if line is not None:
            self.console.print(line)

    def _keyboard(self, during_turn: bool) -> None:
        """Read the keyboard into the type-ahead (a turn runs, no question is open), or not."""
        if self.typeahead is not None:
            running = during_turn and self.turn is not None and not self.turn.done and not self.quit.is_set()
            (self.typeahead.start if running else self.typeahead.stop)()

    def _typed(self) -> None:
        if self.renderer is not None:
            self.renderer.input_changed()

    def _end_turn_display(self, stop_reason: str | None = "cancelled") -> None:
        renderer, self.renderer = self.renderer, None
        if renderer is not None:
            renderer.end(stop_reason)

    def _observe(self, session: Session, update: Any) -> None:
        """Every session/update, in arrival order (before any later permission request)."""
        renderer = self.renderer
        if renderer is None or session is not self.session:
            return
        try:
            for shown in session.views:  # (the update in acplink's vocabulary: its views)
                renderer.feed(shown)
        except Exception:  # a rendering bug must not break the connection
            log.exception("could not render %s", type(update).__name__)

    async def _until_quit(self, aw: Awaitable[T], *, watch_agent: bool = False) -> T:
        """Await ``aw``; raise :class:`Quit` if the user quits first (and, with
        ``watch_agent``, ConnectionClosed if the agent goes away first)."""
        async with TaskSet("chat wait") as scope:  # (leaving it cancels and awaits what still runs)
            task = scope.spawn(aw)
            waiters: set[asyncio.Future[Any]] = {task, scope.spawn(self.quit.wait())}
            if watch_agent and self.client is not None:
                waiters.add(scope.spawn(self.client.conn.wait_closed()))
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if not task.cancelled() and task.done() and (task.exception() is not None or not self.quit.is_set()):
            return task.result()
        if self.quit.is_set():
            raise Quit
        raise ConnectionClosed("the agent closed the connection")

    def _on_sigint(self) -> None:
        turn = self.turn
        if turn is not None and not turn.done and self.interrupts == 0:
            self._cancel_turn()
            return
        self.quit.set()

    def _cancel_turn(self) -> None:
        """First Ctrl-C during a turn: tell the agent (``session/cancel``)."""
        self.interrupts += 1
        self.turn_cancelled.set()  # a permission question still open is answered "cancelled"
        if self.typeahead is not None:  # (what was typed ahead is not sent by itself)
            self.typeahead.unqueue()
        if self.renderer is not None:
            self.renderer.note("cancelling… (Ctrl-C again to quit)")
        if self.session is not None:
            self._spawn(self.session.cancel())

    def _spawn(self, coro: Any) -> None:
        async def guarded() -> None:
            try:
                await coro
            except AcpError as exc:
                log.debug("ignored: %s", exc)

        if self._tasks.closed:  # (the chat is ending: nothing more is sent)
            coro.close()
        else:
            self._tasks.spawn(guarded())

    # -- input -------------------------------------------------------------------------------

    def _prompt_text(self) -> str:
        mode = self.session.state.current_mode_id if self.session is not None else None
        return f"{sanitize_for_terminal(mode)}> " if mode else "> "  # (prompt_toolkit shows it)

    async def _read_line(self) -> str:
        if not self.interactive:
            line = await self._until_quit(self._next_line(), watch_agent=True)
            if line is None:
                raise EOFError
            return line
        if self._input is None:
            self._input = PromptSession(completer=SlashCompleter(self), complete_while_typing=True)
        queued = self.typeahead.next_line() if self.typeahead is not None else None
        if queued is not None:  # typed while the last turn ran: sent now, shown as if typed here
            self.console.print(Text(self._prompt_text() + sanitize_for_terminal(queued)))
            self._input.history.append_string(queued)
            return queued
        draft = self.typeahead.take_draft() if self.typeahead is not None else ""
        self.prompting = True
        try:
            return await self._prompt(self._input, self._prompt_text(), watch_agent=True, default=draft)
        finally:
            self.prompting = False

    async def _prompt(self, session: PromptSession[str], message: str, *, watch_agent: bool = False,
                      default: str = "") -> str:
        """One prompt_toolkit prompt."""
        return await self._guarded(session.prompt_async(message, handle_sigint=False, default=default),
                                   watch_agent=watch_agent)

    async def _guarded(self, prompt: Awaitable[str], *, watch_agent: bool = False) -> str:
        """Await a prompt_toolkit prompt. Ctrl-C there is a key, not a signal: it raises
        :class:`CtrlC` (a KeyboardInterrupt escaping a task would stop the event loop)."""

        async def guarded() -> str | CtrlC:
            try:
                return await prompt
            except KeyboardInterrupt:
                return CtrlC()

        answer = await self._until_quit(guarded(), watch_agent=watch_agent)
        if isinstance(answer, CtrlC):
            raise answer
        return answer

    def _end_of_input(self) -> None:
        """Stdin ended while the agent waits for an answer: the answer is "cancelled", the turn
        is cancelled, and the chat ends after it (end of input is final)."""
        self.eof = True
        turn = self.turn
        if turn is not None and not turn.done and not self.turn_cancelled.is_set():
            self.turn_cancelled.set()
            if self.session is not None:
                self._spawn(self.session.cancel())

    async def _line_unless_cancelled(self) -> str | None:
        """The next stdin line, or None once the turn is cancelled (Ctrl-C) or stdin ended."""
        async with TaskSet("chat line") as scope:  # (a line not taken yet stays in the queue)
            line = scope.spawn(self._next_line())
            first: set[asyncio.Future[Any]] = {line, scope.spawn(self.turn_cancelled.wait())}
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        answer = None if line.cancelled() else line.result()
        if answer is None and not line.cancelled():
            self._end_of_input()
        return answer

    async def _next_line(self) -> str | None:
        """The next stdin line; None at end of input, and for every call after it."""
        if self.eof:
            return None
        if self._lines is None:
            self._lines = asyncio.Queue()
            _start_reader(asyncio.get_running_loop(), self._lines)
        line = await self._lines.get()
        if line is None:
            self.eof = True
        return line

    # -- local commands ----------------------------------------------------------------------

    def _banner(self) -> None:
        client, session = self._require()
        info = client.agent_info
        name = (info.title or info.name) if info is not None else "agent"
        version = f" {info.version}" if info is not None and info.version else ""
        self.console.print(Text.assemble(("acplink chat", "bold"), sanitize_for_terminal(f" · {name}{version}"),
                                         " · session ", (sanitize_for_terminal(session.session_id), "dim")))
        parts = []
        if session.state.current_mode_id:
            parts.append(f"mode {session.state.current_mode_id}")
        parts.append("/help for commands, Ctrl-C cancels a turn, Ctrl-D quits")
        self.console.print(Text(" · ".join(parts), style="dim"))


def _start_reader(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
    """Feed stdin's lines into ``queue`` from a daemon thread (``None`` at end of input)."""

    def put(item: str | None) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is gone: we are exiting
            pass

    def pump() -> None:
        try:
            for raw in sys.stdin.buffer:
                put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        put(None)

    threading.Thread(target=pump, name="acplink-chat-stdin", daemon=True).start()

