"""Process-wide settings for a process that moves many messages (an agent, a proxy, a client
driving a busy agent).

:func:`tune_gc` is applied by :func:`acplink.run_agent` and the ``acplink`` command line; a
client process calls it itself, once its imports are done (see docs/performance.md).
"""

from __future__ import annotations

import gc

__all__ = ["cancel_on_signals", "tune_gc"]

#: the young-generation threshold tune_gc sets (CPython's default: 700 up to 3.12, 2,000 from
#: 3.13, where 3.14's incremental collector also does a slice of the old generation's work)
YOUNG_THRESHOLD = 20_000


def tune_gc(*, freeze: bool = True, young_threshold: int = YOUNG_THRESHOLD) -> None:
    """Make CPython's cyclic garbage collector cheap for a message-heavy process.

    * ``freeze``: everything alive now (imported modules, classes, built models: objects
      that live as long as the process) moves to the collector's permanent generation
      (:func:`gc.freeze`), so full collections no longer walk them again and again.
    * ``young_threshold``: a young collection runs after this many new container objects
      instead of CPython's default (700, or 2,000 from Python 3.13). Messages and their
      models are freed by reference counting the moment they are handled; collecting every
      few hundred allocations only re-examines the messages still in flight (thousands of
      them during a burst of concurrent requests).

    Only cycles are affected: memory freed by reference counting is freed as before, and
    cyclic garbage is still collected, a little later. Never lowers a threshold the process
    has already raised, and leaves the other thresholds alone (their meaning differs between
    CPython's collectors). Safe to call more than once.
    """
    if young_threshold < 1:
        raise ValueError("young_threshold must be at least 1")
    if freeze:
        gc.freeze()
    young = gc.get_threshold()[0]
    if young and young < young_threshold:  # 0 means the process turned collection off
        gc.set_threshold(young_threshold)  # (only the first: the others are kept as they are)


def cancel_on_signals() -> None:
    """Cancel the running task on SIGTERM or SIGINT (how a served program stops: its ``finally``
    blocks close what it opened). Call it from the task that serves; no-op where a loop
    cannot have signal handlers (not the main thread, Windows)."""
    import asyncio
    import contextlib
    import signal

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is None:
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, task.cancel)
