"""The per-test kit behind the pytest fixtures (usable without pytest too): it opens
:class:`FakeClient` connections, records each one's transcript, and closes them all."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..client.client import _agent_failed
from ..client.session import Session
from ..errors import ConnectionClosed, TransportError, UsageError
from ..tools.record import recording_transport
from ..transports.base import Transport
from ..transports.memory import memory_pair
from ..transports.subprocess import SubprocessTransport
from .fake_client import FakeClient
from .transcript import Transcript

__all__ = ["AcpKit", "AcpPair"]


@dataclass
class AcpPair:
    """An agent app and a :class:`FakeClient` wired in memory, with a session rooted in ``root``."""

    agent: Any
    client: FakeClient
    session: Session
    root: Path


class AcpKit:
    """Opens clients for one test and closes them (``aclose``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.transcript = Transcript([str(self.root)])
        self._clients: list[FakeClient] = []
        self._owned: list[Any] = []
        self._processes: list[SubprocessTransport] = []

    async def client(self, agent: Any, *, env: dict[str, str] | None = None,
                     cwd: str | os.PathLike[str] | None = None, **client_kw: Any) -> FakeClient:
        """A started :class:`FakeClient` connected to ``agent``: a command line (spawned), an
        agent app or :class:`TraceAgent` (in memory), or a transport."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError("acplink's test fixtures need an async test (async def test_...)") from None
        transport: Transport
        if isinstance(agent, Transport):
            transport = agent
        elif isinstance(agent, (str, list, tuple)):
            cmd = [agent] if isinstance(agent, str) else list(agent)
            transport = SubprocessTransport(cmd, env=env, cwd=cwd or self.root, stderr="capture")
            self._processes.append(transport)
        elif hasattr(agent, "connection"):
            ours, theirs = memory_pair()
            agent_conn = agent.connection(theirs)
            self._owned.append(agent_conn)
            await agent_conn.start()
            transport = ours
        else:
            raise UsageError(f"an agent is a command line, an agent app or a transport, not {agent!r}")
        recorded = recording_transport(transport, listeners=[self.transcript.add], validate=False)
        client = FakeClient(recorded, **client_kw)
        self._clients.append(client)
        try:
            await client.start()
        except (ConnectionClosed, TransportError) as exc:  # the agent died: say so, with its stderr
            raise (await _agent_failed(transport, exc) or exc) from None
        return client

    async def pair(self, agent: Any = None, *, cwd: str | os.PathLike[str] | None = None,
                   additional_directories: Sequence[str] = (), **client_kw: Any) -> AcpPair:
        """``agent`` (default: a :class:`FakeAgent` that ends every turn) and a client in
        memory, with a session whose cwd is ``cwd`` (default: the test's ``tmp_path``)."""
        if agent is None:
            from .fake_agent import FakeAgent
            agent = FakeAgent()
        client = await self.client(agent, **client_kw)
        session = await client.new_session(cwd or self.root, additional_directories=additional_directories)
        return AcpPair(agent, client, session, Path(cwd or self.root))

    def report(self) -> str:
        """The recorded messages, for a failure report."""
        text = "\n".join(self.transcript.raw_lines()) or "(no messages)"
        for proc in self._processes:
            if proc.stderr_tail:
                text += f"\n\nstderr of {proc.command_line}:\n" + "\n".join(proc.stderr_tail)
        return text

    async def aclose(self) -> None:
        for client in reversed(self._clients):
            await client.aclose()
        for conn in reversed(self._owned):
            await conn.aclose()
        self._clients.clear()
        self._owned.clear()
