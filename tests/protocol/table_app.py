"""An agent that handles every agent-side method of the v1 method table through ``app.on(<wire
method>)``, and calls any client method on request (the ``_call_client`` extension). Shared by
the in-memory test and the subprocess script (``table_agent.py``)."""

from __future__ import annotations

from typing import Any

from minimal import minimal

from acplink import AgentApp
from acplink.protocol import V1
from acplink.schema import dump

#: hooks whose built-in handler answers when the user's handler returns None
BUILT_IN = {"initialize", "new_session", "prompt", "set_mode", "set_config_option", "set_model"}


def agent_methods() -> list[Any]:
    """Every agent-side method of the table except the protocol-level ``$/cancel_request``."""
    return [m for m in V1.handled_by("agent") if m.side == "agent"]


def client_methods() -> list[Any]:
    return [m for m in V1.handled_by("client") if m.side == "client"]


def make_app() -> tuple[AgentApp, dict[tuple[str, str], list[str]]]:
    """The app, and what each handler received: (method, kind) -> the type names of its params."""
    app = AgentApp("table")
    seen: dict[tuple[str, str], list[str]] = {}
    for info in agent_methods():
        hook = V1.name_of(info.method, info.kind)

        def handler(info: Any = info, hook: str | None = hook) -> Any:
            async def handle(ctx: Any) -> Any:
                seen.setdefault((info.method, info.kind), []).append(type(ctx.params).__name__)
                if hook in BUILT_IN or info.kind == "notification":
                    return None
                return minimal(info.result_type)

            return handle

        app.on(info.method)(handler())

    @app.ext_request("_call_client")
    async def call_client(ctx: Any) -> Any:
        p = ctx.params
        if p["kind"] == "request":
            return {"result": dump(await ctx.connection.call(p["method"], p["params"]))}
        await ctx.connection.notify(p["method"], p["params"])
        return {"result": None}

    @app.ext_request("_seen")
    async def what_was_seen(ctx: Any) -> Any:
        return {"seen": [[m, k, names] for (m, k), names in seen.items()]}

    return app, seen
