"""Serving an agent app: over this process's stdio (``run_agent``) or any transport."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from typing import Any

from ..runtime import tune_gc as _tune_gc
from ..transports.base import Transport
from ..transports.stdio import StdioTransport
from .app import AgentBase

__all__ = ["run_agent", "serve"]


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

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await serve(app, debug=debug, **kw)

    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(main())
