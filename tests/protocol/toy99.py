"""A toy protocol version 99, defined in the tests only: v1's methods and models with a prompt
lifecycle of its own, unlike both v1's and v2's (a receipt answers the prompt, a ``status``
update reports the state: ``busy`` while a turn runs, ``asking`` while it waits for the user,
``done`` with the stop reason at its end; a prompt during a turn is refused; no echo).

If acplink serves it, the agent side has no hidden knowledge of v2: everything it does comes
from the protocol object. ``python toy99.py`` serves :func:`make_app` on stdio (the toy
registered in that process).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from acplink import AgentApp, PromptContext
from acplink.protocol import V1, register_protocol, unregister_protocol
from acplink.protocol.turns import TurnRules
from acplink.schema import v1 as v1_models

VERSION = 99

TURNS99 = TurnRules(answer="receipt", busy="refuse", state_kind="status", idle_state="done", running_state="busy",
                    waiting_state="asking", echo_kind=None, default_stop_reason="end_turn")

class ToyReceipt(BaseModel):
    """The toy's answer to ``session/prompt``: the id of the message the prompt became."""

    model_config = ConfigDict(populate_by_name=True)
    message_id: str = Field(alias="messageId")


class _ToyModels(types.ModuleType):
    """v1's models, with the toy's receipt as the prompt's result."""

    PromptResponse = ToyReceipt

    def __getattr__(self, name: str) -> Any:
        return getattr(v1_models, name)


TOY_MODELS = _ToyModels("toy99_models")

#: v1 with the lifecycle above and the receipt as the prompt's result (nothing else changed)
TOY99 = dataclasses.replace(V1, version=VERSION, turns=TURNS99, models=TOY_MODELS,
                            table=V1.table.renamed({}, TOY_MODELS))


@contextmanager
def registered() -> Iterator[None]:
    """The toy version registered for the duration of the block."""
    register_protocol(TOY99)
    try:
        yield
    finally:
        unregister_protocol(VERSION)


def make_app() -> AgentApp:
    """An app serving v1 and the toy: ``slow`` runs until cancelled, ``perm`` asks a
    permission, ``custom`` ends with a custom stop reason, anything else is echoed."""
    app = AgentApp("toy99", "1.0", protocols=(1, VERSION))

    @app.prompt
    async def prompt(ctx: PromptContext) -> str | None:
        text = ctx.text
        if text == "slow":
            while not ctx.cancelled:
                await asyncio.sleep(0.01)
            return "cancelled"
        if text == "perm":
            tool = await ctx.start_tool_call("Edit x", kind="edit")
            answer = await ctx.request_permission(tool)
            await ctx.send_text(f"picked {answer.option_id}")
            return None
        await ctx.send_text(f"v{ctx.connection.protocol.version} echo {text}")
        return None

    return app


class Wire:
    """Raw JSON-RPC over a transport (in-memory) or a pair of byte streams (a subprocess)."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.log: list[Any] = []
        self.next_id = 0
        self._buf = b""
        self.write: Any = None

    # (the transport sink of acplink's in-memory pair)
    def data_received(self, data: bytes) -> None:
        self._buf += data
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            if line.strip():
                msg = orjson.loads(line)
                self.log.append(msg)
                self.inbox.put_nowait(msg)

    def message_received(self, message: bytes, meta: Any = None) -> None:
        self.data_received(message.rstrip(b"\n") + b"\n")

    def eof_received(self, exc: BaseException | None) -> None:
        self.inbox.put_nowait(None)

    def write_paused(self) -> None: ...

    def send_failed(self, exc: BaseException) -> None: ...

    def send(self, msg: Any) -> None:
        self.write(orjson.dumps(msg) + b"\n")

    def request(self, method: str, params: Any) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def until(self, pred: Any, timeout: float = 10) -> list[Any]:
        """Messages received until one satisfies ``pred`` (included)."""
        out = []
        while True:
            msg = await asyncio.wait_for(self.inbox.get(), timeout)
            assert msg is not None, f"the agent closed the connection; received: {out}"
            out.append(msg)
            if pred(msg):
                return out

    async def call(self, method: str, params: Any) -> tuple[Any, list[Any]]:
        """(the response, the messages before it)."""
        rid = self.request(method, params)
        msgs = await self.until(lambda m: m.get("id") == rid and "method" not in m)
        return msgs[-1], msgs[:-1]


def updates(msgs: list[Any]) -> list[dict[str, Any]]:
    return [m["params"]["update"] for m in msgs if m.get("method") == "session/update"]


def status(msg: Any, state: str | None = None) -> bool:
    """Whether ``msg`` is a toy ``status`` update (in ``state``)."""
    if msg.get("method") != "session/update":
        return False
    update = msg["params"]["update"]
    return bool(update.get("sessionUpdate") == "status" and (state is None or update.get("state") == state))


if __name__ == "__main__":
    from acplink import run_agent

    register_protocol(TOY99)
    run_agent(make_app())
    sys.exit(0)
