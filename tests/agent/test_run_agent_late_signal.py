"""A stop signal that reaches a stdio agent while asyncio closes its loop (an editor repeats
them) prints nothing: CPython closes the loop's self-pipe before removing its signal handlers,
and `run_agent` unhooks the wakeup fd before that. The signal is sent at the worst moment, from
inside the loop's close, so the test does not depend on timing."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import asyncio.selector_events, os, signal, sys
from acplink.agent import AgentApp
from acplink.agent.serve import run_agent

close_pipe = asyncio.selector_events.BaseSelectorEventLoop._close_self_pipe

def close_then_signal(self):
    close_pipe(self)
    os.kill(os.getpid(), signal.SIGTERM)  # handled now: the loop's handlers are still installed

asyncio.selector_events.BaseSelectorEventLoop._close_self_pipe = close_then_signal
run_agent(AgentApp("late-signal"))
print("served", file=sys.__stderr__, flush=True)  # (stdout is the protocol's)
"""


def test_a_signal_while_the_loop_closes_prints_nothing() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    assert proc.stderr == "served\n"  # (nothing else: no "Exception ignored ... wakeup fd")
    assert proc.returncode == 0
