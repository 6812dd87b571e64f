"""The registry owns the tasks that stop agents: closing it waits for every stop, and an agent
that finishes starting after the registry closed is stopped too (no task left behind)."""

from __future__ import annotations

import asyncio

from acplink.server import ServerLimits
from acplink.server.backends import AgentBackend, AgentChannel, Deliver, Ended
from acplink.server.connection import Registry


class _Channel(AgentChannel):
    def __init__(self, stops: list[str], name: str, gate: asyncio.Event) -> None:
        self.stops = stops
        self.name = name
        self.gate = gate

    def send(self, message: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    async def aclose(self) -> str:
        await self.gate.wait()  # (a stop that takes a while: the registry must wait for it)
        self.stops.append(self.name)
        return "stopped"


class _Backend(AgentBackend):
    def __init__(self) -> None:
        self.stops: list[str] = []
        self.stop_gate = asyncio.Event()
        self.open_gates: dict[str, asyncio.Event] = {}

    async def open(self, connection_id: str, deliver: Deliver, ended: Ended) -> AgentChannel:
        gate = self.open_gates.get(connection_id)
        if gate is not None:
            await gate.wait()
        return _Channel(self.stops, connection_id, self.stop_gate)

    @property
    def description(self) -> str:
        return "test backend"


async def test_closing_the_registry_waits_for_every_agent_stop() -> None:
    backend = _Backend()
    registry = Registry(ServerLimits(), backend)
    running = registry.create("ws", "test")
    await running.start_agent(backend)
    late = registry.create("ws", "test")
    backend.open_gates[late.id] = gate = asyncio.Event()
    starting = asyncio.get_running_loop().create_task(late.start_agent(backend))
    await asyncio.sleep(0)
    async with asyncio.timeout(10):
        closing = asyncio.get_running_loop().create_task(registry.aclose())
        await asyncio.sleep(0.05)
        assert not closing.done() and backend.stops == []  # the running agent's stop is awaited
        backend.stop_gate.set()
        await closing
        assert backend.stops == [running.id]
        gate.set()  # the late agent comes up after the registry closed: stopped there and then
        await starting
    assert backend.stops == [running.id, late.id]
    assert running.channel is None and late.channel is None
