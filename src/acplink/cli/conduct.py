"""``acplink conduct``: run a chain of ACP proxies and an agent behind one stdio connection."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from typing import IO, Any

from ..runtime import cancel_on_signals
from .common import agent_argv, fail, given_command, positive_seconds
from .otel import add_otel_option

HELP = "run a proxy chain: ACP proxies in front of an agent, as one agent on stdio"

EXAMPLES = """examples:
  acplink conduct --proxy acplink:context -- acplink demo-agent
  acplink conduct --proxy 'python my_proxy.py --flag' --proxy acplink:passthrough -- my-agent --stdio
  acplink conduct --trace chain.jsons --proxy acplink:context=\"Answer in French.\" -- my-agent
  acplink conduct --as-proxy --proxy acplink:context      # a proxy made of proxies, for another conductor

Each --proxy is one shell-quoted command line, in chain order (the first is next to the
editor); `acplink:NAME` runs a built-in proxy in process: passthrough, context[=TEXT],
policy=allow:RULE,deny:RULE,... (see `acplink proxy policy --help`), redact."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("conduct", help=HELP, description=HELP, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--proxy", action="append", default=[], metavar="'CMD ARGS'",
                   help="a proxy's command line (repeatable, in chain order), or acplink:NAME")
    p.add_argument("--trace", metavar="FILE", help="write every hop's messages to FILE, one JSON line each")
    p.add_argument("--as-proxy", action="store_true",
                   help="run as a proxy of an outer conductor (no agent: every component is a proxy)")
    p.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                   help="fail a forwarded request a component has not answered in SECONDS (default: no limit)")
    p.add_argument("--debug", action="store_true", help="log protocol details to stderr")
    add_otel_option(p)
    p.add_argument("agent", nargs="*", default=[], metavar="-- AGENT_CMD",
                   help="the agent command line, after `--`")
    p.set_defaults(run=run)


def _components(args: argparse.Namespace) -> list[Any]:
    from ..errors import UsageError
    from ..proxy import Component, builtin_proxy

    comps: list[Any] = []
    for spec in args.proxy:
        if spec.startswith("acplink:"):
            app = builtin_proxy(spec.removeprefix("acplink:"))
            comps.append(Component(serve=app.serve, name=spec))
            continue
        comps.append(Component(agent_argv(spec, "--proxy")))
    agent = given_command(args)
    if args.as_proxy:
        if agent:
            raise UsageError("--as-proxy runs proxies only: no agent command after --")
        if not comps:
            raise UsageError("--as-proxy needs at least one --proxy")
    elif not agent:
        raise UsageError("no agent command: give it after --  (acplink conduct --proxy ... -- AGENT_CMD ARGS)")
    else:
        comps.append(Component(agent))
    return comps


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..proxy import Conductor
    from ..transports.stdio import StdioTransport

    try:
        comps = _components(args)
    except UsageError as exc:
        return fail(str(exc), 2)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    trace: IO[bytes] | None = None
    if args.trace:
        try:
            trace = open(args.trace, "ab")
        except OSError as exc:
            return fail(f"cannot write the trace {args.trace!r}: {exc.strerror or exc}", 2)
    conductor = Conductor(comps, as_proxy=args.as_proxy, trace=trace, request_timeout=args.timeout,
                          debug=args.debug)

    async def main() -> None:
        cancel_on_signals()
        try:
            await conductor.serve(StdioTransport())
        finally:
            with contextlib.suppress(ValueError):
                signal.set_wakeup_fd(-1)

    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError, asyncio.CancelledError):
        asyncio.run(main())
    if conductor.failure is not None:
        return fail(conductor.failure)
    return 0
