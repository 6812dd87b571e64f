"""The devtools web app (Starlette) and its server (uvicorn): routes, the access token and
Origin check, the live feed (server-sent events), and :func:`serve`.

Security: the server listens on loopback unless told otherwise; every request needs the random
access token (in the URL printed at start, then in a same-site cookie) and a request whose
``Origin`` is not the server's own is refused (403), so another web page cannot drive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import os
import secrets
import shlex
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping, Sequence
from http.cookies import SimpleCookie
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .._listen import listening_socket
from .cache import warm_all
from .compare import diff_page
from .connect import Chats
from .conversation import conversation_page
from .html import esc, page
from .session_stores import SessionStores
from .store import DatabaseError, Store
from .views import (
    Filters,
    detail_html,
    export_lines,
    findings_page,
    sessions_page,
    sessions_rows,
    timeline_page,
    timeline_rows,
)
from .waterfall import waterfall_page

__all__ = ["Guard", "build_app", "serve"]

COOKIE = "acplink_devtools"
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]

#: seconds between two looks at the database for the live feed
POLL = 0.25


class Guard:
    """ASGI middleware: the access token (query ``token=`` or the cookie it sets) and the
    Origin check; anything else gets 403."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token
        #: origins allowed besides none at all (filled once the port is known)
        self.origins: set[str] = set()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            await _forbid(send, "foreign Origin: this devtools server answers only its own pages")
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0]
        from_query = bool(given)
        if not given:
            cookie: SimpleCookie = SimpleCookie()
            with contextlib.suppress(Exception):
                cookie.load(headers.get("cookie", ""))
            given = cookie[COOKIE].value if COOKIE in cookie else ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            await _forbid(send, "access token missing or wrong: open the URL that acplink devtools printed")
            return
        if not from_query:
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (
                    b"set-cookie", f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode())]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


async def _forbid(send: Any, why: str) -> None:
    body = why.encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status, headers={"cache-control": "no-store"})


def _not_found(what: str) -> HTMLResponse:
    return _html(page("Not found", f"<p>{esc(what)}</p>"), 404)


def build_app(store: Store, *, agent: Sequence[str] = (), cwd: str | None = None,
              session_stores: Sequence[str] = ()) -> Starlette:
    """The web app over ``store``; ``agent``: the command line Connect offers first (:func:`serve`
    starts it at once when asked to); ``session_stores``: the session stores shown, read-only
    (SQLite files, PostgreSQL URLs: :mod:`.session_stores`)."""
    chats = Chats(store)
    stores = SessionStores(session_stores)
    default_cmd = shlex.join(agent) if agent else shlex.join([sys.executable, "-m", "acplink.demo"])
    base_cwd = cwd or os.getcwd()

    def connection(request: Request) -> Any:
        c = store.connection(int(request.path_params["conn"]))
        return c

    async def sessions(request: Request) -> Response:
        return _html(sessions_page(store, request.query_params.get("q", "")))

    async def sessions_partial(request: Request) -> Response:
        return _html(sessions_rows(store, request.query_params.get("q", "")))

    async def stores_page(request: Request) -> Response:
        return _html(await asyncio.to_thread(stores.list_page))

    async def stored_session(request: Request) -> Response:
        html = await asyncio.to_thread(stores.session_page, int(request.path_params["n"]), request.path_params["sid"])
        return _html(html) if html is not None else _not_found("no such stored session")

    async def timeline(request: Request) -> Response:
        c = connection(request)
        if c is None:
            return _not_found("no such connection")
        at = request.query_params.get("at", "")
        return _html(timeline_page(store, c, Filters.of(request.query_params), int(at) if at.isdigit() else None))

    async def rows(request: Request) -> Response:
        after = request.query_params.get("after", "0")
        html, last = timeline_rows(store, int(request.path_params["conn"]), Filters.of(request.query_params),
                                   int(after) if after.isdigit() else 0)
        return _html(html) if last is None else HTMLResponse(html, headers={"x-last": str(last)})

    async def detail(request: Request) -> Response:
        html = detail_html(store, int(request.path_params["conn"]), int(request.path_params["seq"]))
        return _html(html) if html is not None else _not_found("no such message")

    async def raw(request: Request) -> Response:
        got = store.db.execute("SELECT body FROM messages WHERE conn = ? AND seq = ?",
                               (int(request.path_params["conn"]), int(request.path_params["seq"]))).fetchone()
        if got is None:
            return _not_found("no such message")
        return Response(bytes(got[0] or b""), media_type="application/json")

    async def conversation(request: Request) -> Response:
        c = connection(request)
        if c is None:
            return _not_found("no such connection")
        return _html(conversation_page(store, c, request.query_params.get("session", "")))

    async def waterfall(request: Request) -> Response:
        c = connection(request)
        return _html(waterfall_page(store, c)) if c is not None else _not_found("no such connection")

    async def findings(request: Request) -> Response:
        c = connection(request)
        return _html(findings_page(store, c)) if c is not None else _not_found("no such connection")

    async def export(request: Request) -> Response:
        conn = int(request.path_params["conn"])
        if store.connection(conn) is None:
            return _not_found("no such connection")
        return StreamingResponse(_iterate(export_lines(store, conn)), media_type="application/x-ndjson",
                                 headers={"content-disposition": f'attachment; filename="acplink-{conn}.jsonl"'})

    async def diff(request: Request) -> Response:
        return _html(diff_page(store, request.query_params))

    async def events(request: Request) -> Response:
        """The live feed: an event whenever messages or connections were added."""
        # ``since``: the state the page was rendered with (Store.live_state), so a change
        # committed between the page and this subscription is announced, not lost
        async def stream() -> AsyncIterator[bytes]:
            state = request.query_params.get("since", "")
            if not state.split(",")[0].isdigit():
                state = store.live_state()
            yield b": live\n\n"
            while not await request.is_disconnected():
                await asyncio.sleep(POLL)
                now = store.live_state()  # (first: a row committed after it is in the next round)
                if now != state:
                    last, upto = int(state.split(",")[0]), int(now.split(",")[0])
                    new = store.db.execute("SELECT DISTINCT conn FROM messages WHERE id > ? AND id <= ?",
                                           (last, upto)).fetchall()
                    state = now
                    data = orjson.dumps({"conns": [r[0] for r in new], "last": upto})
                    yield b"event: change\ndata: " + data + b"\n\n"
        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-store"})

    async def connect_page(request: Request) -> Response:
        chat = chats.chats.get(int(request.path_params.get("chat", 0)))
        if "chat" in request.path_params and chat is None:
            return _not_found("no such chat")
        command = shlex.join(chat.command) if chat is not None else default_cmd
        attach = f' data-chat="{chat.id}"' if chat is not None else " hidden"
        body = (f'<form id="connect" class="bar"><label for="agent-command">Agent command</label>'
                f'<input id="agent-command" name="command" size="56" value="{esc(command)}">'
                f'<label for="agent-cwd">Working directory</label>'
                f'<input id="agent-cwd" name="cwd" size="26" value="{esc(chat.cwd if chat else base_cwd)}" '
                f'title="the session\'s working directory">'
                f'<label><input type="checkbox" name="fs" checked> files</label>'
                f'<label><input type="checkbox" name="terminal" checked> terminals</label>'
                f'<button>Start agent</button></form><div id="chat"{attach}><p id="chat-status" class="dim"></p>'
                f'<div class="conversation" id="chat-log"></div>'
                f'<button type="button" id="chat-latest" hidden>↓ new output below</button>'
                f'<form id="prompt" class="bar">'
                f'<input name="text" id="prompt-text" aria-label="Prompt" size="70" '
                f'placeholder="prompt (the demo agent: help, plan a; b, write f.txt hi)" autocomplete="off">'
                f'<button id="send">Send</button><button type="button" id="cancel">Cancel</button>'
                f'<span id="send-why" class="dim" role="status"></span></form></div>')
        return _html(page("Connect", body, active="Connect"))

    async def connect_start(request: Request) -> Response:
        form = orjson.loads(await request.body() or b"{}")
        try:
            cmd = shlex.split(str(form.get("command", "")))
        except ValueError as exc:
            return JSONResponse({"error": f"cannot read the command line: {exc}"}, 400)
        if not cmd:
            return JSONResponse({"error": "no agent command given"}, 400)
        cwd = os.path.abspath(str(form.get("cwd") or base_cwd))
        if not os.path.isdir(cwd):
            return JSONResponse({"error": f"not a directory: {cwd}"}, 400)
        chat = await chats.start(cmd, cwd, fs=bool(form.get("fs", True)), terminal=bool(form.get("terminal", True)))
        if chat.error is not None:
            failed = chat.events[-1] if chat.events else {}
            return JSONResponse({"id": chat.id, "error": chat.error, "stderr": failed.get("stderr", []),
                                 "conn": chat.conn})
        return JSONResponse({"id": chat.id, "conn": chat.conn})

    def chat_of(request: Request) -> Any:
        return chats.chats.get(int(request.path_params["chat"]))

    async def chat_prompt(request: Request) -> Response:
        chat = chat_of(request)
        if chat is None:
            return JSONResponse({"error": "no such chat"}, 404)
        form = orjson.loads(await request.body() or b"{}")
        await chat.started.wait()  # (an agent still starting: the prompt goes once it is ready)
        error = chat.prompt(str(form.get("text", "")))
        return JSONResponse({"error": error} if error else {"ok": True}, 409 if error else 200)

    async def chat_cancel(request: Request) -> Response:
        chat = chat_of(request)
        if chat is None:
            return JSONResponse({"error": "no such chat"}, 404)
        await chat.cancel()
        return JSONResponse({"ok": True})

    async def chat_answer(request: Request) -> Response:
        chat = chat_of(request)
        if chat is None:
            return JSONResponse({"error": "no such chat"}, 404)
        form = orjson.loads(await request.body() or b"{}")
        ok = chat.answer(int(form.get("id", 0)), form.get("option"))
        return JSONResponse({"ok": ok})

    async def chat_events(request: Request) -> Response:
        chat = chat_of(request)
        if chat is None:
            return JSONResponse({"error": "no such chat"}, 404)

        # events carry their index as SSE id: a browser reconnecting gets only those it missed
        last_id = request.headers.get("last-event-id", "")

        async def stream() -> AsyncIterator[bytes]:
            sent = int(last_id) if last_id.isdigit() else 0
            yield b": chat\n\n"
            while not await request.is_disconnected():
                async with chat.changed:
                    if sent >= len(chat.events):
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(chat.changed.wait(), 1.0)
                    pending = chat.events[sent:]
                for event in pending:
                    sent += 1
                    yield b"id: %d\ndata: %s\n\n" % (sent, orjson.dumps(event))
        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-store"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # the views of recordings not warmed yet (recovered from a spool, older ones) are
        # computed in the background, on a connection of its own
        stop = threading.Event()
        warmer = threading.Thread(target=_warm_in_background, args=(store.path, stop), name="acplink-devtools-warm",
                                  daemon=True)
        warmer.start()
        try:
            yield
        finally:
            stop.set()
            await asyncio.to_thread(warmer.join)
            await chats.aclose()

    static = StaticFiles(directory=str(files("acplink.devtools").joinpath("static")))
    routes = [
        Route("/", sessions), Route("/partial/sessions", sessions_partial),
        Route("/c/{conn:int}", timeline), Route("/c/{conn:int}/rows", rows),
        Route("/c/{conn:int}/m/{seq:int}", detail), Route("/c/{conn:int}/m/{seq:int}/raw", raw),
        Route("/c/{conn:int}/conversation", conversation), Route("/c/{conn:int}/waterfall", waterfall),
        Route("/c/{conn:int}/findings", findings), Route("/c/{conn:int}/export.jsonl", export),
        Route("/diff", diff), Route("/events", events),
        Route("/stores", stores_page), Route("/stores/{n:int}/s/{sid}", stored_session),
        Route("/connect", connect_page), Route("/connect/{chat:int}", connect_page),
        Route("/connect/start", connect_start, methods=["POST"]),
        Route("/connect/{chat:int}/prompt", chat_prompt, methods=["POST"]),
        Route("/connect/{chat:int}/cancel", chat_cancel, methods=["POST"]),
        Route("/connect/{chat:int}/answer", chat_answer, methods=["POST"]),
        Route("/connect/{chat:int}/events", chat_events),
        Mount("/static", static),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.chats = chats
    return app


def _warm_in_background(path: Any, stop: threading.Event) -> None:
    try:
        own = Store(path, recover=False)
    except DatabaseError:
        return
    try:
        warm_all(own, stop)
    finally:
        own.close()


async def _iterate(lines: Any) -> AsyncIterator[bytes]:
    for n, line in enumerate(lines):
        yield line
        if n % 500 == 0:
            await asyncio.sleep(0)


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


class _Stop:
    """SIGINT/SIGTERM stop the server gracefully (its agents closed) and ``serve`` returns
    (uvicorn's own handling would re-raise the signal once it has stopped); a second SIGINT
    stops at once."""

    def __init__(self, server: Any) -> None:
        self.server = server

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.server.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)


async def serve(store: Store, *, host: str = "127.0.0.1", port: int = 0, agent: Sequence[str] = (),
                on_url: Callable[[str], None] = print, autostart: bool = False,
                on_agent_failed: Callable[[str], None] | None = None, session_stores: Sequence[str] = ()) -> None:
    """Serve the UI until cancelled or told to stop (SIGINT, SIGTERM); ``on_url`` gets the URL
    (with its token) once listening. With ``autostart``, ``agent`` is started at once (as if
    from Connect) and the URL opens its chat; ``on_agent_failed`` gets the line saying why it
    did not start. ``session_stores``: shown read-only under Stores."""
    import uvicorn

    token = secrets.token_urlsafe(24)
    cwd = os.getcwd()
    app = build_app(store, agent=agent, cwd=cwd, session_stores=session_stores)
    chats: Chats = app.state.chats
    guard = Guard(app, token)
    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    names = {shown, "localhost", "127.0.0.1"} if _is_loopback(host) else {shown}
    guard.origins = {f"http://{n}:{bound}" for n in names}
    config = uvicorn.Config(guard, log_level="warning", lifespan="on", timeout_graceful_shutdown=1,
                            access_log=False)
    server = uvicorn.Server(config)
    # the signals are ours from before the agent starts: a signal before uvicorn runs stops it as
    # soon as it has started (and so closes the agent), never kills the process with the agent left
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    try:
        with _Stop(server)():
            path = "/"
            if autostart and agent:
                path = f"/connect/{chats.launch(agent, cwd, on_failed=on_agent_failed).id}"
            on_url(f"http://{shown}:{bound}{path}?token={token}")
            await server.serve(sockets=[sock])
    finally:
        sock.close()
        await chats.aclose()  # (the lifespan closed them, unless the server never started)
