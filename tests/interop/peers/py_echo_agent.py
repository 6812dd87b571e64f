#!/usr/bin/env python3
"""Interop peer: a minimal echo agent on the official Python SDK (`agent-client-protocol`
0.12.1), answering ``initialize`` as the SDK's own example echo agent does: with the
``protocolVersion`` the client asked for, whatever it is, and a v1 body. A client asking for
version 2 therefore gets ``protocolVersion: 2`` from an agent that speaks only v1.

    .peers-venv/bin/python tests/interop/peers/py_echo_agent.py [--with-info]

``--with-info``: the answer also carries ``agentInfo``, ``agentCapabilities`` and
``authMethods``, as fast-agent-acp's does (it echoes the version too). Every prompt is answered
with its text, in one ``agent_message_chunk``; the stop reason is ``end_turn``.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

from acp import InitializeResponse, NewSessionResponse, PromptResponse, run_agent, update_agent_message_text
from acp.interfaces import Client
from acp.schema import AgentCapabilities, AuthMethodAgent, Implementation


class EchoingAgent:
    def __init__(self, with_info: bool) -> None:
        self.with_info = with_info
        self.client: Client | None = None

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        if not self.with_info:
            return InitializeResponse(protocol_version=protocol_version)  # (the echo)
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="py-sdk-echo-agent", version="0.12.1"),
            auth_methods=[AuthMethodAgent(id="none", name="No login")],
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=uuid.uuid4().hex)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        assert self.client is not None
        text = "".join(getattr(block, "text", "") or "" for block in prompt)
        await self.client.session_update(session_id=session_id, update=update_agent_message_text(text))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(EchoingAgent(with_info="--with-info" in sys.argv[1:])))
