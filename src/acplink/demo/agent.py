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
Slash commands (``/read``, ``/run``, ...) work too. Sessions are stored on disk (list, load,
resume, fork, close, delete): ``$ACPLINK_DEMO_STORE`` or ``~/.local/state/acplink/demo``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shlex
import time
import uuid
from pathlib import Path
from typing import Any

from .._tasks import TaskSet
from ..agent.app import AgentApp
from ..agent.context import Context, PromptContext
from ..errors import InvalidParams, ResourceNotFound
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


class DemoStore:
    """Sessions on disk: one JSON file per session (cwd, title, history)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or _default_store()

    def _path(self, session_id: str) -> Path:
        if not session_id.replace("_", "").replace("-", "").isalnum():
            raise InvalidParams(f"invalid session id {session_id!r}")
        return self.root / f"{session_id}.json"

    def save(self, record: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._path(record["sessionId"])
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        tmp.replace(path)

    def load(self, session_id: str) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self._path(session_id).read_text())
            return data
        except (OSError, ValueError):
            raise ResourceNotFound(f"no stored session {session_id!r}", {"sessionId": session_id}) from None

    def delete(self, session_id: str) -> None:
        """Forget a session; deleting one that is not stored (or an id that could not name
        one) is not an error (the spec: deleting is idempotent)."""
        try:
            self._path(session_id).unlink()
        except (FileNotFoundError, InvalidParams):
            pass

    def all(self) -> list[dict[str, Any]]:
        out = []
        if self.root.is_dir():
            for p in sorted(self.root.glob("*.json")):
                try:
                    out.append(json.loads(p.read_text()))
                except (OSError, ValueError):
                    continue
        out.sort(key=lambda r: r.get("updatedAt", ""), reverse=True)
        return out


#: sessions per page of session/list
PAGE = 50
_CURSOR_PREFIX = "acplink-demo:"


def _cursor(start: int) -> str:
    """An opaque ``session/list`` cursor (clients must not read it)."""
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{start}".encode()).decode()


def _page_start(cursor: str | None) -> int:
    """Where the page a cursor names starts; a cursor we did not hand out is invalid params."""
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode()
        if text.startswith(_CURSOR_PREFIX) and text[len(_CURSOR_PREFIX):].isdigit():
            return int(text[len(_CURSOR_PREFIX):])
    except (ValueError, UnicodeError):  # (binascii.Error is a ValueError)
        pass
    raise InvalidParams(f"invalid cursor {cursor[:60]!r}: pass back a nextCursor of session/list", {"cursor": cursor})


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def create_demo_agent(store: DemoStore | None = None, *, delay: float = 0.02,
                      legacy_models: bool = False) -> AgentApp:
    """Build the demo agent app. ``delay`` is the pause between streamed chunks. Its models
    are a config option of category ``model``; ``legacy_models`` also offers them the
    schema-0.10.3 way (``models`` in session results, ``session/set_model``)."""
    store = store or DemoStore()
    app = AgentApp(
        "acplink-demo", "0.1.0", title="acplink demo agent",
        prompt_capabilities=s.PromptCapabilities(image=True, audio=True, embedded_context=True),
        auth_methods=[s.AuthMethodAgent(id="demo", name="Demo login", description="Always succeeds; no key needed")],
        modes=MODES, default_mode="ask", config_options=[STYLE], models=MODELS, legacy_models=legacy_models,
        protocols=(1, 2),  # v1, and the v2 draft to clients that ask for it
    )

    def record(sess: Any) -> dict[str, Any]:
        return {"sessionId": sess.session_id, "cwd": sess.cwd, "title": sess.title,
                "updatedAt": sess.updated_at or _now(), "history": sess.data.setdefault("history", []),
                "mode": sess.mode_id, "config": sess.config, "model": sess.model_id, "messages": sess.messages}

    def restore(rec: dict[str, Any], session_id: str, cwd: str) -> Any:
        sess = app.create_session(cwd, session_id=session_id)
        sess.title = rec.get("title")
        sess.updated_at = rec.get("updatedAt")
        sess.data["history"] = list(rec.get("history", []))
        sess.messages = list(rec.get("messages", []))
        sess.mode_id = rec.get("mode") or sess.mode_id
        sess.config.update(rec.get("config") or {})
        sess.model_id = rec.get("model") or sess.model_id
        if app.model_option_id is not None:
            sess.config[app.model_option_id] = sess.model_id
        return sess

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
        assert ctx.session is not None
        ctx.session.updated_at = _now()
        store.save(record(ctx.session))
        ctx.spawn(announce(ctx))  # (after the response: the handler returns without yielding)

    async def replay(ctx: Context[Any]) -> None:
        for entry in ctx.session.data.get("history", []):  # type: ignore[union-attr]
            block = s.TextContent(text=entry["text"])
            if entry["role"] == "user":
                await ctx.send_update(s.UserMessageChunk(content=block, message_id=entry.get("id")))
            else:
                await ctx.send_update(s.AgentMessageChunk(content=block, message_id=entry.get("id")))

    @app.load_session
    async def load_session(ctx: Context[s.LoadSessionRequest]) -> s.LoadSessionResponse:
        rec = store.load(ctx.params.session_id)
        sess = restore(rec, ctx.params.session_id, ctx.params.cwd)
        lctx = Context(app, ctx.connection, ctx.params, sess)
        await replay(lctx)  # the spec: history is streamed before the load response
        await announce(lctx)  # (and nothing after it)
        return s.LoadSessionResponse(**app.session_setup(sess))

    @app.resume_session
    async def resume_session(ctx: Context[s.ResumeSessionRequest]) -> s.ResumeSessionResponse:
        rec = store.load(ctx.params.session_id)
        sess = restore(rec, ctx.params.session_id, ctx.params.cwd)
        await announce(Context(app, ctx.connection, ctx.params, sess))  # before the response, as for load
        return s.ResumeSessionResponse(**app.session_setup(sess))

    @app.fork_session
    async def fork_session(ctx: Context[s.ForkSessionRequest]) -> s.ForkSessionResponse:
        rec = store.load(ctx.params.session_id)
        new_id = f"sess_{uuid.uuid4().hex}"
        sess = restore(rec, new_id, ctx.params.cwd)
        sess.title = f"fork of {rec.get('title') or ctx.params.session_id}"
        store.save(record(sess))
        return s.ForkSessionResponse(session_id=new_id, **app.session_setup(sess))

    @app.list_sessions
    async def list_sessions(ctx: Context[s.ListSessionsRequest]) -> s.ListSessionsResponse:
        cwd = ctx.params.cwd
        infos = [s.SessionInfo(session_id=r["sessionId"], cwd=r["cwd"], title=r.get("title"),
                               updated_at=r.get("updatedAt"))
                 for r in store.all() if cwd is None or r.get("cwd") == cwd]
        start = _page_start(ctx.params.cursor)
        page = infos[start:start + PAGE]
        nxt = _cursor(start + PAGE) if start + PAGE < len(infos) else None
        return s.ListSessionsResponse(sessions=page, next_cursor=nxt)

    @app.close_session
    async def close_session(ctx: Context[s.CloseSessionRequest]) -> s.CloseSessionResponse:
        app.sessions.pop(ctx.params.session_id, None)
        return s.CloseSessionResponse()

    @app.delete_session
    async def delete_session(ctx: Context[s.DeleteSessionRequest]) -> s.DeleteSessionResponse:
        app.sessions.pop(ctx.params.session_id, None)
        store.delete(ctx.params.session_id)
        return s.DeleteSessionResponse()

    @app.prompt
    async def prompt(ctx: PromptContext) -> str:
        sess = ctx.session
        assert sess is not None
        history = sess.data.setdefault("history", [])
        text = ctx.text.strip()
        extra = [b for b in ctx.params.prompt if not isinstance(b, s.TextContent)]
        history.append({"role": "user", "text": ctx.text, "id": uuid.uuid4().hex})
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
            history.append({"role": "agent", "text": reply.text, "id": reply.message_id})
            sess.updated_at = _now()
            if not sess.title:
                sess.title = text[:40] or "untitled"
                await ctx.send_update(s.SessionInfoUpdate(title=sess.title, updated_at=sess.updated_at))
            store.save(record(sess))
            used = sum(len(h["text"]) for h in history) // 4
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
