"""``acplink devtools``: the web inspector of recorded and live ACP traffic (and a browser
client for any agent); ``acplink devtools import TRACE...`` loads JSON-lines traces into it.

The web stack (Starlette, uvicorn) is imported only when the server starts."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run"]

HELP = "browse, filter, compare and watch ACP traffic in a web UI; chat with an agent in the browser"
DESCRIPTION = """Serve the devtools UI over the recordings database (written by `acplink record --db`,
by `acplink devtools import`, and by Connect). The first line of output is the URL, with its
random access token; the second names the database it opened and how to stop the server.
It listens on 127.0.0.1 unless --host says otherwise. With
`-- AGENT_CMD`, that agent is started at once (its traffic recorded) and the URL opens its chat.
With --store, the Stores page shows what a session store remembers (its sessions and their
histories), read-only. Ctrl-C or SIGTERM stops the server and its agents."""
EPILOG = """examples:
  acplink record --db -- acplink demo-agent        # record (e.g. as your editor's agent command)
  acplink devtools                                 # browse it, live
  acplink devtools import trace.jsonl other.jsonl  # load JSON-lines traces
  acplink devtools -- my-agent --acp               # start this agent and open its chat
  acplink devtools --store ~/.local/state/acplink/demo/sessions.sqlite3   # what the demo agent remembers"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    from .common import _AgentAfterDashDash, port_number

    p: argparse.ArgumentParser = subparsers.add_parser(
        "devtools", help=HELP, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", metavar="FILE", help="the recordings database (default: devtools.sqlite in the user's "
                                                "state folder, ~/.local/state/acplink)")
    p.add_argument("--store", action="append", default=[], metavar="STORE",
                   help="a session store to show read-only (a SQLite file or a postgresql:// URL; repeatable)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=port_number, default=0, help="port to listen on (default 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="do not open a web browser")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("action", nargs="*", metavar="import TRACE", help="`import TRACE...`: load JSON-lines traces")
    p.__class__ = _AgentAfterDashDash  # everything after `--`: the agent started at launch (Connect's chat)
    p.set_defaults(run=run, agent=[])
    return p


def run(args: argparse.Namespace) -> int:
    from .._extras import require
    from ..devtools.store import DatabaseError, Store, default_db_path
    from .common import fail

    action = list(args.action or [])
    if action and action[0] != "import":
        return fail(f"unknown devtools action {action[0]!r} (did you mean `acplink devtools import TRACE...`?)", 2)
    if not action:  # the web UI (importing traces needs nothing more)
        require("acplink devtools", "devtools", "starlette", "uvicorn")
    for target in args.store:  # (checked now: a missing, foreign, corrupt or newer store is one line)
        from ..agent.store_reader import open_store_reader
        from ..errors import StoreError

        try:
            open_store_reader(target).close()
        except StoreError as exc:
            return fail(str(exc), 2)
    path = args.db or default_db_path()
    try:
        store = Store(path)
    except DatabaseError as exc:
        return fail(str(exc), 2)
    try:
        if action:
            return _import(store, action[1:])
        return _serve(store, args)
    finally:
        store.close()


def _import(store: Any, traces: list[str]) -> int:
    from ..devtools.importer import import_trace
    from ..devtools.store import DatabaseError
    from .common import fail

    if not traces:
        return fail("no trace given (acplink devtools import TRACE...)", 2)
    code = 0
    for trace in traces:
        try:
            res = import_trace(store, trace)
        except DatabaseError as exc:
            code = fail(str(exc))
            continue
        if res.hops:  # a conductor's trace: a connection per hop
            for hop, conn, count in res.hops:
                print(f"{trace}: hop {hop}: {count} messages imported as connection #{conn}")
        else:
            print(f"{trace}: {res.messages} messages imported as connection #{res.conn}")
        if res.bad_lines:
            lines = ", ".join(map(str, res.bad_lines[:20])) + (" …" if len(res.bad_lines) > 20 else "")
            code = fail(f"{trace}: {len(res.bad_lines)} bad line{'s' if len(res.bad_lines) > 1 else ''} "
                        f"skipped (not trace records): line {lines}")
    return code


def _serve(store: Any, args: argparse.Namespace) -> int:
    import asyncio
    import os
    import webbrowser

    from ..devtools.server import serve
    from .common import fail, given_command

    def announce(url: str) -> None:
        print(url, flush=True)
        # (after the URL, which stays the first line for scripts)
        count = store.connection_count()
        print(f"acplink devtools: database {os.path.abspath(store.path)} ({count} recording{'' if count == 1 else 's'}); "
              "press Ctrl-C to stop", flush=True)
        if not (args.host.startswith("127.") or args.host in ("localhost", "::1")):
            print(f"acplink: warning: listening on {args.host}, not loopback: anyone who can reach it and has the "
                  "URL can read the recordings and start agents", file=sys.stderr)
        if not args.no_browser:
            webbrowser.open(url)

    def agent_failed(error: str) -> None:
        print(f"acplink devtools: {error} (the UI still serves; Connect shows its stderr)", file=sys.stderr,
              flush=True)

    agent = given_command(args)
    try:
        asyncio.run(serve(store, host=args.host, port=args.port, agent=agent, on_url=announce,
                          autostart=bool(agent), on_agent_failed=agent_failed, session_stores=args.store))
    except OSError as exc:
        if args.debug:
            raise
        return fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", 2)
    except KeyboardInterrupt:
        return 0
    return 0
