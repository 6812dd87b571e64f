"""Testing ACP agents and clients: fakes, replay, golden transcripts and pytest fixtures.

The pytest plugin (:mod:`acplink.testing.pytest_plugin`) is registered on install; see
docs/testing.md.
"""

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

__all__ = [
    "AcpKit", "AcpPair", "FakeAgent", "FakeClient", "FakeCommand", "Seen", "Step", "TraceAgent", "TraceReplay",
    "Transcript", "TurnRecord", "assert_tool_call", "assert_turn", "assert_updates_in_order", "fail",
    "parse_speed", "permission", "plan", "read_file", "run", "say", "sleep", "stop", "think", "tool_call",
    "tool_update", "update", "wait_cancel", "write_file",
]
