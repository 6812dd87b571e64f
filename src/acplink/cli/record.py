"""``acplink record --out FILE [--redact] -- AGENT_CMD ...``: the recording stdio proxy."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import threading
import time
import traceback
from typing import Any

__all__ = ["add_parser", "run"]

HELP = "run an agent behind a transparent stdio proxy that records the traffic"
DESCRIPTION = """Launch this instead of the agent (in your editor's agent settings): every byte passes
through unchanged both ways, and a JSON-lines trace is written to FILE (--out) and/or
into the devtools database (--db). View it with `acplink inspect FILE` or `acplink devtools`."""

EPILOG = """examples:
  acplink record --out trace.jsonl -- acplink demo-agent
  acplink record --redact --out /tmp/agent.jsonl -- my-agent --acp
  acplink record --db -- acplink demo-agent        # then: acplink devtools
  acplink inspect trace.jsonl"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser("record", help=HELP, description=DESCRIPTION,
                                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", "-o", metavar="FILE", help="the trace file to write (JSON lines)")
    p.add_argument("--db", nargs="?", const="", default=None, metavar="FILE",
                   help="also (or instead) record into the SQLite database of `acplink devtools` (default "
                        "without FILE: devtools.sqlite in the user's state folder, ~/.local/state/acplink)")
    p.add_argument("--redact", action="store_true",
                   help="replace every free text (prompts, replies, file contents, terminal output, tool input "
                        "and output, environment values) with its size; ids, methods, titles and paths are kept")
    p.add_argument("--no-validate", action="store_true", help="do not mark schema violations in the trace")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("agent", nargs=argparse.REMAINDER, help="the agent command line, after `--`")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..tools.record import RecordingProxy
    from ..transports.subprocess import describe_start_failure
    from .common import fail, given_command

    cmd = given_command(args)
    if not cmd:
        return fail("no agent command given (acplink record --out FILE -- AGENT_CMD ...)", 2)
    if args.out is None and args.db is None:
        return fail("nowhere to record: give --out FILE and/or --db [FILE]", 2)
    ingest = None
    spool = None
    if args.db is not None:
        import sqlite3

        from ..devtools.store import DatabaseError, Ingest, Store, default_db_path
        from ..errors import AcpError
        from ..tools.spool import SpoolWriter, spool_dir

        db = args.db or default_db_path()
        try:
            store = Store(db, recover=False)  # (spools of killed recorders: recovered at the end)
        except DatabaseError as exc:
            return fail(str(exc), 2)
        try:
            spool = SpoolWriter(spool_dir(db) / f"{os.getpid()}-{time.time_ns()}.spool")
        except OSError as exc:
            store.close()
            return fail(f"cannot write the recording spool beside {os.fspath(db)!r}: {exc.strerror or exc}", 2)
        ingest = Ingest(store, shlex.join(cmd))

    def validate_some() -> bool:  # (when the traffic pauses: the schema validation of stored rows)
        if ingest is None or ingest.conn is None or ingest.failed:
            return False
        try:
            return ingest.store.validate_pending(ingest.conn, limit=500)
        except sqlite3.Error:
            return False

    closed: list[bool] = []

    def close_db() -> None:  # (called by the proxy after the last record, and again here)
        if ingest is None or closed:
            return
        closed.append(True)
        ingest.close()
        if spool is not None:  # every row is stored: the spool goes (kept for recovery if not)
            spool.close(remove=ingest.failed is None)
        if ingest.conn is not None and not ingest.failed:
            from ..devtools.cache import warm

            try:  # validate what is left and precompute the whole-session views (a kill
                warm(ingest.store, ingest.conn)  # here loses nothing: they are then made when first opened)
                # then what recorders that were killed left in their spools (not at the start:
                # that would delay the agent's start)
                ingest.store.recover()
            except (sqlite3.Error, AcpError):
                pass
        ingest.store.close()

    try:
        # with --db only, the schema validation is done after storing (off the proxy's path)
        code = RecordingProxy(cmd, args.out, redact=args.redact, validate=not args.no_validate and args.out is not None,
                              listeners=[ingest] if ingest else [], on_idle=ingest.flush if ingest else None,
                              on_close=close_db, on_quiet=validate_some if ingest else None, spool=spool).run()
    except OSError as exc:
        if args.debug:
            traceback.print_exc()
        if exc.filename is not None and str(exc.filename) == str(args.out):
            return fail(f"cannot write the trace {args.out!r}: {exc.strerror or exc}", 2)
        return fail(describe_start_failure(shlex.join(cmd), None, program=cmd[0], spawn_error=exc), 127)
    except KeyboardInterrupt:  # a ^C after everything was stored (the proxy holds it until then)
        return 130
    finally:
        close_db()
        # everything is stored and the process is about to exit: a stop signal still arriving
        # (an impatient editor repeats them) has nothing left to stop, and must not print a
        # KeyboardInterrupt traceback from the interpreter's shutdown
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
        if ingest is not None and ingest.failed:
            fail(f"the devtools database stopped recording ({ingest.failed}); the traffic was not affected")
    return 128 - code if code < 0 else code
