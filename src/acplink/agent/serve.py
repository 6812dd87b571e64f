"""Serving an agent app: over this process's stdio (``run_agent``) or any transport."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import shutil
import signal
import sys
from typing import Any

from ..runtime import tune_gc as _tune_gc
from ..transports.base import Transport, TransportSink
from ..transports.stdio import StdioTransport
from .app import AgentBase
from .store import HistoryStore

__all__ = ["run_agent", "serve"]


def _stdin_is_a_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):
        return False


def own_command() -> str:
    """This process's command line as a person would type it: ``acplink demo-agent`` for a
    console script on PATH (its path when not on PATH), else the interpreter's name and its
    arguments (``python3 echo.py``)."""
    script = sys.argv[0] if sys.argv else ""
    name = os.path.basename(script)
    found = shutil.which(name) if name and not name.endswith(".py") else None
    with contextlib.suppress(OSError):
        if found is not None and os.path.samefile(found, script):
            return shlex.join([name, *sys.argv[1:]])
    if name and not name.endswith(".py") and os.path.isfile(script) and os.access(script, os.X_OK):
        return shlex.join(sys.argv)  # (a console script that is not on PATH: its path)
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
    return shlex.join([os.path.basename(argv[0]), *argv[1:]])


class _TypedAtStdio(StdioTransport):
    """Stdio whose first line that is not JSON (someone typing at the agent on a terminal) gets
    a hint on stderr, before the parse error the protocol answers it with."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.agent_name = name

    async def start(self, sink: TransportSink) -> None:
        await super().start(_FirstBadLineHint(sink, self.agent_name))


class _FirstBadLineHint:
    """A sink in front of the connection: looks at the lines typed until the first one that
    is not JSON, says what to do instead, then only passes data on."""

    def __init__(self, sink: TransportSink, name: str) -> None:
        self.sink = sink
        self.name = name
        self.watching = True
        self.partial = b""

    def data_received(self, data: bytes) -> None:
        if self.watching:
            self._look(data)
        self.sink.data_received(data)

    def _look(self, data: bytes) -> None:
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                json.loads(line)
            except ValueError:
                self.watching = False
                print(f"acplink: that line is not JSON-RPC: {self.name!r} is an ACP agent, for a client to "
                      f"talk to over stdin/stdout, not for typing at; run `acplink chat -- {own_command()}` "
                      "to chat with it", file=sys.stderr, flush=True)
                return
        if len(self.partial) > 65536:  # (a long JSON message is not someone typing)
            self.watching = False

    def __getattr__(self, name: str) -> Any:  # (the rest of the sink: passed through)
        return getattr(self.sink, name)


async def serve(app: AgentBase, transport: Transport | None = None, **kw: Any) -> None:
    """Serve ``app`` on ``transport`` (default: stdio) until the client hangs up."""
    conn = app.connection(transport or StdioTransport(), **kw)
    await conn.start()
    try:
        await conn.wait_closed()
    finally:
        await conn.aclose()


def run_agent(app: AgentBase, *, debug: bool = False, log_level: int = logging.WARNING, tune_gc: bool = True,
              **kw: Any) -> None:
    """Serve ``app`` on stdio until stdin closes (how editors run agents). Logs go to stderr.

    The process is the agent's own, so the garbage collector is tuned for message traffic
    first (:func:`acplink.tune_gc`; ``tune_gc=False`` leaves it alone).
    """
    if tune_gc:
        _tune_gc()
    logging.basicConfig(level=logging.DEBUG if debug else log_level, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")

    by_hand = "transport" not in kw and _stdin_is_a_terminal()
    if by_hand:  # run by hand, not by a client: say what this is and how to talk to it
        print(f"acplink agent {app.name!r} speaking ACP (JSON-RPC) on stdin/stdout; talk to it with "
              f"`acplink chat -- {own_command()}` (Ctrl-D ends it)", file=sys.stderr, flush=True)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, task.cancel)
        if by_hand:
            kw["transport"] = _TypedAtStdio(app.name)
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await serve(app, debug=debug, **kw)
        finally:
            # asyncio.run's loop.close() closes the loop's self-pipe before it removes the signal
            # handlers: a stop signal in between (an editor repeats them) is written to a closed
            # fd and CPython prints "Exception ignored ... signal wakeup fd" on our stderr. Served
            # and closed: unhook the wakeup fd first (a late signal reaches the no-op handler)
            with contextlib.suppress(ValueError):  # (not the main thread: no handlers were set)
                signal.set_wakeup_fd(-1)
            if isinstance(app.sessions, HistoryStore):  # (its writes committed, its leases released)
                app.sessions.close()

    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(main())
