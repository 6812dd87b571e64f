"""A raw JSON-RPC peer for the v2 agent tests: writes messages, reads what the agent sends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson

from acplink import AgentApp, PromptContext
from acplink.agent.app import AgentBase
from acplink.schema import _generated as s
from acplink.transports.memory import memory_pair

INIT2 = {"protocolVersion": 2, "info": {"name": "raw", "version": "1"}}


class RawClient:
    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.buf = b""
        self.next_id = 0
        #: every message received, in order
        self.log: list[Any] = []
        #: the method of each request sent, by id
        self.sent: dict[Any, str] = {}

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
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
        data = orjson.dumps(msg) + b"\n"
        if hasattr(self.transport, "send"):
            self.transport.send(data)
        else:
            self.transport.write(data)
        flush = getattr(self.transport, "flush", None)
        if flush is not None:
            flush()

    def request(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        self.sent[self.next_id] = method
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.next_id

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def recv(self, timeout: float = 10) -> Any:
        return await asyncio.wait_for(self.inbox.get(), timeout)

    async def until(self, pred: Any, timeout: float = 10) -> list[Any]:
        """Messages received until one satisfies ``pred`` (included), answering the agent's
        own requests with ``self.answer``."""
        out = []
        while True:
            msg = await self.recv(timeout)
            out.append(msg)
            if pred(msg):
                return out

    async def call(self, method: str, params: Any = None) -> tuple[Any, list[Any]]:
        """Send a request; (its response, the messages before it)."""
        rid = self.request(method, params)
        msgs = await self.until(lambda m: m.get("id") == rid and "method" not in m)
        return msgs[-1], msgs[:-1]


def updates(msgs: list[Any]) -> list[dict[str, Any]]:
    return [m["params"]["update"] for m in msgs if m.get("method") == "session/update"]


def idle(msg: Any) -> bool:
    return (msg.get("method") == "session/update" and msg["params"]["update"].get("sessionUpdate") == "state_update"
            and msg["params"]["update"].get("state") == "idle")


@asynccontextmanager
async def wired(make: Callable[[Any], Any]) -> AsyncIterator[RawClient]:
    """A raw client talking to the connection ``make(transport)`` over an in-memory pair."""
    a, b = memory_pair()
    conn = make(a)
    client = RawClient(b)
    await b.start(client)
    await conn.start()
    try:
        yield client
        check_v2(client)
    finally:
        await conn.aclose()
        await b.aclose()




def check_v2(client: RawClient) -> None:
    """On a v2 connection, everything the agent sent is valid against the v2 models: its
    notifications, its requests, and the results of our requests."""
    init = next((m for m in client.log if client.sent.get(m.get("id")) == "initialize" and "result" in m), None)
    if init is None or init["result"].get("protocolVersion") != 2:
        return
    from acplink.schema import parse, v2

    for m in client.log:
        if "method" in m:
            info = v2.method_info(m["method"], "request" if "id" in m else "notification")
            assert info is not None, f"not a v2 method: {m['method']}"
            parse(info.params_type, m.get("params") or {}, name=info.params_name)
        elif "result" in m and m.get("id") in client.sent:
            info = v2.method_info(client.sent[m["id"]])
            if info is not None and info.result_type is not None:
                parse(info.result_type, m["result"], name=info.result_name)


def served(app: AgentBase, protocols: tuple[int, ...] = (1, 2), **kw: Any) -> Any:
    return wired(lambda t: app.connection(t, protocols=protocols, **kw))


def make_app() -> AgentApp:
    app = AgentApp("t2", "1.0", modes=[s.SessionMode(id="ask", name="Ask"), s.SessionMode(id="auto", name="Auto")],
                   protocols=(1, 2))

    @app.prompt
    async def prompt(ctx: PromptContext) -> str | None:
        text = ctx.text
        if text == "fail":
            raise RuntimeError("boom")
        if text == "perm":
            tool = await ctx.start_tool_call("Edit x", kind="edit")
            answer = await ctx.request_permission(tool)
            await ctx.send_text(f"picked {answer.option_id}")
            return None
        if text == "tool":
            tool = await ctx.start_tool_call("Look", kind="read", tool_call_id="t1")
            await tool.complete(content=[s.Content(content=s.TextContent(text="found"))])
            return None
        if text == "plan":
            await ctx.send_plan(["one", "two"])
            return None
        if text == "read":
            try:
                await ctx.read_file("/etc/hostname")
            except Exception as exc:
                await ctx.send_text(str(exc))
            return None
        if text.startswith("slow"):
            for _ in range(200):
                if ctx.cancelled:
                    return "cancelled"
                await ctx.send_text(".")
                await asyncio.sleep(0.01)
            return None
        if text == "term":
            stop = asyncio.Event()
            try:
                term = await ctx.display_terminal("make", terminal_id="term1", on_cancel=stop.set)
            except Exception as exc:
                await ctx.send_text(str(exc))
                return None
            await term.write("building\n")
            try:
                await asyncio.wait_for(stop.wait(), 5)
            except TimeoutError:
                pass
            await term.exit(None if stop.is_set() else 0, signal="SIGTERM" if stop.is_set() else None)
            return None
        if text == "custom":
            return "_mine"  # type: ignore[return-value]
        await ctx.send_text(f"echo {text}")
        return None

    return app
