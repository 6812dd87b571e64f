"""Testing ACP agents and clients: fakes, replay, golden transcripts and pytest fixtures.

The pytest plugin (:mod:`acplink.testing.pytest_plugin`) is registered on install; see
docs/testing.md. Names are imported on first use, so that loading the plugin costs pytest
nothing in projects that do not use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from .asserts import assert_tool_call, assert_turn, assert_updates_in_order
    from .fake_agent import (
        FakeAgent,
        Step,
        TraceAgent,
        fail,
        permission,
        plan,
        read_file,
        run,
        say,
        sleep,
        stop,
        think,
        tool_call,
        tool_update,
        update,
        wait_cancel,
        write_file,
    )
    from .fake_client import FakeClient, FakeCommand, Seen, TurnRecord
    from .kit import AcpKit, AcpPair
    from .replay import TraceReplay, parse_speed
    from .transcript import Transcript

_MODULES = {
    ".asserts": ("assert_tool_call", "assert_turn", "assert_updates_in_order"),
    ".fake_agent": ("FakeAgent", "Step", "TraceAgent", "fail", "permission", "plan", "read_file", "run", "say",
                    "sleep", "stop", "think", "tool_call", "tool_update", "update", "wait_cancel", "write_file"),
    ".fake_client": ("FakeClient", "FakeCommand", "Seen", "TurnRecord"),
    ".kit": ("AcpKit", "AcpPair"),
    ".replay": ("TraceReplay", "parse_speed"),
    ".transcript": ("Transcript",),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "AcpKit", "AcpPair", "FakeAgent", "FakeClient", "FakeCommand", "Seen", "Step", "TraceAgent", "TraceReplay",
    "Transcript", "TurnRecord", "assert_tool_call", "assert_turn", "assert_updates_in_order", "fail",
    "parse_speed", "permission", "plan", "read_file", "run", "say", "sleep", "stop", "think", "tool_call",
    "tool_update", "update", "wait_cancel", "write_file",
]


__getattr__ = _lazy_getattr(__name__, _LAZY, globals())
