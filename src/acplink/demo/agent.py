"""The built-in demo agent: a small, honest coding assistant that needs no LLM and no key.

It really works on the client's files and terminal through ACP, and exercises every
client-facing feature of the protocol, so client authors can test against it:

    read FILE            read a file through the client (tool call + content)
    write FILE TEXT      write a file: shows a diff, asks permission (in "ask" mode)
    run CMD [ARGS...]    run a command in a client terminal (asks permission in "ask" mode)
    plan [STEPS...]      publish a plan and work through it (steps separated by ';')
    think TEXT           stream reasoning, then an answer
    slow [N]             stream N chunks slowly (try cancelling it)
    wait [N]             a tool call that waits N seconds (ACP v2 clients can cancel just it)
    title TEXT           set the session title
    ask                  ask the user a question (elicitation), if the client supports it
    mcp [TOOL JSON]      list and call the tools of the client's MCP servers (MCP-over-ACP)
    help                 this list
    anything else        echoed back, streamed word by word

On ACP v2 (no ``fs/*``, no ``terminal/*``) ``read``, ``write`` and ``run`` reach the client's
files and terminals through the workspace MCP server an acplink client offers over ACP.
Slash commands (``/read``, ``/run``, ...) work too. Sessions are stored (list, load, resume,
fork, close, delete, archive, title, status: acplink's own, from the store) in a SQLite file,
``sessions.sqlite3`` in ``$ACPLINK_DEMO_STORE`` or ``~/.local/state/acplink/demo``.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
import uuid
from pathlib import Path
from typing import Any

from .._tasks import TaskSet
from ..agent.app import AgentApp
from ..agent.context import Context, PromptContext
from ..agent.store_sqlite import SqliteStore
from ..errors import InvalidParams, StoreError
from ..schema import _generated as s
from ..schema._parse import parse
from .mcp_command import run_mcp_command

__all__ = ["COMMANDS", "DemoStore", "create_demo_agent", "main"]

COMMANDS: list[tuple[str, str, str | None]] = [
    ("read", "Read a file through the client", "FILE"),
    ("write", "Write a file (shows a diff, asks permission)", "FILE TEXT"),
    ("run", "Run a command in a client terminal", "COMMAND [ARGS...]"),
    ("plan", "Publish a plan and work through it", "STEP; STEP; ..."),
    ("think", "Think out loud, then answer", "TEXT"),
    ("slow", "Stream slowly (try cancelling)", "N"),
    ("wait", "A tool call that waits N seconds (cancel it alone on ACP v2)", "N"),
    ("title", "Set the session title", "TEXT"),
    ("ask", "Ask you a question (elicitation)", None),
    ("mcp", "List and call the tools of your MCP servers (--mcp)", "[TOOL JSON]"),
    ("help", "List what the demo agent can do", None),
]

MODES = [
    s.SessionMode(id="ask", name="Ask", description="Ask permission before writing files or running commands"),
    s.SessionMode(id="auto", name="Auto", description="Write and run without asking"),
]

STYLE = parse(s.SessionConfigOption, {
    "type": "select", "id": "style", "name": "Reply style", "category": "other", "currentValue": "plain",
    "options": [{"value": "plain", "name": "Plain"}, {"value": "shouty", "name": "Shouty (upper case)"}],
})

MODELS = [
    s.ModelInfo(model_id="demo-small", name="Demo small", description="Echoes quickly"),
    s.ModelInfo(model_id="demo-large", name="Demo large", description="Echoes, but bigger"),
]


def _default_store() -> Path:
    env = os.environ.get("ACPLINK_DEMO_STORE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "acplink" / "demo"


class DemoStore(SqliteStore):
    """The demo's sessions: a :class:`~acplink.agent.store_sqlite.SqliteStore` in ``root``
    (default: ``$ACPLINK_DEMO_STORE`` or the user's state directory), file ``sessions.sqlite3``."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else _default_store()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"session store {self.root}: cannot create the directory ({exc.strerror})") from None
        super().__init__(self.root / "sessions.sqlite3")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def create_demo_agent(store: SqliteStore | None = None, *, delay: float = 0.02,
                      legacy_models: bool = False) -> AgentApp:
    """Build the demo agent app. ``delay`` is the pause between streamed chunks. Its models
    are a config option of category ``model``; ``legacy_models`` also offers them the
    schema-0.10.3 way (``models`` in session results, ``session/set_model``)."""
    store = store if store is not None else DemoStore()
    app = AgentApp(
        "acplink-demo", "0.1.0", title="acplink demo agent",
        prompt_capabilities=s.PromptCapabilities(image=True, audio=True, embedded_context=True),
        auth_methods=[s.AuthMethodAgent(id="demo", name="Demo login", description="Always succeeds; no key needed")],
        modes=MODES, default_mode="ask", config_options=[STYLE], models=MODELS, legacy_models=legacy_models,
        protocols=(1, 2),  # v1, and the v2 draft to clients that ask for it
        store=store,
    )

    async def announce(ctx: Context[Any]) -> None:
        cmds = [s.AvailableCommand(name=n, description=d,
                                   input=s.UnstructuredCommandInput(hint=h) if h else None) for n, d, h in COMMANDS]
        await ctx.send_commands(cmds)

    @app.authenticate
    async def authenticate(ctx: Context[s.AuthenticateRequest]) -> s.AuthenticateResponse:
        if ctx.params.method_id != "demo":
            raise InvalidParams(f"unknown auth method {ctx.params.method_id!r} (the demo agent offers 'demo')")
        return s.AuthenticateResponse()

    @app.new_session
    async def new_session(ctx: Context[s.NewSessionRequest]) -> None:
        ctx.spawn(announce(ctx))  # (after the response: the handler returns without yielding)

    # stored sessions: acplink's own session methods (the store's), plus the commands announced
    # after a load or resume, and a fork's title
    builtin_load, builtin_resume = app.store_hook("load_session"), app.store_hook("resume_session")
    builtin_fork = app.store_hook("fork_session")

    @app.load_session
    async def load_session(ctx: Context[s.LoadSessionRequest]) -> Any:
        res = await builtin_load(ctx)  # the history is replayed before the load response
        await announce(Context(app, ctx.connection, ctx.params, app.sessions.get(ctx.params.session_id)))
        return res

    @app.resume_session
    async def resume_session(ctx: Context[s.ResumeSessionRequest]) -> Any:
        res = await builtin_resume(ctx)
        await announce(Context(app, ctx.connection, ctx.params, app.sessions.get(ctx.params.session_id)))
        return res

    @app.fork_session
    async def fork_session(ctx: Context[s.ForkSessionRequest]) -> Any:
        res = await builtin_fork(ctx)
        sess = app.sessions.get(res.session_id)
        if sess is not None:
            sess.title = f"fork of {sess.title or ctx.params.session_id}"
            store.save(sess)
        return res

    @app.prompt
    async def prompt(ctx: PromptContext) -> str:
        sess = ctx.session
        assert sess is not None
        text = ctx.text.strip()
        extra = [b for b in ctx.params.prompt if not isinstance(b, s.TextContent)]
        reply = _Reply(ctx, delay, shouty=sess.config.get("style") == "shouty")
        cmd, _, rest = text.lstrip("/").partition(" ")
        cmd = cmd.lower()
        try:
            if cmd == "read":
                await do_read(ctx, reply, rest.strip())
            elif cmd == "write":
                await do_write(ctx, reply, rest)
            elif cmd == "run":
                await do_run(ctx, reply, rest)
            elif cmd == "plan":
                await do_plan(ctx, reply, rest)
            elif cmd == "think":
                for word in ["Let", "me", "think", "about", f"{rest or 'that'!r}..."]:
                    await ctx.send_thought(word + " ")
                    await asyncio.sleep(delay)
                await reply.stream(f"I thought about it. {rest}".strip())
            elif cmd == "slow":
                n = int(rest) if rest.strip().isdigit() else 20
                for i in range(n):
                    if ctx.cancelled:
                        return "cancelled"
                    await reply.send(f"chunk {i + 1}/{n} ")
                    await asyncio.sleep(max(delay, 0.05))
            elif cmd == "wait":
                await do_wait(ctx, reply, int(rest) if rest.strip().isdigit() else 30)
            elif cmd == "title":
                await ctx.send_title(rest.strip() or "untitled")
                await reply.stream(f"Title set to {rest.strip()!r}.")
            elif cmd == "ask":
                await do_ask(ctx, reply)
            elif cmd == "mcp":
                await run_mcp_command(ctx, reply, rest)
            elif cmd == "help":
                lines = [f"  {n} {h or ''} - {d}" for n, d, h in COMMANDS]
                await reply.stream("I am the acplink demo agent. Try:\n" + "\n".join(lines))
            else:
                await reply.stream(f"You said: {text}" if text else "You said nothing.")
                if extra:
                    kinds = ", ".join(getattr(b, "type", "?") for b in extra)
                    await reply.stream(f"\n(and attached: {kinds})")
        finally:
            if not sess.title:
                sess.title = text[:40] or "untitled"
                await ctx.send_update(s.SessionInfoUpdate(title=sess.title, updated_at=_now()))
            used = sum(len(e.text) for e in ctx.history) // 4
            await ctx.send_update(s.UsageUpdate(used=used, size=100_000))
        return "cancelled" if ctx.cancelled else "end_turn"

    async def allowed(ctx: PromptContext, tool: Any) -> bool:
        if ctx.session is not None and ctx.session.mode_id == "auto":
            return True
        # ("Always allow" is the client's to remember, for that tool call: not a switch to auto)
        return (await ctx.request_permission(tool)).allowed

    def resolve(ctx: PromptContext, path: str) -> str:
        assert ctx.session is not None
        return path if os.path.isabs(path) else os.path.normpath(os.path.join(ctx.session.cwd, path))

    async def do_read(ctx: PromptContext, reply: _Reply, arg: str) -> None:
        if not arg:
            await reply.stream("Usage: read FILE")
            return
        path = resolve(ctx, arg)
        tool = await ctx.start_tool_call(f"Read {arg}", kind="read", status="in_progress",
                                         locations=[s.ToolCallLocation(path=path)])
        try:
            content = await ctx.read_file(path)
        except Exception as exc:
            await tool.fail(content=[_text_content(f"Could not read {arg}: {_why(exc)}")])
            await reply.stream(f"I could not read {arg}: {_why(exc)}")
            return
        await tool.complete(content=[_text_content(content)])
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        await reply.stream(f"{arg} has {lines} lines and {len(content)} characters.")

    async def current_text(ctx: PromptContext, path: str) -> str | None:
        """The file's text before a write (None: a new file). As a coding agent that runs beside
        the files does, it looks on its own disk first: a file that is not there is new and is
        not read (a read through the client would only answer "not found"); one that is there is
        read through the client, which may hold unsaved edits. When the folder is not on this
        disk either (an agent served to a client elsewhere), the client is asked."""
        if not os.path.lexists(path) and os.path.isdir(os.path.dirname(path)):
            return None
        try:
            return await ctx.read_file(path)
        except Exception:
            return None

    async def do_write(ctx: PromptContext, reply: _Reply, rest: str) -> None:
        arg, _, body = rest.strip().partition(" ")
        if not arg:
            await reply.stream("Usage: write FILE TEXT")
            return
        path = resolve(ctx, arg)
        new = body.replace("\\n", "\n")
        if new and not new.endswith("\n"):
            new += "\n"
        old = await current_text(ctx, path)
        diff = s.Diff(path=path, old_text=old, new_text=new)
        tool = await ctx.start_tool_call(f"Write {arg}", kind="edit", status="pending", content=[diff],
                                         locations=[s.ToolCallLocation(path=path)])
        if not await allowed(ctx, tool):
            await tool.fail()
            await reply.stream(f"Permission denied: I did not write {arg}.")
            return
        await tool.update(status="in_progress")
        try:
            await ctx.write_file(path, new)
        except Exception as exc:
            await tool.fail(content=[_text_content(f"Could not write {arg}: {_why(exc)}")])
            await reply.stream(f"I could not write {arg}: {_why(exc)}")
            return
        await tool.complete()
        await reply.stream(f"Wrote {len(new)} characters to {arg}.")

    async def do_run(ctx: PromptContext, reply: _Reply, rest: str) -> None:
        try:
            argv = shlex.split(rest)
        except ValueError as exc:
            await reply.stream(f"Could not parse the command: {exc}")
            return
        if not argv:
            await reply.stream("Usage: run COMMAND [ARGS...]")
            return
        tool = await ctx.start_tool_call(f"Run {shlex.join(argv)}", kind="execute", status="pending",
                                         raw_input={"command": argv})
        if not await allowed(ctx, tool):
            await tool.fail()
            await reply.stream("Permission denied: I did not run it.")
            return
        try:
            term = await ctx.run(argv[0], *argv[1:])
        except Exception as exc:
            await tool.fail(content=[_text_content(f"Could not start it: {_why(exc)}")])
            await reply.stream(f"I could not run it: {_why(exc)}")
            return
        async with term:
            await tool.update(status="in_progress", content=[s.Terminal(terminal_id=term.terminal_id)])
            async with TaskSet("demo run") as scope:  # (the watcher of a cancel ends with it)
                waiter = scope.spawn(term.wait())
                first: set[asyncio.Future[Any]] = {waiter, scope.spawn(ctx.wait_cancelled())}
                await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
                if not waiter.done():
                    await term.kill()
                    await waiter
            exit_status = waiter.result()
            out = await term.output()
        ok = exit_status.exit_code == 0
        status_text = (f"exit code {exit_status.exit_code}" if exit_status.exit_code is not None
                       else f"signal {exit_status.signal}")
        await (tool.complete if ok else tool.fail)(raw_output={"output": out.output, "truncated": out.truncated})
        # (its output is in the terminal the tool call shows: the reply does not repeat it)
        lines = len(out.output.splitlines())
        await reply.stream(f"`{shlex.join(argv)}` finished with {status_text} "
                           f"({lines} line{'' if lines == 1 else 's'} of output).")

    async def do_plan(ctx: PromptContext, reply: _Reply, rest: str) -> None:
        steps = [p.strip() for p in rest.split(";") if p.strip()] or ["Understand the request", "Make the change",
                                                                        "Check the result"]
        entries = [s.PlanEntry(content=st, priority="medium", status="pending") for st in steps]
        await ctx.send_plan(entries)
        for i, st in enumerate(steps):
            if ctx.cancelled:
                return
            entries[i] = entries[i].model_copy(update={"status": "in_progress"})
            await ctx.send_plan(entries)
            await reply.stream(f"- Working on: {st}\n")
            entries[i] = entries[i].model_copy(update={"status": "completed"})
            await ctx.send_plan(entries)
        await reply.stream("All steps done.")

    async def do_wait(ctx: PromptContext, reply: _Reply, seconds: int) -> None:
        stop = asyncio.Event()
        tool = await ctx.start_tool_call(f"Wait {seconds}s", kind="other", status="in_progress",
                                         on_cancel=stop.set)
        async with TaskSet() as scope:  # (the first of: the tool stopped, the turn cancelled, time is up)
            waits: set[asyncio.Future[Any]] = {scope.spawn(stop.wait()), scope.spawn(ctx.wait_cancelled())}
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        if stop.is_set():
            await tool.fail(content=[_text_content("Cancelled by the client.")])
            await reply.stream("The wait was cancelled; the turn goes on.")
        else:
            await tool.complete()
            await reply.stream(f"Waited {seconds}s." if not ctx.cancelled else "Stopped waiting.")

    async def do_ask(ctx: PromptContext, reply: _Reply) -> None:
        caps = ctx.client_capabilities
        if caps is None or caps.elicitation is None:
            await reply.stream("Your client does not support elicitation, so I cannot ask.")
            return
        resp = await ctx.elicit("What is your favourite colour?", {
            "type": "object", "properties": {"colour": {"type": "string", "title": "Colour"}},
            "required": ["colour"]})
        action = getattr(resp, "action", None)
        if action == "accept":
            content = getattr(resp, "content", None) or {}
            await reply.stream(f"Nice, {content.get('colour', 'that')} it is.")
        else:
            await reply.stream(f"You chose not to answer ({action}).")

    return app


def _why(exc: BaseException) -> str:
    """Why a file or terminal call failed, for the person reading the reply: the wording of the
    command line (acplink's flags, e.g. --remote-fs) when the error has one."""
    return getattr(exc, "cli_message", None) or str(exc)


def _text_content(text: str) -> Any:
    return s.Content(content=s.TextContent(text=text))


class _Reply:
    """Streams the agent's reply in word-sized chunks under one message id."""

    def __init__(self, ctx: PromptContext, delay: float, *, shouty: bool = False) -> None:
        self.ctx = ctx
        self.delay = delay
        self.shouty = shouty
        self.text = ""
        self.message_id = uuid.uuid4().hex

    async def send(self, chunk: str) -> None:
        if self.shouty:
            chunk = chunk.upper()
        self.text += chunk
        await self.ctx.send_text(chunk, message_id=self.message_id)

    async def stream(self, text: str) -> None:
        words = text.split(" ")
        for i, word in enumerate(words):
            if self.ctx.cancelled:
                return
            await self.send(word + (" " if i < len(words) - 1 else ""))
            if self.delay:
                await asyncio.sleep(self.delay)


def main() -> None:
    """Serve the demo agent on stdio."""
    from ..agent.serve import run_agent

    run_agent(create_demo_agent())


if __name__ == "__main__":
    main()
