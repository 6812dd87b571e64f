"""A peer whose output is not JSON-RPC: warnings about it are rate-limited, and a peer that
sends nothing but bad lines is given up (PeerOutputNotJson), its process stopped."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

from acplink import PeerLimits, PeerOutputNotJson
from acplink.client.client import connect
from acplink.connection import Router
from acplink.connection.client_side import ClientSideConnection
from acplink.transports.memory import memory_pair

HOSTILE = [sys.executable, str(Path(__file__).resolve().parents[1] / "cli" / "hostile_agent.py")]


async def test_a_program_that_is_not_an_agent_is_given_up() -> None:
    async with asyncio.timeout(30):  # (a bound against a hang, not a timing)
        with pytest.raises(PeerOutputNotJson, match=r"not JSON-RPC.*before its first valid message"):
            await connect(["yes"], stderr="capture")
    # (the leak fixture checks that `yes` was stopped and reaped)


async def test_junk_in_the_middle_of_a_turn_fails_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="acplink")
    async with asyncio.timeout(30):
        async with connect([*HOSTILE, "noise", "3"], stderr="capture") as client:
            session = await client.new_session(tmp_path)  # (3 junk lines before each answer: fine)
            with pytest.raises(PeerOutputNotJson, match="1000 bad lines in a row"):
                await session.prompt("hi")
            with pytest.raises(PeerOutputNotJson):  # later calls say why too
                await client.new_session(tmp_path)
    warnings = [r.getMessage() for r in caplog.records]
    # before the first message: one summary line; then the first few, then one summary per interval
    assert warnings[0].startswith("client: skipped 3 non-JSON or invalid lines before its first message")
    shown = [w for w in warnings if w.startswith("client: skipped non-JSON output")]
    assert len(shown) == 4, warnings  # (5 shown with the note)
    assert sum("more warnings about bad input" in w for w in warnings) == 1, warnings
    assert len(warnings) < 10


def _junk_then_valid(n: int) -> bytes:
    return b"junk\n" * n + b'{"jsonrpc":"2.0","method":"_x","params":{}}\n'


async def _feed(data: bytes, limits: PeerLimits | None = None) -> ClientSideConnection:
    ours, theirs = memory_pair()
    conn = ClientSideConnection(ours, Router(), limits=limits)
    await conn.start()
    await theirs.start(_Sink())
    theirs.write(data)
    await asyncio.sleep(0.05)
    await theirs.aclose()
    return conn


class _Sink:
    def data_received(self, data: bytes) -> None:
        pass

    def eof_received(self, exc: BaseException | None) -> None:
        pass


async def test_the_count_starts_again_at_each_valid_message(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="acplink")
    # 99 bad lines before the first message, then 999 between messages: never given up
    conn = await _feed(_junk_then_valid(99) + _junk_then_valid(999) * 3)
    try:
        assert conn.peer.close_reason is None
    finally:
        await conn.aclose()
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) <= 8, warnings  # 1 + 5 + the summary at close (not 3,096 lines)
    assert "2993 more warnings about bad input" in warnings[-1], warnings  # (2,997 + the note, 5 shown)


@pytest.mark.parametrize(("data", "given_up"), [
    (b"junk\n" * 100, True),  # before the first message
    (b"junk\n" * 99, False),
    (_junk_then_valid(0) + b"junk\n" * 1000, True),  # after it
    (_junk_then_valid(0) + b"junk\n" * 999, False),
    (_junk_then_valid(0) + b"[1]\n" * 1000, True),  # JSON but not JSON-RPC counts too
])
async def test_the_limits(data: bytes, given_up: bool) -> None:
    conn = await _feed(data)
    try:
        assert isinstance(conn.peer.close_reason, PeerOutputNotJson) is given_up
    finally:
        await conn.aclose()


async def test_the_limits_can_be_changed_or_turned_off() -> None:
    conn = await _feed(b"junk\n" * 5000, PeerLimits(max_bad_lines=None, max_bad_lines_at_start=None))
    try:
        assert conn.peer.close_reason is None and not conn.closed
    finally:
        await conn.aclose()
    conn = await _feed(b"junk\n" * 10, PeerLimits(max_bad_lines_at_start=10))
    try:
        assert isinstance(conn.peer.close_reason, PeerOutputNotJson)
    finally:
        await conn.aclose()


def test_the_documented_defaults() -> None:
    from acplink.connection import _noise

    limits = PeerLimits()
    assert limits.max_bad_lines == 1000 and limits.max_bad_lines_at_start == 100
    assert _noise.FIRST_WARNINGS == 5 and _noise.WARNING_INTERVAL == 10.0
