"""Fixtures for the connection tests (helpers live in connhelpers.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from connhelpers import RawPeer


@pytest.fixture
async def raw_agent() -> AsyncIterator[RawPeer]:
    peer = await RawPeer.spawn()
    try:
        yield peer
    finally:
        await peer.kill()
