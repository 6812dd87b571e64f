"""The app's dispatcher: built once per protocol, bound per connection; the session-store seam."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

from acplink import AgentApp, PromptContext, connect
from acplink.agent.context import AgentSession


def _app() -> AgentApp:
    app = AgentApp("dispatch")

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        await ctx.send_text(f"echo {ctx.text}")

    return app


def test_the_dispatcher_is_built_once_per_protocol_and_rebuilt_after_a_registration() -> None:
    app = _app()
    app.router([])  # (the first router builds the table)
    first = app._dispatchers[1]
    a, b = app.router([]), app.router([])
    assert app._dispatchers[1] is first  # two connections, one table
    assert a.requests.keys() == b.requests.keys() and a.requests is not b.requests
    assert "session/prompt" in a.requests and "session/set_mode" not in a.requests

    @app.set_title
    async def set_title(ctx: object) -> None:
        return None

    c = app.router([])
    assert app._dispatchers[1] is not first  # a new handler: a new table
    assert "session/set_title" in c.requests and "session/set_title" not in a.requests


class _Recording(MutableMapping[str, AgentSession]):
    """A store that records what the app does with it (what a persistent store implements)."""

    def __init__(self) -> None:
        self.data: dict[str, AgentSession] = {}
        self.log: list[str] = []

    def __getitem__(self, key: str) -> AgentSession:
        return self.data[key]

    def __setitem__(self, key: str, value: AgentSession) -> None:
        self.log.append(f"set {value.cwd}")
        self.data[key] = value

    def __delitem__(self, key: str) -> None:
        self.log.append("del")
        del self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


async def test_the_app_keeps_its_sessions_in_the_store_it_is_given() -> None:
    store = _Recording()
    app = AgentApp("stored", store=store)

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        await ctx.send_text(f"{len(ctx.app.sessions)} session(s)")

    async with connect(app) as client:
        session = await client.new_session("/work")
        assert (await session.prompt("hi").text()) == "1 session(s)"
    assert store.log == ["set /work"]
    assert list(store.data) == [session.session_id]
