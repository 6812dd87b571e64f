"""``acplink serve``: put any stdio ACP agent on the network (WebSocket and streamable HTTP)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Generator
from typing import Any

from .._extras import require
from .._listen import listening_socket
from .._tasks import TaskSet
from .common import fail, port_number, positive_seconds
from .otel import add_otel_option

HELP = "serve an ACP agent over WebSocket and streamable HTTP (one agent process per connection)"
EXAMPLES = """examples:
  acplink serve                                   # the demo agent on ws:// and http://127.0.0.1:7331/acp
  acplink serve -- my-agent --acp                 # any stdio agent
  acplink serve --ws --port 8080 -- my-agent      # WebSocket only
  ACPLINK_TOKEN=s3cret acplink serve --host 0.0.0.0 -- my-agent
  acplink serve --app my_agent:app                # an acplink app in this process (its store shared)
  acplink prompt --url ws://127.0.0.1:7331/acp "hello"
Each connection gets its own agent process (with --app: the app, in this process), started at its initialize and stopped when the
connection ends (DELETE, WebSocket close, --idle-timeout, shutdown). Clients must send
Authorization: Bearer TOKEN when --token (or $ACPLINK_TOKEN) is set; a non-loopback --host
needs a token (or --insecure-no-auth). Several --token: each client's token is its principal,
whose stored sessions the other tokens cannot see (docs/sessions.md). Ctrl-C or SIGTERM stops within 5 s."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help=HELP, description=HELP, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=7331, help="the port (default 7331; 0 picks a free one)")
    p.add_argument("--path", default="/acp", help="the endpoint's path (default /acp)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--ws", action="store_true", help="serve WebSocket only")
    only.add_argument("--http", action="store_true", help="serve streamable HTTP only")
    p.add_argument("--token", metavar="T", action="append",
                   help="require 'Authorization: Bearer T' (default: $ACPLINK_TOKEN); repeatable: any of them, "
                        "each token a principal of its own (its stored sessions are its own)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="O",
                   help="a browser origin allowed to connect (repeatable; requests with any other "
                        "Origin header get 403)")
    p.add_argument("--max-connections", type=int, default=16, metavar="N",
                   help="connections at once; more get 503 (default 16)")
    p.add_argument("--idle-timeout", type=positive_seconds, default=300.0, metavar="S",
                   help="close an HTTP connection (and stop its agent) after S seconds without a "
                        "request or an open stream (default 300)")
    p.add_argument("--retention-messages", type=int, default=1000, metavar="N",
                   help="each stream keeps the last N messages it sent, so that a client whose connection "
                        "dropped gets back what it missed (SSE Last-Event-ID, WebSocket stream/resume; "
                        "advertised at initialize; default 1000)")
    p.add_argument("--retention-seconds", type=positive_seconds, default=300.0, metavar="S",
                   help="... each for S seconds (default 300)")
    p.add_argument("--keepalive", type=positive_seconds, default=15.0, metavar="S",
                   help="a quiet stream gets a keepalive every S seconds (an SSE comment, a WebSocket "
                        "ping), so that proxies do not close it (default 15)")
    p.add_argument("--insecure-no-auth", action="store_true",
                   help="allow a non-loopback --host without a token")
    add_otel_option(p)
    p.add_argument("--metrics", type=port_number, metavar="PORT",
                   help="serve the metrics in the Prometheus text format at http://HOST:PORT/metrics "
                        "(0 picks a free port; shown on stderr); needs acplink[otlp]")
    p.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST",
                   help="the address of --metrics (default 127.0.0.1)")
    p.add_argument("--app", metavar="MODULE:ATTR",
                   help="serve an acplink agent app in this process instead of an agent command: ATTR of "
                        "MODULE (importable from the current directory), an AgentApp that serves every "
                        "connection, or a function that makes one per connection; its session store is "
                        "this process's (e.g. a PostgresStore several instances share)")
    p.add_argument("agent", nargs="*", default=[], metavar="-- AGENT_CMD",
                   help="the agent command, after -- (default: acplink's demo agent; with --otel, "
                        "the demo agent reports too)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # uvicorn serves WebSocket only when the websockets library is there: without it a ws://
    # client would get 404s, not a clear error here
    require("acplink serve", "remote", "uvicorn", *(() if args.http else ("websockets",)))
    from ..server import LOOPBACK_HOSTS, AcpServer, ServerLimits, is_loopback

    tokens = [t for t in args.token or [os.environ.get("ACPLINK_TOKEN") or ""] if t]
    token = tokens or None
    loopback = is_loopback(args.host)
    if not loopback and token is None and not args.insecure_no_auth:
        return fail(f"refusing to serve {args.host} without a token: pass --token (or set ACPLINK_TOKEN), "
                    "or --insecure-no-auth", 2)
    if args.max_connections < 1:
        return fail("--max-connections must be at least 1", 2)
    if args.retention_messages < 1:
        return fail("--retention-messages must be at least 1", 2)
    command: Any = list(args.agent) or [sys.executable, "-m", "acplink", "demo-agent",
                                        *(["--otel"] if args.otel else [])]
    if args.app is not None:
        if args.agent:
            return fail("--app serves an app in this process: give it or an agent command, not both", 2)
        try:
            command = _app_factory(args.app)
        except ValueError as exc:
            return fail(f"--app {args.app}: {exc}", 2)
    transports = ("ws",) if args.ws else ("http",) if args.http else ("http", "ws")
    limits = ServerLimits(max_connections=args.max_connections, idle_timeout=args.idle_timeout,
                          retention_messages=args.retention_messages, retention_seconds=args.retention_seconds,
                          keepalive=args.keepalive)
    app = AcpServer(command, path=args.path, transports=transports, token=token,
                    allow_origins=args.allow_origin, allowed_hosts=LOOPBACK_HOSTS if loopback else None,
                    limits=limits)
    try:
        sock = listening_socket(args.host, args.port)
    except OSError as exc:
        return fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    _log_to_stderr()
    try:
        asyncio.run(_serve(app, sock, transports, token))
    finally:
        sock.close()
    return 0


def _app_factory(spec: str) -> Any:
    """``MODULE:ATTR``: a function that makes the app of each connection (ValueError: why not)."""
    import importlib

    from ..agent import AgentBase
    from ..errors import AcpError

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError("expected MODULE:ATTR (e.g. my_agent:app)")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name} ({exc})") from None
    except AttributeError:
        raise ValueError(f"{module_name} has no {attr}") from None
    except AcpError as exc:  # (e.g. its session store cannot be opened)
        raise ValueError(str(exc)) from None
    if isinstance(found, AgentBase):
        return lambda: found
    if callable(found):
        return found
    raise ValueError(f"{attr} is neither an acplink agent app nor a function that makes one")


#: addresses that mean "every interface": not an address a client can connect to
WILDCARDS = ("0.0.0.0", "::", "")


def connectable_host(host: str) -> str:
    """The host of a URL a client on this machine can connect to, for a bound address: loopback
    for a wildcard bind (0.0.0.0, ::), IPv6 addresses in brackets."""
    if host in WILDCARDS:
        return "[::1]" if host == "::" else "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def shown_bind(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _example_url(transports: tuple[str, ...], host: str, port: int, path: str) -> str:
    scheme = "ws" if "ws" in transports else "http"
    return f"{scheme}://{connectable_host(host)}:{port}{path}"


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("acplink serve: %(message)s"))
    logger = logging.getLogger("acplink.server")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


async def _serve(app: Any, sock: socket.socket, transports: tuple[str, ...], token: list[str] | None) -> None:
    import uvicorn

    from ..server import is_loopback

    host, port = sock.getsockname()[:2]
    shown = connectable_host(host)
    config = uvicorn.Config(app, log_config=None, access_log=False, log_level="warning", lifespan="on",
                            ws="auto" if "ws" in transports else "none",
                            ws_max_size=app.limits.max_message_bytes + 1024,
                            # no permessage-deflate (as the TS server): zlib on every small frame, both ends
                            ws_per_message_deflate=False,
                            # keepalive pings on a WebSocket (a peer that answers none in time is gone)
                            ws_ping_interval=app.limits.keepalive, ws_ping_timeout=app.limits.keepalive * 2,
                            timeout_graceful_shutdown=1, timeout_keep_alive=30)
    server = _server_class()(config, app)
    for scheme in ("ws", "http"):
        if scheme in transports:
            print(f"{scheme}://{shown}:{port}{app.path}", flush=True)
    print(f"acplink serve: agent `{app.backend.description}`; Ctrl-C to stop", file=sys.stderr, flush=True)
    if host in WILDCARDS:
        print(f"acplink serve: listening on every address ({host}); from another machine use this one's "
              f"name or address: {_example_url(transports, socket.gethostname(), port, app.path)}",
              file=sys.stderr, flush=True)
    if token is None and not is_loopback(host):
        print(f"acplink serve: warning: no authentication (--insecure-no-auth) on {shown_bind(host)}, which is "
              "not loopback: anyone who can reach this port can run the agent as you; pass --token "
              "(or set ACPLINK_TOKEN)", file=sys.stderr, flush=True)
    await server.serve(sockets=[sock])
    print("acplink serve: stopped", file=sys.stderr, flush=True)


def _server_class() -> type[Any]:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn, stopped our way: SIGINT/SIGTERM first close every connection (streams end,
        WebSockets close with 1001) and stop their agents, then uvicorn stops; a second signal
        stops at once."""

        def __init__(self, config: uvicorn.Config, app: Any) -> None:
            super().__init__(config)
            self.acp_app = app
            self.stopping: asyncio.Future[None] | None = None
            self.tasks = TaskSet("acplink-serve")  # (the drain; closed when serving ends)

        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            try:
                await super().serve(sockets=sockets)
            finally:
                await self.tasks.aclose()

        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None, None, None]:
            loop = asyncio.get_running_loop()
            sigs = (signal.SIGINT, signal.SIGTERM)
            for sig in sigs:
                loop.add_signal_handler(sig, self.stop)
            try:
                yield
            finally:
                for sig in sigs:
                    loop.remove_signal_handler(sig)

        def stop(self) -> None:
            if self.stopping is not None:
                self.force_exit = True
                self.should_exit = True
                return
            print("acplink serve: stopping", file=sys.stderr, flush=True)
            self.stopping = self.tasks.spawn(self.drain(), name="acplink-serve-drain")

        async def drain(self) -> None:
            try:
                await asyncio.wait_for(self.acp_app.aclose(), 4.5)
            except TimeoutError:
                pass
            finally:
                self.should_exit = True

    return Server

