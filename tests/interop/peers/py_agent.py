#!/usr/bin/env python3
"""Interop peer: an ACP agent written on the official Python SDK
(`agent-client-protocol` 0.12.1, import name `acp`).

Run it from the peers venv (never a dependency of acplink):

    .peers-venv/bin/python tests/interop/peers/py_agent.py

Behaviour is driven by the text of the first text block of each session/prompt
and is identical to tests/interop/js/agent.mjs:

    hello  -> agent_message_chunk "Hello, " and "world"; end_turn
    full   -> message, thought, plan, tool_call t1, request_permission; when
              "allow" is selected: fs write + read, terminal echo, tool call
              completed; otherwise "denied" and tool call failed; end_turn
    wait   -> agent_message_chunk "waiting", then waits for session/cancel
              (30 s at most); stopReason cancelled
    fail   -> JSON-RPC error -32603 "Internal error: peer failure"
    other  -> echoes the text in one agent_message_chunk; end_turn
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    plan_entry,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    PermissionOption,
    ToolCallUpdate,
)

AGENT_NAME = "py-sdk-agent"
WAIT_LIMIT_S = 30.0


class _Session:
    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        # Set by session/cancel; replaced at the start of every prompt turn.
        self.cancelled = asyncio.Event()


class InteropAgent:
    # Not derived from the acp.Agent Protocol on purpose: methods we do not
    # define (session/load, ...) are then answered "method not found".

    def __init__(self) -> None:
        self._conn: Client | None = None
        self._sessions: dict[str, _Session] = {}

    # The SDK hands us the client-side proxy (fs, terminal, session/update...).
    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name=AGENT_NAME, version="0.12.1"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        session_id = f"py-{uuid.uuid4()}"
        self._sessions[session_id] = _Session(cwd)
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.cancelled.set()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.resource_not_found(session_id)
        session.cancelled = asyncio.Event()
        text = next((block.text for block in prompt if getattr(block, "type", None) == "text"), "")

        if text == "hello":
            await self._say(session_id, "Hello, ")
            await self._say(session_id, "world")
        elif text == "full":
            await self._full(session_id, session)
        elif text == "wait":
            await self._say(session_id, "waiting")
            try:
                await asyncio.wait_for(session.cancelled.wait(), WAIT_LIMIT_S)
            except TimeoutError:
                pass
            return PromptResponse(stop_reason="cancelled")
        elif text == "fail":
            # The SDK turns a raised RequestError into the JSON-RPC error object.
            raise RequestError(-32603, "Internal error: peer failure")
        else:
            await self._say(session_id, text)
        return PromptResponse(stop_reason="end_turn")

    async def _say(self, session_id: str, text: str) -> None:
        assert self._conn is not None
        await self._conn.session_update(session_id=session_id, update=update_agent_message_text(text))

    async def _full(self, session_id: str, session: _Session) -> None:
        conn = self._conn
        assert conn is not None
        await self._say(session_id, "start")
        await conn.session_update(session_id=session_id, update=update_agent_thought_text("thinking"))
        await conn.session_update(
            session_id=session_id,
            update=update_plan([
                plan_entry("step one", priority="high", status="pending"),
                plan_entry("step two", priority="low", status="pending"),
            ]),
        )
        await conn.session_update(
            session_id=session_id,
            update=start_tool_call("t1", "Write file", kind="edit", status="pending"),
        )
        answer = await conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="t1"),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        if not (isinstance(outcome, AllowedOutcome) and outcome.option_id == "allow"):
            await self._say(session_id, "denied")
            await conn.session_update(session_id=session_id, update=update_tool_call("t1", status="failed"))
            return

        path = os.path.join(session.cwd, "interop.txt")
        await conn.write_text_file(session_id=session_id, path=path, content="written by peer\n")
        read = await conn.read_text_file(session_id=session_id, path=path)
        await self._say(session_id, "read:" + read.content)

        term = await conn.create_terminal(session_id=session_id, command="echo", args=["term-ok"], cwd=session.cwd)
        status = await conn.wait_for_terminal_exit(session_id=session_id, terminal_id=term.terminal_id)
        output = await conn.terminal_output(session_id=session_id, terminal_id=term.terminal_id)
        await self._say(session_id, f"term:{output.output.strip()}:{status.exit_code}")
        await conn.release_terminal(session_id=session_id, terminal_id=term.terminal_id)
        await conn.session_update(session_id=session_id, update=update_tool_call("t1", status="completed"))


def main() -> None:
    # run_agent serves stdio and returns when stdin reaches EOF.
    asyncio.run(run_agent(InteropAgent()))


if __name__ == "__main__":
    main()
